#pragma once
/// The LibTorch value toolkit: walking, copying and comparing the IValue trees that forward
/// takes and returns (tensors inside tuples and lists). One implementation for the executor's
/// configurations, the oracles, the example runner, influence, the tools and the tests.
///
///  - `flatten(v)`: the leaves depth first with their paths ("1.0" = element 0 of element 1);
///  - `deep_clone(v, f)`: tensors (also inside tuples and lists) copied, optionally transformed;
///  - `floating_tensors(v)`: the defined floating tensors, depth first;
///  - `all_finite(v)`: no NaN/Inf in any floating tensor;
///  - `max_abs_diff(a, b)`: the largest |a - b| over all leaves; +inf when the structure,
///    shapes, dtypes or non-floating values differ; NaN against NaN (and equal infinities) at
///    the same position count as equal;
///  - `excess(a, b, atol, rtol)`: the largest |a - b| - (atol + rtol |b|); <= 0 means equal
///    within tolerance (same NaN/Inf rule).
#include "tfg/torch/linkage.hpp"
#include <ATen/core/ivalue.h>
#include <ATen/Functions.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace tfg::torch {

/// One leaf of a returned value, flattened depth-first: tuples and lists are opened, anything
/// else (tensor, int, float, bool, None, ...) is a leaf. `path` names its position: "" for a
/// bare value, "1" for element 1 of the returned tuple, "1.0" for element 0 of that, and
/// "grad.K" for the gradient w.r.t. positional input K (autograd configurations).
struct output_leaf {
  std::string path;
  c10::IValue value;  ///< tensors are detached and on the CPU
};
using output_list = std::vector<output_leaf>;

namespace ivalue {

[[nodiscard]] inline std::string child_path(const std::string& path, std::size_t i) {
  return path.empty() ? std::to_string(i) : path + "." + std::to_string(i);
}

/// Appends the leaves of `v` below `path` to `out` (tensors detached and moved to the CPU).
TFG_TORCH_DECL void flatten_into(const c10::IValue& v, const std::string& path, output_list& out);

[[nodiscard]] TFG_TORCH_DECL output_list flatten(const c10::IValue& v);

using tensor_transform = std::function<at::Tensor(const at::Tensor&)>;

/// A copy of `v` whose tensors (also inside lists, tuples and dict values) are `f(t)`, or `t.clone()`
/// without `f`; so that a model mutating its inputs in place cannot leak into the next run.
[[nodiscard]] TFG_TORCH_DECL c10::IValue deep_clone(const c10::IValue& v, const tensor_transform& f = {});

[[nodiscard]] TFG_TORCH_DECL std::vector<c10::IValue> deep_clone(const std::vector<c10::IValue>& in,
                                                                 const tensor_transform& f = {});

/// Calls `f(tensor)` for every defined tensor of `v`, depth first.
template <class F>
void for_each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) f(v.toTensor());
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) for_each_tensor(e, f);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) for_each_tensor(e, f);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) for_each_tensor(e.value(), f);
  }
}

[[nodiscard]] TFG_TORCH_DECL std::vector<at::Tensor> floating_tensors(const c10::IValue& v);

[[nodiscard]] TFG_TORCH_DECL bool all_finite(const c10::IValue& v);

[[nodiscard]] TFG_TORCH_DECL bool all_finite(const std::vector<c10::IValue>& vs);

/// Largest |a - b| - (atol + rtol |b|) over the tensors of two values (see the file comment).
/// Floating tensors of different dtypes are compared by value unless `same_dtype`.
[[nodiscard]] TFG_TORCH_DECL double excess(const c10::IValue& a, const c10::IValue& b, double atol, double rtol,
                                           bool same_dtype = false);

/// Largest |a - b| over all leaves of two values (see the file comment).
[[nodiscard]] inline double max_abs_diff(const c10::IValue& a, const c10::IValue& b) {
  const double e = excess(a, b, 0.0, 0.0, /*same_dtype=*/true);
  return e < 0 ? 0.0 : e;
}

}  // namespace ivalue
}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/ivalue.ipp"
#endif
