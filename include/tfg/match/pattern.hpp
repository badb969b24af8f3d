#pragma once
/// \file
/// The pattern matcher around an anchor edge and the staged candidate check of dsl/spec.md
/// section 10 (pattern, sampling, input / internal / output constraints, deferred conditions),
/// plus the evaluation of replacement template expressions.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "tfg/match/interpret.hpp"

namespace tfg::match {

namespace detail {

/// Whether constant `c` equals pattern literal `a`.
inline bool literal_matches(const pattern_arg& a, const attr_value& c) {
  // Dtype, memory-format and layout constants arrive as the DSL's words (the adapter
  // normalises the backend's codes, see adapter.hpp).
  if (a.literal_kind == dsl::type_kind::dtype || a.literal_kind == dsl::type_kind::memory_format ||
      a.literal_kind == dsl::type_kind::layout) {
    const auto* w = std::get_if<std::string>(&a.literal);
    const auto* s = std::get_if<std::string>(&c);
    return w && s && *s == *w;
  }
  if (a.literal_kind == dsl::type_kind::device) {
    const auto* w = std::get_if<std::string>(&a.literal);
    const auto* s = std::get_if<std::string>(&c);
    return w && s && s->compare(0, w->size(), *w) == 0;
  }
  // Numbers compare by value across int/float; lists element-wise.
  auto num = [](const attr_value& v, double& out) {
    if (auto const* i = std::get_if<std::int64_t>(&v)) return out = static_cast<double>(*i), true;
    if (auto const* d = std::get_if<double>(&v)) return out = *d, true;
    return false;
  };
  double x = 0, y = 0;
  if (num(a.literal, x) && num(c, y)) return x == y;
  auto as_list = [](const attr_value& v, std::vector<double>& out) {
    if (auto const* i = std::get_if<std::vector<std::int64_t>>(&v)) {
      out.assign(i->begin(), i->end());
      return true;
    }
    if (auto const* d = std::get_if<std::vector<double>>(&v)) {
      out = *d;
      return true;
    }
    return false;
  };
  if (std::holds_alternative<std::vector<std::int64_t>>(a.literal) &&
      std::holds_alternative<std::vector<std::int64_t>>(c))
    return std::get<std::vector<std::int64_t>>(a.literal) == std::get<std::vector<std::int64_t>>(c);
  std::vector<double> l1, l2;
  if (as_list(a.literal, l1) && as_list(c, l2)) return l1 == l2;
  return a.literal == c;
}

/// Whether `v` lies in parameter `p`'s domain.
inline bool in_domain(const compiled_param& p, const attr_value& v) {
  if (p.domain == dsl::domain_kind::set) {
    for (const auto& m : p.members) {
      if (m == v) return true;
      // Unequal scalars of the same alternative (bool, int, float) never match as literals
      // either (`literal_matches` compares them by value, or words against codes).
      if (m.index() == v.index() && (std::holds_alternative<bool>(v) || std::holds_alternative<std::int64_t>(v) ||
                                     std::holds_alternative<double>(v)))
        continue;
      pattern_arg tmp;
      tmp.literal = m;
      tmp.literal_kind = p.type.kind;
      if (literal_matches(tmp, v)) return true;
    }
    return false;
  }
  if (p.domain == dsl::domain_kind::range) {
    auto num = [](const attr_value& x, double& out) {
      if (auto const* i = std::get_if<std::int64_t>(&x)) return out = static_cast<double>(*i), true;
      if (auto const* d = std::get_if<double>(&x)) return out = *d, true;
      return false;
    };
    double lo = 0, hi = 0, x = 0;
    if (!num(p.lo, lo) || !num(p.hi, hi) || !num(v, x)) return false;
    if (p.type.kind == dsl::type_kind::integer && !std::holds_alternative<std::int64_t>(v)) return false;
    return lo <= x && x <= hi;
  }
  return true;
}

template <class A>
class matcher {
 public:
  matcher(const compiled_operator& op, A const& a, bindings& b, workspace& ws)
      : op_(op), a_(a), g_(a.graph()), b_(b), ws_(ws) {}

  /// Finds the first embedding around `anchor` whose pattern conditions hold.
  bool run(edge_id anchor) {
    ws_.log.clear();
    b_.values[op_.anchor] = anchor;
    return step(0);
  }

 private:
  const compiled_operator& op_;
  A const& a_;
  decltype(std::declval<const A&>().graph()) g_;
  bindings& b_;
  workspace& ws_;

