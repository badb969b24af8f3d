#pragma once
/// \file
/// State shared by the semantic actions of one parse, and the plain C++ helpers they call:
/// literal conversion and folding of header clauses and blocks into `operator_decl`
/// (reporting E006, E024-E026, E033, E034, E041). No X3 here.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/detail/lexer.hpp"
#include "tfg/dsl/detail/raw_ast.hpp"
#include "tfg/dsl/diagnostic.hpp"

namespace tfg::dsl::detail {

struct parse_state {
  const char* begin;
  const char* end;
  const line_index& lines;
  std::vector<diagnostic>& diags;
  const char* item_begin = nullptr;  ///< the declaration being parsed
  /// Clauses and blocks already seen in the current operator, for E026.
  std::vector<std::pair<std::string, source_loc>> seen;

  [[nodiscard]] source_loc loc(const char* b, const char* e) const {
    return lines.locate(static_cast<std::uint32_t>(b - begin), static_cast<std::uint32_t>(e - b));
  }
  template <class Range>
  [[nodiscard]] source_loc loc(const Range& r) const {
    return loc(r.begin(), r.end());
  }
  /// From the start of `a` to the end of `b`.
  [[nodiscard]] source_loc span(source_loc a, source_loc b) const {
    std::uint32_t const e = std::max(a.offset + a.len, b.offset + b.len);
    return lines.locate(a.offset, e - a.offset);
  }
  /// Extends `a` through the next `c` after it (skipping blanks), if there is one.
  [[nodiscard]] source_loc through(source_loc a, char c) const {
    const char* p = skip_blanks(begin + a.offset + a.len, end);
    if (p != end && *p == c) return lines.locate(a.offset, static_cast<std::uint32_t>(p + 1 - begin) - a.offset);
    return a;
  }

  void error(errc e, source_loc at, std::string message, std::vector<note> notes = {}) {
    diags.push_back(make_error(e, at, std::move(message), std::move(notes)));
  }

  /// False (and E026) if `what` was already seen in this operator.
  bool first_time(std::string what, source_loc at) {
    for (const auto& [w, l] : seen)
      if (w == what) {
        error(errc::duplicate_clause, at, "duplicate '" + what + "'", {{"first '" + what + "' is here", l}});
        return false;
      }
    seen.emplace_back(std::move(what), at);
    return true;
  }
};

/// A loc covering the first `n` bytes of `l` (a keyword at the start of a block).
[[nodiscard]] inline source_loc head(source_loc l, std::uint32_t n) {
  l.len = std::min(l.len, n);
  return l;
}

[[nodiscard]] inline expr make_leaf(expr_kind k, std::string text, source_loc loc) {
  expr e;
  e.kind = k;
  e.text = std::move(text);
  e.loc = loc;
  return e;
}

/// The power of ten of the leading significant digit of a number's spelling (0 for "0").
[[nodiscard]] inline long decimal_exponent(std::string_view s) {
  std::size_t const e = s.find_first_of("eE");
  std::string_view const mant = s.substr(0, e);
  long exp10 = 0;
  if (e != std::string_view::npos) {
    std::string_view x = s.substr(e + 1);
    const bool neg = !x.empty() && x.front() == '-';
    if (!x.empty() && (x.front() == '-' || x.front() == '+')) x.remove_prefix(1);
    long v = 0;
    for (char c : x) v = std::min(v * 10 + (c - '0'), 1000000L);
    exp10 = neg ? -v : v;
  }
  std::size_t const dot = mant.find('.');
  std::size_t const int_len = dot == std::string_view::npos ? mant.size() : dot;
  std::size_t const first = mant.find_first_not_of("0.");
  if (first == std::string_view::npos) return 0;
  const long pos = first < int_len ? static_cast<long>(int_len - first - 1) : -static_cast<long>(first - int_len);
  return exp10 + pos;
}

/// An int or float literal from its spelling; E006 when it does not fit.
[[nodiscard]] inline expr make_number(std::string_view s, source_loc loc, parse_state& st) {
  expr e;
  e.loc = loc;
  const bool is_float = s.find_first_of(".eE") != std::string_view::npos;
  if (is_float) {
    e.kind = expr_kind::float_literal;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), e.float_value);
    if (r.ec == std::errc::result_out_of_range || !std::isfinite(e.float_value)) {
      // Underflow to zero is harmless; overflow is not.
      if (decimal_exponent(s) < 0) {
        e.float_value = 0.0;
      } else {
        st.error(errc::number_out_of_range, loc, "float literal '" + std::string(s) + "' is out of range",
                 {{"the largest finite value is about 1.8e308", std::nullopt}});
        e.float_value = 0.0;
      }
    }
  } else {
    e.kind = expr_kind::int_literal;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), e.int_value);
    if (r.ec == std::errc::result_out_of_range) {
      st.error(errc::number_out_of_range, loc, "integer literal '" + std::string(s) + "' is out of range",
               {{"integers are 64-bit signed (at most 9223372036854775807)", std::nullopt}});
      e.int_value = 0;
    }
  }
  return e;
}

