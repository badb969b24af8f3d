#pragma once
/// Oracles over execution configurations: compares two `run_result`s of one model output by
/// output and returns backend-neutral `tfg::oracle::verdict`s.
///
/// Rules (docs/oracle.md has the reasoning and the calibration over the zoo):
///  - an error on one side: error_in_one; on both: error_in_both (one verdict for the run);
///  - different number of inputs / outputs, different paths (structure), a tensor against a
///    non-tensor, different shapes or dtypes: state_mismatch. Strides and memory formats are not
///    state (channels_last is expected to change them). A `widened` (float64) side's floating
///    outputs are first converted back to the other side's floating dtype;
///  - integer and bool tensors: exact. An integer output produced directly by a tie-dependent op
///    (argmax, argmin, topk, sort, argsort, max.dim, min.dim, kthvalue, mode, median, cummax,
///    cummin) is never compared numerically: a difference gives within_tolerance with
///    `tie_dependent` set;
///  - an output whose values depend on the storage layout (it is computed from an
///    `aten::as_strided` with constant strides or offset) is not compared across configurations
///    that change the layout (`compare_options::layout_changes`): within_tolerance, noted;
///  - floating tensors, compared in double: NaN/+-Inf at an element in one side only (or +Inf
///    against -Inf): nan_inf_mismatch. Otherwise the precision class p of the output is the
///    lowest floating precision the value passed through (its dtype, explicit low-precision
///    casts and low-precision constants in its cone, low-precision inputs), eps(p) its machine
///    epsilon, and the floor of an element is atol(p) + rtol(p) |x| + magnitude_ulps * eps(p) *
///    rms(x) (rms over the output's finite elements). An element is bad when |a - b| exceeds the
///    floor (x = a) and, with a float64 reference run r, b is also further from r than the
///    reference configuration's own worst error allows: |b - r| > reference_slack max|a - r| +
///    floor (x = r), and than the spread of the other float32 configurations (`peers`, max
///    |p - a| over those that ran besides a and b: the rounding noise of this model in
///    float32) allows. When b *is* the float64 run (a against its own widened run), a is bad
///    where |a - r| exceeds the floor plus reference_slack times that spread. Any bad element:
///    numeric_mismatch; else bit-identical: equal; else within_tolerance;
///  - gradients (leaves `grad.K`) are compared norm-wise, with the tolerances scaled by
///    `gradient_scale`: rms(b - a) against the floor at rms(a), and rms(b - r) against
///    reference_slack rms(a - r) plus the floor at rms(r); against their own float64 run, beyond
///    `gradient_reference_rtol` of rms(r). A handful of elements at kinks of relu-like ops
///    (where the two runs take different sides) move the norm little. When the forward pass
///    already computes NaN/Inf and b rewrites the arithmetic, NaN/Inf patterns of gradients are
///    not compared (`compare_options::nonfinite_forward`);
///  - conditioning: a peer may be a's own configuration run on inputs and parameters moved by
///    one float32 ulp (`perturbed_inputs`, `perturbed_parameters`): where that alone moves a as
///    far as a (or b) is from the truth, the model is ill-conditioned at float32 precision (or
///    its float32 formulas are unstable at these values), and float32 cannot do better;
///  - Python scalars: ints, bools, None, strings exact; floats with the f32 tolerance.
#include "tfg/torch/linkage.hpp"
#include "tfg/oracle/verdict.hpp"
#include "tfg/torch/execute/configs.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/schema.hpp"

#include "tfg/torch/import/ivalue.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL oracle::dtype_class class_of(c10::ScalarType s);

/// True when an op of this kind returns freshly allocated, uninitialised memory (its values are
/// whatever the allocator hands out: never compared).
[[nodiscard]] inline bool is_uninitialised_op(std::string_view kind) {
  return kind == "aten::empty" || kind == "aten::empty_like" || kind == "aten::new_empty" ||
         kind == "aten::empty_strided" || kind == "aten::new_empty_strided";
}

/// True when an op of this kind returns integer results that depend on how ties break.
[[nodiscard]] TFG_TORCH_DECL bool is_tie_dependent_op(std::string_view kind);

/// True when node `n` selects elements by ranking them: a tie-dependent op that returns indices
/// (argmax, argmin, argsort; topk, sort, max.dim, kthvalue, ... with their second output).
/// The element-wise and full-reduction forms of max, min and median return no index.
template <class Graph>
[[nodiscard]] bool selects_elements(const Graph& g, graph::node_id n) {
  const auto kind = g.data(n).name();
  if (!is_tie_dependent_op(kind)) return false;
  if (kind == "aten::argmax" || kind == "aten::argmin" || kind == "aten::argsort") return true;
  return g.outputs(n).size() >= 2;
}

