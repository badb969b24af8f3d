#pragma once
/// Oracles over execution configurations: compares two `run_result`s of one model output by
/// output and returns backend-neutral `tfg::oracle::verdict`s.
///
/// Rules:
///  - an error on one side: error_in_one; on both: error_in_both (one verdict for the run);
///  - different number of inputs / outputs, different paths (structure), a tensor against a
///    non-tensor, different shapes or dtypes: state_mismatch. Strides and memory formats are not
///    state (channels_last is expected to change them). A `widened` (float64) side's floating
///    outputs are first converted back to the other side's floating dtype;
///  - integer and bool tensors: exact. An integer output produced directly by a tie-dependent op
///    (argmax, argmin, topk, sort, argsort, max.dim, min.dim, kthvalue, mode, median, cummax,
///    cummin) is never compared numerically: a difference gives within_tolerance with
///    `tie_dependent` set. (Values computed *from* such indices downstream are not traced back.)
///  - floating tensors, compared in double: NaN/+-Inf at an element in one side only (or
///    +Inf against -Inf): nan_inf_mismatch. Over elements finite in both, an element is bad
///    when |a - b| > atol + rtol * |a| (tolerance by dtype, see tfg/oracle/verdict.hpp) and,
///    when a float64 reference run r is given, b is also further from r than a's own error
///    allows: |b - r| > atol + rtol * |r| + reference_slack * |a - r| (a is the reference
///    configuration; its own disagreement with r is judged by comparing it with the float64
///    run directly). Any bad element: numeric_mismatch; else bit-identical: equal; else
///    within_tolerance.
///  - Python scalars: ints, bools, None, strings exact; floats with the f32 tolerance.
#include <tfg/oracle/verdict.hpp>
#include <tfg/torch/configs.hpp>
#include <tfg/torch/model.hpp>

#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

[[nodiscard]] inline oracle::dtype_class class_of(c10::ScalarType s) {
  switch (s) {
    case c10::kHalf: return oracle::dtype_class::f16;
    case c10::kBFloat16: return oracle::dtype_class::bf16;
    case c10::kFloat: return oracle::dtype_class::f32;
    case c10::kDouble: return oracle::dtype_class::f64;
    case c10::kBool: return oracle::dtype_class::boolean;
    default: return c10::isIntegralType(s, /*includeBool=*/false) ? oracle::dtype_class::integer
                                                                    : oracle::dtype_class::other;
  }
}

/// True when an op of this kind returns integer results that depend on how ties break.
[[nodiscard]] inline bool is_tie_dependent_op(std::string_view kind) {
  static constexpr std::array<std::string_view, 13> ops = {
      "aten::argmax", "aten::argmin", "aten::topk",   "aten::sort",   "aten::argsort", "aten::max",    "aten::min",
      "aten::kthvalue", "aten::mode", "aten::median", "aten::nanmedian", "aten::cummax", "aten::cummin"};
  for (auto op : ops)
    if (kind == op) return true;
  return false;
}

/// For each leaf path in `leaves` (as `run_config` flattens them), whether the model edge that
/// returns it is produced by a tie-dependent op (see is_tie_dependent_op).
[[nodiscard]] inline std::vector<bool> tie_dependent_outputs(const model& m, const output_list& leaves) {
  std::vector<std::pair<std::string, bool>> edges;  // (path of the returned edge, tie-dependent producer)
  std::function<void(const output_tree&, const std::string&)> walk = [&](const output_tree& t,
                                                                         const std::string& path) {
    if (t.how == output_tree::form::edge) {
      const auto p = m.graph.producer(t.edge);
      edges.emplace_back(path, p != graph::no_node && is_tie_dependent_op(m.graph.data(p).name()));
    } else if (t.how == output_tree::form::list || t.how == output_tree::form::tuple) {
      for (std::size_t i = 0; i < t.items.size(); ++i) walk(t.items[i], ivalue::child_path(path, i));
    }
  };
  walk(m.output, "");
  std::vector<bool> out;
  out.reserve(leaves.size());
  for (const auto& leaf : leaves) {
    bool tie = false;
    for (const auto& [path, flag] : edges)
      if (flag && (path.empty() || leaf.path == path || leaf.path.rfind(path + ".", 0) == 0)) tie = true;
    out.push_back(tie);
  }
  return out;
}