/// A string literal's value from its spelling (with quotes): \n \t \\ \" are decoded; any
/// other escaped character stands for itself.
[[nodiscard]] inline std::string decode_string(std::string_view s) {
  std::string out;
  if (s.size() >= 2) s = s.substr(1, s.size() - 2);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// `-x` where x is a literal folds into a negative literal, so domains, tolerances and
/// pattern constants stay literals.
[[nodiscard]] inline expr make_negation(expr operand) {
  if (operand.kind == expr_kind::int_literal) {
    operand.int_value = -operand.int_value;
    return operand;
  }
  if (operand.kind == expr_kind::float_literal) {
    operand.float_value = -operand.float_value;
    return operand;
  }
  expr e;
  e.kind = expr_kind::unary;
  e.op = op_code::neg;
  e.height = operand.height + 1;
  e.args.push_back(std::move(operand));
  return e;
}

/// One more than the highest of `args` (a node's height over its children).
[[nodiscard]] inline std::uint32_t height_over(const std::vector<expr>& args) noexcept {
  std::uint32_t h = 0;
  for (const auto& a : args) h = std::max(h, a.height);
  return h + 1;
}

/// `lhs op rhs`. A chain that would grow the tree beyond `max_expression_height` is E007,
/// once per chain: the result is then `lhs`, already marked too high, and later links are
/// dropped, so no tree beyond the bound is ever built (a 100,000-term `&&` chain would
/// otherwise be walked, and destroyed, by recursion that deep).
[[nodiscard]] inline expr make_binary(op_code op, expr lhs, expr rhs, parse_state& st) {
  std::uint32_t const h = std::max(lhs.height, rhs.height) + 1;
  if (lhs.height > max_expression_height) return lhs;
  if (h > max_expression_height) {
    st.error(errc::nesting_too_deep, st.span(lhs.loc, rhs.loc),
             "expression nested more than " + std::to_string(max_expression_height) + " operators deep",
             {{"a long chain of '&&' is clearer as one condition per line of the require block", std::nullopt}});
    lhs.height = max_expression_height + 1;
    return lhs;
  }
  expr e;
  e.kind = expr_kind::binary;
  e.op = op;
  e.height = h;
  e.loc = st.span(lhs.loc, rhs.loc);
  e.args.push_back(std::move(lhs));
  e.args.push_back(std::move(rhs));
  return e;
}

/// Folds one header clause into `op`: kinds are mapped to enums (E024, E025), origin and
/// tolerances validated (E034, E033), repeats reported (E026).
inline void fold_clause(operator_decl& op, raw_clause& c, parse_state& st) {
  switch (c.kind) {
    case clause_kind::object: {
      if (!st.first_time("object", c.keyword)) return;
      static constexpr std::pair<std::string_view, object_kind> kinds[] = {{"tensor", object_kind::tensor},
                                                                           {"operator", object_kind::operator_},
                                                                           {"relation", object_kind::relation},
                                                                           {"subgraph", object_kind::subgraph}};
      for (const auto& [w, k] : kinds)
        if (c.word.text == w) {
          op.object = k;
          return;
        }
      st.error(errc::bad_object, c.word.loc, "unknown object kind '" + c.word.text + "'",
               {{"expected one of: tensor, operator, relation, subgraph", std::nullopt}});
      return;
    }
    case clause_kind::primitive: {
      if (!st.first_time("primitive", c.keyword)) return;
      static constexpr std::pair<std::string_view, primitive_kind> kinds[] = {{"update", primitive_kind::update},
                                                                              {"insertion", primitive_kind::insertion},
                                                                              {"deletion", primitive_kind::deletion},
                                                                              {"rewiring", primitive_kind::rewiring}};
      for (const auto& [w, k] : kinds)
        if (c.word.text == w) {
          op.primitive = k;
          return;
        }
      st.error(errc::bad_primitive, c.word.loc, "unknown primitive kind '" + c.word.text + "'",
               {{"expected one of: update, insertion, deletion, rewiring", std::nullopt}});
      return;
    }
    case clause_kind::origin: {
      if (!st.first_time("origin", c.keyword)) return;
      origin_info o;
      o.loc = c.loc;
      if (c.rule_id) o.rule_id = c.rule_id->text;
      if (c.word.text == "cg") {
        if (!c.study) {
          st.error(errc::bad_origin, c.word.loc, "origin 'cg' needs the study it comes from",
                   {{"write e.g. 'origin cg lemon'", std::nullopt}});
          return;
        }
        o.from_cg = true;
        o.study = c.study->text;
      } else if (c.word.text == "tfg") {
        if (c.study) {
          st.error(errc::bad_origin, c.study->loc, "origin 'tfg' takes no study name",
                   {{"a rule id goes in a string: origin tfg \"DF-T07\"", std::nullopt}});
          return;
        }
      } else {
        st.error(errc::bad_origin, c.word.loc, "unknown origin '" + c.word.text + "'",
                 {{"expected 'cg <study>' or 'tfg'", std::nullopt}});
        return;
      }
      op.origin = std::move(o);
      return;
    }
    case clause_kind::preserves: {
      if (!st.first_time("preserves", c.keyword)) return;
      op.values.preserves = true;
      op.values.loc = c.loc;
      for (auto& t : c.tolerances) {
        std::optional<double>* slot = t.key.text == "atol"   ? &op.values.atol
                                      : t.key.text == "rtol" ? &op.values.rtol
                                                             : nullptr;
        if (!slot) {
          st.error(errc::bad_tolerance, t.key.loc, "unknown tolerance '" + t.key.text + "'",
                   {{"expected 'atol' or 'rtol'", std::nullopt}});
          continue;
        }
        if (slot->has_value()) {
          st.error(errc::bad_tolerance, t.key.loc, "tolerance '" + t.key.text + "' given twice");
          continue;
        }
        double v = 0;
        if (t.value.kind == expr_kind::int_literal) v = static_cast<double>(t.value.int_value);
        else if (t.value.kind == expr_kind::float_literal) v = t.value.float_value;
        else {
          st.error(errc::bad_tolerance, t.value.loc, "tolerance '" + t.key.text + "' must be a number");
          continue;
        }
        if (v < 0) {
          st.error(errc::bad_tolerance, t.value.loc, "tolerance '" + t.key.text + "' must not be negative");
          continue;
        }
        *slot = v;
      }
      return;
    }
    case clause_kind::requires_device: {
      if (!st.first_time("requires", c.keyword)) return;
      if (c.word.text != "cuda") {
        st.error(errc::bad_requires, c.word.loc, "unknown device '" + c.word.text + "' in 'requires'",
                 {{"expected 'cuda' (every machine has a cpu: an operator that needs only the cpu says nothing)",
                   std::nullopt}});
        return;
      }
      op.requires_device = c.word;
      return;
    }
    case clause_kind::anchor: {
      if (!st.first_time("anchor", c.keyword)) return;
      op.anchor = c.word;
      return;
    }
  }
}

inline void fold_pattern(operator_decl& op, pattern_block&& b, parse_state& st) {
  if (st.first_time("pattern", head(b.loc, 7))) op.pattern = std::move(b);
}

inline void fold_replace(operator_decl& op, replace_block&& b, parse_state& st) {
  if (st.first_time("replace", head(b.loc, 7))) op.replace = std::move(b);
}

inline void fold_require(operator_decl& op, constraint_block&& b, parse_state& st) {
  static constexpr const char* names[] = {"require pattern", "require input", "require internal", "require output"};
  if (!st.first_time(names[static_cast<int>(b.which)], head(b.loc, 7))) return;
  switch (b.which) {
    case stage::input: op.require_input = std::move(b); break;
    case stage::internal: op.require_internal = std::move(b); break;
    case stage::output: op.require_output = std::move(b); break;
    case stage::pattern: break;  // the grammar does not produce it
  }
}

/// The stage named in `rejected_by(...)`; E041 for another word.
[[nodiscard]] inline stage stage_of(const symbol& w, parse_state& st) {
  if (w.text == "pattern") return stage::pattern;
  if (w.text == "input") return stage::input;
  if (w.text == "internal") return stage::internal;
  if (w.text == "output") return stage::output;
  st.error(errc::bad_stage, w.loc, "unknown stage '" + w.text + "' in rejected_by",
           {{"expected one of: pattern, input, internal, output", std::nullopt}});
  return stage::pattern;
}

}  // namespace tfg::dsl::detail
