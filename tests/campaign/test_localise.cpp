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