struct compare_options {
  oracle::tolerance_table tolerances;
  /// With a float64 reference r, b is wrong only where |b - r| > reference_slack |a - r| +
  /// floor: b is worse than the reference configuration's own rounding error, by this factor.
  double reference_slack = 4.0;
  /// Magnitude floor, in units of the precision class's machine epsilon times the output's RMS.
  double magnitude_ulps = 64.0;
  /// Gradients: every tolerance (and the magnitude floor) times this factor.
  double gradient_scale = 10.0;
  /// Float32 gradients against their float64 run: wrong only beyond this share of the
  /// gradient's RMS (backpropagation through a mutated network amplifies float32 rounding far
  /// beyond the forward's; a wrong derivative formula is off by O(1)).
  double gradient_reference_rtol = 0.1;
  /// b changes storage layouts (channels_last, frozen + optimize_for_inference): outputs that
  /// read raw storage geometry are not compared.
  bool layout_changes = false;
  /// The lowest floating precision among the inputs (f64: none lower).
  oracle::dtype_class input_precision = oracle::dtype_class::f64;
  /// b rewrites the arithmetic (frozen_optimized: conv-bn folding, fused post-ops; autograd:
  /// the graph executor's symbolic derivatives; the float64 runs: other kernels, e.g. a
  /// convolution that multiplies its zero padding), and the model's parameters hold NaN/Inf:
  /// the rewrite is exact only for finite parameters, so NaN/Inf patterns are not compared.
  bool rewrites_arithmetic = false;
  bool nonfinite_parameters = false;
  /// The forward pass already computes NaN/Inf (some output of the op-by-op reference run on
  /// some input holds one): backpropagated through it, gradients are NaN/Inf wherever a
  /// derivative formula multiplies (NaN * 0 = NaN) rather than selects, and b's formulas (the
  /// graph executor's symbolic derivatives mask relu's gradient by a multiply, eager's
  /// threshold_backward selects) spread them differently. With `rewrites_arithmetic`, NaN/Inf
  /// patterns of gradients are then not compared.
  bool nonfinite_forward = false;
};

/// What the judgement of one output leaf needs to know about how it was computed.
struct leaf_traits {
  bool tie = false;               ///< produced directly by a tie-dependent integer op
  bool layout_dependent = false;  ///< computed from raw storage geometry (constant as_strided)
  bool uninitialised = false;     ///< produced directly by aten::empty and its kin
  /// Its cone has a tie-dependent op (top-k, sort, argmax, ...): which elements it selected can
  /// differ between float32 and float64 at near-equal scores (a saturated sigmoid's exact
  /// float32 ties are distinct in float64), so it is not judged against a float64 run.
  bool selection = false;
  oracle::dtype_class precision = oracle::dtype_class::f64;  ///< lowest precision in its cone
};

/// Precision order: bf16 (8 bits) < f16 (11) < f32 < f64; other classes are not floating.
[[nodiscard]] TFG_TORCH_DECL int precision_rank(oracle::dtype_class c) noexcept;
[[nodiscard]] inline oracle::dtype_class lower_precision(oracle::dtype_class a, oracle::dtype_class b) noexcept {
  return precision_rank(a) <= precision_rank(b) ? a : b;
}
[[nodiscard]] TFG_TORCH_DECL double machine_epsilon(oracle::dtype_class c) noexcept;

/// True when `n` reads raw storage geometry fixed at mutation time: an `aten::as_strided` whose
/// strides or storage offset are constants (on another layout, the same strides address other
/// elements).
[[nodiscard]] TFG_TORCH_DECL bool reads_fixed_geometry(const node_data& d);

/// The lowest floating precision node `n` introduces: a ScalarType argument or a tensor
/// constant of f16 / bf16 (f64 when none).
[[nodiscard]] TFG_TORCH_DECL oracle::dtype_class introduced_precision(const graph_type& g, graph::node_id n);

/// leaf_traits of every edge (index = edge index): lowest precision, fixed-geometry reads and
/// selections in its cone, tie-dependence and uninitialised memory of its producer. One pass
/// in topological order.
[[nodiscard]] TFG_TORCH_DECL std::vector<leaf_traits> edge_traits(const model& m);

/// leaf_traits of every output leaf path of `m` ("" for a bare value, "1.0", ...): those of the
/// graph output edge that returns it (edge_traits).
[[nodiscard]] TFG_TORCH_DECL std::map<std::string, leaf_traits> output_traits(const model& m);

/// The traits of a flattened leaf: those of the graph output it lies in (its path or a prefix).
[[nodiscard]] TFG_TORCH_DECL leaf_traits traits_of(const std::map<std::string, leaf_traits>& traits,
                                                   const std::string& leaf);

namespace compare_detail {

[[nodiscard]] TFG_TORCH_DECL bool nonfinite_floating(const c10::IValue& v);

/// Whether a value that `m` computes from its constants alone (what freezing folds into a
/// parameter: `w * (1 / 0)` on a weight) holds NaN or Inf. The nodes of that cone run here on
/// the constants themselves (not copied: weights are large), so in-place operators are
/// skipped, as are random operators (not folded) and ops that fail. A division by such a value
/// that holds a zero counts too (folded into a producer's weights it is w / 0).
[[nodiscard]] TFG_TORCH_DECL bool computes_nonfinite_from_constants(const model& m);

}  // namespace compare_detail

/// Whether some floating output of `r` (a forward run) holds NaN or Inf on some input.
[[nodiscard]] TFG_TORCH_DECL bool has_nonfinite_outputs(const run_result& r);

