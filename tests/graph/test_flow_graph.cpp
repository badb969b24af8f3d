// flow_graph: building, queries, the cached analyses (topological order, reachability) and
// the invariant checker.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "graph_test_util.hpp"
#include "tfg/graph.hpp"

namespace tfg::detail {

// White-box access for the check() tests: corrupts a graph in ways the API cannot.
template <class Graph>
struct flow_graph_white_box {
  static void set_input(Graph& g, graph::node_id n, std::size_t slot, graph::edge_id e) {
    g.nodes_[graph::index(n)].inputs[slot] = e;
  }
  static void add_consumer(Graph& g, graph::edge_id e, graph::use u) {
    g.edges_[graph::index(e)].consumers.push_back(u);
  }
  static void set_producer_slot(Graph& g, graph::edge_id e, std::uint32_t slot) {
    g.edges_[graph::index(e)].slot = slot;
  }
  static void kill_edge(Graph& g, graph::edge_id e) { g.edges_[graph::index(e)].alive = false; }
};

}  // namespace tfg::detail

namespace {

using namespace tfg::graph;
using tfg::test::graph_t;

static_assert(tensor_graph<flow_graph<int, int>>);
static_assert(reachability_graph<flow_graph<int, int>>);
static_assert(tensor_graph<flow_graph<std::string, std::vector<int>>>);
static_assert(std::ranges::forward_range<graph_t::node_range>);
static_assert(std::ranges::view<graph_t::edge_range>);

std::vector<use> uses(const graph_t& g, edge_id e) { return {g.consumers(e).begin(), g.consumers(e).end()}; }
std::vector<edge_id> ids(std::span<const edge_id> s) { return {s.begin(), s.end()}; }

TEST_CASE("ids: index, sentinels, hashing and printing") {
  CHECK(index(node_id{7}) == 7);
  CHECK(index(edge_id{0}) == 0);
  CHECK(index(no_node) == UINT32_MAX);
  CHECK(use{node_id{1}, 2} == use{node_id{1}, 2});
  CHECK(use{node_id{1}, 2} != use{node_id{1}, 3});
  std::unordered_set<use> set{use{node_id{1}, 0}, use{node_id{1}, 1}, use{node_id{1}, 0}};
  CHECK(set.size() == 2);
  std::unordered_set<node_id> nodes{node_id{1}, node_id{2}, node_id{1}};
  CHECK(nodes.size() == 2);
  CHECK(std::hash<edge_id>{}(edge_id{5}) == std::hash<edge_id>{}(edge_id{5}));
  CHECK(tfg::detail::str_cat(node_id{3}, ' ', edge_id{4}, ' ', use{node_id{3}, 1}, ' ', no_node) == "n3 e4 n3:1 n-");
}

TEST_CASE("building a diamond: producers, consumers, slots and counts") {
  // x -> a -> (b, c) -> d -> output
  graph_t g;
  const edge_id x = g.add_input(100);
  const node_id a = g.add_node(1, {x}, {101});
  const edge_id ea = g.outputs(a)[0];
  const node_id b = g.add_node(2, {ea}, {102});
  const node_id c = g.add_node(3, {ea}, {103});
  const edge_id eb = g.outputs(b)[0];
  const edge_id ec = g.outputs(c)[0];
  const node_id d = g.add_node(4, {eb, ec}, {104});
  const edge_id ed = g.outputs(d)[0];
  g.add_output(ed);

  CHECK(g.node_count() == 4);
  CHECK(g.edge_count() == 5);
  CHECK(g.node_capacity() == 4);
  CHECK(g.edge_capacity() == 5);
  CHECK(g.producer(x) == no_node);
  CHECK(g.is_graph_input(x));
  CHECK(g.producer(ea) == a);
  CHECK(g.producer_slot(ea) == 0);
  CHECK(uses(g, ea) == std::vector<use>{{b, 0}, {c, 0}});
  CHECK(uses(g, eb) == std::vector<use>{{d, 0}});
  CHECK(uses(g, ec) == std::vector<use>{{d, 1}});
  CHECK(g.use_count(ea) == 2);
  CHECK(g.use_count(ed) == 0);
  CHECK(ids(g.inputs(d)) == std::vector<edge_id>{eb, ec});
  CHECK(ids(g.graph_inputs()) == std::vector<edge_id>{x});
  CHECK(ids(g.graph_outputs()) == std::vector<edge_id>{ed});
  CHECK(g.is_graph_output(ed));
  CHECK_FALSE(g.is_graph_output(ea));
  CHECK(g.data(c) == 3);
  CHECK(g.data(ec) == 103);
  g.data(c) = 30;  // data is not structure: the version stays
  const auto version = g.version();
  g.data(ec) = 130;
  CHECK(std::as_const(g).data(c) == 30);
  CHECK(std::as_const(g).data(ec) == 130);
  CHECK(g.version() == version);
  CHECK(g.check().empty());

  CHECK(g.topological_order() == std::vector<node_id>{a, b, c, d});
  CHECK(g.reaches(a, d));
  CHECK(g.reaches(b, d));
  CHECK_FALSE(g.reaches(b, c));
  CHECK_FALSE(g.reaches(d, a));
  CHECK_FALSE(g.reaches(a, a));
  CHECK(g.downstream(a).count() == 3);
  CHECK(g.downstream(d).none());
  const auto from_ea = g.downstream(ea);
  CHECK(from_ea.count() == 3);
  CHECK(from_ea.test(index(b)));
  CHECK(from_ea.test(index(c)));
  CHECK(from_ea.test(index(d)));
}

TEST_CASE("a node reading one edge in two slots is two uses; outputs may repeat") {
  graph_t g;
  const edge_id x = g.add_input(0);
  const node_id sq = g.add_node(1, {x, x}, {1, 2});  // e.g. mul(x, x) with two outputs
  const edge_id o0 = g.outputs(sq)[0];
  const edge_id o1 = g.outputs(sq)[1];
  const node_id user = g.add_node(2, {o1, o0, o1}, {3});
  g.add_output(o0);
  g.add_output(o0);

  CHECK(uses(g, x) == std::vector<use>{{sq, 0}, {sq, 1}});
  CHECK(g.use_count(x) == 2);
  CHECK(uses(g, o1) == std::vector<use>{{user, 0}, {user, 2}});
  CHECK(g.producer_slot(o1) == 1);
  CHECK(ids(g.graph_outputs()) == std::vector<edge_id>{o0, o0});
  CHECK(g.is_graph_output(o0));
  CHECK(g.topological_order() == std::vector<node_id>{sq, user});
  CHECK(g.reaches(sq, user));
  CHECK(g.check().empty());
}

TEST_CASE("a multi-consumer edge lists every consumer once per slot") {
  graph_t g;
  const edge_id x = g.add_input(0);
  std::vector<node_id> readers;
  for (int i = 0; i < 5; ++i) readers.push_back(g.add_node(i, {x}, {i}));
  const std::vector<use> expected{{readers[0], 0}, {readers[1], 0}, {readers[2], 0}, {readers[3], 0}, {readers[4], 0}};
  CHECK(uses(g, x) == expected);
  const auto reached = g.downstream(x);
  CHECK(reached.count() == 5);
  for (const node_id r : readers) CHECK(g.producer(g.outputs(r)[0]) == r);
}

TEST_CASE("building rejects dead inputs and leaves the graph unchanged") {
  graph_t g;
  const edge_id x = g.add_input(0);
  g.add_node(1, {x}, {1});
  const std::string before = tfg::test::snapshot(g);
  CHECK_THROWS_AS(g.add_node(2, {x, edge_id{42}}, {2}), std::invalid_argument);
  CHECK_THROWS_AS(g.add_node(2, {no_edge}, {}), std::invalid_argument);
  CHECK_THROWS_AS(g.add_output(edge_id{9}), std::invalid_argument);
  CHECK(tfg::test::snapshot(g) == before);
  CHECK(g.check().empty());
}

TEST_CASE("nodes() and edges() list live ids in order and skip tombstones") {
  graph_t g;
  const edge_id x = g.add_input(0);
  const node_id a = g.add_node(1, {x}, {1});
  const node_id b = g.add_node(2, {g.outputs(a)[0]}, {2, 3});
  const node_id c = g.add_node(3, {g.outputs(b)[1]}, {4});
  g.add_output(g.outputs(c)[0]);
  CHECK(tfg::test::live_nodes(g) == std::vector<node_id>{a, b, c});
  CHECK(tfg::test::live_edges(g) ==
        std::vector<edge_id>{x, g.outputs(a)[0], g.outputs(b)[0], g.outputs(b)[1], g.outputs(c)[0]});

  // Remove b: c now reads a's output directly.
  const edge_id eb0 = g.outputs(b)[0];
  const edge_id eb1 = g.outputs(b)[1];
  auto tx = g.begin_rewrite();
  tx.remove_node(b);
  tx.replace_uses(eb1, g.outputs(a)[0]);
  REQUIRE(tx.commit());
  CHECK_FALSE(g.alive(b));
  CHECK_FALSE(g.alive(eb0));
  CHECK_FALSE(g.alive(eb1));
  CHECK(tfg::test::live_nodes(g) == std::vector<node_id>{a, c});
  CHECK(tfg::test::live_edges(g) == std::vector<edge_id>{x, g.outputs(a)[0], g.outputs(c)[0]});
  CHECK(g.node_count() == 2);
  CHECK(g.edge_count() == 3);
  CHECK(g.node_capacity() == 3);  // ids are not reused
  CHECK_FALSE(g.nodes().empty());
  CHECK(graph_t{}.nodes().empty());
  CHECK(graph_t::node_range{}.empty());  // a default-constructed range is empty, not dangling
  CHECK_FALSE(g.alive(no_node));
  CHECK_FALSE(g.alive(node_id{3}));
  CHECK(g.check().empty());
}

TEST_CASE("topological order: seed order first, a replacement where the removed node ran") {
  // Ids out of dependency order only arise from rewrites: replace a (id 0) by a node with a
  // larger id that everything now depends on.
  graph_t g;
  const edge_id x = g.add_input(0);
  const node_id a = g.add_node(10, {x}, {1});
  const node_id b = g.add_node(11, {x}, {2});
  const node_id c = g.add_node(12, {g.outputs(a)[0], g.outputs(b)[0]}, {3});
  g.add_output(g.outputs(c)[0]);
  CHECK(g.topological_order() == std::vector<node_id>{a, b, c});
  const auto& order_ref = g.topological_order();
  CHECK(&order_ref == &g.topological_order());  // cached

  auto tx = g.begin_rewrite();
  tx.remove_node(a);
  const staged_node a2 = tx.new_node(20, {x}, {4});
  tx.replace_uses(g.outputs(a)[0], a2);
  const auto r = tx.commit();
  REQUIRE(r);
  const node_id na = r->node(a2);
  CHECK(index(na) == 3);
  // b (id 1) and na (id 3) are both ready at the start; na stands for a, which ran first.
  CHECK(g.topological_order() == std::vector<node_id>{na, b, c});
  CHECK(g.topological_index(na) == 0);
  CHECK(g.order_key(na) < g.order_key(b));
  CHECK(g.topological_order() == tfg::test::reference_topological_order(g));
}

TEST_CASE("topological order and downstream sets on random DAGs match brute force") {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 300; ++round) {
    const graph_t g = tfg::test::random_dag(rng, 1 + tfg::test::pick(rng, 40));
    REQUIRE(g.check().empty());
    const auto& order = g.topological_order();
    REQUIRE(tfg::test::respects_edges(g, order));
    CHECK(order == tfg::test::reference_topological_order(g));
    for (const node_id n : g.nodes()) {
      CHECK(g.topological_index(n) < order.size());
      CHECK(order[g.topological_index(n)] == n);
      const auto expected = tfg::test::brute_downstream(g, n);
      REQUIRE(g.downstream(n) == expected);
      for (const node_id m : g.nodes()) CHECK(g.reaches(n, m) == expected.test(index(m)));
    }
    for (const edge_id e : g.edges()) {
      boost::dynamic_bitset<> expected(g.node_capacity());
      for (const use& u : g.consumers(e)) {
        expected.set(index(u.node));
        expected |= tfg::test::brute_downstream(g, u.node);
      }
      CHECK(g.downstream(e) == expected);
    }
    // Same construction, same order: the order depends on the structure only.
    const graph_t copy = g;
    CHECK(copy.topological_order() == order);
  }
}