  void unwind(std::size_t mark) {
    while (ws_.log.size() > mark) {
      const auto u = ws_.log.back();
      ws_.log.pop_back();
      if (u.what == 0) b_.values[u.slot] = graph::no_edge;
      else if (u.what == 1) b_.nodes[u.slot] = graph::no_node;
      else b_.params[u.slot] = std::monostate{};
    }
  }
  bool bind_value(std::uint32_t slot, edge_id e) {
    if (b_.values[slot] != graph::no_edge) return b_.values[slot] == e;
    b_.values[slot] = e;
    ws_.log.push_back({0, slot});
    return true;
  }
  bool bind_param(std::uint32_t slot, const attr_value& v) {
    const auto& p = op_.params[slot];
    if (!std::holds_alternative<std::monostate>(b_.params[slot])) return b_.params[slot] == v;
    if (!in_domain(p, v)) return false;
    b_.params[slot] = v;
    ws_.log.push_back({2, slot});
    return true;
  }

  /// `match_arg` against a constant scalar argument (an item of a constant list), without
  /// building an `arg_view`.
  bool match_constant(const pattern_arg& pa, const attr_value& c) {
    switch (pa.k) {
      case pattern_arg::kind::wildcard: return true;
      case pattern_arg::kind::ellipsis: return true;
      case pattern_arg::kind::value: return false;
      case pattern_arg::kind::literal: return literal_matches(pa, c);
      case pattern_arg::kind::param: return bind_param(pa.slot, c);
      case pattern_arg::kind::list: {
        auto items = [&](const auto& v) {
          if (v.size() != pa.items.size()) return false;
          for (std::size_t i = 0; i < v.size(); ++i)
            if (!match_constant(pa.items[i], attr_value(v[i]))) return false;
          return true;
        };
        if (const auto* v = std::get_if<std::vector<std::int64_t>>(&c)) return items(*v);
        if (const auto* v = std::get_if<std::vector<double>>(&c)) return items(*v);
        return false;
      }
    }
    return false;
  }

  bool match_arg(const pattern_arg& pa, const arg_view& av) {
    switch (pa.k) {
      case pattern_arg::kind::wildcard: return true;
      case pattern_arg::kind::ellipsis: return true;
      case pattern_arg::kind::value: return av.how == arg_view::form::edge && bind_value(pa.slot, av.edge);
      case pattern_arg::kind::literal:
        if (av.how == arg_view::form::constant) return literal_matches(pa, av.value);
        if (av.how == arg_view::form::list) {
          // A literal list against a list of constants.
          const auto* li = std::get_if<std::vector<std::int64_t>>(&pa.literal);
          if (!li || li->size() != av.items.size()) return false;
          for (std::size_t i = 0; i < li->size(); ++i) {
            const auto* c =
                av.items[i].how == arg_view::form::constant ? std::get_if<std::int64_t>(&av.items[i].value) : nullptr;
            if (!c || *c != (*li)[i]) return false;
          }
          return true;
        }
        return false;
      case pattern_arg::kind::param: return av.how == arg_view::form::constant && bind_param(pa.slot, av.value);
      case pattern_arg::kind::list:
        if (av.how == arg_view::form::constant) {
          // A constant int/float list (conv strides, pool kernels, reduction dims) matches a
          // pattern list item by item, so `[$s0, $s1]` binds its elements.
          auto items = [&](const auto& v) {
            if (v.size() != pa.items.size()) return false;
            for (std::size_t i = 0; i < v.size(); ++i)
              if (!match_constant(pa.items[i], attr_value(v[i]))) return false;
            return true;
          };
          if (const auto* v = std::get_if<std::vector<std::int64_t>>(&av.value)) return items(*v);
          if (const auto* v = std::get_if<std::vector<double>>(&av.value)) return items(*v);
          return false;
        }
        if (av.how != arg_view::form::list || av.items.size() != pa.items.size()) return false;
        for (std::size_t i = 0; i < pa.items.size(); ++i)
          if (!match_arg(pa.items[i], av.items[i])) return false;
        return true;
    }
    return false;
  }

  bool try_node(std::uint32_t pi, node_id n) {
    const auto& pn = op_.pattern[pi];
    if (b_.nodes[pi] != graph::no_node) return b_.nodes[pi] == n;
    for (const auto m : b_.nodes)
      if (m == n) return false;  // injective
    std::uint32_t const sym = a_.op_symbol(n);
    switch (pn.how) {
      case pattern_node::op_kind::any: break;
      case pattern_node::op_kind::names:
        if (std::find(pn.symbols.begin(), pn.symbols.end(), sym) == pn.symbols.end()) return false;
        break;
      case pattern_node::op_kind::param:
        if (!bind_param(pn.param, attr_value(static_cast<std::int64_t>(sym)))) return false;
        break;
    }
    const auto outs = g_.outputs(n);
    if (static_cast<std::size_t>(std::ranges::distance(outs)) != pn.results.size()) return false;
    std::size_t const nargs = a_.arg_count(n);
    if (pn.ellipsis ? nargs < pn.args.size() : nargs != pn.args.size()) return false;
    b_.nodes[pi] = n;
    ws_.log.push_back({1, pi});
    std::size_t j = 0;
    for (const auto e : outs)
      if (!bind_value(pn.results[j++], e)) return false;
    for (std::size_t i = 0; i < pn.args.size(); ++i)
      if (!match_arg(pn.args[i], a_.arg(n, i))) return false;
    return true;
  }