/// True when a floating tensor constant of `m` (a parameter) or a float constant holds NaN or
/// Inf, or a value `m` computes from its constants alone does (freezing folds it into a
/// parameter: a mutation that makes a batch-norm weight `w * (1 / 0)` gives a frozen
/// configuration an Inf parameter, which conv-bn folding spreads its own way).
[[nodiscard]] TFG_TORCH_DECL bool has_nonfinite_parameters(const model& m);

/// The lowest floating precision among a set of inputs (f64 when none is lower).
[[nodiscard]] TFG_TORCH_DECL oracle::dtype_class input_precision(const std::vector<c10::IValue>& in);

namespace compare_detail {

[[nodiscard]] TFG_TORCH_DECL std::string fmt_double(double x);

[[nodiscard]] inline std::string dtype_name(c10::ScalarType s) { return c10::toString(s); }

[[nodiscard]] TFG_TORCH_DECL std::string shape_of(const at::Tensor& t);

/// Root mean square over the finite elements of a double tensor (0 when none).
[[nodiscard]] TFG_TORCH_DECL double rms(const at::Tensor& x);

/// Non-tensor leaves: Python scalars and the like.
TFG_TORCH_DECL void compare_scalars(oracle::verdict& v, const c10::IValue& va, const c10::IValue& vb,
                                    const compare_options& opt);

/// Floating tensors A (reference side), B, and optionally the float64 reference R, all double
/// and finite-comparable (same shape); see the file comment.
TFG_TORCH_DECL void compare_floating(oracle::verdict& v, const at::Tensor& A, const at::Tensor& B, const at::Tensor* R,
                                     bool b_is_reference, bool gradient, const leaf_traits& tr, c10::ScalarType dtype,
                                     const compare_options& opt, double spread = 0);

/// Fills v.kind / max_abs / max_rel / message for one pair of leaves.
TFG_TORCH_DECL void compare_leaf(oracle::verdict& v, const c10::IValue& va, const c10::IValue& vb,
                                 const c10::IValue* vr, bool a_widened, bool b_widened, const leaf_traits& tr,
                                 bool gradient, const compare_options& opt, double spread = 0);

/// How far a peer configuration's value lies from a's (max |p - a| over finite elements; RMS of
/// the difference for gradients): float32 rounding noise when neither is wrong.
[[nodiscard]] TFG_TORCH_DECL double spread_of(const c10::IValue& a, const c10::IValue& p, bool gradient);

}  // namespace compare_detail

/// For each leaf path in `leaves` (as `run_config` flattens them), whether the model edge that
/// returns it is produced by a tie-dependent op (see is_tie_dependent_op).
[[nodiscard]] TFG_TORCH_DECL std::vector<bool> tie_dependent_outputs(const model& m, const output_list& leaves);

/// Compares configuration `b` against configuration `a` (the reference side), one verdict per
/// (input, output leaf), or a single verdict for the run when an error or a difference in the
/// number of inputs prevents that. `m` (optional) gives the outputs' traits (tie-dependent,
/// layout-dependent, lowest precision in the cone); `reference64` (optional, usually the
/// float64_reference run) anchors the numeric judgement (see the rules above). Never throws on
/// comparable data; a tensor library failure while comparing becomes a state_mismatch.
[[nodiscard]] TFG_TORCH_DECL std::vector<oracle::verdict> compare_runs(const run_result& a, const run_result& b,
                                                                       const compare_options& opt = {},
                                                                       const model* m = nullptr,
                                                                       const run_result* reference64 = nullptr,
                                                                       std::span<const run_result* const> peers = {});

/// The most severe verdict of compare_runs (see oracle::worst).
[[nodiscard]] inline oracle::verdict judge(const run_result& a, const run_result& b, const compare_options& opt = {},
                                           const model* m = nullptr, const run_result* reference64 = nullptr,
                                           std::span<const run_result* const> peers = {}) {
  return oracle::worst(compare_runs(a, b, opt, m, reference64, peers));
}

/// The inputs with every floating tensor element scaled by (1 + u), u uniform in
/// [-rel, rel], from a generator seeded with `seed`: float32-sized noise for a conditioning
/// run: the same configuration on them is a peer whose spread is that configuration's own
/// float32 noise.
[[nodiscard]] TFG_TORCH_DECL std::vector<std::vector<c10::IValue>> perturbed_inputs(
    const std::vector<std::vector<c10::IValue>>& in, double rel, std::uint64_t seed);

/// `m` with every floating tensor constant (its parameters) scaled element-wise by (1 + u), u
/// uniform in [-rel, rel]: together with perturbed_inputs, the computation on data one float32
/// rounding away (conv-bn folding, for one, rounds the folded weights exactly that much).
[[nodiscard]] TFG_TORCH_DECL model perturbed_parameters(const model& m, double rel, std::uint64_t seed);

/// Helpers of compare_detail other files use (localisation compares edge values as the oracle does); the rest of
/// compare_detail is this file's own.
using compare_detail::compare_leaf;
using compare_detail::spread_of;

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/oracle/compare.ipp"
#endif
