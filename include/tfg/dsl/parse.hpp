#pragma once
/// \file
/// The public entry point of the DSL front end: text in, AST and diagnostics out.
///
///     auto r = tfg::dsl::parse(text, "operators/tensor/break_alias_with_clone.tfg");
///     if (!r.ok()) std::cerr << tfg::dsl::format(r.diagnostics, r.source);
///
/// Header-only by default: a translation unit that includes this header compiles the whole
/// X3 grammar (about 11 s and 600 MB with g++ 12 -O1). To pay that once, define
/// `TFG_DSL_SEPARATE_PARSER` for the whole target (every TU: it changes `parse`'s linkage)
/// and define `TFG_DSL_PARSER_IMPLEMENTATION` in exactly one TU before including this header;
/// the other TUs then only see the declaration. The AST, diagnostic and check headers are
/// light and can be included anywhere.

#include <algorithm>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/check.hpp"
#include "tfg/dsl/diagnostic.hpp"
#include "tfg/dsl/source.hpp"

// `parse` is inline when header-only, an ordinary function in the separate-parser mode.
#if defined(TFG_DSL_SEPARATE_PARSER)
#define TFG_DSL_PARSE_INLINE
#else
#define TFG_DSL_PARSE_INLINE inline
#endif

namespace tfg::dsl {

struct parse_options {
  /// Run `check()` after a parse without errors (the default). Without it, only E001-E007
  /// and the structural codes of the parse phase (see error_codes.hpp) are reported.
  bool run_checks = true;
};

struct parse_result {
  module ast;                           ///< partial when there are errors
  std::vector<diagnostic> diagnostics;  ///< in source order
  source_file source;                   ///< the file name and a copy of the text

  /// No error-severity diagnostic.
  [[nodiscard]] bool ok() const noexcept { return !has_errors(diagnostics); }
  /// All diagnostics, printed (see diagnostic.hpp).
  [[nodiscard]] std::string format_diagnostics() const { return format(diagnostics, source); }
};

/// Parses one `.tfg` file. Never throws: every problem, including an internal one (E000), is
/// returned as a diagnostic. After a syntax error the parser skips to the next top-level
/// `operator`/`extern` at the start of a line, so one run reports one syntax error per
/// declaration; `check()` runs only when the parse phase reported no error.
/// Complexity: linear in the text for well-formed input. Thread-safe: concurrent calls share
/// no mutable state.
[[nodiscard]] TFG_DSL_PARSE_INLINE parse_result parse(std::string_view text, std::string_view file_name,
                                                      const parse_options& options = {}) noexcept;

}  // namespace tfg::dsl

#if !defined(TFG_DSL_SEPARATE_PARSER) || defined(TFG_DSL_PARSER_IMPLEMENTATION)

#include "tfg/dsl/detail/grammar_def.hpp"
#include "tfg/dsl/detail/lexer.hpp"

namespace tfg::dsl {

namespace detail {

/// Parses the declarations after the header with the X3 entry rules, one at a time.
inline void parse_declarations(const char* body, std::string_view text, const line_index& lines, module& out,
                               std::vector<diagnostic>& diags) {
  namespace x3 = boost::spirit::x3;
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  auto loc = [&](const char* b, const char* e) {
    return lines.locate(static_cast<std::uint32_t>(b - begin), static_cast<std::uint32_t>(e - b));
  };
  parse_state st{begin, end, lines, diags, nullptr, {}};
  // x3::context holds its parent by reference: keep the skipper context alive.
  const auto skipper_ctx = x3::make_context<x3::skipper_tag>(parser::skipper);
  const auto ctx = x3::make_context<parser::state_tag>(st, skipper_ctx);
  static_assert(std::is_same_v<std::remove_const_t<decltype(ctx)>, parser::context_type>);

  for (const char* p = skip_blanks(body, end); p != end; p = skip_blanks(p, end)) {
    const char* const item = p;
    st.item_begin = item;
    try {
      bool ok = false;
      if (keyword_at(p, end, "operator")) {
        operator_decl op;
        ok = operator_grammar().parse(p, end, ctx, x3::unused, op);
        if (ok) out.operators.push_back(std::move(op));
      } else if (keyword_at(p, end, "extern")) {
        extern_decl ex;
        ok = extern_grammar().parse(p, end, ctx, x3::unused, ex);
        if (ok) out.externs.push_back(std::move(ex));
      } else if (keyword_at(p, end, "requirement")) {
        requirement_decl rq;
        ok = requirement_grammar().parse(p, end, ctx, x3::unused, rq);
        if (ok) out.requirements.push_back(std::move(rq));
      } else {
        diags.push_back(
            make_error(errc::syntax, loc(p, token_end(p, end)),
                       "expected 'operator', 'extern' or 'requirement' declaration, found " + describe_token(p, end)));
      }
      if (!ok) p = resync(item, end);
    } catch (const x3::expectation_failure<const char*>& e) {
      const char* const where = skip_blanks(e.where(), end);
      diags.push_back(make_error(errc::syntax, loc(where, token_end(where, end)),
                                 "expected " + e.which() + ", found " + describe_token(where, end)));
      p = resync(item, end);
    }
  }
}

/// Fills `doc` of operators and parameters from the `///` lines directly above them.
inline void attach_docs(module& m, const line_index& lines) {
  for (auto& op : m.operators) {
    op.doc = doc_above(lines, op.loc.line);
    for (auto& p : op.params) p.doc = doc_above(lines, p.loc.line);
  }
  for (auto& rq : m.requirements) rq.doc = doc_above(lines, rq.loc.line);
}

}  // namespace detail

TFG_DSL_PARSE_INLINE parse_result parse(std::string_view text, std::string_view file_name,
                                        const parse_options& options) noexcept {
  parse_result r;
  try {
    r.source.name = std::string(file_name);
    r.source.text = std::string(text);
    r.ast.file_name = r.source.name;
    std::string_view const t = r.source.text;  // locs refer to the owned copy
    const line_index lines(t);
    const auto pre = detail::prescan(t, lines, r.diagnostics);
    r.ast.version = pre.version;
    if (!pre.fatal) {
      detail::parse_declarations(pre.body, t, lines, r.ast, r.diagnostics);
      detail::attach_docs(r.ast, lines);
    }
    if (options.run_checks && !has_errors(r.diagnostics)) {
      auto more = check(r.ast);
      r.diagnostics.insert(r.diagnostics.end(), std::make_move_iterator(more.begin()),
                           std::make_move_iterator(more.end()));
    }
    // Source order; a diagnostic reported twice (an action re-run after backtracking) once.
    std::stable_sort(r.diagnostics.begin(), r.diagnostics.end(),
                     [](const diagnostic& a, const diagnostic& b) { return a.loc.offset < b.loc.offset; });
    r.diagnostics.erase(std::unique(r.diagnostics.begin(), r.diagnostics.end(),
                                    [](const diagnostic& a, const diagnostic& b) {
                                      return a.code == b.code && a.loc == b.loc && a.message == b.message;
                                    }),
                        r.diagnostics.end());
  } catch (const std::exception& e) {
    try {
      r.diagnostics.push_back(make_error(errc::internal, {}, std::string("internal error: ") + e.what()));
    } catch (...) {
    }
  } catch (...) {
    try {
      r.diagnostics.push_back(make_error(errc::internal, {}, "internal error"));
    } catch (...) {
    }
  }
  return r;
}

}  // namespace tfg::dsl

#endif  // the parser definition
