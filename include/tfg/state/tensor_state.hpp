#pragma once
/// F(e): the runtime state of one tensor edge, recorded by a backend's profiler.
///
/// Backend-neutral: a backend translates its own tensor type into these plain values, so the
/// DSL built-ins, selection features and metrics never see LibTorch.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::state {

enum class dtype : std::uint8_t { f16, bf16, f32, f64, c64, c128, i8, u8, i16, i32, i64, boolean, other };
enum class device_kind : std::uint8_t { cpu, cuda, other };
enum class layout : std::uint8_t { strided, sparse, mkldnn, other };
/// Memory format of a strided tensor: `contiguous` (row-major), `channels_last` (NHWC / NDHWC
/// strides), or `strided` for every other stride pattern (transposed or sliced views).
enum class memory_format : std::uint8_t { contiguous, channels_last, strided };
/// What flows along an edge. Tensor edges carry a full tensor_state; scalar edges (sizes and
/// numbers computed at run time, e.g. by aten::size) carry only their value.
enum class value_kind : std::uint8_t { tensor, tensor_list, integer, floating, boolean, other, int_list };

[[nodiscard]] constexpr std::string_view name(dtype d) noexcept {
  constexpr std::string_view names[] = {"f16", "bf16", "f32", "f64", "c64",  "c128", "i8",
                                        "u8",  "i16",  "i32", "i64", "bool", "other"};
  return names[static_cast<int>(d)];
}
/// Inverse of name(dtype) for the DSL's dtype words (f16 bf16 f32 f64 i8 u8 i16 i32 i64 bool;
/// dsl/spec.md); nullopt for any other text.
/// (Dispatches on length and first letter: parameter words are converted on every evaluation
/// of a constraint that reads them.)
[[nodiscard]] constexpr std::optional<dtype> parse_dtype(std::string_view w) noexcept {
  switch (w.size()) {
    case 2:
      if (w == "i8") return dtype::i8;
      if (w == "u8") return dtype::u8;
      return std::nullopt;
    case 3: {
      std::string_view const bits = w.substr(1);
      if (w[0] == 'f') {
        if (bits == "32") return dtype::f32;
        if (bits == "64") return dtype::f64;
        if (bits == "16") return dtype::f16;
      } else if (w[0] == 'i') {
        if (bits == "64") return dtype::i64;
        if (bits == "32") return dtype::i32;
        if (bits == "16") return dtype::i16;
      }
      return std::nullopt;
    }
    case 4:
      if (w == "bf16") return dtype::bf16;
      if (w == "bool") return dtype::boolean;
      return std::nullopt;
    default: return std::nullopt;
  }
}
static_assert(parse_dtype("f32") == dtype::f32 && parse_dtype("bf16") == dtype::bf16 &&
              parse_dtype("i8") == dtype::i8 && parse_dtype("bool") == dtype::boolean && !parse_dtype("c64") &&
              !parse_dtype("f8") && !parse_dtype("float"));
[[nodiscard]] constexpr std::string_view name(device_kind d) noexcept {
  constexpr std::string_view names[] = {"cpu", "cuda", "other"};
  return names[static_cast<int>(d)];
}
[[nodiscard]] constexpr std::string_view name(layout l) noexcept {
  constexpr std::string_view names[] = {"strided", "sparse", "mkldnn", "other"};
  return names[static_cast<int>(l)];
}
[[nodiscard]] constexpr std::string_view name(memory_format m) noexcept {
  constexpr std::string_view names[] = {"contiguous", "channels_last", "strided"};
  return names[static_cast<int>(m)];
}
[[nodiscard]] constexpr std::string_view name(value_kind k) noexcept {
  constexpr std::string_view names[] = {"tensor", "tensor_list", "int", "float", "bool", "other", "int[]"};
  return names[static_cast<int>(k)];
}
[[nodiscard]] constexpr bool is_floating(dtype d) noexcept {
  return d == dtype::f16 || d == dtype::bf16 || d == dtype::f32 || d == dtype::f64;
}

/// One-pass numeric summary of a tensor's elements. `min`, `max` and `mean` are taken over the
/// finite elements only (NaN and Inf are counted instead); all three are NaN when no element is
/// finite. `content_hash` hashes the raw bytes of the contiguous element sequence, so two edges
/// with equal hashes, shapes and dtypes hold equal values (up to hash collisions).
struct numeric_summary {
  double min = std::numeric_limits<double>::quiet_NaN();
  double max = std::numeric_limits<double>::quiet_NaN();
  double mean = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t nan_count = 0;
  std::uint64_t inf_count = 0;
  std::uint64_t zero_count = 0;
  std::uint64_t content_hash = 0;

  [[nodiscard]] bool finite() const noexcept { return nan_count == 0 && inf_count == 0; }
  [[nodiscard]] double max_abs() const noexcept { return std::max(min < 0 ? -min : min, max < 0 ? -max : max); }
};

struct device_id {
  device_kind kind = device_kind::cpu;
  std::int16_t index = -1;
  friend bool operator==(const device_id&, const device_id&) = default;
};

/// F(e) for one profiling input.
struct tensor_state {
  value_kind kind = value_kind::tensor;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  std::int64_t storage_offset = 0;
  std::int64_t numel = 0;
  dtype type = dtype::other;
  /// False only in a state inferred before execution whose dtype inference could not decide
  /// (a shape function gave the sizes): `dtype(v)` and `is_floating(v)` then decide nothing.
  bool type_known = true;
  device_id device;
  state::layout tensor_layout = state::layout::strided;
  bool contiguous = true;
  memory_format format = memory_format::contiguous;
  /// Storage identity: edges with the same `storage_group` within one profiling run share
  /// storage (views, in-place results, chunks). Groups are numbered per run from 0.
  std::uint32_t storage_group = 0;
  /// Number of edges in this run that share the storage (1 = private storage).
  std::uint32_t storage_sharers = 1;
  std::int64_t storage_nbytes = 0;
  bool requires_grad = false;
  numeric_summary numbers;
  /// Value of a scalar edge (integer, floating or boolean kinds); lists keep their length here.
  double scalar = 0;

  [[nodiscard]] int rank() const noexcept { return static_cast<int>(shape.size()); }
  [[nodiscard]] bool aliased() const noexcept { return storage_sharers > 1; }
};

/// The state class of a value, the part of F(e) a finding signature keeps (dtype, rank,
/// layout or memory format, special values): "f32 r4 channels_last", "f16 r2 strided nan",
/// "i64 r1 contiguous", "int" for a scalar. Two values of one class are the same test input
/// for deduplication.
[[nodiscard]] inline std::string class_of(const tensor_state& s) {
  if (s.kind != value_kind::tensor) return std::string(name(s.kind));
  std::string c{name(s.type)};
  c += " r" + std::to_string(s.rank());
  if (s.tensor_layout != layout::strided) c += " " + std::string(name(s.tensor_layout));
  else c += " " + std::string(name(s.format));
  if (s.numbers.nan_count) c += " nan";
  if (s.numbers.inf_count) c += " inf";
  if (s.numel > 0 && s.numbers.zero_count == static_cast<std::uint64_t>(s.numel)) c += " zeros";
  return c;
}

/// F(e) across all profiling inputs: one state per input, in input order. Constraints hold for
/// an edge only when they hold for every recorded state.
struct edge_profile {
  std::vector<tensor_state> runs;
};

}  // namespace tfg::state
