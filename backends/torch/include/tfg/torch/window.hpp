#pragma once
/// Windows of an operator: the operator and its producers up to some depth, as a model of its
/// own whose graph inputs are the values that flow into it from outside (reduction of findings,
/// reduce.hpp; the operator-local accuracy check of localisation, localise.hpp).
///
///  - `locate_culprit(m, position, op)`: the node a finding's localisation names.
///  - `window_of(m, culprit, depth)`: the nodes of the window (constants feeding it included).
///  - `window_model(m, window, culprit)`: the window as a model; `boundary` lists, per new
///    graph input, the original edge it stands for.
#include "tfg/torch/model.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

/// The node at `position` of `m`'s execution order when its kind is `op`; else the node of kind
/// `op` nearest to that position; nullopt when `m` has none.
[[nodiscard]] inline std::optional<graph::node_id> locate_culprit(const model& m, std::size_t position,
                                                                  std::string_view op) {
  const auto order = m.graph.topological_order();
  std::optional<graph::node_id> best;
  std::size_t best_distance = static_cast<std::size_t>(-1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (m.graph.data(order[i]).name() != op) continue;
    const std::size_t d = i > position ? i - position : position - i;
    if (d < best_distance) best_distance = d, best = order[i];
  }
  return best;
}

/// A window: membership flags indexed by node, and how many non-constant nodes it holds.
struct window {
  std::vector<char> member;
  std::size_t nodes = 0;    ///< operators (tensor constants not counted)
  bool whole_cone = false;  ///< growing it further adds nothing
};

namespace reduce_detail {
[[nodiscard]] inline bool is_constant_node(const model& m, graph::node_id n) {
  return m.graph.inputs(n).empty() && m.graph.data(n).kind == c10::prim::Constant;
}
}  // namespace reduce_detail

/// `culprit` and every producer at most `depth` edges upstream of it, plus the tensor
/// constants (prim::Constant nodes) any of them reads.
[[nodiscard]] inline window window_of(const model& m, graph::node_id culprit, std::size_t depth) {
  const auto& g = m.graph;
  window w;
  w.member.assign(g.node_capacity(), 0);
  w.member[graph::index(culprit)] = 1;
  std::vector<graph::node_id> frontier{culprit}, next;
  for (std::size_t d = 0; d < depth && !frontier.empty(); ++d) {
    next.clear();
    for (auto n : frontier)
      for (auto e : g.inputs(n))
        if (auto p = g.producer(e); p != graph::no_node && !w.member[graph::index(p)]) {
          w.member[graph::index(p)] = 1;
          next.push_back(p);
        }
    frontier.swap(next);
  }
  // Does the frontier still have producers outside? (Then a deeper window differs.)
  w.whole_cone = true;
  for (auto n : frontier)
    for (auto e : g.inputs(n))
      if (auto p = g.producer(e);
          p != graph::no_node && !w.member[graph::index(p)] && !reduce_detail::is_constant_node(m, p))
        w.whole_cone = false;
  for (auto n : g.topological_order()) {
    if (!w.member[graph::index(n)]) continue;
    if (!reduce_detail::is_constant_node(m, n)) ++w.nodes;
    for (auto e : g.inputs(n))
      if (auto p = g.producer(e); p != graph::no_node && reduce_detail::is_constant_node(m, p))
        w.member[graph::index(p)] = 1;
  }
  return w;
}

/// Adds node `n` of `from` to `to` with its inputs read through `map` (edge index of `from` ->
/// edge of `to`), and records its outputs there. The node-copying step of every derived model
/// (windows, cuts).
inline void copy_node_into(const graph_type& from, graph::node_id n, graph_type& to, std::vector<graph::edge_id>& map) {
  std::vector<graph::edge_id> ins;
  for (auto e : from.inputs(n)) ins.push_back(map[graph::index(e)]);
  std::vector<edge_data> outs;
  for (auto e : from.outputs(n)) outs.push_back(from.data(e));
  const auto nn = to.add_node(from.data(n), ins, std::move(outs));
  const auto old_outs = from.outputs(n), new_outs = to.outputs(nn);
  for (std::size_t k = 0; k < old_outs.size(); ++k) map[graph::index(old_outs[k])] = new_outs[k];
}

/// The number of operators (tensor constants not counted) of `m`.
[[nodiscard]] inline std::size_t operator_count(const model& m) {
  std::size_t n = 0;
  for (auto node : m.graph.topological_order())
    if (!reduce_detail::is_constant_node(m, node)) ++n;
  return n;
}

struct window_result {
  model reduced;
  std::vector<graph::edge_id> boundary;  ///< per graph input of `reduced`: the edge of the original
};

/// The window as a model: node order kept, every edge read from outside the window a graph
/// input (in order of first use), the culprit's outputs its outputs (one: the value, several:
/// a tuple).
[[nodiscard]] inline window_result window_model(const model& m, const window& w, graph::node_id culprit) {
  const auto& g = m.graph;
  window_result out;
  out.reduced.source = m.source + " (reduced)";
  std::vector<graph::edge_id> map(g.edge_capacity(), graph::no_edge);
  const auto order = g.topological_order();
  for (auto n : order) {
    if (!w.member[graph::index(n)]) continue;
    for (auto e : g.inputs(n)) {
      const auto p = g.producer(e);
      if ((p != graph::no_node && w.member[graph::index(p)]) || map[graph::index(e)] != graph::no_edge) continue;
      auto data = g.data(e);
      map[graph::index(e)] = out.reduced.graph.add_input(data);
      out.boundary.push_back(e);
      out.reduced.input_names.push_back(data.name.empty() ? "x" + std::to_string(out.boundary.size() - 1) : data.name);
    }
  }
  for (auto n : order)
    if (w.member[graph::index(n)]) copy_node_into(g, n, out.reduced.graph, map);
  const auto culprit_outs = g.outputs(culprit);
  std::vector<c10::TypePtr> types;
  for (auto e : culprit_outs) {
    const auto ne = map[graph::index(e)];
    out.reduced.graph.add_output(ne);
    output_tree leaf;
    leaf.how = output_tree::form::edge;
    leaf.edge = ne;
    leaf.type = g.data(e).type;
    types.push_back(c10::unshapedType(g.data(e).type));
    out.reduced.output.items.push_back(std::move(leaf));
  }
  if (out.reduced.output.items.size() == 1) {
    auto leaf = out.reduced.output.items.front();
    out.reduced.output = leaf;
  } else {
    out.reduced.output.how = output_tree::form::tuple;
    out.reduced.output.type = c10::TupleType::create(types);
  }
  return out;
}

}  // namespace tfg::torch
