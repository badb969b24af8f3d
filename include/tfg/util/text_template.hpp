#pragma once
/// Program text kept in template files: `@NAME@` placeholders filled from a map.
///
///     const std::string py = tfg::render_template(repro_py_template, {{"ID", id}, {"TITLE", title}},
///                                                 "repro.py.inc");
///
/// A placeholder is `@` + an upper-case name (`A-Z`, `0-9`, `_`, starting with a letter) + `@`;
/// any other `@` (a Python decorator, an e-mail address) is text. A placeholder without a value
/// throws `std::invalid_argument` naming the template, its line and the placeholder, so a typo in
/// a template fails the first time it is rendered instead of writing `@TYPO@` into a user's file.
/// Values are inserted as they are (no escaping: the caller quotes for the target language).
/// Values that no placeholder uses are allowed (one map can serve several templates).
///
/// Template files that are compiled in are wrapped in a raw string literal (`R"TFG(` on the first
/// line, `)TFG"` on the last) and included where the text is needed; `template_text` drops the
/// newline that follows the opening delimiter.
#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tfg {

using template_values = std::map<std::string, std::string, std::less<>>;

/// The text of a compiled-in template file: without the newline after its opening `R"TFG(`.
[[nodiscard]] inline std::string_view template_text(std::string_view wrapped) noexcept {
  if (!wrapped.empty() && wrapped.front() == '\n') wrapped.remove_prefix(1);
  return wrapped;
}

/// `text` with every `@NAME@` replaced by `values.at(NAME)`; `template_name` names the template in
/// errors. Linear in the size of the text and the output.
[[nodiscard]] inline std::string render_template(std::string_view text, const template_values& values,
                                                 std::string_view template_name) {
  auto is_name_char = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; };
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t at = text.find('@', i);
    if (at == std::string_view::npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, at - i));
    std::size_t j = at + 1;
    while (j < text.size() && is_name_char(text[j])) ++j;
    const bool placeholder =
        j < text.size() && text[j] == '@' && j > at + 1 && text[at + 1] >= 'A' && text[at + 1] <= 'Z';
    if (!placeholder) {
      out.push_back('@');
      i = at + 1;
      continue;
    }
    const std::string_view name = text.substr(at + 1, j - at - 1);
    const auto v = values.find(name);
    if (v == values.end()) {
      std::size_t line = 1;
      for (std::size_t k = 0; k < at; ++k) line += text[k] == '\n';
      throw std::invalid_argument(std::string(template_name) + ":" + std::to_string(line) + ": placeholder @" +
                                  std::string(name) + "@ has no value");
    }
    out.append(v->second);
    i = j + 1;
  }
  return out;
}

}  // namespace tfg
