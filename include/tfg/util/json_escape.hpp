#pragma once
/// \file
/// A tiny JSON string writer, so that core writers need no JSON library.

#include <ostream>
#include <string>
#include <string_view>

namespace tfg::json {

/// `text` as a JSON string literal, quotes included. Escapes `"`, `\` and all control
/// characters below 0x20 (short forms where JSON has them, \u00XX otherwise); other bytes,
/// UTF-8 sequences included, pass through unchanged. O(|text|).
inline std::string quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte >= 0x20) {
      out.push_back(c);
    } else if (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') {
      out.push_back('\\');
      out.push_back(c == '\b' ? 'b' : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
    } else {
      out += "\\u00";
      out.push_back(hex[byte >> 4]);
      out.push_back(hex[byte & 0xf]);
    }
  }
  out.push_back('"');
  return out;
}

/// Writes quote(text) to `os`.
inline void write_string(std::ostream& os, std::string_view text) { os << quote(text); }

}  // namespace tfg::json