struct compare_options {
  oracle::tolerance_table tolerances;
  /// With a float64 reference r, an element of b that is not close to a still passes when
  /// |b - r| <= atol + rtol * |r| + reference_slack * |a - r|: b is no worse than the reference
  /// configuration's own rounding error (times this factor) plus the tolerance.
  double reference_slack = 2.0;
};

namespace compare_detail {

[[nodiscard]] inline std::string fmt_double(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

[[nodiscard]] inline std::string dtype_name(c10::ScalarType s) { return c10::toString(s); }

[[nodiscard]] inline std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.sizes().size(); ++i) s += (i ? "," : "") + std::to_string(t.sizes()[i]);
  return s + "]";
}

/// Fills v.kind / max_abs / max_rel / message for one pair of leaves.
inline void compare_leaf(oracle::verdict& v, const c10::IValue& va, const c10::IValue& vb, const c10::IValue* vr,
                         bool a_widened, bool b_widened, bool tie, const compare_options& opt) {
  using oracle::verdict_kind;
  if (va.isTensor() != vb.isTensor()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = std::string("a returns a ") + va.tagKind() + ", b a " + vb.tagKind();
    return;
  }
  if (!va.isTensor()) {
    if (va.isDouble() && vb.isDouble()) {
      const double a = va.toDouble(), b = vb.toDouble();
      const auto tol = opt.tolerances.f32;
      v.max_abs = std::abs(a - b);
      v.max_rel = v.max_abs == 0 ? 0 : v.max_abs / std::max(std::abs(a), std::abs(b));
      if (a == b || (std::isnan(a) && std::isnan(b))) v.kind = verdict_kind::equal;
      else if (!std::isfinite(a) || !std::isfinite(b)) v.kind = verdict_kind::nan_inf_mismatch;
      else v.kind = v.max_abs <= tol.atol + tol.rtol * std::abs(a) ? verdict_kind::within_tolerance
                                                                    : verdict_kind::numeric_mismatch;
      if (v.kind != verdict_kind::equal) v.message = "float " + fmt_double(a) + " vs " + fmt_double(b);
      return;
    }
    if (va.tagKind() != vb.tagKind()) {
      v.kind = verdict_kind::state_mismatch;
      v.message = std::string("a returns a ") + va.tagKind() + ", b a " + vb.tagKind();
      return;
    }
    v.kind = va == vb ? verdict_kind::equal : verdict_kind::numeric_mismatch;
    if (v.kind != verdict_kind::equal) v.message = "scalar values differ";
    return;
  }
  at::Tensor a = va.toTensor(), b = vb.toTensor();
  if (!a.defined() || !b.defined()) {
    v.kind = a.defined() == b.defined() ? verdict_kind::equal : verdict_kind::state_mismatch;
    if (v.kind != verdict_kind::equal) v.message = "an undefined tensor on one side only";
    return;
  }
  // Undo a widening to float64 (the float64_reference configuration) before judging dtypes.
  if (b_widened && b.scalar_type() == c10::kDouble && a.is_floating_point() && a.scalar_type() != c10::kDouble)
    b = b.to(a.scalar_type());
  if (a_widened && a.scalar_type() == c10::kDouble && b.is_floating_point() && b.scalar_type() != c10::kDouble)
    a = a.to(b.scalar_type());
  if (a.scalar_type() != b.scalar_type()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = "dtype " + dtype_name(a.scalar_type()) + " vs " + dtype_name(b.scalar_type());
    return;
  }
  if (a.sizes() != b.sizes()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = "shape " + shape_of(a) + " vs " + shape_of(b);
    return;
  }
  if (a.numel() == 0) {
    v.kind = verdict_kind::equal;
    return;
  }
  const auto cls = class_of(a.scalar_type());
  if (!a.is_floating_point()) {
    if (a.is_complex()) {
      v.kind = at::equal(a, b) ? verdict_kind::equal : verdict_kind::numeric_mismatch;
      if (v.kind != verdict_kind::equal) v.message = "complex tensors differ (compared exactly)";
      return;
    }
    if (at::equal(a, b)) {
      v.kind = verdict_kind::equal;
      return;
    }
    const auto diff = (a.to(c10::kDouble) - b.to(c10::kDouble)).abs();
    v.max_abs = diff.max().item<double>();
    const auto count = (diff > 0).sum().item<std::int64_t>();
    if (tie) {
      v.kind = verdict_kind::within_tolerance;
      v.tie_dependent = true;
      v.message = "tie-dependent integer output differs at " + std::to_string(count) + " of " +
                  std::to_string(a.numel()) + " elements (not compared)";
    } else {
      v.kind = verdict_kind::numeric_mismatch;
      v.message = std::to_string(count) + " of " + std::to_string(a.numel()) + " " + dtype_name(a.scalar_type()) +
                  " elements differ (exact dtype); max abs " + fmt_double(v.max_abs);
    }
    return;
  }
  const auto A = a.to(c10::kDouble), B = b.to(c10::kDouble);
  const auto fin_a = at::isfinite(A), fin_b = at::isfinite(B);
  const auto both = fin_a.logical_and(fin_b);
  const auto same_special = A.eq(B).logical_or(at::isnan(A).logical_and(at::isnan(B)));
  const auto special_bad = both.logical_not().logical_and(same_special.logical_not());
  const auto zero = at::zeros({}, A.options());
  const auto diff = at::where(both, (A - B).abs(), zero);
  v.max_abs = diff.max().item<double>();
  const auto denom = at::maximum(A.abs(), B.abs());
  v.max_rel = at::where(both.logical_and(denom.gt(0)), diff / denom, zero).max().item<double>();
  if (const auto n = special_bad.sum().item<std::int64_t>(); n > 0) {
    v.kind = verdict_kind::nan_inf_mismatch;
    const auto nan_a = at::isnan(A).logical_and(special_bad).sum().item<std::int64_t>();
    const auto nan_b = at::isnan(B).logical_and(special_bad).sum().item<std::int64_t>();
    v.message = std::to_string(n) + " of " + std::to_string(a.numel()) + " elements are NaN/Inf on one side only (a: " +
                std::to_string(nan_a) + " NaN, b: " + std::to_string(nan_b) + " NaN)";
    return;
  }
  if (v.max_abs == 0) {
    v.kind = verdict_kind::equal;
    return;
  }
  const auto tol = opt.tolerances.for_class(cls);
  auto bad = both.logical_and(diff.gt(tol.atol + tol.rtol * A.abs()));
  bool judged_by_reference = false;
  if (vr && vr->isTensor() && vr->toTensor().defined() && vr->toTensor().sizes() == a.sizes() &&
      vr->toTensor().is_floating_point()) {
    const auto R = vr->toTensor().to(c10::kDouble);
    const auto lim = tol.atol + tol.rtol * R.abs() + opt.reference_slack * (A - R).abs();
    bad = bad.logical_and((B - R).abs().gt(lim));
    judged_by_reference = true;
  }
  const auto nbad = bad.sum().item<std::int64_t>();
  v.kind = nbad > 0 ? verdict_kind::numeric_mismatch : verdict_kind::within_tolerance;
  v.message = std::to_string(nbad) + " of " + std::to_string(a.numel()) + " " + dtype_name(a.scalar_type()) +
              " elements beyond rtol " + fmt_double(tol.rtol) + " / atol " + fmt_double(tol.atol) +
              (judged_by_reference ? " (and further from the float64 reference than a)" : "") + "; max abs " +
              fmt_double(v.max_abs) + ", max rel " + fmt_double(v.max_rel);
}

}  // namespace compare_detail

