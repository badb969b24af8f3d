#pragma once
/// \file
/// The semantic checker's class (tfg::dsl::check): its state and the declarations of its
/// phases. The phases are defined in check_declarations.hpp (externs, requirements,
/// operators, parameters, op names), check_bodies.hpp (pattern, replacement),
/// check_expressions.hpp (conditions and the type system) and check_examples.hpp.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/dsl/diagnostic.hpp"

namespace tfg::dsl::detail {

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
      const auto [it, fresh] = names.emplace(op.name.text, op.name.loc);
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
  std::map<std::string, const extern_decl*> externs_;

  // Per operator.
  std::map<std::string, param_decl*> params_;
  std::set<std::string> used_params_;
  std::vector<std::string> pattern_values_;  ///< in order of first binding
  std::vector<std::string> replace_values_;  ///< defined so far
  std::set<std::string> pattern_results_;    ///< values produced by pattern nodes
  std::set<std::string> example_values_;

  // Per requirement: bound `%values` (with their binding kind) and `$constants`.
  std::map<std::string, req_arg_kind> req_values_;
  std::set<std::string> req_params_;

  void error(errc e, source_loc at, std::string msg, std::vector<note> notes = {}) {
    diags_.push_back(make_error(e, at, std::move(msg), std::move(notes)));
  }

  static bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }
  /// "%x, %y" in sorted order, for notes.
  static std::string list_values(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "%" : ", %") + s;
    return out.empty() ? "(none)" : out;
  }

  // ---- externs -----------------------------------------------------------------------------

  void check_externs();

  static std::string type_list();

  // ---- requirements ------------------------------------------------------------------------

  void check_requirement(requirement_decl& rq);

  // ---- operators ---------------------------------------------------------------------------

  void check_operator(operator_decl& op);

  // ---- parameters --------------------------------------------------------------------------

  void resolve_param(param_decl& p);
  void check_computed_bounds(operator_decl& op);

  /// The type of a literal domain member; E018/E044/E008 otherwise (returns unknown).
  type literal_type(expr& v);

  // ---- op names ----------------------------------------------------------------------------

  /// E008 for an unknown namespace; E032 for a `tfg::` name unless helpers are allowed here
  /// (then the helper must exist).
  bool check_op_name(const std::string& name, source_loc loc, bool helpers_allowed);

  static source_loc head(source_loc l, std::uint32_t n);

  // ---- pattern -----------------------------------------------------------------------------

  void bind_pattern_value(const std::string& v);

  void check_pattern(operator_decl& op);

  void check_pattern_arg(expr& a, bool last);

  void check_op_spec(op_spec& s, bool pattern);

  static expr make_param_ref(const symbol& s);

  const param_decl* use_param(expr& e);

  void check_anchor(operator_decl& op);

  // ---- replacement -------------------------------------------------------------------------

  void check_replace(replace_block& rb);

  /// `rewire consumer(%x, %y)`: %y must be the result of a pattern node that reads %x.
  void check_consumer_ref(const rewire_stmt& rw, expr& which);

  const pattern_block* current_pattern_ = nullptr;

  void unbound_in_replacement(const symbol& s);

  void check_helper_call(const ir_node& n);

  // ---- conditions and expressions ----------------------------------------------------------

  void check_conditions(std::vector<expr>& conds, expr_site site);

  static bool numeric(type t);
  static bool unknown(type t) { return t.kind == type_kind::unknown && !t.list; }
  /// `a` and `b` may be compared with == / != (and `a in [b...]`).
  static bool comparable(type a, type b);

  void unknown_name(const expr& e);

  void check_value_ref(expr& e, expr_site site);

  /// Type-checks `e` in `site`, filling `resolved`. Returns unknown after an error.
  type check_expr(expr& e, expr_site site);

  type check_expr_impl(expr& e, expr_site site);

  static const char* spell_op(op_code op);

  type check_binary(expr& e, expr_site site);

  bool sig_accepts(sig s, type t) const;

  static const char* spell_sig(sig s);

  void check_sig_arg(sig s, const expr& a, std::string_view fn, std::size_t i);

  type check_call(expr& e, expr_site site);

  void check_forward(expr& e);

  // ---- examples ----------------------------------------------------------------------------

  void check_example(example_block& ex);
};

}  // namespace tfg::dsl::detail
