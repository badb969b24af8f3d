// Execution order of rewrite-added nodes: they run where the code they stand for ran, which
// matters when an in-place operator writes a tensor that other nodes read.
#include "tfg/graph.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_graph_order_keys {

namespace {

using graph_t = tfg::graph::flow_graph<std::string, int>;

std::vector<std::string> order_names(const graph_t& g) {
  std::vector<std::string> out;
  for (auto n : g.topological_order()) out.push_back(g.data(n));
  return out;
}

}  // namespace

TEST_CASE("a node inserted before one consumer runs just before it, after earlier writers") {
  graph_t g;
  auto in = g.add_input(0);
  auto a = g.add_node("a", {in}, {1});
  auto x = g.outputs(a)[0];
  auto p = g.add_node("relu_", {x}, {2});  // writes x in place
  auto c = g.add_node("c", {x}, {3});
  g.add_output(g.outputs(p)[0]);
  g.add_output(g.outputs(c)[0]);
  REQUIRE(order_names(g) == std::vector<std::string>{"a", "relu_", "c"});

  auto rw = g.begin_rewrite();
  auto clone = rw.new_node("clone", {x}, {4});
  rw.rewire(tfg::graph::use{c, 0}, rw.output(clone, 0));
  REQUIRE(rw.commit());
  // c read x after relu_ wrote it; the clone standing in for that read must too.
  CHECK(order_names(g) == std::vector<std::string>{"a", "relu_", "clone", "c"});
}

TEST_CASE("a node inserted on an edge for all consumers runs before the first of them") {
  graph_t g;
  auto in = g.add_input(0);
  auto a = g.add_node("a", {in}, {1});
  auto x = g.outputs(a)[0];
  auto p = g.add_node("relu_", {x}, {2});
  auto c = g.add_node("c", {x}, {3});
  g.add_output(g.outputs(p)[0]);
  g.add_output(g.outputs(c)[0]);
  auto rw = g.begin_rewrite();
  auto clone = rw.new_node("clone", {x}, {4});
  auto mul = rw.new_node("mul", {rw.output(clone, 0)}, {5});
  rw.replace_uses(x, rw.output(mul, 0));
  REQUIRE(rw.commit());
  CHECK(order_names(g) == std::vector<std::string>{"a", "clone", "mul", "relu_", "c"});
  CHECK(g.check().empty());
}

TEST_CASE("a replacement runs where the removed node ran; repeated insertions keep their place") {
  graph_t g;
  auto in = g.add_input(0);
  auto a = g.add_node("a", {in}, {1});
  auto b = g.add_node("b", {in}, {2});
  auto c = g.add_node("c", {g.outputs(a)[0], g.outputs(b)[0]}, {3});
  g.add_output(g.outputs(c)[0]);
  for (int round = 0; round < 40; ++round) {
    // Replace whatever produces c's first input by a fresh node: it must stay before b.
    auto first = g.producer(g.inputs(c)[0]);
    auto rw = g.begin_rewrite();
    rw.remove_node(first);
    auto n = rw.new_node("a" + std::to_string(round), {in}, {10 + round});
    rw.replace_uses(g.outputs(first)[0], rw.output(n, 0));
    REQUIRE(rw.commit());
  }
  auto names = order_names(g);
  REQUIRE(names.size() == 3);
  CHECK(names[0] == "a39");
  CHECK(names[1] == "b");
  CHECK(names[2] == "c");
}

}  // namespace tfg_test_graph_order_keys
