#pragma once
/// \file
/// Semantic checks of declarations: externs, requirements, operators, parameter domains and op names.
#include "tfg/dsl/detail/checker.hpp"

#include <cstdio>
#include <span>

namespace tfg::dsl::detail {

// ---- externs -----------------------------------------------------------------------------------

inline void checker::check_externs() {
  for (auto& ex : m_.externs) {
    if (find_builtin(ex.name.text)) {
      error(errc::duplicate_extern, ex.name.loc, "extern '" + ex.name.text + "' shadows the built-in of the same name");
    } else if (!externs_.emplace(ex.name.text, &ex).second) {
      error(errc::duplicate_extern, ex.name.loc, "duplicate extern '" + ex.name.text + "'",
            {{"first declared here", externs_[ex.name.text]->name.loc}});
    }
    ex.resolved_params.clear();
    for (const auto& t : ex.param_types) {
      const auto* info = find_type_name(t.text);
      if (!info)
        error(errc::bad_extern, t.loc, "unknown type '" + t.text + "' in extern signature",
              {{type_list(), std::nullopt}});
      ex.resolved_params.push_back(info ? info->t : type{});
    }
    if (ex.result_type) {
      const auto* info = find_type_name(ex.result_type->text);
      if (!info) {
        error(errc::bad_extern, ex.result_type->loc, "unknown type '" + ex.result_type->text + "' in extern signature",
              {{type_list(), std::nullopt}});
      } else if (ex.predicate && info->t != type{type_kind::boolean, false}) {
        error(errc::bad_extern, ex.result_type->loc, "extern pred '" + ex.name.text + "' must return bool",
              {{"use 'extern fn' for other result types", std::nullopt}});
      }
      ex.resolved_result = info ? info->t : type{};
    } else if (ex.predicate) {
      ex.resolved_result = {type_kind::boolean, false};
    } else {
      error(errc::bad_extern, ex.name.loc, "extern fn '" + ex.name.text + "' needs a result type ('-> T')");
    }
  }
}

inline std::string checker::type_list() {
  std::string s = "types are:";
  for (const auto& t : type_names) s += std::string(" ") + std::string(t.name);
  return s;
}

// ---- requirements ------------------------------------------------------------------------------

inline void checker::check_requirement(requirement_decl& rq) {
  req_values_.clear();
  req_params_.clear();
  params_.clear();
  pattern_values_.clear();
  replace_values_.clear();
  check_op_name(rq.op.text, rq.op.loc, false);
  std::map<std::string, source_loc> seen;
  for (std::size_t i = 0; i < rq.args.size(); ++i) {
    const auto& a = rq.args[i];
    if (a.kind == req_arg_kind::rest && i + 1 != rq.args.size())
      error(errc::bad_requirement_args, a.loc, "'...' must be the last requirement argument");
    if (a.name.text.empty()) continue;
    const bool is_value = a.kind != req_arg_kind::constant;
    std::string const key = (is_value ? "%" : "$") + a.name.text;
    const auto [it, fresh] = seen.emplace(a.name.text, a.name.loc);
    if (!fresh) {
      error(errc::bad_requirement_args, a.name.loc, "'" + key + "' is bound twice in the requirement's arguments",
            {{"first bound here", it->second}});
      continue;
    }
    if (is_value) req_values_.emplace(a.name.text, a.kind);
    else req_params_.insert(a.name.text);
  }
  // `propagates nan RULE from %x`: %x is a plain tensor argument, and every argument before it
  // is a constant or a plain tensor, so that its position among the node's input edges is fixed.
  if (!rq.nan_from.text.empty()) {
    std::size_t i = 0;
    while (i < rq.args.size() && rq.args[i].name.text != rq.nan_from.text) ++i;
    if (i == rq.args.size() || rq.args[i].kind != req_arg_kind::tensor)
      error(errc::bad_requirement_args, rq.nan_from.loc,
            "'from %" + rq.nan_from.text + "': not a plain tensor argument ('%x') of this requirement");
    else
      for (std::size_t j = 0; j < i; ++j)
        if (rq.args[j].kind == req_arg_kind::optional_tensor || rq.args[j].kind == req_arg_kind::tensor_list)
          error(
              errc::bad_requirement_args, rq.nan_from.loc,
              "'from %" + rq.nan_from.text + "': an optional or list argument before it leaves its input position open",
              {{"that argument", rq.args[j].loc}});
  }
  check_conditions(rq.conditions, expr_site::requirement);
}

// ---- operators ---------------------------------------------------------------------------------

inline void checker::check_operator(operator_decl& op) {
  params_.clear();
  used_params_.clear();
  pattern_values_.clear();
  replace_values_.clear();
  pattern_results_.clear();
  current_pattern_ = op.pattern ? &*op.pattern : nullptr;

  std::string missing;
  if (!op.object) missing += "'object'";
  if (!op.primitive) missing += std::string(missing.empty() ? "" : ", ") + "'primitive'";
  if (!op.origin) missing += std::string(missing.empty() ? "" : ", ") + "'origin'";
  if (!missing.empty())
    error(errc::missing_header_clause, op.name.loc,
          "operator '" + op.name.text + "' is missing the header clause(s) " + missing,
          {{"e.g. 'object tensor  primitive insertion  origin tfg'", std::nullopt}});

  for (auto& p : op.params) resolve_param(p);
  check_pattern(op);
  check_anchor(op);
  check_computed_bounds(op);
  if (op.replace) check_replace(*op.replace);
  else error(errc::missing_replace, op.name.loc, "operator '" + op.name.text + "' has no 'replace' block");

  if (op.require_input) check_conditions(op.require_input->conditions, expr_site::require_input);
  if (op.require_internal) check_conditions(op.require_internal->conditions, expr_site::require_later);
  if (op.require_output) check_conditions(op.require_output->conditions, expr_site::require_later);

  bool has_match = false, has_no_match = false;
  for (auto& ex : op.examples) {
    (ex.match ? has_match : has_no_match) = true;
    check_example(ex);
  }
  if (!has_match)
    error(errc::missing_example_match, op.name.loc, "operator '" + op.name.text + "' has no 'example match'",
          {{"every operator shows a graph it applies to", std::nullopt}});
  if (!has_no_match)
    error(errc::missing_example_no_match, op.name.loc, "operator '" + op.name.text + "' has no 'example no_match'",
          {{"every operator shows a graph its constraints reject", std::nullopt}});

  for (const auto& p : op.params)
    if (!used_params_.count(p.name.text) && params_[p.name.text] == &p)
      error(errc::unused_param, p.name.loc, "parameter '$" + p.name.text + "' is never used");
}

// ---- parameters --------------------------------------------------------------------------------

inline void checker::resolve_param(param_decl& p) {
  const auto [it, fresh] = params_.emplace(p.name.text, &p);
  if (!fresh) {
    error(errc::duplicate_param, p.name.loc, "duplicate parameter '$" + p.name.text + "'",
          {{"first declared here", it->second->name.loc}});
    return;
  }
  type declared;
  bool has_declared = false;
  if (p.type_name) {
    const auto* info = find_type_name(p.type_name->text);
    if (!info || !info->param_ok) {
      error(errc::bad_domain, p.type_name->loc,
            info ? "type '" + p.type_name->text + "' cannot be a parameter type"
                 : "unknown type '" + p.type_name->text + "'",
            {{"parameter types: int, float, bool, string, dtype, device, layout, memory_format, op", std::nullopt}});
      return;
    }
    declared = info->t;
    has_declared = true;
  }
  switch (p.domain) {
    case domain_kind::none:
      if (has_declared && declared.kind == type_kind::boolean) {
        p.resolved = declared;
      } else {
        error(errc::empty_domain, p.name.loc, "parameter '$" + p.name.text + "' has no domain",
              {{"write e.g. 'param $k : int in [1, 8]' or 'param $a in {aten::relu, aten::gelu}'", std::nullopt}});
        p.resolved = declared;
      }
      return;
    case domain_kind::range: {
      if (has_declared && declared.kind != type_kind::integer && declared.kind != type_kind::floating) {
        error(errc::bad_domain, p.domain_values.front().loc,
              "a range domain needs an int or float parameter, not " + std::string(spell(declared)));
        p.resolved = declared;
        return;
      }
      bool all_int = true;
      double bound[2] = {0, 0};
      // Bounds computed from the site (section 6, "Bounds read from the site"): checked as
      // expressions once the pattern's values are known (check_computed_bounds).
      const bool computed = !std::all_of(p.domain_values.begin(), p.domain_values.end(), is_number_literal);
      if (computed) {
        if (!has_declared) {
          error(errc::bad_domain, p.domain_values.front().loc,
                p.derived ? "a parameter derived from the site needs a declared type"
                          : "a range whose bounds are computed needs a declared type",
                {{"write e.g. 'param $" + p.name.text + " : int in [0, rank(%x) - 1]'", std::nullopt}});
          return;
        }
        p.resolved = declared;
        return;
      }
      for (std::size_t i = 0; i < p.domain_values.size() && i < 2; ++i) {
        auto& v = p.domain_values[i];
        if (v.kind == expr_kind::int_literal) {
          bound[i] = static_cast<double>(v.int_value);
          v.resolved = {type_kind::integer, false};
        } else if (v.kind == expr_kind::float_literal) {
          bound[i] = v.float_value;
          all_int = false;
          v.resolved = {type_kind::floating, false};
          if (has_declared && declared.kind == type_kind::integer) {
            error(errc::bad_domain, v.loc, "bound of int parameter '$" + p.name.text + "' is not an int");
            p.resolved = declared;
            return;
          }
        } else {
          error(errc::bad_domain, v.loc, "range bounds must be number literals");
          p.resolved = declared;
          return;
        }
      }
      p.resolved = has_declared ? declared : type{all_int ? type_kind::integer : type_kind::floating, false};
      if (bound[0] > bound[1])
        error(errc::empty_domain, p.domain_values.front().loc,
              "empty domain of '$" + p.name.text + "': lower bound is above upper bound");
      return;
    }
    case domain_kind::set: {
      if (p.domain_values.empty()) {
        error(errc::empty_domain, p.name.loc, "parameter '$" + p.name.text + "' has an empty domain");
        p.resolved = declared;
        return;
      }
      type elem = declared;
      bool have_elem = has_declared;
      std::set<std::string> seen;
      for (auto& v : p.domain_values) {
        const type t = literal_type(v);
        if (t.kind == type_kind::unknown) {
          p.resolved = declared;
          return;  // already reported
        }
        if (!have_elem) {
          elem = t;
          have_elem = true;
        } else if (!(t == elem || (elem.kind == type_kind::floating && t.kind == type_kind::integer))) {
          if (elem.kind == type_kind::integer && t.kind == type_kind::floating && !has_declared) {
            elem = t;
          } else {
            error(errc::bad_domain, v.loc,
                  "domain value of type " + std::string(spell(t)) + " in a domain of " + std::string(spell(elem)));
            p.resolved = elem;
            return;
          }
        }
        // Floats by their exact value (%a): std::to_string's six decimals made 1e-40 a
        // duplicate of 0.0; -0.0 and 0.0 stay distinct values of a domain.
        auto exact = [](double d) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%a", d);
          return std::string(buf);
        };
        std::string const key = v.kind == expr_kind::int_literal     ? std::to_string(v.int_value)
                                : v.kind == expr_kind::float_literal ? exact(v.float_value)
                                                                     : v.text;
        if (!seen.insert(key).second) {
          error(errc::bad_domain, v.loc, "duplicate value in the domain of '$" + p.name.text + "'");
          p.resolved = elem;
          return;
        }
      }
      p.resolved = elem;
      return;
    }
  }
}

