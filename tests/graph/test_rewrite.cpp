// rewrite_transaction: accepted rewrites do what they say, rejected ones leave the graph
// exactly as it was, and random transactions never break the graph's invariants.

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_test_util.hpp"
#include "tfg/graph.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_graph_rewrite {

namespace {

using namespace tfg::graph;
using tfg::test::graph_t;
using tfg::test::snapshot;

std::vector<use> uses(const graph_t& g, edge_id e) { return {g.consumers(e).begin(), g.consumers(e).end()}; }
std::vector<edge_id> ids(std::span<const edge_id> s) { return {s.begin(), s.end()}; }
edge_id out(const graph_t& g, node_id n, std::size_t i = 0) { return g.outputs(n)[i]; }

// x -> a -> b -> c -> output, b's output also read by d -> output.
struct chain {
  graph_t g;
  edge_id x;
  node_id a, b, c, d;
  chain() {
    x = g.add_input(0);
    a = g.add_node(1, {x}, {1});
    b = g.add_node(2, {out(g, a)}, {2});
    c = g.add_node(3, {out(g, b)}, {3});
    d = g.add_node(4, {out(g, b)}, {4});
    g.add_output(out(g, c));
    g.add_output(out(g, d));
  }
};

// Commits and expects a rejection of `kind` that changes nothing.
void expect_rejected(graph_t& g, rewrite_transaction<graph_t>& tx, rewrite_error_kind kind,
                     const std::string& message_part) {
  const std::string before = snapshot(g);
  const auto version = g.version();
  const auto result = tx.commit();
  REQUIRE_FALSE(result);
  CHECK(result.error().kind == kind);
  INFO("message: " << result.error().message);
  CHECK(result.error().message.find(message_part) != std::string::npos);
  CHECK(g.version() == version);
  CHECK(snapshot(g) == before);
  CHECK(g.check().empty());
  CHECK_FALSE(tx.empty());  // a rejected transaction keeps its operations
}

TEST_CASE("accepted: replace a single node") {
  chain t;
  auto& g = t.g;
  auto tx = g.begin_rewrite();
  tx.remove_node(t.b);
  const staged_node b2 = tx.new_node(20, {out(g, t.a)}, {21});
  tx.replace_uses(out(g, t.b), b2);
  const edge_id old_b = out(g, t.b);
  const auto version = g.version();
  const auto r = tx.commit();
  REQUIRE(r);
  CHECK(tx.empty());
  CHECK(g.version() > version);
  const node_id nb = r->node(b2);
  const edge_id eb = r->edge(b2);
  CHECK(g.data(nb) == 20);
  CHECK(g.data(eb) == 21);
  CHECK(r->removed_nodes == std::vector<node_id>{t.b});
  CHECK(r->removed_edges == std::vector<edge_id>{old_b});
  CHECK_FALSE(g.alive(t.b));
  CHECK_FALSE(g.alive(old_b));
  CHECK(ids(g.inputs(nb)) == std::vector<edge_id>{out(g, t.a)});
  CHECK(uses(g, out(g, t.a)) == std::vector<use>{{nb, 0}});
  CHECK(uses(g, eb) == std::vector<use>{{t.c, 0}, {t.d, 0}});
  CHECK(g.producer(eb) == nb);
  CHECK(g.node_count() == 4);
  CHECK(g.check().empty());
  CHECK(tfg::test::respects_edges(g, g.topological_order()));
  CHECK(g.reaches(t.a, t.c));
  CHECK(g.reaches(nb, t.d));
}

TEST_CASE("accepted: insert a node on an edge with replace_uses") {
  chain t;
  auto& g = t.g;
  const edge_id eb = out(g, t.b);
  auto tx = g.begin_rewrite();
  // The inserted node reads eb itself: replace_uses only redirects pre-existing uses.
  const staged_node id = tx.new_node(30, {eb}, {31});
  tx.replace_uses(eb, id);
  const auto r = tx.commit();
  REQUIRE(r);
  const node_id n = r->node(id);
  CHECK(uses(g, eb) == std::vector<use>{{n, 0}});
  CHECK(uses(g, out(g, n)) == std::vector<use>{{t.c, 0}, {t.d, 0}});
  CHECK(g.topological_order() == std::vector<node_id>{t.a, t.b, n, t.c, t.d});
  CHECK(g.check().empty());
}

TEST_CASE("accepted: insert on a graph input and on a graph output") {
  chain t;
  auto& g = t.g;
  auto tx = g.begin_rewrite();
  const staged_node pre = tx.new_node(40, {t.x}, {41});
  tx.replace_uses(t.x, pre);
  const edge_id ec = out(g, t.c);
  const staged_node post = tx.new_node(42, {ec}, {43});
  tx.replace_uses(ec, post);
  const auto r = tx.commit();
  REQUIRE(r);
  CHECK(ids(g.inputs(t.a)) == std::vector<edge_id>{r->edge(pre)});
  CHECK(ids(g.graph_outputs()) == std::vector<edge_id>{r->edge(post), out(g, t.d)});
  CHECK(g.is_graph_output(r->edge(post)));
  CHECK_FALSE(g.is_graph_output(ec));
  CHECK(ids(g.graph_inputs()) == std::vector<edge_id>{t.x});
  CHECK(g.check().empty());
}

TEST_CASE("accepted: delete a node and reconnect its boundary") {
  chain t;
  auto& g = t.g;
  auto tx = g.begin_rewrite();
  tx.remove_node(t.b);
  tx.replace_uses(out(g, t.b), out(g, t.a));
  REQUIRE(tx.commit());
  CHECK(uses(g, out(g, t.a)) == std::vector<use>{{t.c, 0}, {t.d, 0}});
  CHECK(g.node_count() == 3);
  CHECK(g.edge_count() == 4);
  CHECK(g.check().empty());
}

TEST_CASE("accepted: delete a node whose output is a graph output, redirecting the output") {
  chain t;
  auto& g = t.g;
  auto tx = g.begin_rewrite();
  tx.remove_node(t.c);
  tx.replace_uses(out(g, t.c), out(g, t.b));
  REQUIRE(tx.commit());
  CHECK(ids(g.graph_outputs()) == std::vector<edge_id>{out(g, t.b), out(g, t.d)});
  CHECK(g.is_graph_output(out(g, t.b)));
  CHECK(g.check().empty());
}

TEST_CASE("accepted: replace a three-node chain with one node") {
  // x -> p -> q -> r -> output, with q's output also read by s.
  graph_t g;
  const edge_id x = g.add_input(0);
  const edge_id y = g.add_input(1);
  const node_id p = g.add_node(1, {x, y}, {1});
  const node_id q = g.add_node(2, {out(g, p)}, {2});
  const node_id r = g.add_node(3, {out(g, q), y}, {3});
  const node_id s = g.add_node(4, {out(g, r)}, {4});
  g.add_output(out(g, s));
  g.add_output(out(g, r));

  auto tx = g.begin_rewrite();
  for (const node_id n : {p, q, r}) tx.remove_node(n);
  const staged_node fused = tx.new_node(50, {x, y}, {51});
  tx.replace_uses(out(g, r), fused);
  const auto res = tx.commit();
  REQUIRE(res);
  const node_id f = res->node(fused);
  CHECK(res->removed_nodes == std::vector<node_id>{p, q, r});
  CHECK(res->removed_edges.size() == 3);
  CHECK(g.node_count() == 2);
  CHECK(ids(g.inputs(f)) == std::vector<edge_id>{x, y});
  CHECK(ids(g.inputs(s)) == std::vector<edge_id>{out(g, f)});
  CHECK(ids(g.graph_outputs()) == std::vector<edge_id>{out(g, s), out(g, f)});
  CHECK(uses(g, x) == std::vector<use>{{f, 0}});
  CHECK(uses(g, y) == std::vector<use>{{f, 1}});
  CHECK(g.topological_order() == std::vector<node_id>{f, s});
  CHECK(g.check().empty());
}

TEST_CASE("accepted: rewire one consumer of a multi-consumer edge") {
  chain t;
  auto& g = t.g;
  const edge_id eb = out(g, t.b);
  auto tx = g.begin_rewrite();
  const staged_node n = tx.new_node(60, {eb}, {61});
  tx.rewire(use{t.d, 0}, n);
  const auto r = tx.commit();
  REQUIRE(r);
  CHECK(uses(g, eb) == std::vector<use>{{t.c, 0}, {r->node(n), 0}});
  CHECK(ids(g.inputs(t.d)) == std::vector<edge_id>{r->edge(n)});
  CHECK(ids(g.inputs(t.c)) == std::vector<edge_id>{eb});
  CHECK(g.check().empty());
}

TEST_CASE("accepted: multi-output staged nodes, staged-to-staged inputs, last operation wins") {
  chain t;
  auto& g = t.g;
  auto tx = g.begin_rewrite();
  tx.remove_node(t.b);
  const staged_node split = tx.new_node(70, {out(g, t.a)}, {71, 72});
  const staged_node join = tx.new_node(73, {tx.output(split, 1), tx.output(split, 0)}, {74});
  tx.replace_uses(out(g, t.b), tx.output(split, 0));
  tx.rewire(use{t.d, 0}, join);  // overrides what replace_uses staged for d
  const auto r = tx.commit();
  REQUIRE(r);
  const edge_id s0 = r->edge(tx.output(split, 0));
  const edge_id s1 = r->edge(value_ref(split, 1));
  CHECK(ids(g.inputs(r->node(join))) == std::vector<edge_id>{s1, s0});
  CHECK(ids(g.inputs(t.c)) == std::vector<edge_id>{s0});
  CHECK(ids(g.inputs(t.d)) == std::vector<edge_id>{r->edge(join)});
  CHECK(g.producer_slot(s1) == 1);
  CHECK(g.check().empty());
}

TEST_CASE("accepted: an empty or no-op transaction changes nothing, not even the version") {
  chain t;
  auto& g = t.g;
  const std::string before = snapshot(g);
  auto tx = g.begin_rewrite();
  CHECK(tx.commit());
  tx.rewire(use{t.c, 0}, out(g, t.b));  // already reads it
  CHECK(tx.commit());
  CHECK(snapshot(g) == before);
}

TEST_CASE("accepted: no false cycle through a removed node or a rewired-away slot") {
  // v -> r -> p: before the rewrite v reaches p, but only through r, which is removed. After
  // it, p reads x, N reads p, and v reads N: x -> p -> N -> v, acyclic.
  for (const bool warm : {false, true}) {
    graph_t g;
    const edge_id x = g.add_input(0);
    const node_id v = g.add_node(1, {x}, {1});
    const node_id r = g.add_node(2, {out(g, v)}, {2});
    const node_id p = g.add_node(3, {out(g, r)}, {3});
    g.add_output(out(g, p));
    if (warm) (void)g.downstream(v);
    CHECK(g.reachability_cached() == warm);
    auto tx = g.begin_rewrite();
    tx.remove_node(r);
    tx.rewire(use{p, 0}, x);
    const staged_node n = tx.new_node(4, {out(g, p)}, {5});
    tx.rewire(use{v, 0}, n);
    const auto res = tx.commit();
    REQUIRE_MESSAGE(res, (res ? "" : res.error().message));
    CHECK(g.topological_order() == std::vector<node_id>{p, res->node(n), v});
    CHECK(g.check().empty());
  }
  // Rewiring a slot away removes the old dependency: a -> b becomes x -> b, then a reads b.
  for (const bool warm : {false, true}) {
    graph_t g;
    const edge_id x = g.add_input(0);
    const node_id a = g.add_node(1, {x}, {1});
    const node_id b = g.add_node(2, {out(g, a)}, {2});
    g.add_output(out(g, b));
    if (warm) (void)g.downstream(a);
    auto tx = g.begin_rewrite();
    tx.rewire(use{b, 0}, x);
    tx.rewire(use{a, 0}, out(g, b));
    const auto res = tx.commit();
    REQUIRE(res);
    CHECK(g.topological_order() == std::vector<node_id>{b, a});
    CHECK(g.check().empty());
  }
}

TEST_CASE("rejected: dangling edges") {
  SUBCASE("a removed producer keeps an external consumer") {
    chain t;
    auto tx = t.g.begin_rewrite();
    tx.remove_node(t.b);
    const staged_node n = tx.new_node(80, {out(t.g, t.a)}, {81});
    tx.rewire(use{t.c, 0}, n);  // d still reads b's output
    expect_rejected(t.g, tx, rewrite_error_kind::dangling_edge,
                    "e2 (output 0 of removed node n1) is still read by n3:0");
  }
  SUBCASE("a removed node's output is a graph output") {
    chain t;
    auto tx = t.g.begin_rewrite();
    tx.remove_node(t.c);
    expect_rejected(t.g, tx, rewrite_error_kind::dangling_edge, "is still graph output #0");
  }
  SUBCASE("removing both consumers and the producer is fine, the outputs are not") {
    chain t;
    auto tx = t.g.begin_rewrite();
    for (const node_id n : {t.b, t.c, t.d}) tx.remove_node(n);
    expect_rejected(t.g, tx, rewrite_error_kind::dangling_edge, "graph output");
    tx.replace_uses(out(t.g, t.c), out(t.g, t.a));
    tx.replace_uses(out(t.g, t.d), t.x);
    CHECK(tx.commit());  // fixed and retried
    CHECK(ids(t.g.graph_outputs()) == std::vector<edge_id>{out(t.g, t.a), t.x});
    CHECK(t.g.check().empty());
  }
}

TEST_CASE("rejected: cycles") {
  SUBCASE("an upstream consumer rewired to read a downstream new node") {
    chain t;
    auto tx = t.g.begin_rewrite();
    const staged_node n = tx.new_node(90, {out(t.g, t.c)}, {91});
    tx.rewire(use{t.a, 0}, n);
    expect_rejected(t.g, tx, rewrite_error_kind::cycle, "new#0 -> n0");
  }
  SUBCASE("replace_uses with an edge downstream of the replaced uses") {
    chain t;
    (void)t.g.downstream(t.a);  // exercise the exact (warm) pruning
    auto tx = t.g.begin_rewrite();
    tx.replace_uses(out(t.g, t.a), out(t.g, t.c));
    expect_rejected(t.g, tx, rewrite_error_kind::cycle, "cycle");
  }
  SUBCASE("a node rewired to read its own output") {
    chain t;
    auto tx = t.g.begin_rewrite();
    tx.rewire(use{t.b, 0}, out(t.g, t.b));
    expect_rejected(t.g, tx, rewrite_error_kind::cycle, "n1 -> n1");
  }
  SUBCASE("a cycle through two staged nodes and a replaced node") {
    chain t;
    auto tx = t.g.begin_rewrite();
    tx.remove_node(t.b);
    const staged_node m = tx.new_node(92, {out(t.g, t.c)}, {93});  // reads c, fed by m
    const staged_node k = tx.new_node(94, {out(t.g, t.a), m}, {95});
    tx.replace_uses(out(t.g, t.b), k);
    expect_rejected(t.g, tx, rewrite_error_kind::cycle, "cycle");
  }
}

TEST_CASE("rejected: dead references") {
  chain t;
  auto& g = t.g;
  // Make a tombstone: remove d, whose output goes away with it.
  const edge_id ed = out(g, t.d);
  {
    auto tx = g.begin_rewrite();
    tx.remove_node(t.d);
    tx.replace_uses(ed, out(g, t.b));
    REQUIRE(tx.commit());
  }
  SUBCASE("removing a dead node") {
    auto tx = g.begin_rewrite();
    tx.remove_node(t.d);
    expect_rejected(g, tx, rewrite_error_kind::dead_reference, "remove_node(n3)");
  }
  SUBCASE("a staged input reads a dead edge") {
    auto tx = g.begin_rewrite();
    const staged_node n = tx.new_node(100, {ed}, {101});
    tx.replace_uses(out(g, t.c), n);
    expect_rejected(g, tx, rewrite_error_kind::dead_reference, "new#0 input 0 reads e4");
  }
  SUBCASE("replacing uses of a dead edge, or with a dead edge") {
    auto tx = g.begin_rewrite();
    tx.replace_uses(ed, out(g, t.a));
    expect_rejected(g, tx, rewrite_error_kind::dead_reference, "e4 not alive");
    auto tx2 = g.begin_rewrite();
    tx2.replace_uses(out(g, t.a), ed);
    expect_rejected(g, tx2, rewrite_error_kind::dead_reference, "reads e4");
  }
  SUBCASE("rewiring a dead node") {
    auto tx = g.begin_rewrite();
    tx.rewire(use{t.d, 0}, t.x);
    expect_rejected(g, tx, rewrite_error_kind::dead_reference, "n3 not alive");
  }
  SUBCASE("a staged handle from nowhere") {
    auto tx = g.begin_rewrite();
    tx.replace_uses(out(g, t.c), staged_node{3});
    expect_rejected(g, tx, rewrite_error_kind::dead_reference, "not a node of this transaction");
  }
}

TEST_CASE("rejected: reading an edge whose producer the rewrite removes is a dead reference") {
  chain t;
  auto tx = t.g.begin_rewrite();
  tx.remove_node(t.b);
  const staged_node n = tx.new_node(110, {out(t.g, t.b)}, {111});
  tx.replace_uses(out(t.g, t.b), n);
  expect_rejected(t.g, tx, rewrite_error_kind::dead_reference, "new#0 input 0 reads e2, produced by removed node n1");
  auto tx2 = t.g.begin_rewrite();
  tx2.remove_node(t.b);
  tx2.replace_uses(out(t.g, t.b), out(t.g, t.a));
  tx2.rewire(use{t.c, 0}, out(t.g, t.b));
  expect_rejected(t.g, tx2, rewrite_error_kind::dead_reference, "produced by removed node n1");
}

TEST_CASE("rejected: rewiring an input of a node the rewrite removes") {
  chain t;
  auto tx = t.g.begin_rewrite();
  tx.remove_node(t.c);
  tx.replace_uses(out(t.g, t.c), out(t.g, t.b));
  tx.rewire(use{t.c, 0}, t.x);
  expect_rejected(t.g, tx, rewrite_error_kind::removed_input, "rewire(n2:0, e0): n2 is removed by this rewrite");
}

TEST_CASE("rejected: bad slots") {
  chain t;
  auto tx = t.g.begin_rewrite();
  tx.rewire(use{t.c, 1}, t.x);
  expect_rejected(t.g, tx, rewrite_error_kind::bad_slot, "n2 has 1 input slots");
  auto tx2 = t.g.begin_rewrite();
  const staged_node n = tx2.new_node(120, {t.x}, {121});
  tx2.rewire(use{t.c, 0}, tx2.output(n, 1));
  expect_rejected(t.g, tx2, rewrite_error_kind::bad_slot, "new#0 has 1 outputs");
}

// ---- fuzz ----------------------------------------------------------------------------------

// The rewritten graph built independently from the staged operations, for the cycle oracle.
struct model_op {
  bool all_uses;
  edge_id old;
  use target;
  value_ref with;
};

bool model_has_cycle(const graph_t& g, const std::vector<node_id>& removed,
                     const std::vector<std::vector<value_ref>>& staged_inputs, const std::vector<model_op>& ops) {
  const auto is_removed = [&](node_id n) { return std::find(removed.begin(), removed.end(), n) != removed.end(); };
  // Vertex numbering: existing nodes by index, staged k at capacity + k.
  const std::size_t base = g.node_capacity();
  std::unordered_map<use, value_ref> final_input;
  for (const model_op& op : ops) {
    if (!op.all_uses) {
      final_input.insert_or_assign(op.target, op.with);
      continue;
    }
    for (const use& u : g.consumers(op.old)) {
      if (!is_removed(u.node)) final_input.insert_or_assign(u, op.with);
    }
  }
  std::vector<std::vector<std::size_t>> preds(base + staged_inputs.size());
  const auto producer_of = [&](const value_ref& v) -> std::size_t {
    if (v.is_staged()) return base + v.node().index;
    const node_id p = g.producer(v.edge());
    return p == no_node ? SIZE_MAX : index(p);
  };
  for (const node_id n : g.nodes()) {
    if (is_removed(n)) continue;
    for (std::uint32_t s = 0; s < g.inputs(n).size(); ++s) {
      const auto it = final_input.find(use{n, s});
      const std::size_t p = producer_of(it == final_input.end() ? g.inputs(n)[s] : it->second);
      if (p != SIZE_MAX) preds[index(n)].push_back(p);
    }
  }
  for (std::size_t k = 0; k < staged_inputs.size(); ++k) {
    for (const value_ref& v : staged_inputs[k]) {
      const std::size_t p = producer_of(v);
      if (p != SIZE_MAX) preds[base + k].push_back(p);
    }
  }
  // Recursive three-colour DFS; these graphs are small.
  std::vector<int> colour(preds.size(), 0);
  std::function<bool(std::size_t)> visit = [&](std::size_t v) {
    colour[v] = 1;
    for (const std::size_t p : preds[v]) {
      if (colour[p] == 1 || (colour[p] == 0 && visit(p))) return true;
    }
    colour[v] = 2;
    return false;
  };
  for (std::size_t v = 0; v < preds.size(); ++v) {
    if (colour[v] == 0 && visit(v)) return true;
  }
  return false;
}

TEST_CASE("fuzz: random transactions on random DAGs keep the graph valid") {
  using tfg::test::chance;
  using tfg::test::pick;
  std::mt19937 rng(7);
  std::unordered_map<int, int> outcomes;  // by kind, -1 for success
  int next_data = 5000;
  for (int round = 0; round < 60; ++round) {
    graph_t g = tfg::test::random_dag(rng, 4 + pick(rng, 25));
    REQUIRE(g.check().empty());
    for (int step = 0; step < 10; ++step) {
      const auto nodes = tfg::test::live_nodes(g);
      const auto edges = tfg::test::live_edges(g);
      if (nodes.empty()) break;

      // Remove a random connected piece: a node, optionally followed by consumers.
      std::vector<node_id> removed{nodes[pick(rng, nodes.size())]};
      for (int grow = 0; grow < 2 && chance(rng, 0.5); ++grow) {
        const node_id last = removed.back();
        if (g.outputs(last).empty()) break;
        const auto cons = g.consumers(g.outputs(last)[pick(rng, g.outputs(last).size())]);
        if (cons.empty()) break;
        const node_id next = cons[pick(rng, cons.size())].node;
        if (std::find(removed.begin(), removed.end(), next) == removed.end()) {
          removed.push_back(next);
        }
      }
      // Boundary inputs: edges the piece reads from outside.
      std::vector<edge_id> boundary;
      for (const node_id n : removed) {
        for (const edge_id e : g.inputs(n)) {
          const node_id p = g.producer(e);
          if (p == no_node || std::find(removed.begin(), removed.end(), p) == removed.end()) {
            boundary.push_back(e);
          }
        }
      }
      if (boundary.empty()) boundary.push_back(g.graph_inputs()[0]);

      auto tx = g.begin_rewrite();
      std::vector<std::vector<value_ref>> staged_inputs;
      std::vector<std::size_t> staged_outputs;
      std::vector<model_op> ops;
      for (const node_id n : removed) tx.remove_node(n);
      const auto random_value = [&]() -> value_ref {
        if (!staged_inputs.empty() && chance(rng, 0.5)) {
          const std::size_t k = pick(rng, staged_inputs.size());
          return value_ref(staged_node{static_cast<std::uint32_t>(k)},
                           static_cast<std::uint32_t>(pick(rng, staged_outputs[k])));
        }
        // Mostly boundary edges (valid), sometimes any edge (may close a cycle or read a
        // removed node's output).
        return chance(rng, 0.8) ? boundary[pick(rng, boundary.size())] : edges[pick(rng, edges.size())];
      };
      const std::size_t new_nodes = pick(rng, 3);
      for (std::size_t k = 0; k < new_nodes; ++k) {
        std::vector<value_ref> ins;
        for (std::size_t i = 0, arity = pick(rng, 3); i < arity; ++i) ins.push_back(random_value());
        std::vector<int> outs(1 + pick(rng, 2));
        for (int& o : outs) o = next_data++;
        staged_inputs.push_back(ins);
        staged_outputs.push_back(outs.size());
        tx.new_node(next_data++, ins, outs);
      }
      // Redirect the piece's outputs, usually.
      for (const node_id n : removed) {
        for (const edge_id e : g.outputs(n)) {
          if (chance(rng, 0.9)) {
            const value_ref with = random_value();
            tx.replace_uses(e, with);
            ops.push_back({true, e, {}, with});
          }
        }
      }
      // Sometimes rewire a random slot anywhere, or reference garbage.
      if (chance(rng, 0.3)) {
        const node_id n = nodes[pick(rng, nodes.size())];
        if (!g.inputs(n).empty()) {
          const use u{n, static_cast<std::uint32_t>(pick(rng, g.inputs(n).size() + (chance(rng, 0.1) ? 1 : 0)))};
          const value_ref with = random_value();
          tx.rewire(u, with);
          ops.push_back({false, no_edge, u, with});
        }
      }
      if (chance(rng, 0.05)) {
        tx.remove_node(node_id{static_cast<std::uint32_t>(g.node_capacity() + 3)});  // never issued
      }
      if (chance(rng, 0.5)) (void)g.downstream(nodes[0]);  // both pruning modes

      const std::string before = snapshot(g);
      const auto result = tx.commit();
      const auto problems = g.check();
      INFO("round " << round << " step " << step);
      REQUIRE_MESSAGE(problems.empty(), problems.front());
      if (!result) {
        ++outcomes[static_cast<int>(result.error().kind)];
        REQUIRE(snapshot(g) == before);
        if (result.error().kind == rewrite_error_kind::cycle) {
          CHECK(model_has_cycle(g, removed, staged_inputs, ops));
        }
        continue;
      }
      ++outcomes[-1];
      for (const node_id n : removed) CHECK_FALSE(g.alive(n));
      for (std::size_t k = 0; k < staged_inputs.size(); ++k) {
        const node_id n = result->node(staged_node{static_cast<std::uint32_t>(k)});
        REQUIRE(g.inputs(n).size() == staged_inputs[k].size());
        for (std::size_t i = 0; i < staged_inputs[k].size(); ++i) {
          CHECK(g.inputs(n)[i] == result->edge(staged_inputs[k][i]));
        }
      }
      // Caches were invalidated: the analyses match brute force on the new structure.
      REQUIRE(tfg::test::respects_edges(g, g.topological_order()));
      CHECK(g.topological_order() == tfg::test::reference_topological_order(g));
      for (const node_id n : g.nodes()) {
        REQUIRE(g.downstream(n) == tfg::test::brute_downstream(g, n));
      }
    }
  }
  MESSAGE("outcomes (-1 = accepted, else rewrite_error_kind): "
          << outcomes[-1] << " accepted, " << outcomes[0] << " dangling, " << outcomes[1] << " cycle, " << outcomes[2]
          << " dead, " << outcomes[3] << " removed_input, " << outcomes[4] << " bad_slot");
  CHECK(outcomes[-1] > 50);
  CHECK(outcomes[static_cast<int>(rewrite_error_kind::cycle)] > 0);
  CHECK(outcomes[static_cast<int>(rewrite_error_kind::dangling_edge)] > 0);
}

}  // namespace

}  // namespace tfg_test_graph_rewrite
