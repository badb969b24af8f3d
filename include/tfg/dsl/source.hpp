#pragma once
/// \file
/// Source positions for the mutation DSL: `source_loc` (a span tagged on every AST node and
/// diagnostic), `source_file` (a named text) and `line_index` (offset -> line:col).

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::dsl {

/// A span of source text. `line` and `col` are 1-based; `col` counts Unicode code points
/// (UTF-8 continuation bytes do not advance it). `offset` and `len` are in bytes. A
/// default-constructed loc (`line == 0`) means "no position" (synthesised nodes).
struct source_loc {
  std::uint32_t line = 0;
  std::uint32_t col = 0;
  std::uint32_t offset = 0;
  std::uint32_t len = 0;

  [[nodiscard]] constexpr bool valid() const noexcept { return line != 0; }
  friend constexpr bool operator==(source_loc, source_loc) = default;
};

/// A named text: what a diagnostic printer needs to show the offending line.
struct source_file {
  std::string name;
  std::string text;
};

/// Maps byte offsets of one text to lines and columns.
/// Holds a view: the text must outlive the index. Construction is O(n);
/// `locate` is O(log lines + 64): code points are counted from a checkpoint every 64 bytes,
/// so locating every token of a 100 KB one-line file stays linear.
class line_index {
 public:
  explicit line_index(std::string_view text) : text_(text) {
    starts_.push_back(0);
    checkpoints_.reserve(text.size() / stride + 2);
    std::uint32_t points = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (i % stride == 0) checkpoints_.push_back(points);
      if (text[i] == '\n') starts_.push_back(static_cast<std::uint32_t>(i + 1));
      if ((static_cast<unsigned char>(text[i]) & 0xC0u) != 0x80u) ++points;
    }
    if (text.size() % stride == 0) checkpoints_.push_back(points);
  }

  /// The loc of the byte span [offset, offset + len); offsets past the end are clamped.
  [[nodiscard]] source_loc locate(std::uint32_t offset, std::uint32_t len) const noexcept {
    offset = std::min<std::uint32_t>(offset, static_cast<std::uint32_t>(text_.size()));
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const auto line = static_cast<std::uint32_t>(it - starts_.begin());  // 1-based
    std::uint32_t const start = starts_[line - 1];
    std::uint32_t col = 1;
    if (offset - start <= 2 * stride) {  // the usual short line: count from its start
      for (std::uint32_t i = start; i < offset; ++i)
        if ((static_cast<unsigned char>(text_[i]) & 0xC0u) != 0x80u) ++col;
    } else {
      col = points_before(offset) - points_before(start) + 1;
    }
    return {line, col, offset, len};
  }

  /// The text of a 1-based line without its line terminator ("\n" or "\r\n").
  [[nodiscard]] std::string_view line_text(std::uint32_t line) const noexcept {
    if (line == 0 || line > starts_.size()) return {};
    std::size_t const b = starts_[line - 1];
    std::size_t e = line < starts_.size() ? starts_[line] - 1 : text_.size();
    if (e > b && text_[e - 1] == '\r') --e;
    return text_.substr(b, e - b);
  }

  /// Byte offset of the first character of a 1-based line.
  [[nodiscard]] std::uint32_t line_start(std::uint32_t line) const noexcept {
    if (line == 0 || line > starts_.size()) return static_cast<std::uint32_t>(text_.size());
    return starts_[line - 1];
  }

  [[nodiscard]] std::uint32_t line_count() const noexcept { return static_cast<std::uint32_t>(starts_.size()); }

 private:
  static constexpr std::size_t stride = 64;

  /// Code points (non-continuation bytes) in text_[0, offset).
  [[nodiscard]] std::uint32_t points_before(std::uint32_t offset) const noexcept {
    std::size_t const k = offset / stride;
    std::uint32_t n = checkpoints_[k];
    for (std::size_t i = k * stride; i < offset; ++i)
      if ((static_cast<unsigned char>(text_[i]) & 0xC0u) != 0x80u) ++n;
    return n;
  }

  std::string_view text_;
  std::vector<std::uint32_t> starts_;
  std::vector<std::uint32_t> checkpoints_;  ///< code points before byte k * stride
};

}  // namespace tfg::dsl