TEST_CASE("caches follow structural changes") {
  graph_t g;
  const edge_id x = g.add_input(0);
  const node_id a = g.add_node(1, {x}, {1});
  CHECK(g.topological_order() == std::vector<node_id>{a});
  CHECK(g.downstream(a).none());
  CHECK(g.reachability_cached());
  const auto v0 = g.version();
  const node_id b = g.add_node(2, {g.outputs(a)[0]}, {2});
  CHECK(g.version() > v0);
  CHECK_FALSE(g.reachability_cached());
  CHECK(g.topological_order() == std::vector<node_id>{a, b});
  CHECK(g.reaches(a, b));
  CHECK(g.downstream(a).size() == 2);

  // A rewrite that moves b off a: a no longer reaches anything.
  auto tx = g.begin_rewrite();
  tx.rewire(use{b, 0}, x);
  const auto v1 = g.version();
  REQUIRE(tx.commit());
  CHECK(g.version() > v1);
  CHECK_FALSE(g.reaches(a, b));
  CHECK(g.downstream(a).none());
  CHECK(g.downstream(x).count() == 2);
}

TEST_CASE("check() reports corrupted structure") {
  using access = tfg::detail::flow_graph_white_box<graph_t>;
  const auto build = [](graph_t& g) {
    const edge_id x = g.add_input(0);
    const node_id a = g.add_node(1, {x}, {1});
    const node_id b = g.add_node(2, {g.outputs(a)[0]}, {2});
    g.add_output(g.outputs(b)[0]);
    return std::pair{a, b};
  };
  const auto mentions = [](const std::vector<std::string>& problems, const std::string& text) {
    return std::any_of(problems.begin(), problems.end(),
                       [&](const std::string& p) { return p.find(text) != std::string::npos; });
  };
  {
    graph_t g;
    const auto [a, b] = build(g);
    // b reads its own output: a consumer mismatch and a cycle.
    access::set_input(g, b, 0, g.outputs(b)[0]);
    const auto problems = g.check();
    CHECK(mentions(problems, "lists consumer n1:0 0 times"));
    CHECK(mentions(problems, "reads another edge"));
    CHECK(mentions(problems, "cycle: n1 -> n1"));
  }
  {
    graph_t g;
    const auto [a, b] = build(g);
    access::add_consumer(g, g.outputs(a)[0], use{b, 0});  // duplicate entry
    CHECK(mentions(g.check(), "2 times"));
  }
  {
    graph_t g;
    const auto [a, b] = build(g);
    access::set_producer_slot(g, g.outputs(a)[0], 3);
    CHECK(mentions(g.check(), "records producer n0 slot 3"));
  }
  {
    graph_t g;
    const auto [a, b] = build(g);
    access::kill_edge(g, g.outputs(b)[0]);
    const auto problems = g.check();
    CHECK(mentions(problems, "output 0 is dead edge e2"));
    CHECK(mentions(problems, "graph output #0 is dead edge e2"));
    CHECK(mentions(problems, "edge_count()"));
  }
}

}  // namespace
