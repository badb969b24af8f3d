#pragma once
// Helpers shared by the graph tests: seeded random DAGs, brute-force references for the
// cached analyses, and a full structural snapshot to compare graphs before and after.

#include <algorithm>
#include <boost/dynamic_bitset.hpp>
#include <cstddef>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tfg/graph/flow_graph.hpp"
#include "tfg/graph/json.hpp"

namespace tfg::test {

using graph_t = graph::flow_graph<int, int>;
using graph::edge_id;
using graph::node_id;

inline std::size_t pick(std::mt19937& rng, std::size_t n) {
  return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
}
inline bool chance(std::mt19937& rng, double p) { return std::bernoulli_distribution(p)(rng); }

inline std::vector<edge_id> live_edges(const graph_t& g) { return {g.edges().begin(), g.edges().end()}; }
inline std::vector<node_id> live_nodes(const graph_t& g) { return {g.nodes().begin(), g.nodes().end()}; }

/// A random DAG: 1-3 graph inputs, `nodes` nodes reading 0-3 earlier edges (repeats allowed)
/// and producing 1-2 edges each, 1-3 graph outputs. Node data = creation order; edge data =
/// 1000 + creation order.
inline graph_t random_dag(std::mt19937& rng, std::size_t nodes) {
  graph_t g;
  std::vector<edge_id> edges;
  int next_edge_data = 1000;
  const std::size_t inputs = 1 + pick(rng, 3);
  for (std::size_t i = 0; i < inputs; ++i) edges.push_back(g.add_input(next_edge_data++));
  for (std::size_t k = 0; k < nodes; ++k) {
    std::vector<edge_id> ins;
    const std::size_t arity = pick(rng, 4);
    for (std::size_t i = 0; i < arity; ++i) {
      // Prefer recent edges so that chains get long and reachability is non-trivial.
      const std::size_t span = std::min<std::size_t>(edges.size(), 6);
      ins.push_back(chance(rng, 0.7) ? edges[edges.size() - 1 - pick(rng, span)] : edges[pick(rng, edges.size())]);
    }
    std::vector<int> outs(1 + pick(rng, 2));
    for (int& o : outs) o = next_edge_data++;
    const node_id n = g.add_node(static_cast<int>(k), ins, outs);
    for (const edge_id e : g.outputs(n)) edges.push_back(e);
  }
  const std::size_t outputs = 1 + pick(rng, 3);
  for (std::size_t i = 0; i < outputs; ++i) g.add_output(edges[pick(rng, edges.size())]);
  return g;
}

/// downstream(n) by breadth-first search over consumers.
inline boost::dynamic_bitset<> brute_downstream(const graph_t& g, node_id from) {
  boost::dynamic_bitset<> seen(g.node_capacity());
  std::vector<node_id> queue{from};
  for (std::size_t at = 0; at < queue.size(); ++at) {
    for (const edge_id e : g.outputs(queue[at])) {
      for (const graph::use& u : g.consumers(e)) {
        if (!seen.test(graph::index(u.node))) {
          seen.set(graph::index(u.node));
          queue.push_back(u.node);
        }
      }
    }
  }
  return seen;
}

/// The documented topological order, computed the slow way: repeatedly emit the smallest live
/// node whose producers are all emitted.
inline std::vector<node_id> reference_topological_order(const graph_t& g) {
  std::vector<node_id> order;
  std::vector<bool> done(g.node_capacity(), false);
  const std::vector<node_id> all = live_nodes(g);
  // Slow on purpose: each step scans every node and takes the ready one with the smallest
  // (order_key, id), the documented tie-break.
  while (order.size() < all.size()) {
    const node_id* best = nullptr;
    for (const node_id& n : all) {
      if (done[graph::index(n)]) continue;
      const auto ins = g.inputs(n);
      const bool ready = std::all_of(ins.begin(), ins.end(), [&](edge_id e) {
        return g.producer(e) == graph::no_node || done[graph::index(g.producer(e))];
      });
      if (ready && (!best || g.order_key(n) < g.order_key(*best))) best = &n;
    }
    if (!best) break;  // cyclic: leave the order short
    done[graph::index(*best)] = true;
    order.push_back(*best);
  }
  return order;
}

/// True if `order` lists each live node once and every producer before its consumers.
inline bool respects_edges(const graph_t& g, const std::vector<node_id>& order) {
  std::vector<std::size_t> pos(g.node_capacity(), SIZE_MAX);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (!g.alive(order[i]) || pos[graph::index(order[i])] != SIZE_MAX) return false;
    pos[graph::index(order[i])] = i;
  }
  if (order.size() != g.node_count()) return false;
  for (const node_id n : order) {
    for (const edge_id e : g.inputs(n)) {
      const node_id p = g.producer(e);
      if (p != graph::no_node && pos[graph::index(p)] >= pos[graph::index(n)]) return false;
    }
  }
  return true;
}

/// Everything observable about the structure and data, plus the version.
inline std::string snapshot(const graph_t& g) {
  std::ostringstream os;
  os << "version " << g.version() << " nodes " << g.node_count() << '/' << g.node_capacity() << " edges "
     << g.edge_count() << '/' << g.edge_capacity() << '\n';
  graph::write_json(
      os, g, [&](std::ostream& o, node_id n) { o << "\"data\":" << g.data(n); },
      [&](std::ostream& o, edge_id e) { o << "\"data\":" << g.data(e) << ",\"slot\":" << g.producer_slot(e); });
  return os.str();
}

}  // namespace tfg::test
