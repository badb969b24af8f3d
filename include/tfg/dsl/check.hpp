#pragma once
/// \file
/// Semantic checks of a parsed module (the `check` phase of error_codes.hpp): name
/// resolution, value binding in pattern / replacement / constraints, the type system of the
/// constraint language, parameter domains, op names, built-in arity, examples.
/// `parse()` runs it by default; call it yourself on a module built or edited in code.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/dsl/diagnostic.hpp"

namespace tfg::dsl {

/// Checks `m` and fills the `resolved` types of its expressions, parameters and externs.
/// Returns the diagnostics (unsorted; `parse()` sorts them). Does not throw except on
/// allocation failure. O(size of the module) plus O(operators log operators).
[[nodiscard]] inline std::vector<diagnostic> check(module& m);

namespace detail {

/// Where an expression appears; decides which values, parameters and built-ins it may use.
enum class expr_site : std::uint8_t {
  pattern_condition,
  require_input,
  require_later,  ///< require internal / output
  replacement,    ///< replacement node arguments
  rewire_index,
  expect,
  example_arg,
  requirement,  ///< a condition of a `requirement` declaration
};

class checker {
 public:
  explicit checker(module& m) : m_(m) {}

  std::vector<diagnostic> run() {
    check_externs();
    std::map<std::string, source_loc> names;
    for (auto& op : m_.operators) {
      auto const [it, fresh] = names.emplace(op.name.text, op.name.loc);
      if (!fresh)
        error(errc::duplicate_operator, op.name.loc, "duplicate operator '" + op.name.text + "'",
              {{"first defined here", it->second}});
      check_operator(op);
    }
    for (auto& rq : m_.requirements) check_requirement(rq);
    return std::move(diags_);
  }

 private:
  module& m_;
  std::vector<diagnostic> diags_;
  std::map<std::string, extern_decl const*> externs_;

  // Per operator.
  std::map<std::string, param_decl*> params_;
  std::set<std::string> used_params_;
  std::vector<std::string> pattern_values_;   ///< in order of first binding
  std::vector<std::string> replace_values_;   ///< defined so far
  std::set<std::string> pattern_results_;     ///< values produced by pattern nodes
  std::set<std::string> example_values_;

  // Per requirement: bound `%values` (with their binding kind) and `$constants`.
  std::map<std::string, req_arg_kind> req_values_;
  std::set<std::string> req_params_;

  void error(errc e, source_loc at, std::string msg, std::vector<note> notes = {}) {
    diags_.push_back(make_error(e, at, std::move(msg), std::move(notes)));
  }

  static bool contains(std::vector<std::string> const& v, std::string const& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }
  /// "%x, %y" in sorted order, for notes.
  static std::string list_values(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    std::string out;
    for (auto const& s : v) out += (out.empty() ? "%" : ", %") + s;
    return out.empty() ? "(none)" : out;
  }

  // ---- externs -----------------------------------------------------------------------------