inline void checker::check_computed_bounds(operator_decl& op) {
  // Parameters the pattern binds (arguments and op specs): the only ones a bound may read,
  // because they have their values before anything is sampled.
  std::set<std::string> matched;
  auto collect = [&](auto&& self, const expr& e) -> void {
    if (e.kind == expr_kind::param) matched.insert(e.text);
    for (auto const& a : e.args) self(self, a);
  };
  if (op.pattern)
    for (const auto& n : op.pattern->nodes) {
      if (n.op.kind == op_spec_kind::param) matched.insert(n.op.param.text);
      for (const auto& a : n.args) collect(collect, a);
    }
  for (auto& p : op.params) {
    if (p.domain != domain_kind::range || p.resolved.kind == type_kind::unknown) continue;
    if (std::all_of(p.domain_values.begin(), p.domain_values.end(), is_number_literal)) continue;
    if (matched.count(p.name.text)) {
      error(errc::bad_domain, p.domain_values.front().loc,
            "parameter '$" + p.name.text + "' is bound by matching; its domain needs literal bounds");
      continue;
    }
    // A derived parameter's two bounds are one expression: checked (and reported) once, then
    // the checked expression is its upper bound too.
    const std::span<expr> bounds(p.domain_values.data(), p.derived ? std::size_t{1} : p.domain_values.size());
    for (auto& v : bounds) {
      if (is_number_literal(v)) continue;
      const type t = check_expr(v, expr_site::require_input);
      if (t.kind == type_kind::unknown) continue;  // already reported
      if (!numeric(t) || (p.resolved.kind == type_kind::integer && t.kind != type_kind::integer)) {
        error(errc::bad_domain, v.loc,
              "bound of '$" + p.name.text + "' has type " + std::string(spell(t)) + ", not " +
                  std::string(spell(p.resolved)));
        continue;
      }
      std::string sampled;
      auto reads = [&](auto&& self, const expr& e) -> void {
        if (e.kind == expr_kind::param && !matched.count(e.text) && sampled.empty()) sampled = e.text;
        for (auto const& a : e.args) self(self, a);
      };
      reads(reads, v);
      if (sampled.empty()) continue;
      const bool reads_derived = std::any_of(op.params.begin(), op.params.end(),
                                             [&](const param_decl& q) { return q.derived && q.name.text == sampled; });
      error(errc::bad_domain, v.loc,
            "bound of '$" + p.name.text + "' reads '$" + sampled + "', which is " +
                (reads_derived ? "derived from the site" : "sampled") + ", not bound by matching",
            {{"a bound may read pattern values and parameters the pattern binds", std::nullopt}});
    }
    if (p.derived && p.domain_values.size() == 2) p.domain_values[1] = p.domain_values[0];
  }
}

