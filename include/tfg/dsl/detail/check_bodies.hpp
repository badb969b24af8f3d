#pragma once
/// \file
/// Semantic checks of operator bodies: value binding in the pattern and the replacement, anchors, rewires and helper
/// calls.
#include "tfg/dsl/detail/checker.hpp"

namespace tfg::dsl::detail {

// ---- pattern -----------------------------------------------------------------------------------

inline void checker::bind_pattern_value(const std::string& v) {
  if (!contains(pattern_values_, v)) pattern_values_.push_back(v);
}

inline void checker::check_pattern(operator_decl& op) {
  // Without pattern nodes the pattern is the anchor edge alone.
  if (op.anchor && (!op.pattern || op.pattern->nodes.empty())) bind_pattern_value(op.anchor->text);
  if (!op.pattern) return;
  auto& pat = *op.pattern;
  // Results first, so a later node may read an earlier node's result and vice versa.
  for (auto& n : pat.nodes)
    for (const auto& r : n.results) {
      if (!pattern_results_.insert(r.text).second)
        error(errc::value_redefined, r.loc, "value '%" + r.text + "' is produced by two pattern nodes");
      bind_pattern_value(r.text);
    }
  for (auto& n : pat.nodes) {
    check_op_spec(n.op, /*pattern=*/true);
    for (std::size_t i = 0; i < n.args.size(); ++i) check_pattern_arg(n.args[i], i + 1 == n.args.size());
  }
  for (auto& n : pat.nodes)
    for (const auto& a : n.args)
      if (a.kind == expr_kind::value) bind_pattern_value(a.text);
  check_conditions(pat.conditions, expr_site::pattern_condition);
}

inline void checker::check_pattern_arg(expr& a, bool last) {
  switch (a.kind) {
    case expr_kind::wildcard:
    case expr_kind::value: return;
    case expr_kind::ellipsis:
      if (!last) error(errc::bad_pattern_argument, a.loc, "'...' must be the last argument");
      return;
    case expr_kind::param:
      if (const auto* p = use_param(a)) a.resolved = p->resolved;
      return;
    case expr_kind::int_literal:
    case expr_kind::float_literal:
    case expr_kind::string_literal:
    case expr_kind::name:
    case expr_kind::op_name: literal_type(a); return;
    case expr_kind::list:
      for (auto& e : a.args) {
        if (e.kind == expr_kind::ellipsis || e.kind == expr_kind::list) {
          error(errc::bad_pattern_argument, e.loc,
                "list elements in a pattern must be '_', %values, $params or literals");
          continue;
        }
        check_pattern_arg(e, false);
      }
      return;
    default:
      error(errc::bad_pattern_argument, a.loc, "pattern arguments must be '_', '...', %values, $params or literals",
            {{"move computed conditions into a 'require' block", std::nullopt}});
  }
}

inline void checker::check_op_spec(op_spec& s, bool pattern) {
  switch (s.kind) {
    case op_spec_kind::any:
      if (!pattern) error(errc::wildcard_outside_pattern, s.loc, "'*' (any op) is only valid in a pattern");
      return;
    case op_spec_kind::param: {
      expr e = make_param_ref(s.param);
      if (const auto* p = use_param(e))
        if (p->resolved.kind != type_kind::op && p->resolved.kind != type_kind::unknown)
          error(errc::type_error, s.param.loc,
                "parameter '$" + s.param.text + "' is used as an op but has type " + std::string(spell(p->resolved)));
      return;
    }
    case op_spec_kind::names:
      if (!pattern && s.names.size() > 1)
        error(errc::wildcard_outside_pattern, s.loc, "op alternatives 'a|b' are only valid in a pattern");
      for (const auto& n : s.names) {
        if (pattern && n.text.rfind("tfg::", 0) == 0) {
          error(errc::bad_helper, n.loc, "shape-adaptation helper '" + n.text + "' is only valid in 'replace'");
          continue;
        }
        check_op_name(n.text, n.loc, !pattern);
      }
      return;
  }
}

inline expr checker::make_param_ref(const symbol& s) {
  expr e;
  e.kind = expr_kind::param;
  e.text = s.text;
  e.loc = s.loc;
  return e;
}

inline const param_decl* checker::use_param(expr& e) {
  const auto it = params_.find(e.text);
  if (it == params_.end()) {
    error(errc::undeclared_param, e.loc, "undeclared parameter '$" + e.text + "'",
          {{"declare it in the operator body: param $" + e.text + " : int in [lo, hi]", std::nullopt}});
    return nullptr;
  }
  used_params_.insert(e.text);
  e.resolved = it->second->resolved;
  return it->second;
}

inline void checker::check_anchor(operator_decl& op) {
  if (!op.anchor) {
    error(errc::missing_anchor, op.name.loc, "operator '" + op.name.text + "' has no anchor",
          {{"add 'anchor %x' to the header: the tensor edge the pattern is built around", std::nullopt}});
    return;
  }
  if (!contains(pattern_values_, op.anchor->text)) {
    error(errc::anchor_not_in_pattern, op.anchor->loc, "anchor '%" + op.anchor->text + "' is not bound by the pattern",
          {{"values bound by the pattern: " + list_values(pattern_values_), std::nullopt}});
    return;
  }
  if (!op.pattern || op.pattern->nodes.empty()) return;
  // Every pattern node must reach the anchor through shared values.
  auto& nodes = op.pattern->nodes;
  std::vector<std::size_t> parent(nodes.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](std::size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  auto values_of = [](const ir_node& n) {
    std::set<std::string> s;
    for (auto const& r : n.results) s.insert(r.text);
    for (auto const& a : n.args)
      if (a.kind == expr_kind::value) s.insert(a.text);
    return s;
  };
  std::vector<std::set<std::string>> vals;
  for (const auto& n : nodes) vals.push_back(values_of(n));
  for (std::size_t i = 0; i < nodes.size(); ++i)
    for (std::size_t j = i + 1; j < nodes.size(); ++j)
      for (const auto& v : vals[i])
        if (vals[j].count(v)) {
          parent[find(i)] = find(j);
          break;
        }
  std::size_t root = nodes.size();
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (vals[i].count(op.anchor->text)) root = find(i);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (find(i) != root)
      error(
          errc::pattern_not_connected, nodes[i].loc,
          "pattern node is not connected to the anchor '%" + op.anchor->text + "'",
          {{"pattern nodes must share values with the anchor's node, directly or through other nodes", std::nullopt}});
}

// ---- replacement -------------------------------------------------------------------------------

inline void checker::check_replace(replace_block& rb) {
  for (auto& n : rb.nodes) {
    check_op_spec(n.op, /*pattern=*/false);
    for (auto& a : n.args) {
      if (a.kind == expr_kind::call && a.text == "arg") {
        check_forward(a);
        continue;
      }
      check_expr(a, expr_site::replacement);
    }
    if (n.op.kind == op_spec_kind::names && n.op.names.size() == 1) check_helper_call(n);
    for (const auto& r : n.results) {
      if (contains(pattern_values_, r.text) || contains(replace_values_, r.text))
        error(errc::value_redefined, r.loc, "value '%" + r.text + "' is already defined",
              {{"replacement nodes define fresh values; pick a new name", std::nullopt}});
      else replace_values_.push_back(r.text);
    }
  }
  for (auto& rw : rb.rewires) {
    if (!contains(pattern_values_, rw.source.text)) {
      if (contains(replace_values_, rw.source.text))
        error(errc::bad_rewire, rw.source.loc,
              "rewire source '%" + rw.source.text + "' must be a pattern value, not a replacement value",
              {{"rewire moves uses of a matched edge to a new one", std::nullopt}});
      else unbound_in_replacement(rw.source);
    }
    if (!contains(pattern_values_, rw.target.text) && !contains(replace_values_, rw.target.text))
      unbound_in_replacement(rw.target);
    if (rw.which) {
      if (rw.which->kind == expr_kind::value) {
        check_consumer_ref(rw, *rw.which);
      } else {
        const type t = check_expr(*rw.which, expr_site::rewire_index);
        if (t.kind != type_kind::unknown && !(t == type{type_kind::integer, false}))
          error(errc::type_error, rw.which->loc,
                "consumer index must be an int or a %value, not " + std::string(spell(t)));
      }
    }
  }
  for (auto& d : rb.deletes) {
    if (pattern_results_.count(d.target.text)) continue;
    if (contains(pattern_values_, d.target.text) || contains(replace_values_, d.target.text))
      error(errc::bad_rewire, d.target.loc, "'delete %" + d.target.text + "' needs a value produced by a pattern node",
            {{"delete removes the matched node that produces the value", std::nullopt}});
    else unbound_in_replacement(d.target);
  }
}

inline void checker::check_consumer_ref(const rewire_stmt& rw, expr& which) {
  which.resolved = {type_kind::tensor, false};
  if (pattern_results_.count(which.text)) {
    bool reads = false;
    if (current_pattern_)
      for (const auto& n : current_pattern_->nodes) {
        bool produces = false;
        for (const auto& r : n.results) produces |= r.text == which.text;
        if (!produces) continue;
        for (const auto& a : n.args) reads |= a.kind == expr_kind::value && a.text == rw.source.text;
      }
    if (!reads)
      error(errc::bad_rewire, which.loc,
            "the node producing '%" + which.text + "' does not consume '%" + rw.source.text + "'");
    return;
  }
  if (contains(pattern_values_, which.text) || contains(replace_values_, which.text))
    error(errc::bad_rewire, which.loc,
          "'%" + which.text + "' does not name a pattern node consuming '%" + rw.source.text + "'");
  else unbound_in_replacement(symbol{which.text, which.loc});
}

inline void checker::unbound_in_replacement(const symbol& s) {
  std::vector<note> notes{{"values bound by the pattern: " + list_values(pattern_values_), std::nullopt}};
  if (!replace_values_.empty())
    notes.push_back({"values defined so far by the replacement: " + list_values(replace_values_), std::nullopt});
  error(errc::unbound_in_replacement, s.loc, "unbound value '%" + s.text + "' in replacement", std::move(notes));
}

inline void checker::check_helper_call(const ir_node& n) {
  const auto* h = find_helper(n.op.names.front().text);
  if (!h) return;
  if (n.args.size() != h->arity) {
    error(errc::wrong_arity, n.op.loc,
          "helper '" + std::string(h->name) + "' takes " + std::to_string(h->arity) + " arguments, got " +
              std::to_string(n.args.size()),
          {{std::string(h->signature), std::nullopt}});
    return;
  }
  for (std::size_t i = 0; i < n.args.size(); ++i) check_sig_arg(h->params[i], n.args[i], h->name, i);
}

}  // namespace tfg::dsl::detail