/// Compares configuration `b` against configuration `a` (the reference side), one verdict per
/// (input, output leaf), or a single verdict for the run when an error or a difference in the
/// number of inputs prevents that. `m` (optional) lets integer outputs of tie-dependent ops be
/// recognised; `reference64` (optional, usually the float64_reference run) lets differences
/// that both sides share with the float64 truth pass (see the rules above). Never throws on
/// comparable data; a tensor library failure while comparing becomes a state_mismatch.
[[nodiscard]] inline std::vector<oracle::verdict> compare_runs(const run_result& a, const run_result& b,
                                                               const compare_options& opt = {},
                                                               const model* m = nullptr,
                                                               const run_result* reference64 = nullptr) {
  using oracle::verdict_kind;
  std::vector<oracle::verdict> out;
  oracle::verdict base;
  base.config_a = a.config;
  base.config_b = b.config;
  if (!a.ok() || !b.ok()) {
    auto v = base;
    v.kind = !a.ok() && !b.ok() ? verdict_kind::error_in_both : verdict_kind::error_in_one;
    if (!a.ok()) v.message += a.config + ": " + a.error;
    if (!b.ok()) v.message += (v.message.empty() ? "" : "\n") + b.config + ": " + b.error;
    out.push_back(std::move(v));
    return out;
  }
  if (a.outputs.size() != b.outputs.size()) {
    auto v = base;
    v.kind = verdict_kind::state_mismatch;
    v.message =
        "results for " + std::to_string(a.outputs.size()) + " vs " + std::to_string(b.outputs.size()) + " inputs";
    out.push_back(std::move(v));
    return out;
  }
  const bool use_ref = reference64 && reference64->ok() && reference64->outputs.size() == a.outputs.size();
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    const auto& la = a.outputs[i];
    const auto& lb = b.outputs[i];
    auto v0 = base;
    v0.input_index = i;
    if (la.size() != lb.size()) {
      v0.kind = verdict_kind::state_mismatch;
      v0.message = "input " + std::to_string(i) + ": " + std::to_string(la.size()) + " vs " +
                   std::to_string(lb.size()) + " output values";
      out.push_back(std::move(v0));
      continue;
    }
    const auto ties = m ? tie_dependent_outputs(*m, la) : std::vector<bool>(la.size(), false);
    const output_list* lr = use_ref && reference64->outputs[i].size() == la.size() ? &reference64->outputs[i] : nullptr;
    for (std::size_t j = 0; j < la.size(); ++j) {
      auto v = v0;
      v.output_index = j;
      v.output_path = la[j].path;
      if (la[j].path != lb[j].path) {
        v.kind = verdict_kind::state_mismatch;
        v.message = "output structure differs: `" + la[j].path + "` vs `" + lb[j].path + "`";
      } else {
        try {
          const c10::IValue* r = lr && (*lr)[j].path == la[j].path ? &(*lr)[j].value : nullptr;
          compare_detail::compare_leaf(v, la[j].value, lb[j].value, r, a.widened, b.widened, ties[j], opt);
        } catch (const std::exception& e) {
          v.kind = verdict_kind::state_mismatch;
          v.message = "cannot compare: " + clean_error(e.what());
        }
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

/// The most severe verdict of compare_runs (see oracle::worst).
[[nodiscard]] inline oracle::verdict judge(const run_result& a, const run_result& b, const compare_options& opt = {},
                                           const model* m = nullptr, const run_result* reference64 = nullptr) {
  return oracle::worst(compare_runs(a, b, opt, m, reference64));
}

}  // namespace tfg::torch
