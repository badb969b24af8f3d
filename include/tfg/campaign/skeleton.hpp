#pragma once
/// \file
/// A model's structure as a worker reported it (`protocol.hpp`, `skeleton`), as a graph the
/// localiser can bisect over: node data is the op kind, edge data whether the edge is a tensor.
/// Node ids are the topological positions the worker uses.
#include <stdexcept>
#include <string>
#include <vector>

#include "tfg/campaign/protocol.hpp"
#include "tfg/graph/flow_graph.hpp"

namespace tfg::campaign {

using skeleton_graph = graph::flow_graph<std::string, bool>;

/// The graph of a skeleton. Throws std::invalid_argument on a malformed one (an input that
/// refers to a later node or a missing output slot).
[[nodiscard]] inline skeleton_graph build_graph(const skeleton& k) {
  skeleton_graph g;
  std::vector<graph::edge_id> inputs;
  for (std::uint32_t i = 0; i < k.graph_inputs; ++i) inputs.push_back(g.add_input(true));
  std::vector<std::vector<graph::edge_id>> outs;
  outs.reserve(k.nodes.size());
  for (std::size_t n = 0; n < k.nodes.size(); ++n) {
    const auto& x = k.nodes[n];
    std::vector<graph::edge_id> ins;
    for (auto [p, s] : x.inputs) {
      if (p < 0) {
        if (s >= inputs.size())
          throw std::invalid_argument("skeleton: graph input " + std::to_string(s) + " out of range");
        ins.push_back(inputs[s]);
      } else {
        if (static_cast<std::size_t>(p) >= n || s >= outs[static_cast<std::size_t>(p)].size())
          throw std::invalid_argument("skeleton: node " + std::to_string(n) + " reads a missing value");
        ins.push_back(outs[static_cast<std::size_t>(p)][s]);
      }
    }
    const auto id = g.add_node(x.kind, ins, std::vector<bool>(x.tensor_outputs.begin(), x.tensor_outputs.end()));
    const auto o = g.outputs(id);
    outs.emplace_back(o.begin(), o.end());
  }
  for (const auto& o : k.outputs)
    if (o.position >= 0 && static_cast<std::size_t>(o.position) < outs.size() &&
        o.slot < outs[static_cast<std::size_t>(o.position)].size())
      g.add_output(outs[static_cast<std::size_t>(o.position)][o.slot]);
  return g;
}

/// The graph output edges of `g` (built from `k`) under output path `path` ("1.0"); every
/// output for "" and for gradients ("grad.K").
[[nodiscard]] inline std::vector<graph::edge_id> output_edges(const skeleton_graph& g, const skeleton& k,
                                                              const std::string& path) {
  std::vector<graph::edge_id> out;
  const bool all = path.empty() || path.rfind("grad", 0) == 0;
  const auto& order = g.topological_order();
  for (const auto& o : k.outputs) {
    if (!all && !(o.path == path || o.path.rfind(path + ".", 0) == 0 || path.rfind(o.path + ".", 0) == 0)) continue;
    if (o.position < 0 || static_cast<std::size_t>(o.position) >= order.size()) continue;
    const auto outs = g.outputs(order[static_cast<std::size_t>(o.position)]);
    if (o.slot < outs.size()) out.push_back(outs[o.slot]);
  }
  return out;
}

}  // namespace tfg::campaign