  void check_externs() {
    for (auto& ex : m_.externs) {
      if (find_builtin(ex.name.text)) {
        error(errc::duplicate_extern, ex.name.loc,
              "extern '" + ex.name.text + "' shadows the built-in of the same name");
      } else if (!externs_.emplace(ex.name.text, &ex).second) {
        error(errc::duplicate_extern, ex.name.loc, "duplicate extern '" + ex.name.text + "'",
              {{"first declared here", externs_[ex.name.text]->name.loc}});
      }
      ex.resolved_params.clear();
      for (auto const& t : ex.param_types) {
        auto const* info = find_type_name(t.text);
        if (!info) error(errc::bad_extern, t.loc, "unknown type '" + t.text + "' in extern signature", {{type_list(), std::nullopt}});
        ex.resolved_params.push_back(info ? info->t : type{});
      }
      if (ex.result_type) {
        auto const* info = find_type_name(ex.result_type->text);
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

  static std::string type_list() {
    std::string s = "types are:";
    for (auto const& t : type_names) s += std::string(" ") + std::string(t.name);
    return s;
  }

  // ---- requirements ------------------------------------------------------------------------

  void check_requirement(requirement_decl& rq) {
    req_values_.clear();
    req_params_.clear();
    params_.clear();
    pattern_values_.clear();
    replace_values_.clear();
    check_op_name(rq.op.text, rq.op.loc, false);
    std::map<std::string, source_loc> seen;
    for (std::size_t i = 0; i < rq.args.size(); ++i) {
      auto const& a = rq.args[i];
      if (a.kind == req_arg_kind::rest && i + 1 != rq.args.size())
        error(errc::bad_requirement_args, a.loc, "'...' must be the last requirement argument");
      if (a.name.text.empty()) continue;
      bool const is_value = a.kind != req_arg_kind::constant;
      std::string const key = (is_value ? "%" : "$") + a.name.text;
      auto const [it, fresh] = seen.emplace(a.name.text, a.name.loc);
      if (!fresh) {
        error(errc::bad_requirement_args, a.name.loc, "'" + key + "' is bound twice in the requirement's arguments",
              {{"first bound here", it->second}});
        continue;
      }
      if (is_value) req_values_.emplace(a.name.text, a.kind);
      else req_params_.insert(a.name.text);
    }
    check_conditions(rq.conditions, expr_site::requirement);
  }

  // ---- operators ---------------------------------------------------------------------------

  void check_operator(operator_decl& op) {
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
    if (op.replace) check_replace(*op.replace);
    else
      error(errc::missing_replace, op.name.loc, "operator '" + op.name.text + "' has no 'replace' block");

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

    for (auto const& p : op.params)
      if (!used_params_.count(p.name.text) && params_[p.name.text] == &p)
        error(errc::unused_param, p.name.loc, "parameter '$" + p.name.text + "' is never used");
  }

  // ---- parameters --------------------------------------------------------------------------

  void resolve_param(param_decl& p) {
    auto const [it, fresh] = params_.emplace(p.name.text, &p);
    if (!fresh) {
      error(errc::duplicate_param, p.name.loc, "duplicate parameter '$" + p.name.text + "'",
            {{"first declared here", it->second->name.loc}});
      return;
    }
    type declared;
    bool has_declared = false;
    if (p.type_name) {
      auto const* info = find_type_name(p.type_name->text);
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
          type const t = literal_type(v);
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
          std::string const key = v.kind == expr_kind::int_literal     ? std::to_string(v.int_value)
                                  : v.kind == expr_kind::float_literal ? std::to_string(v.float_value)
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

  /// The type of a literal domain member; E018/E044/E008 otherwise (returns unknown).
  type literal_type(expr& v) {
    switch (v.kind) {
      case expr_kind::int_literal: return v.resolved = {type_kind::integer, false};
      case expr_kind::float_literal: return v.resolved = {type_kind::floating, false};
      case expr_kind::string_literal: return v.resolved = {type_kind::string, false};
      case expr_kind::name:
        if (auto const k = find_literal(v.text)) return v.resolved = {*k, false};
        unknown_name(v);
        return {};
      case expr_kind::op_name:
        if (!check_op_name(v.text, v.loc, false)) return {};
        return v.resolved = {type_kind::op, false};
      default:
        error(errc::bad_domain, v.loc, "domain values must be literals");
        return {};
    }
  }

  // ---- op names ----------------------------------------------------------------------------

  /// E008 for an unknown namespace; E032 for a `tfg::` name unless helpers are allowed here
  /// (then the helper must exist).
  bool check_op_name(std::string const& name, source_loc loc, bool helpers_allowed) {
    auto const sep = name.find("::");
    std::string const ns = name.substr(0, sep);
    auto const& extra = extra_op_namespaces();
    if (std::find(op_namespaces.begin(), op_namespaces.end(), ns) == op_namespaces.end() &&
        std::find(extra.begin(), extra.end(), ns) == extra.end()) {
      error(errc::bad_op_name, head(loc, static_cast<std::uint32_t>(sep)),
            "unknown op namespace '" + ns + "' in '" + name + "'",
            {{"op names are written ns::name with ns one of aten, prim, quantized (tfg:: for helpers), or the namespace of a custom operator library registered in this process", std::nullopt}});
      return false;
    }
    if (ns == "tfg") {
      if (!helpers_allowed) {
        error(errc::bad_helper, loc, "shape-adaptation helper '" + name + "' is only valid in 'replace'");
        return false;
      }
      if (!find_helper(name)) {
        std::string known = "helpers:";
        for (auto const& h : helpers) known += std::string(" ") + std::string(h.name);
        error(errc::bad_helper, loc, "unknown shape-adaptation helper '" + name + "'", {{known, std::nullopt}});
        return false;
      }
    }
    return true;
  }

  static source_loc head(source_loc l, std::uint32_t n) {
    l.len = std::min(l.len, n);
    return l;
  }

  // ---- pattern -----------------------------------------------------------------------------

  void bind_pattern_value(std::string const& v) {
    if (!contains(pattern_values_, v)) pattern_values_.push_back(v);
  }

  void check_pattern(operator_decl& op) {
    // Without pattern nodes the pattern is the anchor edge alone.
    if (op.anchor && (!op.pattern || op.pattern->nodes.empty())) bind_pattern_value(op.anchor->text);
    if (!op.pattern) return;
    auto& pat = *op.pattern;
    // Results first, so a later node may read an earlier node's result and vice versa.
    for (auto& n : pat.nodes)
      for (auto const& r : n.results) {
        if (!pattern_results_.insert(r.text).second)
          error(errc::value_redefined, r.loc, "value '%" + r.text + "' is produced by two pattern nodes");
        bind_pattern_value(r.text);
      }
    for (auto& n : pat.nodes) {
      check_op_spec(n.op, /*pattern=*/true);
      for (std::size_t i = 0; i < n.args.size(); ++i) check_pattern_arg(n.args[i], i + 1 == n.args.size());
    }
    for (auto& n : pat.nodes)
      for (auto const& a : n.args)
        if (a.kind == expr_kind::value) bind_pattern_value(a.text);
    check_conditions(pat.conditions, expr_site::pattern_condition);
  }

  void check_pattern_arg(expr& a, bool last) {
    switch (a.kind) {
      case expr_kind::wildcard:
      case expr_kind::value: return;
      case expr_kind::ellipsis:
        if (!last) error(errc::bad_pattern_argument, a.loc, "'...' must be the last argument");
        return;
      case expr_kind::param:
        if (auto const* p = use_param(a)) a.resolved = p->resolved;
        return;
      case expr_kind::int_literal:
      case expr_kind::float_literal:
      case expr_kind::string_literal:
      case expr_kind::name:
      case expr_kind::op_name:
        literal_type(a);
        return;
      case expr_kind::list:
        for (auto& e : a.args) {
          if (e.kind == expr_kind::ellipsis || e.kind == expr_kind::list) {
            error(errc::bad_pattern_argument, e.loc, "list elements in a pattern must be '_', %values, $params or literals");
            continue;
          }
          check_pattern_arg(e, false);
        }
        return;
      default:
        error(errc::bad_pattern_argument, a.loc,
              "pattern arguments must be '_', '...', %values, $params or literals",
              {{"move computed conditions into a 'require' block", std::nullopt}});
    }
  }

  void check_op_spec(op_spec& s, bool pattern) {
    switch (s.kind) {
      case op_spec_kind::any:
        if (!pattern) error(errc::wildcard_outside_pattern, s.loc, "'*' (any op) is only valid in a pattern");
        return;
      case op_spec_kind::param: {
        expr e = make_param_ref(s.param);
        if (auto const* p = use_param(e))
          if (p->resolved.kind != type_kind::op && p->resolved.kind != type_kind::unknown)
            error(errc::type_error, s.param.loc,
                  "parameter '$" + s.param.text + "' is used as an op but has type " + std::string(spell(p->resolved)));
        return;
      }
      case op_spec_kind::names:
        if (!pattern && s.names.size() > 1)
          error(errc::wildcard_outside_pattern, s.loc, "op alternatives 'a|b' are only valid in a pattern");
        for (auto const& n : s.names) check_op_name(n.text, n.loc, !pattern);
        return;
    }
  }

  static expr make_param_ref(symbol const& s) {
    expr e;
    e.kind = expr_kind::param;
    e.text = s.text;
    e.loc = s.loc;
    return e;
  }

  param_decl const* use_param(expr& e) {
    auto const it = params_.find(e.text);
    if (it == params_.end()) {
      error(errc::undeclared_param, e.loc, "undeclared parameter '$" + e.text + "'",
            {{"declare it in the operator body: param $" + e.text + " : int in [lo, hi]", std::nullopt}});
      return nullptr;
    }
    used_params_.insert(e.text);
    e.resolved = it->second->resolved;
    return it->second;
  }

  void check_anchor(operator_decl& op) {
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
    auto values_of = [](ir_node const& n) {
      std::set<std::string> s;
      for (auto const& r : n.results) s.insert(r.text);
      for (auto const& a : n.args)
        if (a.kind == expr_kind::value) s.insert(a.text);
      return s;
    };
    std::vector<std::set<std::string>> vals;
    for (auto const& n : nodes) vals.push_back(values_of(n));
    for (std::size_t i = 0; i < nodes.size(); ++i)
      for (std::size_t j = i + 1; j < nodes.size(); ++j)
        for (auto const& v : vals[i])
          if (vals[j].count(v)) {
            parent[find(i)] = find(j);
            break;
          }
    std::size_t root = nodes.size();
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (vals[i].count(op.anchor->text)) root = find(i);
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (find(i) != root)
        error(errc::pattern_not_connected, nodes[i].loc, "pattern node is not connected to the anchor '%" + op.anchor->text + "'",
              {{"pattern nodes must share values with the anchor's node, directly or through other nodes", std::nullopt}});
  }

  // ---- replacement -------------------------------------------------------------------------

  void check_replace(replace_block& rb) {
    for (auto& n : rb.nodes) {
      check_op_spec(n.op, /*pattern=*/false);
      for (auto& a : n.args) check_expr(a, expr_site::replacement);
      if (n.op.kind == op_spec_kind::names && n.op.names.size() == 1) check_helper_call(n);
      for (auto const& r : n.results) {
        if (contains(pattern_values_, r.text) || contains(replace_values_, r.text))
          error(errc::value_redefined, r.loc, "value '%" + r.text + "' is already defined",
                {{"replacement nodes define fresh values; pick a new name", std::nullopt}});
        else
          replace_values_.push_back(r.text);
      }
    }
    for (auto& rw : rb.rewires) {
      if (!contains(pattern_values_, rw.source.text)) {
        if (contains(replace_values_, rw.source.text))
          error(errc::bad_rewire, rw.source.loc,
                "rewire source '%" + rw.source.text + "' must be a pattern value, not a replacement value",
                {{"rewire moves uses of a matched edge to a new one", std::nullopt}});
        else
          unbound_in_replacement(rw.source);
      }
      if (!contains(pattern_values_, rw.target.text) && !contains(replace_values_, rw.target.text))
        unbound_in_replacement(rw.target);
      if (rw.which) {
        if (rw.which->kind == expr_kind::value) {
          check_consumer_ref(rw, *rw.which);
        } else {
          type const t = check_expr(*rw.which, expr_site::rewire_index);
          if (t.kind != type_kind::unknown && !(t == type{type_kind::integer, false}))
            error(errc::type_error, rw.which->loc,
                  "consumer index must be an int or a %value, not " + std::string(spell(t)));
        }
      }
    }
    for (auto& d : rb.deletes) {
      if (pattern_results_.count(d.target.text)) continue;
      if (contains(pattern_values_, d.target.text) || contains(replace_values_, d.target.text))
        error(errc::bad_rewire, d.target.loc,
              "'delete %" + d.target.text + "' needs a value produced by a pattern node",
              {{"delete removes the matched node that produces the value", std::nullopt}});
      else
        unbound_in_replacement(d.target);
    }
  }

  /// `rewire consumer(%x, %y)`: %y must be the result of a pattern node that reads %x.
  void check_consumer_ref(rewire_stmt const& rw, expr& which) {
    which.resolved = {type_kind::tensor, false};
    if (pattern_results_.count(which.text)) {
      bool reads = false;
      if (current_pattern_)
        for (auto const& n : current_pattern_->nodes) {
          bool produces = false;
          for (auto const& r : n.results) produces |= r.text == which.text;
          if (!produces) continue;
          for (auto const& a : n.args) reads |= a.kind == expr_kind::value && a.text == rw.source.text;
        }
      if (!reads)
        error(errc::bad_rewire, which.loc,
              "the node producing '%" + which.text + "' does not consume '%" + rw.source.text + "'");
      return;
    }
    if (contains(pattern_values_, which.text) || contains(replace_values_, which.text))
      error(errc::bad_rewire, which.loc, "'%" + which.text + "' does not name a pattern node consuming '%" + rw.source.text + "'");
    else
      unbound_in_replacement(symbol{which.text, which.loc});
  }

  pattern_block const* current_pattern_ = nullptr;

  void unbound_in_replacement(symbol const& s) {
    std::vector<note> notes{{"values bound by the pattern: " + list_values(pattern_values_), std::nullopt}};
    if (!replace_values_.empty())
      notes.push_back({"values defined so far by the replacement: " + list_values(replace_values_), std::nullopt});
    error(errc::unbound_in_replacement, s.loc, "unbound value '%" + s.text + "' in replacement", std::move(notes));
  }

  void check_helper_call(ir_node const& n) {
    auto const* h = find_helper(n.op.names.front().text);
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

  // ---- conditions and expressions ----------------------------------------------------------

  void check_conditions(std::vector<expr>& conds, expr_site site) {
    for (auto& c : conds) {
      type const t = check_expr(c, site);
      if (t.kind != type_kind::unknown && !(t == type{type_kind::boolean, false}))
        error(errc::constraint_not_bool, c.loc, "condition has type " + std::string(spell(t)) + ", not bool",
              {{"each line of a condition block must be a boolean expression", std::nullopt}});
    }
  }

  static bool numeric(type t) {
    return !t.list && (t.kind == type_kind::integer || t.kind == type_kind::floating);
  }
  static bool unknown(type t) { return t.kind == type_kind::unknown && !t.list; }
  /// `a` and `b` may be compared with == / != (and `a in [b...]`).
  static bool comparable(type a, type b) {
    if (unknown(a) || unknown(b)) return true;
    if (numeric(a) && numeric(b)) return true;
    if (a.list && b.list) return a.kind == b.kind || a.kind == type_kind::unknown || b.kind == type_kind::unknown ||
                                 ((a.kind == type_kind::integer || a.kind == type_kind::floating) &&
                                  (b.kind == type_kind::integer || b.kind == type_kind::floating));
    return a == b;
  }

  void unknown_name(expr const& e) {
    std::vector<note> notes;
    if (find_builtin(e.text))
      notes.push_back({"'" + e.text + "' is a built-in function; call it, e.g. " + e.text + "(%x)", std::nullopt});
    else if (params_.count(e.text))
      notes.push_back({"did you mean the parameter '$" + e.text + "'?", std::nullopt});
    else if (contains(pattern_values_, e.text) || contains(replace_values_, e.text))
      notes.push_back({"did you mean the value '%" + e.text + "'?", std::nullopt});
    else
      notes.push_back({"literal names: true false none, dtypes (f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool), "
                       "devices (cpu cuda), layouts, memory formats",
                       std::nullopt});
    error(errc::unknown_name, e.loc, "unknown name '" + e.text + "'", std::move(notes));
  }

  void check_value_ref(expr& e, expr_site site) {
    e.resolved = {type_kind::tensor, false};
    bool const in_p = contains(pattern_values_, e.text);
    bool const in_r = contains(replace_values_, e.text);
    switch (site) {
      case expr_site::pattern_condition:
        if (!in_p) error(errc::value_not_in_scope, e.loc, "value '%" + e.text + "' is not bound by the pattern",
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
        auto const it = req_values_.find(e.text);
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

  /// Type-checks `e` in `site`, filling `resolved`. Returns unknown after an error.
  type check_expr(expr& e, expr_site site) {
    type t = check_expr_impl(e, site);
    e.resolved = t;
    return t;
  }

  type check_expr_impl(expr& e, expr_site site) {
    bool const in_example = site == expr_site::example_arg;
    switch (e.kind) {
      case expr_kind::int_literal: return {type_kind::integer, false};
      case expr_kind::float_literal: return {type_kind::floating, false};
      case expr_kind::string_literal: return {type_kind::string, false};
      case expr_kind::name:
        if (auto const k = find_literal(e.text)) return {*k, false};
        unknown_name(e);
        return {};
      case expr_kind::value:
        check_value_ref(e, site);
        return e.resolved;
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
        auto const* p = use_param(e);
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
          type const t = check_expr(a, site);
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
            error(errc::type_error, a.loc,
                  "list element of type " + std::string(spell(t)) + " among elements of type " + std::string(spell(elem)));
            bad = true;
          }
        }
        if (bad) return {};
        return {elem.kind, true};
      }
      case expr_kind::call: return check_call(e, site);
      case expr_kind::index: {
        type const base = check_expr(e.args[0], site);
        type const idx = check_expr(e.args[1], site);
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
        type const t = check_expr(e.args[0], site);
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

  static char const* spell_op(op_code op) {
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

  type check_binary(expr& e, expr_site site) {
    type const a = check_expr(e.args[0], site);
    type const b = check_expr(e.args[1], site);
    std::string const op = spell_op(e.op);
    auto mismatch = [&](std::string const& want) {
      error(errc::type_error, e.loc,
            "operator '" + op + "' " + want + "; got " + std::string(spell(a)) + " and " + std::string(spell(b)));
      return type{};
    };
    if (unknown(a) || unknown(b)) {
      // Still report a known-bad side of && / ||.
      return e.op == op_code::logical_and || e.op == op_code::logical_or || e.op == op_code::eq ||
                     e.op == op_code::ne || e.op == op_code::lt || e.op == op_code::le || e.op == op_code::gt ||
                     e.op == op_code::ge || e.op == op_code::in
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
      case op_code::sub:
      case op_code::mul:
        if (numeric(a) && numeric(b))
          return {a.kind == type_kind::floating || b.kind == type_kind::floating ? type_kind::floating
                                                                                 : type_kind::integer,
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

  bool sig_accepts(sig s, type t) const {
    switch (s) {
      case sig::tensor: return t == type{type_kind::tensor, false};
      case sig::integer: return t == type{type_kind::integer, false};
      case sig::number: return numeric(t);
      case sig::dtype: return t == type{type_kind::dtype, false};
      case sig::op: return t == type{type_kind::op, false};
      case sig::ints: return t.list && (t.kind == type_kind::integer || t.kind == type_kind::unknown);
      case sig::any_list: return t.list;
    }
    return false;
  }

  static char const* spell_sig(sig s) {
    switch (s) {
      case sig::tensor: return "a %value";
      case sig::integer: return "an int";
      case sig::number: return "a number";
      case sig::dtype: return "a dtype";
      case sig::op: return "an op";
      case sig::ints: return "ints";
      case sig::any_list: return "a list";
    }
    return "?";
  }

  void check_sig_arg(sig s, expr const& a, std::string_view fn, std::size_t i) {
    type const t = a.resolved;
    if (unknown(t)) return;
    if (!sig_accepts(s, t))
      error(errc::type_error, a.loc,
            "argument " + std::to_string(i + 1) + " of '" + std::string(fn) + "' must be " + spell_sig(s) +
                ", not " + std::string(spell(t)));
  }

  type check_call(expr& e, expr_site site) {
    // A call its context forbids is reported alone; its arguments are not checked.
    auto check_args = [&] {
      for (auto& a : e.args) check_expr(a, site);
    };
    if (site == expr_site::example_arg) {
      error(errc::bad_example_graph, e.loc, "example graph arguments must be literals or values, not calls");
      return {};
    }
    if (auto const* b = find_builtin(e.text)) {
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
        bool const ok = site == expr_site::requirement && e.args.size() == 1 &&
                        e.args[0].kind == expr_kind::value && req_values_.count(e.args[0].text) &&
                        req_values_[e.args[0].text] == req_arg_kind::optional_tensor;
        if (!ok) {
          error(errc::bad_is_none, e.loc, "is_none applies only to an optional requirement argument '%v?'");
          return {};
        }
      }
      if (e.args.size() != b->arity) {
        error(errc::wrong_arity, e.loc,
              "'" + e.text + "' takes " + std::to_string(b->arity) + " argument" + (b->arity == 1 ? "" : "s") +
                  ", got " + std::to_string(e.args.size()),
              {{std::string(b->signature), std::nullopt}});
        return {};
      }
      for (std::size_t i = 0; i < e.args.size(); ++i) check_sig_arg(b->params[i], e.args[i], e.text, i);
      return b->result;
    }
    if (auto const it = externs_.find(e.text); it != externs_.end()) {
      auto const& ex = *it->second;
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
        type const want = ex.resolved_params[i];
        type const got = e.args[i].resolved;
        if (unknown(want) || unknown(got)) continue;
        bool const ok = want == got || (want == type{type_kind::floating, false} && got == type{type_kind::integer, false}) ||
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

  // ---- examples ----------------------------------------------------------------------------

  void check_example(example_block& ex) {
    example_values_.clear();
    auto define = [&](symbol const& s) {
      if (!example_values_.insert(s.text).second)
        error(errc::bad_example_graph, s.loc, "value '%" + s.text + "' is defined twice in the example graph");
    };
    for (auto& in : ex.graph.inputs) {
      define(in.name);
      auto const lit = find_literal(in.type_name.text);
      bool const is_dtype = lit && *lit == type_kind::dtype;
      bool const is_scalar = in.type_name.text == "int" || in.type_name.text == "float" || in.type_name.text == "bool";
      if (in.tensor && !is_dtype) {
        error(errc::bad_example_input, in.type_name.loc, "unknown dtype '" + in.type_name.text + "'",
              {{"dtypes: f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool", std::nullopt}});
      } else if (!in.tensor && !is_scalar) {
        error(errc::bad_example_input, in.type_name.loc,
              is_dtype ? "tensor input '%" + in.name.text + "' needs a shape, e.g. " + in.type_name.text + "[2,3]"
                       : "unknown input type '" + in.type_name.text + "'",
              {{"inputs are tensors 'f32[2,3]' or scalars 'int', 'float', 'bool'", std::nullopt}});
      }
      for (auto& d : in.dims)
        if (d.kind != expr_kind::int_literal || d.int_value < 0)
          error(errc::bad_example_input, d.loc, "dimension sizes must be non-negative int literals");
      for (auto& a : in.attrs) {
        auto const* info = find_input_attr(a.key.text);
        if (!info) {
          std::string known = "attributes:";
          for (auto const& x : input_attrs) known += std::string(" ") + std::string(x.name);
          error(errc::bad_example_input, a.key.loc, "unknown input attribute '" + a.key.text + "'", {{known, std::nullopt}});
          continue;
        }
        if (!in.tensor) error(errc::bad_example_input, a.key.loc, "attributes apply to tensor inputs only");
        if (info->takes_value && !a.value)
          error(errc::bad_example_input, a.key.loc, "attribute '" + a.key.text + "' needs a value, e.g. " + a.key.text + "=0.5");
        if (!info->takes_value && a.value)
          error(errc::bad_example_input, a.value->loc, "attribute '" + a.key.text + "' takes no value");
        if (info->takes_value && a.value && a.value->kind != expr_kind::int_literal &&
            a.value->kind != expr_kind::float_literal)
          error(errc::bad_example_input, a.value->loc, "attribute '" + a.key.text + "' needs a number");
      }
    }
    for (auto& n : ex.graph.nodes) {
      switch (n.op.kind) {
        case op_spec_kind::any: error(errc::wildcard_outside_pattern, n.op.loc, "'*' (any op) is only valid in a pattern"); break;
        case op_spec_kind::param: error(errc::bad_example_graph, n.op.loc, "example graphs cannot use parameters"); break;
        case op_spec_kind::names:
          if (n.op.names.size() > 1)
            error(errc::wildcard_outside_pattern, n.op.loc, "op alternatives 'a|b' are only valid in a pattern");
          for (auto const& nm : n.op.names)
            if (check_op_name(nm.text, nm.loc, true) && nm.text.rfind("tfg::", 0) == 0)
              error(errc::bad_helper, nm.loc, "shape-adaptation helper '" + nm.text + "' is only valid in 'replace'");
          break;
      }
      for (auto& a : n.args) check_expr(a, expr_site::example_arg);
      for (auto const& r : n.results) define(r);
    }
    for (auto const& o : ex.graph.outputs)
      if (!example_values_.count(o.text))
        error(errc::bad_example_graph, o.loc, "returned value '%" + o.text + "' is not defined in the example graph");
    if (ex.anchor && !example_values_.count(ex.anchor->text))
      error(errc::bad_example_graph, ex.anchor->loc, "example anchor '%" + ex.anchor->text + "' is not defined in the example graph");
    if (ex.has_expect && !ex.match)
      error(errc::bad_expect, ex.expect_loc, "'expect' is only allowed in 'example match'",
            {{"a no_match example applies nothing, so there is nothing to count", std::nullopt}});
    else
      check_conditions(ex.expect, expr_site::expect);
  }

};

}  // namespace detail

inline std::vector<diagnostic> check(module& m) {
  detail::checker c(m);
  return c.run();
}

}  // namespace tfg::dsl