  bool conditions_hold() {
    if (op_.pattern_conditions.empty()) return true;
    env<A> E{a_, b_.values, b_.params, &op_.params, {}, {}, op_.pattern_value_count, nullptr, graph::no_edge, nullptr};
    for (const auto& c : op_.pattern_conditions)
      if (!holds(c, E, ws_)) return false;
    return true;
  }

  bool step(std::size_t k) {
    if (k == op_.steps.size()) return conditions_hold();
    const auto& st = op_.steps[k];
    const edge_id v = b_.values[st.value];
    std::size_t const mark = ws_.log.size();
    if (st.via_producer) {
      const node_id n = g_.producer(v);
      if (n == graph::no_node) return false;
      // The pattern result that is `v` must be the producer's matching output.
      const auto& pn = op_.pattern[st.node];
      std::size_t pos = 0;
      while (pos < pn.results.size() && pn.results[pos] != st.value) ++pos;
      if (g_.producer_slot(v) != pos) return false;
      if (try_node(st.node, n) && step(k + 1)) return true;
      unwind(mark);
      return false;
    }
    for (const auto u : g_.consumers(v)) {
      if (try_node(st.node, u.node) && step(k + 1)) return true;
      unwind(mark);
    }
    return false;
  }
};

}  // namespace detail

/// Sizes `b` for `op` and clears its values, nodes and the parameters bound by matching
/// (sampled parameters keep their previous value until `sample_params` overwrites it, so a
/// string value reuses its buffer). Allocates only when `b` is smaller than needed.
inline void reset(bindings& b, const compiled_operator& op) {
  // Sizes rarely change (one `bindings` per operator in `construct`): plain stores then.
  if (b.values.size() == op.values.size()) {
    for (auto& v : b.values) v = graph::no_edge;
  } else {
    b.values.assign(op.values.size(), graph::no_edge);
  }
  if (b.nodes.size() == op.pattern.size()) {
    for (auto& n : b.nodes) n = graph::no_node;
  } else {
    b.nodes.assign(op.pattern.size(), graph::no_node);
  }
  b.params.resize(op.params.size());
  for (std::size_t i = 0; i < op.params.size(); ++i)
    if (op.params[i].bound_by_match && b.params[i].index() != 0) b.params[i] = std::monostate{};
}

/// Runs the pattern stage of `op` at `anchor`: the first embedding (anchor outwards,
/// consumers in the adapter's order) whose pattern conditions hold. Fills `b`. An anchor
/// whose first record is not a tensor (a size, a list) never matches (dsl/spec.md section
/// 15, "Anchor kind"); the summary prefilter decides the same from the edge summary.
template <match_adapter A>
[[nodiscard]] bool match_pattern(const compiled_operator& op, A const& a, edge_id anchor, bindings& b, workspace& ws) {
  reset(b, op);
  if (const auto& runs = a.profile(anchor).runs; !runs.empty() && runs.front().kind != state::value_kind::tensor)
    return false;
  detail::matcher<A> m(op, a, b, ws);
  return m.run(anchor);
}

/// An evaluation environment over `b` (replacement slots served by `probe` when given).
template <match_adapter A>
[[nodiscard]] detail::env<A> make_env(const compiled_operator& op, A const& a, const bindings& b,
                                      const probe_source* probe = nullptr) {
  return detail::env<A>{a,     b.values,       b.params, &op.params, {}, {}, op.pattern_value_count,
                        probe, graph::no_edge, nullptr};
}

/// How many draws of the sampled parameters `evaluate_constraints` makes at most before it
/// rejects a candidate (dsl/spec.md section 6, "Sampling").
inline constexpr unsigned default_param_draws = 4;

/// The stages after the pattern (bindings in `b`): sampling of the parameters not bound by
/// matching, `require input`, then the `require internal` and `require output` conditions
/// that read only pattern values (the rest is deferred to `evaluate_deferred`).
template <match_adapter A, class URBG>
[[nodiscard]] reject_stage evaluate_constraints(const compiled_operator& op, A const& a, bindings& b, URBG& rng,
                                                workspace& ws, unsigned draws = default_param_draws);

template <match_adapter A>
[[nodiscard]] bool same_on_every_run(const compiled_operator& op, A const& a, const bindings& b, workspace& ws);

namespace detail {
/// One computed bound of a parameter (dsl/spec.md section 6) on every profiling record: the
/// largest lower bound (`lower`) or the smallest upper bound over the records, so that a value
/// inside holds for every record. False when a record's bound is a fault or not a number.
/// With `other` (a derived parameter's one expression), `out` gets the largest value and
/// `*other` the smallest, in one pass.
template <match_adapter A>
[[nodiscard]] bool computed_bound(const program& p, const env<A>& E, workspace& ws, bool lower, double& out,
                                  double* other = nullptr) {
  std::size_t runs = 1;
  if (p.reads_state) {
    runs = run_count(p, E);
    if (runs == 0) return false;
  }
  for (std::size_t r = 0; r < runs; ++r) {
    ws.scratch.clear();
    ws.stack.clear();
    const val v = eval_node(p, p.root, E, r, ws);
    double x = 0;
    if (v.k == vk::integer) x = static_cast<double>(v.i);
    else if (v.k == vk::floating) x = v.f;
    else return false;
    out = r == 0 ? x : (lower ? std::max(out, x) : std::min(out, x));
    if (other) *other = r == 0 ? x : std::min(*other, x);
  }
  return true;
}
/// The range of a parameter with computed bounds at this site; false if a bound cannot be
/// evaluated or the range is empty.
template <match_adapter A>
[[nodiscard]] bool computed_range(const compiled_param& p, const env<A>& E, workspace& ws, double& lo, double& hi) {
  if (!p.lo_expr || !p.hi_expr) return false;
  if (p.derived) {  // one expression: [largest, smallest] over the records, empty unless all agree
    if (!computed_bound(*p.lo_expr, E, ws, true, lo, &hi)) return false;
  } else if (!computed_bound(*p.lo_expr, E, ws, true, lo) || !computed_bound(*p.hi_expr, E, ws, false, hi)) {
    return false;
  }
  if (p.type.kind == dsl::type_kind::integer) lo = std::ceil(lo), hi = std::floor(hi);
  return lo <= hi;
}
}  // namespace detail

/// Whether every parameter with computed bounds holds a value inside its range at this
/// site (part of the input stage: the bounds read the seed's F(e)).
template <match_adapter A>
[[nodiscard]] bool site_params_in_range(const compiled_operator& op, const detail::env<A>& E, workspace& ws) {
  for (std::size_t i = 0; i < op.params.size(); ++i) {
    const auto& p = op.params[i];
    if (!p.computed_bounds()) continue;
    double lo = 0, hi = 0, x = 0;
    if (!detail::computed_range(p, E, ws, lo, hi) || i >= E.params.size()) return false;
    const auto& v = E.params[i];
    if (const auto* n = std::get_if<std::int64_t>(&v)) x = static_cast<double>(*n);
    else if (const auto* d = std::get_if<double>(&v); d && p.type.kind != dsl::type_kind::integer) x = *d;
    else return false;
    if (x < lo || x > hi) return false;
  }
  return true;
}

namespace detail {
/// The range of every parameter whose bounds are computed from the site (the part that holds
/// on every profiling record), in `ws.ranges`; a parameter whose range is empty here is set
/// to None, which the input stage rejects. False when some range is empty.
template <match_adapter A>
bool site_ranges(const compiled_operator& op, const env<A>& E, bindings& b, workspace& ws) {
  ws.ranges.clear();
  bool all = true;
  for (std::size_t i = 0; i < op.params.size() && i < b.params.size(); ++i) {
    const auto& p = op.params[i];
    if (!p.computed_bounds()) continue;
    double lo = 0, hi = 0;
    if (!computed_range(p, E, ws, lo, hi)) {
      b.params[i] = std::monostate{};
      all = false;
      continue;
    }
    ws.ranges.push_back({i, lo, hi, p.type.kind == dsl::type_kind::integer, p.derived});
  }
  return all;
}
/// Draws each parameter of `ws.ranges` uniformly from its range.
template <class URBG>
void draw_site_params(const workspace& ws, bindings& b, URBG& rng) {
  for (const auto& r : ws.ranges) {
    if (r.derived) {
      if (r.integer) b.params[r.slot] = static_cast<std::int64_t>(r.lo);
      else b.params[r.slot] = r.lo;
    } else if (r.integer) {
      std::uniform_int_distribution<std::int64_t> d(static_cast<std::int64_t>(r.lo), static_cast<std::int64_t>(r.hi));
      b.params[r.slot] = d(rng);
    } else {
      std::uniform_real_distribution<double> d(r.lo, r.hi);
      b.params[r.slot] = d(rng);
    }
  }
}
}  // namespace detail

/// Draws the parameters whose range bounds are computed from the site, uniformly from the
/// range that holds on every profiling record of this candidate (`sample_params` draws the
/// others first; pattern-bound parameters are already in `b`). A parameter whose range is
/// empty here is left None, which the input stage rejects.
template <match_adapter A, class URBG>
void sample_site_params(const compiled_operator& op, A const& a, bindings& b, URBG& rng, workspace& ws) {
  bool any = false;
  for (const auto& p : op.params) any = any || p.computed_bounds();
  if (!any) return;
  (void)detail::site_ranges(op, make_env(op, a, b), b, ws);
  detail::draw_site_params(ws, b, rng);
}

/// The three constraint groups as the candidate stages decide them before any execution:
/// `require input` (with the ranges computed from the site); the probe-free `require
/// internal` conditions and `same_on_every_run`; the probe-free `require output` conditions.
/// `check_constraints` stops at the first that fails; `judge_groups` (legality.hpp) decides
/// each.
///
/// `failing_input` says where the input group fails: the index of the first `require input`
/// condition that does not hold, `op.input.size()` when they all hold but a parameter lies
/// outside its range read from the site, nullopt when the group holds.
template <match_adapter A>
[[nodiscard]] std::optional<std::size_t> failing_input(const compiled_operator& op, const detail::env<A>& E,
                                                       workspace& ws) {
  for (std::size_t i = 0; i < op.input.size(); ++i)
    if (!holds(op.input[i], E, ws)) return i;
  if (!site_params_in_range(op, E, ws)) return op.input.size();
  return std::nullopt;
}
template <match_adapter A>
[[nodiscard]] bool input_holds(const compiled_operator& op, const detail::env<A>& E, workspace& ws) {
  return !failing_input(op, E, ws);
}
template <match_adapter A>
[[nodiscard]] bool internal_holds(const compiled_operator& op, A const& a, const bindings& b, const detail::env<A>& E,
                                  workspace& ws) {
  for (const auto& c : op.internal)
    if (!c.needs_probe && !holds(c, E, ws)) return false;
  return same_on_every_run(op, a, b, ws);
}
template <match_adapter A>
[[nodiscard]] bool output_holds(const compiled_operator& op, const detail::env<A>& E, workspace& ws) {
  for (const auto& c : op.output)
    if (!c.needs_probe && !holds(c, E, ws)) return false;
  return true;
}

/// `evaluate_constraints` without the sampling: the parameters in `b` are used as they are
/// (for example values chosen by an exhaustive enumeration of small domains). The internal
/// stage also rejects a replacement that would bake one run's state into the mutant
/// (`same_on_every_run`).
template <match_adapter A>
[[nodiscard]] reject_stage check_constraints(const compiled_operator& op, A const& a, const bindings& b,
                                             workspace& ws) {
  const auto E = make_env(op, a, b);
  if (!input_holds(op, E, ws)) return reject_stage::input;
  if (!internal_holds(op, a, b, E, ws)) return reject_stage::internal;
  if (!output_holds(op, E, ws)) return reject_stage::output;
  return reject_stage::accepted;
}

namespace detail {

/// The most combinations of sampled parameters that `evaluate_constraints` tries one by one.
inline constexpr std::uint32_t max_enumerated_draws = 64;

/// The sampled parameters of an operator that have a small finite domain (a set, or an integer
/// range with constant bounds and at most 16 values), when their combinations number at most
/// `max_enumerated_draws`: such a grid is tried exhaustively, in random order, instead of by
/// independent draws (an op-typed parameter paired with the matched op, a dtype paired with
/// the input's, a stride that keeps the output's shape on every record, would otherwise be
/// missed by all of a few draws). The other sampled parameters (floats, wide ranges, bounds
/// read from the site) are drawn afresh with each combination (`free`).
struct param_grid {
  std::array<std::uint32_t, 8> index{};  ///< parameter index
  std::array<std::uint32_t, 8> size{};   ///< number of values
  std::uint32_t n = 0;                   ///< parameters in the grid
  std::uint32_t combos = 0;              ///< 0: no grid
  bool free = false;                     ///< some sampled parameter is outside the grid
};

[[nodiscard]] inline param_grid enumerable_params(const compiled_operator& op) noexcept {
  param_grid g;
  std::uint64_t combos = 1;
  for (std::size_t i = 0; i < op.params.size(); ++i) {
    const auto& p = op.params[i];
    if (p.bound_by_match || p.derived) continue;  // derived: the same on every draw
    std::uint64_t k = 0;
    if (p.computed_bounds()) {
      k = 0;
    } else if (p.domain == dsl::domain_kind::set) {
      k = p.members.size();
    } else if (p.domain == dsl::domain_kind::range && p.type.kind == dsl::type_kind::integer &&
               std::holds_alternative<std::int64_t>(p.lo) && std::holds_alternative<std::int64_t>(p.hi)) {
      const auto lo = std::get<std::int64_t>(p.lo), hi = std::get<std::int64_t>(p.hi);
      k = hi < lo || hi - lo >= 16 ? 0 : static_cast<std::uint64_t>(hi - lo + 1);
    }
    if (k == 0 || g.n == g.index.size()) {
      g.free = true;
      continue;
    }
    combos *= k;
    if (combos > max_enumerated_draws) return {};
    g.index[g.n] = static_cast<std::uint32_t>(i);
    g.size[g.n++] = static_cast<std::uint32_t>(k);
  }
  g.combos = g.n ? static_cast<std::uint32_t>(combos) : 0;
  return g;
}

/// The combination number of the sampled values in `params` (mixed radix over `g`).
[[nodiscard]] inline std::uint32_t encode(const param_grid& g, const compiled_operator& op,
                                          const std::vector<attr_value>& params) {
  std::uint32_t c = 0;
  for (std::uint32_t k = g.n; k-- > 0;) {
    const auto& p = op.params[g.index[k]];
    const auto& v = params[g.index[k]];
    std::uint32_t at = 0;
    if (p.domain == dsl::domain_kind::set) {
      while (at < p.members.size() && !(p.members[at] == v)) ++at;
      if (at == p.members.size()) at = 0;
    } else if (const auto* x = std::get_if<std::int64_t>(&v)) {
      at = static_cast<std::uint32_t>(*x - std::get<std::int64_t>(p.lo));
    }
    if (at >= g.size[k]) at = 0;  // a value outside the domain (never drawn): any start will do
    c = c * g.size[k] + at;
  }
  return c;
}

/// Sets the sampled parameters of `params` to combination `c` of `g`.
inline void decode(const param_grid& g, const compiled_operator& op, std::uint32_t c, std::vector<attr_value>& params) {
  for (std::uint32_t k = 0; k < g.n; ++k) {
    const auto& p = op.params[g.index[k]];
    const auto at = c % g.size[k];
    c /= g.size[k];
    params[g.index[k]] = p.domain == dsl::domain_kind::set
                             ? p.members[at]
                             : attr_value(std::get<std::int64_t>(p.lo) + static_cast<std::int64_t>(at));
  }
}

}  // namespace detail

/// Draws the sampled parameters and checks the constraints; while a stage rejects the draw,
/// draws again, at most `draws` times in all. Where the sampled parameters form a small
/// finite grid (`detail::enumerable_params`), the draws after the first walk the rest of the
/// grid in random order (a random permutation whose first element is the first draw), so
/// every combination is tried once before the candidate is rejected. Each draw is uniform over the domains, so the
/// accepted one is uniform over the values the constraints accept here (rejection sampling);
/// a site where `draws` draws all fail is rejected at the stage of the last one. An operator
/// without sampled parameters is checked once.
///
/// Same stage as `check_constraints` on the final draw, with less work: the conditions that
/// read no sampled parameter (and the ranges computed from the site, which read only pattern
/// values and matched parameters) are evaluated once per candidate, not once per draw; a
/// draw re-evaluates only what it can change. A condition reading no sampled parameter that
/// fails decides the stage for every draw: the loop stops there.
template <match_adapter A, class URBG>
[[nodiscard]] reject_stage evaluate_constraints(const compiled_operator& op, A const& a, bindings& b, URBG& rng,
                                                workspace& ws, unsigned draws) {
  sample_params(op, rng, b.params);
  if (!op.sampled_params || draws <= 1) {  // one check: in the conditions' own order
    sample_site_params(op, a, b, rng, ws);
    return check_constraints(op, a, b, ws);
  }
  const auto E = make_env(op, a, b);
  // Ranges computed from the site: once (they read no sampled parameter).
  const bool ranges_hold = detail::site_ranges(op, E, b, ws);
  detail::draw_site_params(ws, b, rng);
  // The input conditions no draw changes: once.
  for (const auto& c : op.input)
    if (!c.reads_sampled && !holds(c, E, ws)) return reject_stage::input;
  if (!ranges_hold) return reject_stage::input;
  // What no draw changes after the input stage: decided once, when a draw first passes
  // the input stage (most rejected draws never get there).
  bool fixed_known = false;
  reject_stage fixed = reject_stage::accepted;
  auto decide_fixed = [&] {
    fixed_known = true;
    for (auto const& c : op.internal)
      if (!c.needs_probe && !c.reads_sampled && !holds(c, E, ws)) {
        fixed = reject_stage::internal;
        return;
      }
    if (!op.replacement_reads_sampled && !same_on_every_run(op, a, b, ws)) {
      fixed = reject_stage::internal;
      return;
    }
    for (auto const& c : op.output)
      if (!c.needs_probe && !c.reads_sampled && !holds(c, E, ws)) {
        fixed = reject_stage::output;
        return;
      }
  };
  // One draw: the first stage its sampled conditions (or `fixed`) reject.
  auto stage_of_draw = [&]() -> reject_stage {
    for (auto const& c : op.input)
      if (c.reads_sampled && !holds(c, E, ws)) return reject_stage::input;
    if (!fixed_known) decide_fixed();
    if (fixed == reject_stage::internal) return fixed;
    for (auto const& c : op.internal)
      if (!c.needs_probe && c.reads_sampled && !holds(c, E, ws)) return reject_stage::internal;
    if (op.replacement_reads_sampled && !same_on_every_run(op, a, b, ws)) return reject_stage::internal;
    if (fixed == reject_stage::output) return fixed;
    for (auto const& c : op.output)
      if (!c.needs_probe && c.reads_sampled && !holds(c, E, ws)) return reject_stage::output;
    return reject_stage::accepted;
  };
  reject_stage st = reject_stage::accepted;
  detail::param_grid grid;
  std::array<std::uint8_t, detail::max_enumerated_draws> perm{};
  unsigned tries = std::max(1u, draws);
  for (unsigned t = 0; t < tries; ++t) {
    if (t == 1) {
      grid = detail::enumerable_params(op);
      if (grid.combos > 0) {
        for (std::uint32_t i = 0; i < grid.combos; ++i) perm[i] = static_cast<std::uint8_t>(i);
        std::swap(perm[0], perm[detail::encode(grid, op, b.params)]);
        // Every combination once; with parameters outside the grid, at least `draws` tries.
        tries = grid.free ? std::max(tries, grid.combos) : grid.combos;
        if (t >= tries) break;
      }
    }
    if (t > 0) {
      if (grid.free || grid.combos == 0 || t >= grid.combos) {
        sample_params(op, rng, b.params);
        detail::draw_site_params(ws, b, rng);
      }
      if (grid.combos > 0 && t < grid.combos) {
        std::uniform_int_distribution<std::uint32_t> d(t, grid.combos - 1);
        std::swap(perm[t], perm[d(rng)]);
        detail::decode(grid, op, perm[t], b.params);
      }
    }
    st = stage_of_draw();
    // Accepted, or rejected by what no draw changes: stop.
    if (st == reject_stage::accepted || st == fixed) break;
  }
  return st;
}

/// The staged check of dsl/spec.md section 10 as far as it goes without a probe: pattern,
/// then `evaluate_constraints`. Returns `accepted` or the rejecting stage; `b` holds the
/// bindings. The prefilter is not applied here (see `construct`). Allocation-free after
/// warm-up (externs aside).
template <match_adapter A, class URBG>
[[nodiscard]] reject_stage evaluate(const compiled_operator& op, A const& a, edge_id anchor, bindings& b, URBG& rng,
                                    workspace& ws, unsigned draws = default_param_draws) {
  if (!match_pattern(op, a, anchor, b, ws)) return reject_stage::pattern;
  return evaluate_constraints(op, a, b, rng, ws, draws);
}

/// The conditions `evaluate` deferred (those reading replacement values), with the states
/// of replacement values supplied by `probe`. Returns `accepted`, `internal` or `output`.
template <match_adapter A>
[[nodiscard]] reject_stage evaluate_deferred(const compiled_operator& op, A const& a, const bindings& b,
                                             const probe_source& probe, workspace& ws) {
  const auto E = make_env(op, a, b, &probe);
  for (const auto& c : op.internal)
    if (c.needs_probe && !holds(c, E, ws)) return reject_stage::internal;
  for (const auto& c : op.output)
    if (c.needs_probe && !holds(c, E, ws)) return reject_stage::output;
  return reject_stage::accepted;
}

/// `evaluate_deferred` before the mutant runs: the deferred conditions that the *inferred*
/// states of replacement values (shape and dtype inference, supplied by `inferred`) refute
/// (`refuted`: a metadata-only conjunct is false). Conditions reading values, strides,
/// aliasing or externs stay for `evaluate_deferred`. Returns `accepted`, `internal` or `output`.
template <match_adapter A>
[[nodiscard]] reject_stage refute_deferred(const compiled_operator& op, A const& a, const bindings& b,
                                           const probe_source& inferred, workspace& ws) {
  const auto E = make_env(op, a, b, &inferred);
  for (const auto& c : op.internal)
    if (c.needs_probe && refuted(c, E, ws)) return reject_stage::internal;
  for (const auto& c : op.output)
    if (c.needs_probe && refuted(c, E, ws)) return reject_stage::output;
  return reject_stage::accepted;
}

template <match_adapter A>
[[nodiscard]] std::optional<attr_value> evaluate_value(const program& p, const compiled_operator& op, A const& a,
                                                       const bindings& b, std::size_t run, workspace& ws);

/// Whether the replacement of `op` means the same thing on every profiling run: an argument
/// computed from the seed's state (`dim(%y, -1)`, `shape(%y)`) becomes a constant of the
/// mutant, read from the first run, and `tfg::reshape_like` bakes its pattern value's first
/// shape; where the runs disagree (a batch of two, a smaller image) that constant is wrong for
/// the others and the mutant fails or computes something else on them. Decided before
/// execution from F(e): a candidate that fails it is rejected at `internal`.
///
/// `tfg::revert_shape` bakes pad and crop *amounts* (the like-shape minus its input's shape
/// on the first run), which are right for every run when the reverted value has the like
/// value's shape on every run, whatever the sizes are. That needs the replacement's shapes
/// on every run, so it is left to the operator's output constraint (`shape(%r) == shape(%y)`),
/// which the backend decides on inferred shapes before execution (dsl/spec.md section 15).
template <match_adapter A>
[[nodiscard]] bool same_on_every_run(const compiled_operator& op, A const& a, const bindings& b, workspace& ws) {
  if (!op.replacement_reads_state) return true;
  const auto E = make_env(op, a, b);
  auto invariant = [&](const program& p) {
    if (!p.reads_state) return true;
    std::size_t const runs = detail::run_count(p, E);
    if (runs < 2) return true;
    auto const first = evaluate_value(p, op, a, b, 0, ws);
    for (std::size_t r = 1; r < runs; ++r)
      if (evaluate_value(p, op, a, b, r, ws) != first) return false;
    return true;
  };
  for (const auto& rn : op.replacement.nodes) {
    for (const auto& t : rn.args)
      if (t.k == template_arg::kind::expr && t.expr && !invariant(*t.expr)) return false;
    // reshape_like bakes the whole shape of its pattern value.
    if (rn.helper && rn.op == "tfg::reshape_like" && rn.args.size() > 1 && rn.args[1].k == template_arg::kind::value &&
        rn.args[1].slot < op.pattern_value_count) {
      const auto e = b.values[rn.args[1].slot];
      if (e == graph::no_edge) continue;
      const auto& runs = a.profile(e).runs;
      for (std::size_t r = 1; r < runs.size(); ++r)
        if (runs[r].shape != runs[0].shape) return false;
    }
  }
  for (const auto& rw : op.replacement.rewires)
    if (rw.which && rw.which->k == template_arg::kind::expr && rw.which->expr && !invariant(*rw.which->expr))
      return false;
  return true;
}

/// Evaluates a value expression of a replacement template (`template_arg::expr`) on run
/// `run`, as an attr_value (ints, floats, bools, int/float lists; dtype etc. as words are
/// not produced: such arguments are constants). nullopt when it faults.
template <match_adapter A>
[[nodiscard]] std::optional<attr_value> evaluate_value(const program& p, const compiled_operator& op, A const& a,
                                                       const bindings& b, std::size_t run, workspace& ws) {
  const auto E = make_env(op, a, b);
  ws.scratch.clear();
  ws.stack.clear();
  const val v = detail::eval_node(p, p.root, E, run, ws);
  switch (v.k) {
    case vk::boolean: return attr_value(v.b);
    case vk::integer: return attr_value(v.i);
    case vk::floating: return attr_value(v.f);
    case vk::none: return attr_value(std::monostate{});
    case vk::string: return attr_value(std::string(v.s));
    // dtype / device / layout / memory-format values become the DSL's words, which backends
    // convert for the argument's declared type (`f32` -> ScalarType, `cpu` -> Device, ...).
    case vk::dtype: return attr_value(std::string(state::name(static_cast<state::dtype>(v.i))));
    case vk::device: return attr_value(std::string(state::name(static_cast<state::device_kind>(v.i))));
    case vk::layout: return attr_value(std::string(state::name(static_cast<state::layout>(v.i))));
    case vk::memfmt: {
      constexpr std::string_view words[] = {"contiguous_format", "channels_last_format", "channels_last_3d_format",
                                            "preserve_format"};
      return v.i >= 0 && v.i < 4 ? std::optional<attr_value>(attr_value(std::string(words[v.i]))) : std::nullopt;
    }
    case vk::list: {
      bool ints = true;
      for (std::uint32_t i = 0; i < v.len; ++i) ints = ints && ws.scratch[v.off + i].k == vk::integer;
      if (ints) {
        std::vector<std::int64_t> out;
        for (std::uint32_t i = 0; i < v.len; ++i) out.push_back(ws.scratch[v.off + i].i);
        return attr_value(std::move(out));
      }
      std::vector<double> out;
      for (std::uint32_t i = 0; i < v.len; ++i) {
        const auto& x = ws.scratch[v.off + i];
        if (!detail::numeric(x)) return std::nullopt;
        out.push_back(detail::as_double(x));
      }
      return attr_value(std::move(out));
    }
    default: return std::nullopt;
  }
}

}  // namespace tfg::match
