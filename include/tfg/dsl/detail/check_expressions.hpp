#pragma once
/// \file
/// Semantic checks of conditions: name resolution and the type system of the constraint language, built-in signatures.
#include "tfg/dsl/detail/checker.hpp"

namespace tfg::dsl::detail {

// ---- conditions and expressions ----------------------------------------------------------------

inline void checker::check_conditions(std::vector<expr>& conds, expr_site site) {
  for (auto& c : conds) {
    const type t = check_expr(c, site);
    if (t.kind != type_kind::unknown && !(t == type{type_kind::boolean, false}))
      error(errc::constraint_not_bool, c.loc, "condition has type " + std::string(spell(t)) + ", not bool",
            {{"each line of a condition block must be a boolean expression", std::nullopt}});
  }
}

inline bool checker::numeric(type t) {
  return !t.list && (t.kind == type_kind::integer || t.kind == type_kind::floating);
}

inline bool checker::comparable(type a, type b) {
  if (unknown(a) || unknown(b)) return true;
  if (numeric(a) && numeric(b)) return true;
  if (a.list && b.list)
    return a.kind == b.kind || a.kind == type_kind::unknown || b.kind == type_kind::unknown ||
           ((a.kind == type_kind::integer || a.kind == type_kind::floating) &&
            (b.kind == type_kind::integer || b.kind == type_kind::floating));
  return a == b;
}

inline void checker::unknown_name(const expr& e) {
  std::vector<note> notes;
  if (find_builtin(e.text))
    notes.push_back({"'" + e.text + "' is a built-in function; call it, e.g. " + e.text + "(%x)", std::nullopt});
  else if (params_.count(e.text)) notes.push_back({"did you mean the parameter '$" + e.text + "'?", std::nullopt});
  else if (contains(pattern_values_, e.text) || contains(replace_values_, e.text))
    notes.push_back({"did you mean the value '%" + e.text + "'?", std::nullopt});
  else
    notes.push_back(
        {"literal names: true false none, dtypes (f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool), "
         "devices (cpu cuda), layouts, memory formats",
         std::nullopt});
  error(errc::unknown_name, e.loc, "unknown name '" + e.text + "'", std::move(notes));
}

inline void checker::check_value_ref(expr& e, expr_site site) {
  e.resolved = {type_kind::tensor, false};
  const bool in_p = contains(pattern_values_, e.text);
  const bool in_r = contains(replace_values_, e.text);
  switch (site) {
    case expr_site::pattern_condition:
      if (!in_p)
        error(errc::value_not_in_scope, e.loc, "value '%" + e.text + "' is not bound by the pattern",
              {{"values bound by the pattern: " + list_values(pattern_values_), std::nullopt}});
      return;
    case expr_site::require_input:
      if (in_p) return;
      error(errc::value_not_in_scope, e.loc,
            in_r ? "'require input' cannot see '%" + e.text + "', which the replacement creates"
                 : "unbound value '%" + e.text + "' in 'require input'",
            {{"'require input' sees the values bound by the pattern: " + list_values(pattern_values_), std::nullopt}});
      return;
    case expr_site::require_later:
      if (in_p || in_r) return;
      error(errc::value_not_in_scope, e.loc, "unbound value '%" + e.text + "' in constraint",
            {{"visible values: " + list_values(pattern_values_) +
                  (replace_values_.empty() ? std::string() : ", " + list_values(replace_values_)),
              std::nullopt}});
      return;
    case expr_site::replacement:
    case expr_site::rewire_index:
      if (!in_p && !in_r) unbound_in_replacement(symbol{e.text, e.loc});
      return;
    case expr_site::expect:
      error(errc::bad_expect, e.loc, "'expect' conditions count nodes; they cannot read '%" + e.text + "'",
            {{"use count(ns::op) and nodes()", std::nullopt}});
      e.resolved = {};
      return;
    case expr_site::requirement: {
      const auto it = req_values_.find(e.text);
      if (it == req_values_.end()) {
        error(errc::value_not_in_scope, e.loc, "value '%" + e.text + "' is not bound by the requirement's arguments");
        e.resolved = {};
      } else if (it->second == req_arg_kind::tensor_list) {
        e.resolved = {type_kind::tensor, true};
      }
      return;
    }
    case expr_site::example_arg:
      if (!example_values_.count(e.text))
        error(errc::bad_example_graph, e.loc, "value '%" + e.text + "' is not defined in the example graph");
      return;
  }
}

inline type checker::check_expr(expr& e, expr_site site) {
  type t = check_expr_impl(e, site);
  e.resolved = t;
  return t;
}

inline type checker::check_expr_impl(expr& e, expr_site site) {
  const bool in_example = site == expr_site::example_arg;
  switch (e.kind) {
    case expr_kind::int_literal: return {type_kind::integer, false};
    case expr_kind::float_literal: return {type_kind::floating, false};
    case expr_kind::string_literal: return {type_kind::string, false};
    case expr_kind::name:
      if (const auto k = find_literal(e.text)) return {*k, false};
      unknown_name(e);
      return {};
    case expr_kind::value: check_value_ref(e, site); return e.resolved;
    case expr_kind::param: {
      if (in_example) {
        error(errc::bad_example_graph, e.loc, "example graphs cannot use parameters");
        return {};
      }
      if (site == expr_site::expect) {
        error(errc::bad_expect, e.loc, "'expect' conditions cannot use parameters");
        return {};
      }
      if (site == expr_site::requirement) {
        // A constant argument's type is known only at run time (spec section 14).
        if (!req_params_.count(e.text))
          error(errc::undeclared_param, e.loc, "'$" + e.text + "' is not bound by the requirement's arguments");
        return {};
      }
      const auto* p = use_param(e);
      return p ? p->resolved : type{};
    }
    case expr_kind::op_name:
      if (!check_op_name(e.text, e.loc, false)) return {};
      return {type_kind::op, false};
    case expr_kind::wildcard:
    case expr_kind::ellipsis:
      error(errc::wildcard_outside_pattern, e.loc, "'" + e.text + "' is only valid as a pattern argument");
      return {};
    case expr_kind::list:
    case expr_kind::set: {
      type elem;
      bool bad = false;
      for (auto& a : e.args) {
        const type t = check_expr(a, site);
        if (unknown(t)) {
          bad = true;
          continue;
        }
        if (t.list) {
          error(errc::type_error, a.loc, "lists of lists are not supported");
          bad = true;
          continue;
        }
        if (elem.kind == type_kind::unknown) elem = t;
        else if (numeric(elem) && numeric(t)) {
          if (t.kind == type_kind::floating) elem = t;
        } else if (!(elem == t)) {
          error(
              errc::type_error, a.loc,
              "list element of type " + std::string(spell(t)) + " among elements of type " + std::string(spell(elem)));
          bad = true;
        }
      }
      if (bad) return {};
      return {elem.kind, true};
    }
    case expr_kind::call: return check_call(e, site);
    case expr_kind::index: {
      const type base = check_expr(e.args[0], site);
      const type idx = check_expr(e.args[1], site);
      if (!unknown(idx) && !(idx == type{type_kind::integer, false})) {
        error(errc::type_error, e.args[1].loc, "index must be an int, not " + std::string(spell(idx)));
        return {};
      }
      if (unknown(base)) return {};
      if (!base.list) {
        error(errc::type_error, e.args[0].loc, "cannot index a value of type " + std::string(spell(base)));
        return {};
      }
      return {base.kind, false};
    }
    case expr_kind::unary: {
      const type t = check_expr(e.args[0], site);
      if (unknown(t)) return {};
      if (e.op == op_code::logical_not) {
        if (t == type{type_kind::boolean, false}) return t;
        error(errc::type_error, e.loc, "'!' needs a bool operand, not " + std::string(spell(t)));
        return {};
      }
      if (numeric(t)) return t;
      error(errc::type_error, e.loc, "'-' needs a number, not " + std::string(spell(t)));
      return {};
    }
    case expr_kind::binary: return check_binary(e, site);
  }
  return {};
}

inline const char* checker::spell_op(op_code op) {
  switch (op) {
    case op_code::logical_or: return "||";
    case op_code::logical_and: return "&&";
    case op_code::eq: return "==";
    case op_code::ne: return "!=";
    case op_code::lt: return "<";
    case op_code::le: return "<=";
    case op_code::gt: return ">";
    case op_code::ge: return ">=";
    case op_code::in: return "in";
    case op_code::add: return "+";
    case op_code::sub: return "-";
    case op_code::mul: return "*";
    case op_code::div: return "/";
    case op_code::mod: return "%";
    case op_code::logical_not: return "!";
    case op_code::neg: return "-";
    case op_code::none: return "?";
  }
  return "?";
}

inline type checker::check_binary(expr& e, expr_site site) {
  const type a = check_expr(e.args[0], site);
  const type b = check_expr(e.args[1], site);
  std::string const op = spell_op(e.op);
  auto mismatch = [&](const std::string& want) {
    error(errc::type_error, e.loc,
          "operator '" + op + "' " + want + "; got " + std::string(spell(a)) + " and " + std::string(spell(b)));
    return type{};
  };
  if (unknown(a) || unknown(b)) {
    // Still report a known-bad side of && / ||.
    return e.op == op_code::logical_and || e.op == op_code::logical_or || e.op == op_code::eq || e.op == op_code::ne ||
                   e.op == op_code::lt || e.op == op_code::le || e.op == op_code::gt || e.op == op_code::ge ||
                   e.op == op_code::in
               ? type{type_kind::boolean, false}
               : type{};
  }
  switch (e.op) {
    case op_code::logical_and:
    case op_code::logical_or:
      if (a == type{type_kind::boolean, false} && b == a) return a;
      return mismatch("needs bool operands");
    case op_code::eq:
    case op_code::ne:
      if (comparable(a, b)) return {type_kind::boolean, false};
      return mismatch("needs operands of the same type");
    case op_code::lt:
    case op_code::le:
    case op_code::gt:
    case op_code::ge:
      if (numeric(a) && numeric(b)) return {type_kind::boolean, false};
      return mismatch("needs numbers");
    case op_code::in:
      if (!b.list) return mismatch("needs a list or set on the right");
      if (a.list || !comparable(a, type{b.kind, false}))
        return mismatch("needs an element of the list's type on the left");
      return {type_kind::boolean, false};
    case op_code::add:
      // ints + ints concatenates: [dim(%x, 1), dim(%x, 1)] + repeat(3, rank(%x) - 2).
      if (a.list && b.list && (a.kind == type_kind::integer || a.kind == type_kind::unknown) &&
          (b.kind == type_kind::integer || b.kind == type_kind::unknown))
        return {type_kind::integer, true};
      [[fallthrough]];
    case op_code::sub:
    case op_code::mul:
      if (numeric(a) && numeric(b))
        return {
            a.kind == type_kind::floating || b.kind == type_kind::floating ? type_kind::floating : type_kind::integer,
            false};
      return mismatch("needs numbers");
    case op_code::div:
      if (numeric(a) && numeric(b)) return {type_kind::floating, false};
      return mismatch("needs numbers");
    case op_code::mod:
      if (a == type{type_kind::integer, false} && b == a) return a;
      return mismatch("needs ints");
    default: return {};
  }
}

inline bool checker::sig_accepts(sig s, type t) const {
  switch (s) {
    case sig::tensor: return t == type{type_kind::tensor, false};
    case sig::integer: return t == type{type_kind::integer, false};
    case sig::number: return numeric(t);
    case sig::dtype: return t == type{type_kind::dtype, false};
    case sig::op: return t == type{type_kind::op, false};
    case sig::ints: return t.list && (t.kind == type_kind::integer || t.kind == type_kind::unknown);
    case sig::any_list: return t.list;
    case sig::boolean: return t == type{type_kind::boolean, false};
    case sig::shape:
      return (t.list && (t.kind == type_kind::integer || t.kind == type_kind::unknown)) ||
             t == type{type_kind::tensor, false};
  }
  return false;
}

inline const char* checker::spell_sig(sig s) {
  switch (s) {
    case sig::tensor: return "a %value";
    case sig::integer: return "an int";
    case sig::number: return "a number";
    case sig::dtype: return "a dtype";
    case sig::op: return "an op";
    case sig::ints: return "ints";
    case sig::any_list: return "a list";
    case sig::boolean: return "a condition";
    case sig::shape: return "ints or a %value (a list of sizes)";
  }
  return "?";
}

inline void checker::check_sig_arg(sig s, const expr& a, std::string_view fn, std::size_t i) {
  const type t = a.resolved;
  if (unknown(t)) return;
  if (!sig_accepts(s, t))
    error(errc::type_error, a.loc,
          "argument " + std::to_string(i + 1) + " of '" + std::string(fn) + "' must be " + spell_sig(s) + ", not " +
              std::string(spell(t)));
}

/// `arg(%y, i)`, a whole argument of a replacement node: the i-th argument of the pattern node
/// producing %y, forwarded as the seed has it (an edge, a constant or a list).
inline void checker::check_forward(expr& e) {
  e.resolved = {};
  const bool ok = e.args.size() == 2 && e.args[0].kind == expr_kind::value && pattern_results_.count(e.args[0].text) &&
                  e.args[1].kind == expr_kind::int_literal && e.args[1].int_value >= 0;
  if (!ok)
    error(errc::bad_forward, e.loc,
          "arg() takes a value a pattern node produces and a constant argument index, as in arg(%y, 1)",
          {{"values pattern nodes produce: " + list_values({pattern_results_.begin(), pattern_results_.end()}),
            std::nullopt}});
}

inline type checker::check_call(expr& e, expr_site site) {
  // A call its context forbids is reported alone; its arguments are not checked.
  auto check_args = [&] {
    for (auto& a : e.args) check_expr(a, site);
  };
  if (site == expr_site::example_arg) {
    error(errc::bad_example_graph, e.loc, "example graph arguments must be literals or values, not calls");
    return {};
  }
  if (e.text == "arg" && !find_builtin(e.text) && !externs_.count(e.text)) {
    error(errc::bad_forward, e.loc,
          "arg() forwards a whole argument: it is allowed only as an argument of a replacement node",
          {{"write it alone, as in aten::reshape(%x, arg(%y, 1))", std::nullopt}});
    return {};
  }
  if (const auto* b = find_builtin(e.text)) {
    if (b->use == builtin_use::expect && site != expr_site::expect) {
      error(errc::unknown_builtin, e.loc, "'" + e.text + "' is only available in 'expect' blocks");
      return {};
    }
    if (site == expr_site::expect && b->use != builtin_use::expect && b->use != builtin_use::pure) {
      error(errc::bad_expect, e.loc, "'expect' conditions count nodes; '" + e.text + "' reads the graph state",
            {{"use count(ns::op) and nodes()", std::nullopt}});
      return {};
    }
    if (site == expr_site::pattern_condition && b->use == builtin_use::state) {
      error(errc::state_in_pattern, e.loc, "'" + e.text + "' reads tensor state; patterns see only the graph",
            {{"move this condition into 'require input'", std::nullopt}});
      return {};
    }
    check_args();
    if (b->name == "is_none") {
      const bool ok = site == expr_site::requirement && e.args.size() == 1 && e.args[0].kind == expr_kind::value &&
                      req_values_.count(e.args[0].text) && req_values_[e.args[0].text] == req_arg_kind::optional_tensor;
      if (!ok) {
        error(errc::bad_is_none, e.loc, "is_none applies only to an optional requirement argument '%v?'");
        return {};
      }
    }
    if (e.args.size() != b->arity) {
      error(errc::wrong_arity, e.loc,
            "'" + e.text + "' takes " + std::to_string(b->arity) + " argument" + (b->arity == 1 ? "" : "s") + ", got " +
                std::to_string(e.args.size()),
            {{std::string(b->signature), std::nullopt}});
      return {};
    }
    for (std::size_t i = 0; i < e.args.size(); ++i) check_sig_arg(b->params[i], e.args[i], e.text, i);
    return b->result;
  }
  if (const auto it = externs_.find(e.text); it != externs_.end()) {
    const auto& ex = *it->second;
    if (site == expr_site::expect) {
      error(errc::bad_expect, e.loc, "'expect' conditions cannot call externs");
      return {};
    }
    if (site == expr_site::pattern_condition) {
      error(errc::state_in_pattern, e.loc, "extern '" + e.text + "' may read tensor state; not allowed in a pattern",
            {{"move this condition into 'require input'", std::nullopt}});
      return {};
    }
    check_args();
    if (e.args.size() != ex.resolved_params.size()) {
      error(errc::wrong_arity, e.loc,
            "'" + e.text + "' takes " + std::to_string(ex.resolved_params.size()) + " argument(s), got " +
                std::to_string(e.args.size()),
            {{"declared here", ex.loc}});
      return {};
    }
    for (std::size_t i = 0; i < e.args.size(); ++i) {
      const type want = ex.resolved_params[i];
      const type got = e.args[i].resolved;
      if (unknown(want) || unknown(got)) continue;
      const bool ok = want == got ||
                      (want == type{type_kind::floating, false} && got == type{type_kind::integer, false}) ||
                      (want.list && got.list && got.kind == type_kind::unknown);
      if (!ok)
        error(errc::type_error, e.args[i].loc,
              "argument " + std::to_string(i + 1) + " of '" + e.text + "' must be " + std::string(spell(want)) +
                  ", not " + std::string(spell(got)));
    }
    return ex.resolved_result;
  }
  check_args();
  error(errc::unknown_builtin, e.loc, "unknown function '" + e.text + "'",
        {{"declare it with 'extern pred " + e.text + "(...) -> bool' and register it from C++", std::nullopt}});
  return {};
}

}  // namespace tfg::dsl::detail
