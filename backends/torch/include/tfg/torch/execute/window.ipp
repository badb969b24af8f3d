#pragma once
// The definitions of window.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/window.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::optional<graph::node_id> locate_culprit(const model& m, std::size_t position,
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

[[nodiscard]] TFG_TORCH_DECL window window_of(const model& m, graph::node_id culprit, std::size_t depth) {
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

TFG_TORCH_DECL void copy_node_into(const graph_type& from, graph::node_id n, graph_type& to,
                                   std::vector<graph::edge_id>& map) {
  std::vector<graph::edge_id> ins;
  for (auto e : from.inputs(n)) ins.push_back(map[graph::index(e)]);
  std::vector<edge_data> outs;
  for (auto e : from.outputs(n)) outs.push_back(from.data(e));
  const auto nn = to.add_node(from.data(n), ins, std::move(outs));
  const auto old_outs = from.outputs(n), new_outs = to.outputs(nn);
  for (std::size_t k = 0; k < old_outs.size(); ++k) map[graph::index(old_outs[k])] = new_outs[k];
}

[[nodiscard]] TFG_TORCH_DECL std::size_t operator_count(const model& m) {
  std::size_t n = 0;
  for (auto node : m.graph.topological_order())
    if (!reduce_detail::is_constant_node(m, node)) ++n;
  return n;
}

[[nodiscard]] TFG_TORCH_DECL window_result window_model(const model& m, const window& w, graph::node_id culprit) {
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
