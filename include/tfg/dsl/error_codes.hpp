#pragma once
/// \file
/// The DSL's diagnostic codes. This table is the authority: `dsl/spec.md` documents every
/// code listed here, and `tests/dsl/must_fail/` holds at least one case for every code whose
/// `testable` flag is set (a test enforces both).

#include <array>
#include <cstdint>
#include <string_view>

namespace tfg::dsl {

/// Diagnostic identifiers; `code_of(e)` spells them "E###".
enum class errc : std::uint16_t {
  internal = 0,
  syntax = 1,
  unbalanced_braces = 2,
  unterminated_string = 3,
  bad_file_header = 4,
  unsupported_version = 5,
  number_out_of_range = 6,
  nesting_too_deep = 7,
  bad_op_name = 8,
  unknown_builtin = 9,
  wrong_arity = 10,
  type_error = 11,
  unbound_in_replacement = 12,
  value_not_in_scope = 13,
  undeclared_param = 14,
  unused_param = 15,
  duplicate_param = 16,
  empty_domain = 17,
  bad_domain = 18,
  duplicate_operator = 19,
  missing_anchor = 20,
  anchor_not_in_pattern = 21,
  missing_example_match = 22,
  missing_example_no_match = 23,
  bad_object = 24,
  bad_primitive = 25,
  duplicate_clause = 26,
  missing_header_clause = 27,
  constraint_not_bool = 28,
  value_redefined = 29,
  wildcard_outside_pattern = 30,
  bad_pattern_argument = 31,
  bad_helper = 32,
  bad_tolerance = 33,
  bad_origin = 34,
  bad_extern = 35,
  duplicate_extern = 36,
  bad_rewire = 37,
  bad_example_graph = 38,
  bad_example_input = 39,
  bad_expect = 40,
  bad_stage = 41,
  missing_replace = 42,
  pattern_not_connected = 43,
  unknown_name = 44,
  state_in_pattern = 45,
  bad_requirement_args = 46,
  bad_is_none = 47,
  bad_pool_path = 48,
  empty_pool = 49,
  unknown_backend_op = 50,
  bad_requires = 51,
  bad_forward = 52,
};

/// Which pass reports a code: `parse` (lexing, X3 grammar, header/block folding) or
/// `check` (name resolution, binding, types, examples). `check` runs only on a module
/// whose parse produced no error.
enum class diag_phase : std::uint8_t { parse, check };

struct error_code_info {
  errc id;
  std::string_view code;   ///< "E012"
  std::string_view title;  ///< one-line meaning, as in dsl/spec.md
  diag_phase phase;
  /// False for E000, which no input is meant to trigger, for the pool-level codes (E048,
  /// E049: about folders, not one file's text; tests/match/test_pool.cpp) and for E050 (the
  /// backend's op registry, not the DSL, decides it; tests/cli).
  bool testable;
};

inline constexpr std::array<error_code_info, 53> error_codes{{
    {errc::internal, "E000", "internal error in the DSL front end (please report)", diag_phase::parse, false},
    {errc::syntax, "E001", "syntax error: unexpected token", diag_phase::parse, true},
    {errc::unbalanced_braces, "E002", "unterminated block or unmatched '}'", diag_phase::parse, true},
    {errc::unterminated_string, "E003", "unterminated string literal", diag_phase::parse, true},
    {errc::bad_file_header, "E004", "missing or malformed file header 'tfg <version>'", diag_phase::parse, true},
    {errc::unsupported_version, "E005", "unsupported language version", diag_phase::parse, true},
    {errc::number_out_of_range, "E006", "numeric literal out of range", diag_phase::parse, true},
    {errc::nesting_too_deep, "E007", "brackets, prefix operators or an operator chain nested too deeply",
     diag_phase::parse, true},
    {errc::bad_op_name, "E008", "unknown op-name format or namespace", diag_phase::check, true},
    {errc::unknown_builtin, "E009", "unknown built-in or extern function", diag_phase::check, true},
    {errc::wrong_arity, "E010", "wrong number of arguments", diag_phase::check, true},
    {errc::type_error, "E011", "type error in an expression", diag_phase::check, true},
    {errc::unbound_in_replacement, "E012", "unbound value in replacement", diag_phase::check, true},
    {errc::value_not_in_scope, "E013", "value not visible in this block", diag_phase::check, true},
    {errc::undeclared_param, "E014", "parameter used but not declared", diag_phase::check, true},
    {errc::unused_param, "E015", "parameter declared but never used", diag_phase::check, true},
    {errc::duplicate_param, "E016", "duplicate parameter", diag_phase::check, true},
    {errc::empty_domain, "E017", "empty, inverted or missing parameter domain", diag_phase::check, true},
    {errc::bad_domain, "E018", "malformed parameter domain or type", diag_phase::check, true},
    {errc::duplicate_operator, "E019", "duplicate operator name", diag_phase::check, true},
    {errc::missing_anchor, "E020", "missing anchor", diag_phase::check, true},
    {errc::anchor_not_in_pattern, "E021", "anchor not bound by the pattern", diag_phase::check, true},
    {errc::missing_example_match, "E022", "missing 'example match'", diag_phase::check, true},
    {errc::missing_example_no_match, "E023", "missing 'example no_match'", diag_phase::check, true},
    {errc::bad_object, "E024", "unknown object kind", diag_phase::parse, true},
    {errc::bad_primitive, "E025", "unknown primitive kind", diag_phase::parse, true},
    {errc::duplicate_clause, "E026", "duplicate header clause or block", diag_phase::parse, true},
    {errc::missing_header_clause, "E027", "missing header clause (object, primitive or origin)", diag_phase::check,
     true},
    {errc::constraint_not_bool, "E028", "condition is not boolean", diag_phase::check, true},
    {errc::value_redefined, "E029", "value defined twice", diag_phase::check, true},
    {errc::wildcard_outside_pattern, "E030", "wildcard outside a pattern", diag_phase::check, true},
    {errc::bad_pattern_argument, "E031", "invalid pattern argument", diag_phase::check, true},
    {errc::bad_helper, "E032", "unknown or misplaced shape-adaptation helper", diag_phase::check, true},
    {errc::bad_tolerance, "E033", "malformed value-preservation tolerance", diag_phase::parse, true},
    {errc::bad_origin, "E034", "malformed origin clause", diag_phase::parse, true},
    {errc::bad_extern, "E035", "malformed extern signature", diag_phase::check, true},
    {errc::duplicate_extern, "E036", "duplicate extern or extern shadowing a built-in", diag_phase::check, true},
    {errc::bad_rewire, "E037", "invalid rewire or delete target", diag_phase::check, true},
    {errc::bad_example_graph, "E038", "malformed example graph", diag_phase::check, true},
    {errc::bad_example_input, "E039", "unknown example input type or attribute", diag_phase::check, true},
    {errc::bad_expect, "E040", "invalid 'expect' block", diag_phase::check, true},
    {errc::bad_stage, "E041", "unknown 'rejected_by' stage", diag_phase::parse, true},
    {errc::missing_replace, "E042", "missing 'replace' block", diag_phase::check, true},
    {errc::pattern_not_connected, "E043", "pattern node not connected to the anchor", diag_phase::check, true},
    {errc::unknown_name, "E044", "unknown name", diag_phase::check, true},
    {errc::state_in_pattern, "E045", "tensor-state built-in used in a pattern", diag_phase::check, true},
    {errc::bad_requirement_args, "E046", "malformed requirement argument list", diag_phase::check, true},
    {errc::bad_is_none, "E047", "is_none on a value that is not an optional requirement argument", diag_phase::check,
     true},
    {errc::bad_pool_path, "E048", "an operator path is neither a folder nor a .tfg file", diag_phase::parse, false},
    {errc::empty_pool, "E049", "an operator path holds no declaration", diag_phase::parse, false},
    {errc::unknown_backend_op, "E050", "an op the backend does not have (reported by ops check and at instantiation)",
     diag_phase::check, false},
    {errc::bad_requires, "E051", "unknown device in a 'requires' clause", diag_phase::parse, true},
    {errc::bad_forward, "E052",
     "arg() outside a replacement argument, or not of a pattern node's result and a constant index", diag_phase::check,
     true},
}};

/// The table row of `e`. Precondition: `e` is an enumerator (the table is dense).
[[nodiscard]] constexpr const error_code_info& info_of(errc e) noexcept {
  return error_codes[static_cast<std::size_t>(e)];
}

/// "E###" for `e`.
[[nodiscard]] constexpr std::string_view code_of(errc e) noexcept { return info_of(e).code; }

// The table is indexed by enumerator value; keep it dense and ordered.
static_assert(
    [] {
      for (std::size_t i = 0; i < error_codes.size(); ++i)
        if (static_cast<std::size_t>(error_codes[i].id) != i) return false;
      return true;
    }(),
    "tfg::dsl::error_codes must list errc values densely and in order");

}  // namespace tfg::dsl
