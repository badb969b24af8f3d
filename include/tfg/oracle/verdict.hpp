#pragma once
/// Backend-neutral oracle vocabulary: what a comparison of two execution configurations of one
/// model concludes (a `verdict`), and how close floating values must be (`tolerance`), by dtype.
///
/// Nothing here depends on a tensor library; a backend (tfg::torch::compare) computes the
/// differences and fills in verdicts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::oracle {

/// The element class of a compared value; it selects the tolerance.
enum class dtype_class : std::uint8_t { f16, bf16, f32, f64, integer, boolean, other };

/// An element `b` is close to its reference `a` when |a - b| <= atol + rtol * |a|
/// (the `torch.isclose` rule with `a` as the reference side).
struct tolerance {
  double rtol = 0;
  double atol = 0;
  /// True when the rule accepts any difference only if it is zero (integer, bool).
  [[nodiscard]] bool exact() const noexcept { return rtol == 0 && atol == 0; }
};

/// Tolerances per dtype class, for comparing two *semantically equivalent* configurations
/// (different kernels, fusion, memory formats, thread counts: reassociated sums).
///
/// Defaults (starting points, to be tuned from campaign measurements):
///  - f32:  rtol 1e-4, atol 1e-5 (freeze / optimize_for_inference differ by <= ~2e-6 on seeds)
///  - f16:  rtol 1e-2, atol 1e-3 (10 mantissa bits)
///  - bf16: rtol 5e-2, atol 1e-2 (7 mantissa bits)
///  - f64:  rtol 1e-7, atol 1e-7 (as torch.testing)
///  - integer, bool: exact
///  - other (Python scalars, strings, None): compared with `==`, except Python floats, which
///    use the f32 tolerance (they are usually read out of f32 tensors)
struct tolerance_table {
  tolerance f16{1e-2, 1e-3};
  tolerance bf16{5e-2, 1e-2};
  tolerance f32{1e-4, 1e-5};
  tolerance f64{1e-7, 1e-7};

  [[nodiscard]] tolerance for_class(dtype_class c) const noexcept {
    switch (c) {
      case dtype_class::f16: return f16;
      case dtype_class::bf16: return bf16;
      case dtype_class::f32: return f32;
      case dtype_class::f64: return f64;
      case dtype_class::integer:
      case dtype_class::boolean:
      case dtype_class::other: return {};
    }
    return {};
  }

  /// Every tolerance scaled by `factor` (e.g. for gradients, which accumulate more rounding).
  [[nodiscard]] tolerance_table scaled(double factor) const noexcept {
    tolerance_table t = *this;
    for (tolerance* x : {&t.f16, &t.bf16, &t.f32, &t.f64}) {
      x->rtol *= factor;
      x->atol *= factor;
    }
    return t;
  }
};

/// What a comparison of configuration `b` against configuration `a` found, ordered by severity.
enum class verdict_kind : std::uint8_t {
  equal,                 ///< bit-identical (NaN matching NaN, same shapes, dtypes and structure)
  within_tolerance,      ///< every element close by the dtype's tolerance (or by the float64 reference)
  numeric_mismatch,      ///< finite values differ beyond tolerance
  nan_inf_mismatch,      ///< NaN or +-Inf appears at an element in one configuration only
  state_mismatch,        ///< shape, dtype, structure (tuple arity, value kind) or output count differ
  metamorphic_mismatch,  ///< a value-preserving mutation changed values (seed vs mutant, in exact arithmetic too)
  error_in_one,          ///< exactly one configuration failed
  error_in_both,         ///< both failed: usually an illegal mutant (a violated precondition)
};

[[nodiscard]] constexpr std::string_view to_string(verdict_kind k) noexcept {
  switch (k) {
    case verdict_kind::equal: return "equal";
    case verdict_kind::within_tolerance: return "within_tolerance";
    case verdict_kind::numeric_mismatch: return "numeric_mismatch";
    case verdict_kind::nan_inf_mismatch: return "nan_inf_mismatch";
    case verdict_kind::state_mismatch: return "state_mismatch";
    case verdict_kind::metamorphic_mismatch: return "metamorphic_mismatch";
    case verdict_kind::error_in_one: return "error_in_one";
    case verdict_kind::error_in_both: return "error_in_both";
  }
  return "?";
}

/// Inverse of to_string; nullopt for any other text.
[[nodiscard]] constexpr std::optional<verdict_kind> parse_verdict_kind(std::string_view s) noexcept {
  for (auto k : {verdict_kind::equal, verdict_kind::within_tolerance, verdict_kind::numeric_mismatch,
                 verdict_kind::nan_inf_mismatch, verdict_kind::state_mismatch, verdict_kind::metamorphic_mismatch,
                 verdict_kind::error_in_one, verdict_kind::error_in_both})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

/// True for the verdicts that are findings (a disagreement between equivalent configurations).
/// `error_in_both` is not: whether it is a precondition violation or a bug is decided elsewhere.
[[nodiscard]] constexpr bool is_finding(verdict_kind k) noexcept {
  return k == verdict_kind::numeric_mismatch || k == verdict_kind::nan_inf_mismatch ||
         k == verdict_kind::state_mismatch || k == verdict_kind::metamorphic_mismatch ||
         k == verdict_kind::error_in_one;
}

inline constexpr std::size_t no_index = static_cast<std::size_t>(-1);

/// The conclusion for one compared output (or for the whole run, when an error or a structural
/// difference prevents comparing outputs one by one).
struct verdict {
  verdict_kind kind = verdict_kind::equal;
  std::string config_a;  ///< the reference side
  std::string config_b;
  std::size_t input_index = no_index;   ///< which profiling input; no_index: the whole run
  std::size_t output_index = no_index;  ///< which flattened output leaf; no_index: all of them
  std::string output_path;              ///< the leaf's position in the returned structure (`1.0`)
  double max_abs = 0;                   ///< max |a - b| over elements finite in both
  double max_rel = 0;                   ///< max |a - b| / max(|a|, |b|) over those elements
  /// The output comes (directly) from an op whose integer result depends on how ties break
  /// (argmax, argmin, topk, sort, max.dim, min.dim, ...): its integer values were not compared.
  bool tie_dependent = false;
  /// error_in_one: the node (topological position in the model as the worker runs it) the
  /// failing configuration's own error names, -1 when it names none. Localisation takes it
  /// over a bisection, whose cuts change what an optimising configuration does.
  std::int64_t failed_at = -1;
  std::string message;  ///< one line for a human

  [[nodiscard]] bool finding() const noexcept { return is_finding(kind); }
};

/// The most severe of `vs` (a default `equal` verdict when `vs` is empty). Among verdicts of the
/// same kind, the one with the largest max_abs.
[[nodiscard]] inline verdict worst(const std::vector<verdict>& vs) {
  verdict w;
  bool first = true;
  for (const auto& v : vs) {
    if (first || v.kind > w.kind || (v.kind == w.kind && v.max_abs > w.max_abs)) w = v;
    first = false;
  }
  return w;
}

}  // namespace tfg::oracle
