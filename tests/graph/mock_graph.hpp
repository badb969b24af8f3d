#pragma once
// A minimal tensor_graph that is not a flow_graph: plain vectors and exactly the operations the
// concept lists. Generic code that compiles against it uses nothing beyond the concept.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tfg/graph/ids.hpp"

namespace tfg::test {

struct mock_graph {
  using node_id = graph::node_id;
  using edge_id = graph::edge_id;

  std::vector<std::vector<edge_id>> node_inputs;   // per node
  std::vector<std::vector<edge_id>> node_outputs;  // per node
  std::vector<node_id> edge_producer;              // per edge
  std::vector<std::vector<graph::use>> edge_uses;  // per edge
  std::vector<edge_id> in, out;

  /// Builds a node the way flow_graph does, so the two can be compared.
  edge_id input() {
    edge_producer.push_back(graph::no_node);
    edge_uses.emplace_back();
    in.push_back(edge_id{static_cast<std::uint32_t>(edge_producer.size() - 1)});
    return in.back();
  }
  node_id node(const std::vector<edge_id>& ins, std::size_t outputs) {
    const node_id n{static_cast<std::uint32_t>(node_inputs.size())};
    node_inputs.push_back(ins);
    for (std::uint32_t s = 0; s < ins.size(); ++s) {
      edge_uses[graph::index(ins[s])].push_back({n, s});
    }
    node_outputs.emplace_back();
    for (std::size_t j = 0; j < outputs; ++j) {
      node_outputs.back().push_back(edge_id{static_cast<std::uint32_t>(edge_producer.size())});
      edge_producer.push_back(n);
      edge_uses.emplace_back();
    }
    return n;
  }

  std::vector<node_id> nodes() const {
    std::vector<node_id> all;
    for (std::uint32_t i = 0; i < node_inputs.size(); ++i) all.push_back(node_id{i});
    return all;
  }
  std::vector<edge_id> edges() const {
    std::vector<edge_id> all;
    for (std::uint32_t i = 0; i < edge_producer.size(); ++i) all.push_back(edge_id{i});
    return all;
  }
  std::size_t node_capacity() const { return node_inputs.size(); }
  std::size_t edge_capacity() const { return edge_producer.size(); }
  bool alive(node_id n) const { return graph::index(n) < node_capacity(); }
  bool alive(edge_id e) const { return graph::index(e) < edge_capacity(); }
  std::vector<node_id> topological_order() const { return nodes(); }  // built in order
  const std::vector<edge_id>& inputs(node_id n) const { return node_inputs[graph::index(n)]; }
  const std::vector<edge_id>& outputs(node_id n) const { return node_outputs[graph::index(n)]; }
  node_id producer(edge_id e) const { return edge_producer[graph::index(e)]; }
  std::uint32_t producer_slot(edge_id e) const {
    const node_id p = producer(e);
    if (p == graph::no_node) return 0;
    const auto& outs = outputs(p);
    for (std::uint32_t j = 0; j < outs.size(); ++j) {
      if (outs[j] == e) return j;
    }
    return 0;
  }
  const std::vector<graph::use>& consumers(edge_id e) const { return edge_uses[graph::index(e)]; }
  const std::vector<edge_id>& graph_inputs() const { return in; }
  const std::vector<edge_id>& graph_outputs() const { return out; }
};

}  // namespace tfg::test
