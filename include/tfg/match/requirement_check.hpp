#pragma once
/// \file
/// Evaluation of the input requirements R(v) (dsl/spec.md section 14) of a node, and the
/// requirement part of the output stage for the consumers a candidate rewires.
#include <cstdint>
#include <vector>

#include "tfg/match/pattern.hpp"

namespace tfg::match {

enum class requirement_outcome : std::uint8_t {
  none,  ///< no requirement applies to the node (no declaration, or none binds)
  holds,
  fails,
};

/// Evaluates R(v) of node `n`: the first declaration for its op kind whose arguments bind
/// (dsl/spec.md section 14); a `%x` argument binds only an edge whose first record is a
/// tensor (or that has no record). With `subst_from` set, reads of that edge's state read
/// `*subst_to` instead (the probed state of the replacement edge that will feed `n`).
/// `failed` receives the failing declaration when the outcome is `fails`. With `refute_only`,
/// the states may be inferred ones of values that have not run (shape and dtype only): a
/// condition fails only when its metadata refutes it (`refuted`), and `holds` means "not refuted".
template <match_adapter A>
[[nodiscard]] requirement_outcome evaluate_requirement(const requirement_table& table, A const& a, node_id n,
                                                       workspace& ws, edge_id subst_from = graph::no_edge,
                                                       const state::edge_profile* subst_to = nullptr,
                                                       const compiled_requirement** failed = nullptr,
                                                       bool refute_only = false) {
  const auto* alts = table.find(a.op_symbol(n));
  if (!alts) return requirement_outcome::none;
  auto carries_tensor = [&](edge_id e) {
    auto const& p = e == subst_from && subst_to ? *subst_to : a.profile(e);
    return p.runs.empty() || p.runs.front().kind == state::value_kind::tensor;
  };
  std::size_t const nargs = a.arg_count(n);
  for (const auto& rq : *alts) {
    if (rq.rest ? nargs < rq.args.size() : nargs != rq.args.size()) continue;
    std::vector<edge_id> values(rq.value_slots, graph::no_edge);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> lists(rq.value_slots, {0u, UINT32_MAX});
    std::vector<edge_id> list_edges;
    std::vector<attr_value> consts(rq.const_slots);
    bool ok = true;
    for (std::size_t i = 0; i < rq.args.size() && ok; ++i) {
      const arg_view& av = a.arg(n, i);
      const auto slot = rq.arg_slot[i];
      switch (rq.args[i]) {
        case dsl::req_arg_kind::tensor:
          // A `%x` argument binds a tensor: an edge that carries a scalar (the int of
          // `aten::size`, read by `aten::mul.int`) is another overload, which a declaration
          // written for the Tensor one does not describe.
          ok = av.how == arg_view::form::edge && carries_tensor(av.edge);
          if (ok) values[slot] = av.edge;
          break;
        case dsl::req_arg_kind::optional_tensor:
          ok = av.how == arg_view::form::edge || av.is_none();
          if (ok && av.how == arg_view::form::edge) values[slot] = av.edge;
          break;
        case dsl::req_arg_kind::tensor_list:
          ok = av.how == arg_view::form::list;
          if (ok) {
            lists[slot] = {static_cast<std::uint32_t>(list_edges.size()), static_cast<std::uint32_t>(av.items.size())};
            for (const auto& it : av.items) {
              ok = ok && it.how == arg_view::form::edge;
              list_edges.push_back(it.edge);
            }
          }
          break;
        case dsl::req_arg_kind::constant:
          if (av.how == arg_view::form::constant) {
            consts[slot] = av.value;
          } else if (av.how == arg_view::form::list) {
            std::vector<std::int64_t> xs;
            for (const auto& it : av.items) {
              const auto* c = it.how == arg_view::form::constant ? std::get_if<std::int64_t>(&it.value) : nullptr;
              if (!c) {
                ok = false;
                break;
              }
              xs.push_back(*c);
            }
            consts[slot] = std::move(xs);
          } else {
            ok = false;
          }
          break;
        case dsl::req_arg_kind::ignore:
        case dsl::req_arg_kind::rest: break;
      }
    }
    if (!ok) continue;
    detail::env<A> E{a, values, consts, nullptr, lists, list_edges, UINT32_MAX, nullptr, subst_from, subst_to};
    for (const auto& c : rq.conditions)
      if (refute_only ? refuted(c, E, ws) : !holds(c, E, ws)) {
        if (failed) *failed = &rq;
        return requirement_outcome::fails;
      }
    return requirement_outcome::holds;
  }
  return requirement_outcome::none;
}

/// The requirement part of the output stage (dsl/spec.md sections 9 and 14): for every rewire
/// of the candidate, each consumer of the rewired edge that is moved (all of them, or the
/// selected one) and is not a deleted pattern node has its requirement R(v) evaluated with
/// the state of the rewire target substituted for the source edge. The target's state comes
/// from `probe` when it is a replacement value, from the adapter otherwise. Returns
/// `accepted` or `output`; `failed_node` / `failed` name the first failing consumer and
/// declaration. Requirements of the new replacement nodes themselves are not evaluated here
/// (the probe executes them). With `refute_only` (inferred states, before execution) a
/// requirement fails only when its metadata refutes it. Allocates (probe stage only).
template <match_adapter A>
[[nodiscard]] reject_stage check_rewired_consumers(const compiled_operator& op, A const& a, const bindings& b,
                                                   const requirement_table& table, const probe_source* probe,
                                                   workspace& ws, node_id* failed_node = nullptr,
                                                   const compiled_requirement** failed = nullptr,
                                                   bool refute_only = false) {
  const auto& g = a.graph();
  std::vector<node_id> deleted;
  for (const auto slot : op.replacement.deletes)
    if (slot < b.values.size() && b.values[slot] != graph::no_edge) deleted.push_back(g.producer(b.values[slot]));
  for (const auto& rw : op.replacement.rewires) {
    const edge_id src = b.values[rw.source];
    if (src == graph::no_edge) continue;
    const state::edge_profile* to = nullptr;
    if (rw.target >= op.pattern_value_count) to = probe ? probe->profile(rw.target) : nullptr;
    else if (b.values[rw.target] != graph::no_edge) to = &a.profile(b.values[rw.target]);
    if (!to) continue;  // nothing to substitute: the probe did not produce the target
    std::vector<node_id> targets;
    for (const auto u : g.consumers(src))
      if (std::find(targets.begin(), targets.end(), u.node) == targets.end()) targets.push_back(u.node);
    if (!rw.all && rw.which) {
      node_id pick = graph::no_node;
      const auto& w = *rw.which;
      if (w.k == template_arg::kind::value) {
        if (w.slot < b.values.size() && b.values[w.slot] != graph::no_edge) pick = g.producer(b.values[w.slot]);
      } else {
        std::optional<attr_value> idx;
        if (w.k == template_arg::kind::constant) idx = w.constant;
        if (w.k == template_arg::kind::param && w.slot < b.params.size()) idx = b.params[w.slot];
        if (w.k == template_arg::kind::expr && w.expr) idx = evaluate_value(*w.expr, op, a, b, 0, ws);
        const auto* i = idx ? std::get_if<std::int64_t>(&*idx) : nullptr;
        if (i && *i >= 0 && static_cast<std::size_t>(*i) < targets.size()) pick = targets[static_cast<std::size_t>(*i)];
      }
      targets.assign(pick == graph::no_node ? 0 : 1, pick);
    }
    for (const auto n : targets) {
      if (std::find(deleted.begin(), deleted.end(), n) != deleted.end()) continue;
      if (evaluate_requirement(table, a, n, ws, src, to, failed, refute_only) == requirement_outcome::fails) {
        if (failed_node) *failed_node = n;
        return reject_stage::output;
      }
    }
  }
  return reject_stage::accepted;
}

}  // namespace tfg::match
