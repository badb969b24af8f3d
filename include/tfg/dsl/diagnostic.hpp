#pragma once
/// \file
/// Diagnostics of the mutation DSL and their printer. One format for syntax errors (from the
/// X3 grammar) and semantic errors (from `check`):
///
///     ops/foo.tfg:12:30: error[E012]: unbound value '%z' in replacement
///        12 |   replace { %c = aten::clone(%z, none) }
///           |                              ^~
///     note: values bound by the pattern: %x, %y

#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tfg/dsl/error_codes.hpp"
#include "tfg/dsl/source.hpp"

namespace tfg::dsl {

enum class severity : std::uint8_t { error, warning };

/// A secondary message; with a position it is printed with its own source line.
struct note {
  std::string message;
  std::optional<source_loc> loc;
};

struct diagnostic {
  severity level = severity::error;
  std::string code;  ///< "E012"
  std::string message;
  source_loc loc;
  std::vector<note> notes;
};

/// Builds an error diagnostic for `e`.
[[nodiscard]] inline diagnostic make_error(errc e, source_loc loc, std::string message, std::vector<note> notes = {}) {
  return {severity::error, std::string(code_of(e)), std::move(message), loc, std::move(notes)};
}

/// True when any diagnostic is an error.
[[nodiscard]] inline bool has_errors(const std::vector<diagnostic>& ds) noexcept {
  for (const auto& d : ds)
    if (d.level == severity::error) return true;
  return false;
}

namespace detail {

inline void print_snippet(std::ostream& os, const line_index& lines, source_loc loc) {
  std::string_view const text = lines.line_text(loc.line);
  std::string const number = std::to_string(loc.line);
  std::string const gutter(number.size() < 5 ? 5 - number.size() : 0, ' ');
  os << gutter << number << " | " << text << '\n';
  os << std::string(std::max<std::size_t>(number.size(), 5), ' ') << " | ";
  // Reproduce tabs so the caret lines up; everything else before the column is a space.
  std::uint32_t const start = lines.line_start(loc.line);
  std::size_t const rel = loc.offset >= start ? loc.offset - start : 0;
  std::size_t const caret_at = std::min(rel, text.size());
  for (std::size_t i = 0; i < caret_at; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\t') os << '\t';
    else if ((c & 0xC0u) != 0x80u) os << ' ';
  }
  // Underline the token, clipped to the end of this line; at least one caret.
  std::size_t width = 0;
  std::size_t const end = std::min(caret_at + loc.len, text.size());
  for (std::size_t i = caret_at; i < end; ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0u) != 0x80u) ++width;
  os << '^' << std::string(width > 1 ? width - 1 : 0, '~') << '\n';
}

}  // namespace detail

/// Prints `d` as `file:line:col: error[E###]: message`, the source line with its number, a
/// caret underline spanning `d.loc.len` bytes (clipped to the line), then one line per note.
/// A diagnostic without a position prints `file: error[E###]: message` and no snippet.
inline void print(std::ostream& os, const diagnostic& d, const source_file& src, const line_index& lines) {
  os << src.name;
  if (d.loc.valid()) os << ':' << d.loc.line << ':' << d.loc.col;
  os << ": " << (d.level == severity::error ? "error" : "warning") << '[' << d.code << "]: " << d.message << '\n';
  if (d.loc.valid()) detail::print_snippet(os, lines, d.loc);
  for (const auto& n : d.notes) {
    if (n.loc && n.loc->valid()) {
      os << src.name << ':' << n.loc->line << ':' << n.loc->col << ": note: " << n.message << '\n';
      detail::print_snippet(os, lines, *n.loc);
    } else {
      os << "note: " << n.message << '\n';
    }
  }
}

/// As above; builds the line index of `src` (O(size of the text)).
inline void print(std::ostream& os, const diagnostic& d, const source_file& src) {
  print(os, d, src, line_index(src.text));
}

/// All diagnostics of `ds`, in order, as one string.
[[nodiscard]] inline std::string format(const std::vector<diagnostic>& ds, const source_file& src) {
  std::ostringstream os;
  const line_index lines(src.text);
  for (const auto& d : ds) print(os, d, src, lines);
  return std::move(os).str();
}

/// One diagnostic as a string.
[[nodiscard]] inline std::string format(const diagnostic& d, const source_file& src) {
  std::ostringstream os;
  print(os, d, src);
  return std::move(os).str();
}

}  // namespace tfg::dsl
