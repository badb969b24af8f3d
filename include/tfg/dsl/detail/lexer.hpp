#pragma once
/// \file
/// Hand-written lexical helpers around the X3 grammar: skipping blanks and comments, naming
/// the token at an error position, the pre-scan (file header, strings, brace balance,
/// nesting depth) and error recovery. No X3 here.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/dsl/diagnostic.hpp"

namespace tfg::dsl::detail {

inline constexpr bool is_ident_start(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline constexpr bool is_ident_char(char c) noexcept { return is_ident_start(c) || (c >= '0' && c <= '9'); }
inline constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
inline constexpr bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/// Skips blanks and `//` comments (including `///` doc comments).
inline const char* skip_blanks(const char* p, const char* end) noexcept {
  for (;;) {
    while (p != end && is_blank(*p)) ++p;
    if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
      while (p != end && *p != '\n') ++p;
      continue;
    }
    return p;
  }
}

/// True if the keyword `kw` starts at p and is not followed by an identifier character.
inline bool keyword_at(const char* p, const char* end, std::string_view kw) noexcept {
  if (static_cast<std::size_t>(end - p) < kw.size()) return false;
  if (std::string_view(p, kw.size()) != kw) return false;
  return p + kw.size() == end || !is_ident_char(p[kw.size()]);
}

/// The extent of the token starting at p (p must not point at a blank or comment).
inline const char* token_end(const char* p, const char* end) noexcept {
  if (p == end) return p;
  const char c = *p;
  const char* q = p + 1;
  if (is_ident_start(c) || c == '%' || c == '$') {
    while (q != end && (is_ident_char(*q) || (c == '%' && *q == '.'))) ++q;
    if (is_ident_start(c) && end - q >= 3 && q[0] == ':' && q[1] == ':' && is_ident_start(q[2])) {
      q += 2;
      while (q != end && is_ident_char(*q)) ++q;
    }
    return q;
  }
  if (is_digit(c)) {
    while (q != end && (is_ident_char(*q) || *q == '.')) ++q;
    return q;
  }
  if (c == '"') {
    while (q != end && *q != '"' && *q != '\n') q += (*q == '\\' && q + 1 != end) ? 2 : 1;
    return q != end && *q == '"' ? q + 1 : q;
  }
  static constexpr std::string_view two[] = {"==", "!=", "<=", ">=", "&&", "||", "->", "::"};
  if (end - p >= 3 && std::string_view(p, 3) == "...") return p + 3;
  for (auto t : two)
    if (end - p >= 2 && std::string_view(p, 2) == t) return p + 2;
  // One (possibly multi-byte UTF-8) character.
  while (q != end && (static_cast<unsigned char>(*q) & 0xC0u) == 0x80u) ++q;
  return q;
}

/// How an error message names the token at p: `'param'`, `'}'` or `end of input`.
inline std::string describe_token(const char* p, const char* end) {
  if (p == end) return "end of input";
  const char* e = token_end(p, end);
  std::string tok(p, e);
  if (tok.size() > 24) tok = tok.substr(0, 21) + "...";
  return "'" + tok + "'";
}

/// After a syntax error in the declaration starting at `item`, the start of the next
/// declaration: the first `operator`, `extern` or `requirement` that begins a line at brace
/// depth 0.
/// Precondition: braces are balanced (the pre-scan passed).
inline const char* resync(const char* item, const char* end) noexcept {
  int depth = 0;
  bool line_start = false;
  for (const char* s = item == end ? end : item + 1; s != end;) {
    const char c = *s;
    if (c == '\n') {
      line_start = true;
      ++s;
      continue;
    }
    if (is_blank(c)) {
      ++s;
      continue;
    }
    if (c == '/' && s + 1 != end && s[1] == '/') {
      while (s != end && *s != '\n') ++s;
      continue;
    }
    if (depth == 0 && line_start &&
        (keyword_at(s, end, "operator") || keyword_at(s, end, "extern") || keyword_at(s, end, "requirement")))
      return s;
    line_start = false;
    if (c == '"') {
      s = token_end(s, end);
      continue;
    }
    if (c == '{') ++depth;
    if (c == '}' && depth > 0) --depth;
    ++s;
  }
  return end;
}

/// Result of the pre-scan.
struct prescan_result {
  const char* body = nullptr;  ///< where the declarations start (after the header)
  int version = 1;
  bool fatal = false;  ///< braces/strings/nesting broken: do not run the grammar
};

/// Checks what the grammar cannot report well: the `tfg <version>` header (E004, E005),
/// unterminated strings (E003), unbalanced braces (E002) and nesting depth (E007): brackets
/// and prefix operators together.
/// Brackets `(` `[` are counted for depth only; their balance is left to the grammar.
inline prescan_result prescan(std::string_view text, const line_index& lines, std::vector<diagnostic>& out) {
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  auto loc = [&](const char* b, const char* e) {
    return lines.locate(static_cast<std::uint32_t>(b - begin), static_cast<std::uint32_t>(e - b));
  };
  prescan_result r;

  // ---- header
  const char* p = skip_blanks(begin, end);
  if (!keyword_at(p, end, "tfg")) {
    out.push_back(make_error(errc::bad_file_header, loc(p, token_end(p, end)),
                             "expected file header 'tfg 1', found " + describe_token(p, end),
                             {{"every .tfg file starts with 'tfg <version>'; this is version 1", std::nullopt}}));
    // A forgotten header: read on from the first declaration.
    r.body = keyword_at(p, end, "operator") || keyword_at(p, end, "extern") || keyword_at(p, end, "requirement")
                 ? p
                 : resync(p, end);
  } else {
    const char* const kw = p;
    p = skip_blanks(p + 3, end);
    const char* q = p;
    while (q != end && is_digit(*q)) ++q;
    if (q == p || (q != end && is_ident_char(*q))) {
      out.push_back(make_error(errc::bad_file_header, loc(kw, p == end ? kw + 3 : token_end(p, end)),
                               "expected a version number after 'tfg', found " + describe_token(p, end)));
      // Skip the rest of the header line.
      r.body = kw;
      while (r.body != end && *r.body != '\n') ++r.body;
    } else {
      std::string_view const digits(p, static_cast<std::size_t>(q - p));
      if (digits != "1") {
        out.push_back(make_error(errc::unsupported_version, loc(p, q),
                                 "unsupported language version " + std::string(digits),
                                 {{"this front end reads version 1", std::nullopt}}));
        r.version = digits.size() < 6 ? std::stoi(std::string(digits)) : 0;
      }
      r.body = q;
    }
  }

  // ---- strings, braces, depth
  constexpr int max_depth = 64;
  std::vector<const char*> braces;  // open '{'
  int depth = 0;                    // all bracket kinds
  // Prefix operators nest like brackets (`- - - x`, `!!!x` recurse in the grammar): a run of
  // `!` / `-` counts one level each, and stays open inside the brackets it precedes.
  int run = 0;            // `!` / `-` since the last other token
  int open_prefix = 0;    // runs still open around the current bracket level
  std::vector<int> runs;  // the run before each open bracket
  for (const char* s = r.body; s != end;) {
    const char c = *s;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++s;
      continue;
    }
    const bool prefix = (c == '!' && (s + 1 == end || s[1] != '=')) || (c == '-' && (s + 1 == end || s[1] != '>'));
    if (prefix) {
      if (depth + open_prefix + ++run > max_depth) {
        out.push_back(
            make_error(errc::nesting_too_deep, loc(s, s + 1),
                       "brackets and prefix operators nested more than " + std::to_string(max_depth) + " deep"));
        r.fatal = true;
        return r;
      }
      ++s;
      continue;
    }
    const int before = run;
    run = 0;
    if (c == '/' && s + 1 != end && s[1] == '/') {
      while (s != end && *s != '\n') ++s;
    } else if (c == '"') {
      const char* q = s + 1;
      while (q != end && *q != '"' && *q != '\n') q += (*q == '\\' && q + 1 != end && q[1] != '\n') ? 2 : 1;
      if (q == end || *q != '"') {
        out.push_back(make_error(errc::unterminated_string, loc(s, s + 1), "unterminated string literal",
                                 {{"strings end with '\"' on the same line", std::nullopt}}));
        r.fatal = true;
        return r;
      }
      s = q + 1;
    } else {
      auto close = [&] {
        if (depth > 0) --depth;
        if (!runs.empty()) {
          open_prefix -= runs.back();
          runs.pop_back();
        }
      };
      if (c == '{' || c == '(' || c == '[') {
        runs.push_back(before);
        open_prefix += before;
        if (++depth + open_prefix > max_depth) {
          out.push_back(make_error(
              errc::nesting_too_deep, loc(s, s + 1),
              open_prefix > 0 ? "brackets and prefix operators nested more than " + std::to_string(max_depth) + " deep"
                              : "brackets nested more than " + std::to_string(max_depth) + " deep"));
          r.fatal = true;
          return r;
        }
        if (c == '{') braces.push_back(s);
      } else if (c == ')' || c == ']') {
        close();
      } else if (c == '}') {
        if (braces.empty()) {
          out.push_back(make_error(errc::unbalanced_braces, loc(s, s + 1), "unmatched '}'",
                                   {{"no block is open here", std::nullopt}}));
          r.fatal = true;
          return r;
        }
        braces.pop_back();
        close();
      }
      ++s;
    }
  }
  if (!braces.empty()) {
    out.push_back(make_error(errc::unbalanced_braces, loc(braces.front(), braces.front() + 1),
                             "unterminated block: this '{' is never closed",
                             {{"a '}' is missing in this block or one of the blocks inside it", std::nullopt}}));
    r.fatal = true;
  }
  return r;
}

/// The `///` doc comment lines directly above line `line` (1-based), joined by '\n', with
/// the `///` and one following space removed.
inline std::string doc_above(const line_index& lines, std::uint32_t line) {
  std::vector<std::string_view> parts;
  for (std::uint32_t l = line; l > 1; --l) {
    std::string_view t = lines.line_text(l - 1);
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    if (t.size() < 3 || t.substr(0, 3) != "///") break;
    t.remove_prefix(3);
    if (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    parts.push_back(t);
  }
  std::string doc;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!doc.empty()) doc += '\n';
    doc += *it;
  }
  return doc;
}

}  // namespace tfg::dsl::detail