inline type checker::literal_type(expr& v) {
  switch (v.kind) {
    case expr_kind::int_literal: return v.resolved = {type_kind::integer, false};
    case expr_kind::float_literal: return v.resolved = {type_kind::floating, false};
    case expr_kind::string_literal: return v.resolved = {type_kind::string, false};
    case expr_kind::name:
      if (const auto k = find_literal(v.text)) return v.resolved = {*k, false};
      unknown_name(v);
      return {};
    case expr_kind::op_name:
      if (!check_op_name(v.text, v.loc, false)) return {};
      return v.resolved = {type_kind::op, false};
    default: error(errc::bad_domain, v.loc, "domain values must be literals"); return {};
  }
}

// ---- op names ----------------------------------------------------------------------------------

inline bool checker::check_op_name(const std::string& name, source_loc loc, bool helpers_allowed) {
  const auto sep = name.find("::");
  std::string const ns = name.substr(0, sep);
  const auto& extra = extra_op_namespaces();
  if (std::find(op_namespaces.begin(), op_namespaces.end(), ns) == op_namespaces.end() &&
      std::find(extra.begin(), extra.end(), ns) == extra.end()) {
    error(errc::bad_op_name, head(loc, static_cast<std::uint32_t>(sep)),
          "unknown op namespace '" + ns + "' in '" + name + "'",
          {{"op names are written ns::name with ns one of aten, prim, quantized (tfg:: for helpers), or the namespace "
            "of a custom operator library registered in this process",
            std::nullopt}});
    return false;
  }
  if (ns == "tfg") {
    // An activation form is also a value of op-typed parameters and expressions.
    if (const auto* h = find_helper(name); h && h->activation) return true;
    if (!helpers_allowed) {
      error(errc::bad_helper, loc, "shape-adaptation helper '" + name + "' is only valid in 'replace'");
      return false;
    }
    if (!find_helper(name)) {
      std::string known = "helpers:";
      for (const auto& h : helpers) known += std::string(" ") + std::string(h.name);
      error(errc::bad_helper, loc, "unknown shape-adaptation helper '" + name + "'", {{known, std::nullopt}});
      return false;
    }
  }
  return true;
}

inline source_loc checker::head(source_loc l, std::uint32_t n) {
  l.len = std::min(l.len, n);
  return l;
}

}  // namespace tfg::dsl::detail
