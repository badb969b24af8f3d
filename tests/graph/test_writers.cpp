// write_dot / write_json: exact output on a small graph, escaping, and tombstones left out.

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "mock_graph.hpp"
#include "tfg/graph.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_graph_writers {

namespace {

using namespace tfg::graph;
using graph_t = flow_graph<std::string, std::string>;

// x -> "add" (reads x twice) -> t, t -> "relu \"q\"" -> u; outputs: u, t
struct small {
  graph_t g;
  edge_id x, t, u;
  node_id add, relu;
  small() {
    x = g.add_input("x");
    add = g.add_node("add", {x, x}, {"t"});
    t = g.outputs(add)[0];
    relu = g.add_node("relu \"q\"", {t}, {"u\n1"});
    u = g.outputs(relu)[0];
    g.add_output(u);
    g.add_output(t);
  }
};

TEST_CASE("write_json: structure, callable members, escaping") {
  small s;
  std::ostringstream os;
  write_json(
      os, s.g,
      [&](std::ostream& o, node_id n) {
        o << "\"op\":";
        tfg::json::write_string(o, s.g.data(n));
      },
      [&](std::ostream& o, edge_id e) {
        o << "\"name\":";
        tfg::json::write_string(o, s.g.data(e));
      });
  CHECK(os.str() ==
        "{\"nodes\":[\n"
        "{\"id\":0,\"inputs\":[0,0],\"outputs\":[1],\"op\":\"add\"},\n"
        "{\"id\":1,\"inputs\":[1],\"outputs\":[2],\"op\":\"relu \\\"q\\\"\"}\n"
        "],\"edges\":[\n"
        "{\"id\":0,\"producer\":null,\"consumers\":[[0,0],[0,1]],\"name\":\"x\"},\n"
        "{\"id\":1,\"producer\":0,\"consumers\":[[1,0]],\"name\":\"t\"},\n"
        "{\"id\":2,\"producer\":1,\"consumers\":[],\"name\":\"u\\n1\"}\n"
        "],\"inputs\":[0],\"outputs\":[2,1]}\n");
}

TEST_CASE("write_json: structure only, and tombstones are left out") {
  small s;
  auto tx = s.g.begin_rewrite();
  tx.remove_node(s.relu);
  tx.replace_uses(s.u, s.t);
  REQUIRE(tx.commit());
  std::ostringstream os;
  write_json(os, s.g);
  CHECK(os.str() ==
        "{\"nodes\":[\n"
        "{\"id\":0,\"inputs\":[0,0],\"outputs\":[1]}\n"
        "],\"edges\":[\n"
        "{\"id\":0,\"producer\":null,\"consumers\":[[0,0],[0,1]]},\n"
        "{\"id\":1,\"producer\":0,\"consumers\":[]}\n"
        "],\"inputs\":[0],\"outputs\":[1,1]}\n");
}

TEST_CASE("write_json on an empty graph") {
  std::ostringstream os;
  write_json(os, graph_t{});
  CHECK(os.str() == "{\"nodes\":[\n],\"edges\":[\n],\"inputs\":[],\"outputs\":[]}\n");
}

TEST_CASE("write_dot: boxes, arrows per use, input/output ellipses, escaped labels") {
  small s;
  std::ostringstream os;
  write_dot(
      os, s.g, [&](node_id n) -> const std::string& { return s.g.data(n); }, [&](edge_id e) { return s.g.data(e); });
  CHECK(os.str() ==
        "digraph tfg {\n"
        "  node [shape=box];\n"
        "  n0 [label=\"add\"];\n"
        "  n1 [label=\"relu \\\"q\\\"\"];\n"
        "  in0 [shape=ellipse, fontsize=10, height=0.3, label=\"in0\"];\n"
        "  out0 [shape=ellipse, fontsize=10, height=0.3, label=\"out0\"];\n"
        "  out1 [shape=ellipse, fontsize=10, height=0.3, label=\"out1\"];\n"
        "  in0 -> n0 [label=\"x\"];\n"
        "  in0 -> n0 [label=\"x\"];\n"
        "  n0 -> n1 [label=\"t\"];\n"
        "  n0 -> out1 [label=\"t\"];\n"
        "  n1 -> out0 [label=\"u\\n1\"];\n"
        "}\n");
}

TEST_CASE("write_dot: default labels are the ids; streamable labels work") {
  small s;
  std::ostringstream plain;
  write_dot(plain, s.g);
  CHECK(plain.str().find("n1 [label=\"n1\"]") != std::string::npos);
  CHECK(plain.str().find("n0 -> n1 [label=\"e1\"]") != std::string::npos);
  std::ostringstream numbers;
  write_dot(
      numbers, s.g, [](node_id n) { return index(n) * 10; }, [](edge_id e) { return index(e); });
  CHECK(numbers.str().find("n1 [label=\"10\"]") != std::string::npos);
}

TEST_CASE("writers need only tensor_graph: a non-flow_graph model writes the same text") {
  tfg::test::mock_graph m;
  flow_graph<int, int> g;
  const edge_id mx = m.input();
  const edge_id gx = g.add_input(0);
  const node_id ma = m.node({mx, mx}, 2);
  const node_id ga = g.add_node(0, {gx, gx}, {0, 0});
  m.node({m.outputs(ma)[1], mx}, 1);
  g.add_node(0, {g.outputs(ga)[1], gx}, {0});
  m.out = {m.outputs(ma)[0]};
  g.add_output(g.outputs(ga)[0]);
  std::ostringstream from_mock, from_graph, dot_mock, dot_graph;
  write_json(from_mock, m);
  write_json(from_graph, g);
  CHECK(from_mock.str() == from_graph.str());
  write_dot(dot_mock, m);
  write_dot(dot_graph, g);
  CHECK(dot_mock.str() == dot_graph.str());
}

TEST_CASE("json_quote escapes quotes, backslashes and control characters") {
  using tfg::json::quote;
  CHECK(quote("plain") == "\"plain\"");
  CHECK(quote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quote("\n\t\r\b\f") == "\"\\n\\t\\r\\b\\f\"");
  CHECK(quote(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(quote(std::string("nul\0!", 5)) == "\"nul\\u0000!\"");
  CHECK(quote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

}  // namespace

}  // namespace tfg_test_graph_writers
