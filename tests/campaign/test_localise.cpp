// The localiser's bisection, against a simulated worker: a chain of n nodes whose outputs
// diverge from position k on (what a defect at node k does). It must name k, confirm it by its
// inputs, and stay within 2 log2(n) + 2 configuration runs.
#include <doctest/doctest.h>

#include "tfg/campaign/localise.hpp"  // first: the header must compile on its own
#include "tfg/campaign/skeleton.hpp"

#include <cmath>
#include <string>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_localise {

using namespace tfg::campaign;

namespace {

/// A chain x -> op0 -> op1 -> ... -> op(n-1), each node one tensor output.
skeleton chain(std::size_t n) {
  skeleton k;
  k.graph_inputs = 1;
  for (std::size_t i = 0; i < n; ++i) {
    skeleton::node x;
    x.kind = i % 3 == 0 ? "aten::relu" : i % 3 == 1 ? "aten::mul" : "aten::add";
    x.inputs = {{i == 0 ? -1 : static_cast<std::int32_t>(i - 1), 0}};
    x.tensor_outputs = {1};
    k.nodes.push_back(x);
  }
  k.outputs = {{"", static_cast<std::int32_t>(n - 1), 0}};
  return k;
}

/// A worker whose cut at position p diverges when p >= k (one configuration run per probe).
struct simulated_worker {
  std::size_t k;
  bool fused_away = false;  ///< the divergence vanishes in every cut (an optimisation across cuts)
  int requests = 0;
  run_outcome operator()(const worker_request& r) {
    ++requests;
    worker_reply reply;
    reply.ok = true;
    located l;
    l.runs = 1;
    for (const auto& c : r.cut) l.diverges.push_back(!fused_away && c.position >= k ? 1 : 0);
    if (r.cut.size() == 1) {
      l.position = r.cut[0].position;
      l.inputs = "f32 r4 contiguous";
    }
    reply.found.push_back(l);
    exchange_result ex;
    ex.kind = outcome::reply;
    ex.reply = to_line(reply);
    return make_outcome(ex);
  }
};

}  // namespace

TEST_CASE("localise: a bisection names the first diverging node of a 300-node chain within 2 log2(n) + 2 runs") {
  const std::size_t n = 300;
  const auto k = chain(n);
  const auto g = build_graph(k);
  localiser<skeleton_graph> loc(
      g, [&](tfg::graph::edge_id e) { return g.data(e); }, [&](tfg::graph::node_id v) { return g.data(v); });
  const double bound = 2 * std::log2(static_cast<double>(n)) + 2;
  for (std::size_t culprit : {std::size_t{0}, std::size_t{1}, std::size_t{137}, std::size_t{298}, n - 1}) {
    CAPTURE(culprit);
    simulated_worker w{culprit};
    worker_request base;
    base.config_a = "eager_op_by_op";
    base.config_b = "graph_executor";
    const auto outs = output_edges(g, k, "");
    const auto l = loc.run(base, outs, /*op_by_op=*/false, /*crash=*/false, std::ref(w));
    REQUIRE(l.localised);
    CHECK(l.position == static_cast<std::int64_t>(culprit));
    CHECK(l.op == k.nodes[culprit].kind);
    CHECK(l.confirmed);
    CHECK(l.inputs == "f32 r4 contiguous");
    CHECK(static_cast<double>(l.runs) <= bound);
    CHECK(l.requests == w.requests);
  }
}

/// BERT's shape after a pooling was inserted on its hidden states: two constants (a linear's
/// weight and bias), a main chain 2..11 with a pooling at 3, a side branch 12..61 that reads
/// only the graph input (the attention mask's arithmetic, later in execution order than the
/// pooling), a main chain of linears and gelus 62..100 and, at 101, the add that joins them.
skeleton branching() {
  skeleton k;
  k.graph_inputs = 1;
  auto add = [&](std::string kind, std::vector<std::int32_t> ins) {
    skeleton::node x;
    x.kind = std::move(kind);
    for (auto i : ins) x.inputs.push_back({i, 0});
    x.tensor_outputs = {1};
    k.nodes.push_back(x);
  };
  add("prim::Constant", {});
  add("prim::Constant", {});
  for (std::int32_t i = 2; i < 12; ++i) add(i == 3 ? "aten::max_pool2d" : "aten::relu", {i == 2 ? -1 : i - 1});
  for (std::int32_t i = 12; i < 62; ++i) add("aten::mul", {i == 12 ? -1 : i - 1});
  for (std::int32_t i = 62; i < 101; ++i)
    if (i % 2 == 0) add("aten::linear", {i == 62 ? 11 : i - 1, 0, 1});
    else add("aten::gelu", {i - 1});
  add("aten::add", {100, 61});
  k.outputs = {{"", 101, 0}};
  return k;
}

/// A worker whose cut diverges when the culprit is among the cut node's ancestors: what a
/// defect (an exporter's, a kernel's) at one node does to every cut that contains it.
/// `raises`: the defect is an exception, which fails a cut of several edges as a whole (every
/// edge of it is marked), as an exporter's error does.
struct dag_worker {
  const skeleton& k;
  std::size_t culprit;
  bool raises = false;
  int requests = 0;
  bool contains(std::size_t p) const {
    if (p == culprit) return true;
    for (const auto& in : k.nodes[p].inputs)
      if (in.first >= 0 && contains(static_cast<std::size_t>(in.first))) return true;
    return false;
  }
  run_outcome operator()(const worker_request& r) {
    ++requests;
    worker_reply reply;
    reply.ok = true;
    located l;
    l.runs = 1;
    bool any = false;
    for (const auto& c : r.cut) {
      l.diverges.push_back(contains(c.position) ? 1 : 0);
      any = any || l.diverges.back();
    }
    if (raises && any) {
      l.diverges.assign(r.cut.size(), 1);
      l.divergence.kind = tfg::oracle::verdict_kind::error_in_one;
    }
    if (r.cut.size() == 1) l.position = r.cut[0].position;
    reply.found.push_back(l);
    exchange_result ex;
    ex.kind = outcome::reply;
    ex.reply = to_line(reply);
    return make_outcome(ex);
  }
};

TEST_CASE("localise: a culprit before an independent branch is found (the cuts form a DAG, not a line)") {
  // Cuts of the side branch (positions 12..61) are clean although they come after the pooling
  // in execution order. With an exception, the check of a linear's inputs (its output, its
  // weight, its bias) fails as a whole: F13 on BERT was blamed on an aten::linear after the
  // mask arithmetic because that check went below the weight, a constant.
  const auto k = branching();
  const auto g = build_graph(k);
  localiser<skeleton_graph> loc(
      g, [&](tfg::graph::edge_id e) { return g.data(e); }, [&](tfg::graph::node_id v) { return g.data(v); });
  const double bound = 2 * std::log2(100.0) + 4;
  for (bool raises : {false, true})
    for (std::size_t culprit : {std::size_t{3}, std::size_t{11}, std::size_t{12}, std::size_t{37}, std::size_t{62},
                                std::size_t{65}, std::size_t{101}}) {
      CAPTURE(raises);
      CAPTURE(culprit);
      dag_worker w{k, culprit, raises};
      worker_request base;
      base.config_a = "eager_op_by_op";
      base.config_b = "onnxruntime";
      const auto l = loc.run(base, output_edges(g, k, ""), false, false, std::ref(w));
      REQUIRE(l.localised);
      CHECK(l.position == static_cast<std::int64_t>(culprit));
      CHECK(l.op == k.nodes[culprit].kind);
      CHECK(l.confirmed);
      CHECK(static_cast<double>(l.runs) <= bound);
    }
}

TEST_CASE("localise: a divergence that vanishes in every cut is reported, not blamed on an operator") {
  const auto k = chain(40);
  const auto g = build_graph(k);
  localiser<skeleton_graph> loc(
      g, [&](tfg::graph::edge_id e) { return g.data(e); }, [&](tfg::graph::node_id v) { return g.data(v); });
  simulated_worker w{10, /*fused_away=*/true};
  worker_request base;
  base.config_b = "frozen_optimized";
  const auto l = loc.run(base, output_edges(g, k, ""), false, false, std::ref(w));
  CHECK_FALSE(l.localised);
  CHECK(l.note.find("optimisation across the cut") != std::string::npos);
  CHECK(w.requests == 1);
}

TEST_CASE("localise: an exception whose configuration names the raising node is placed there, not bisected") {
  // Cuts from position 10 on fail (what an optimiser does with a cut model decides that), but
  // the configuration's own traceback named node 31: the finding is placed at 31, described by
  // one cut, where a bisection would have blamed 10.
  const auto k = chain(40);
  const auto g = build_graph(k);
  localiser<skeleton_graph> loc(
      g, [&](tfg::graph::edge_id e) { return g.data(e); }, [&](tfg::graph::node_id v) { return g.data(v); });
  simulated_worker w{10};
  worker_request base;
  base.config_b = "frozen_optimized";
  const auto named = loc.run(base, output_edges(g, k, ""), false, false, std::ref(w), 31);
  REQUIRE(named.localised);
  CHECK(named.position == 31);
  CHECK(named.op == k.nodes[31].kind);
  CHECK(named.inputs == "f32 r4 contiguous");
  CHECK(named.note.find("frozen_optimized names this node") != std::string::npos);
  CHECK(w.requests == 1);
  simulated_worker w2{10};
  const auto bisected = loc.run(base, output_edges(g, k, ""), false, false, std::ref(w2));
  CHECK(bisected.position == 10);
  // A named position outside the model is ignored (a bisection runs).
  simulated_worker w3{10};
  CHECK(loc.run(base, output_edges(g, k, ""), false, false, std::ref(w3), 40).position == 10);
}

TEST_CASE("localise: a crash is bisected by which cuts crash the worker") {
  const auto k = chain(64);
  const auto g = build_graph(k);
  localiser<skeleton_graph> loc(
      g, [&](tfg::graph::edge_id e) { return g.data(e); }, [&](tfg::graph::node_id v) { return g.data(v); });
  int requests = 0;
  auto crashing = [&](const worker_request& r) {
    ++requests;
    CHECK(r.only_b);
    exchange_result ex;
    if (r.cut.at(0).position >= 23) {
      ex.kind = outcome::signaled;
      ex.signal = 11;
      return make_outcome(ex, "graph_executor");
    }
    worker_reply reply;
    reply.ok = true;
    reply.found.push_back(located{});
    ex.kind = outcome::reply;
    ex.reply = to_line(reply);
    return make_outcome(ex);
  };
  worker_request base;
  base.config_b = "graph_executor";
  const auto l = loc.run(base, output_edges(g, k, ""), false, /*crash=*/true, crashing);
  REQUIRE(l.localised);
  CHECK(l.position == 23);
  CHECK(requests <= 1 + 6);
}

TEST_CASE("localise: skeleton graphs keep the worker's positions and reject malformed input") {
  const auto k = chain(5);
  const auto g = build_graph(k);
  std::size_t i = 0;
  for (auto n : g.topological_order()) CHECK(g.data(n) == k.nodes[i++].kind);
  auto bad = k;
  bad.nodes[2].inputs = {{3, 0}};  // reads a later node
  CHECK_THROWS_AS((void)build_graph(bad), std::invalid_argument);
}

}  // namespace tfg_test_campaign_localise
