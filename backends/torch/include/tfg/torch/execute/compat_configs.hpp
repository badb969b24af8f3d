#pragma once
/// Version adapters used by the execution configurations (configs.hpp): the calls whose
/// signatures or availability differ between LibTorch 1.13 (Debian) and 2.x.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/compat.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <sys/resource.h>

#include <cstdint>
#include <string>

namespace tfg::torch::compat {

/// `torch::jit::freeze` + `torch::jit::optimize_for_inference` (freeze works on a clone).
/// (2.x turned the optional `preserved_attrs` into `const std::optional<...>&`; the one-argument
/// calls here compile against both.) Modules without a `training` attribute (those built by
/// `to_module`) count as being in eval mode.
[[nodiscard]] TFG_TORCH_DECL ::torch::jit::Module freeze_and_optimize(const ::torch::jit::Module& module);

/// True when schema argument `a` is a `ScalarType` (or `ScalarType?`): its int constants are dtypes.
/// Uses `real_type()` (ScalarType is passed as int; 1.13 and 2.x both keep the real type).
[[nodiscard]] TFG_TORCH_DECL bool is_scalar_type_argument(const c10::Argument& a);

/// Peak resident set size of this process so far, in bytes (monotonic; 0 when unknown).
[[nodiscard]] TFG_TORCH_DECL std::int64_t peak_rss_bytes();

/// Sets the intra-op thread count for a scope and restores the previous one.
class intra_op_threads {
 public:
  explicit intra_op_threads(int n) : previous_(at::get_num_threads()) {
    if (n > 0 && n != previous_) at::set_num_threads(n);
  }
  ~intra_op_threads() {
    if (at::get_num_threads() != previous_) at::set_num_threads(previous_);
  }
  intra_op_threads(const intra_op_threads&) = delete;
  intra_op_threads& operator=(const intra_op_threads&) = delete;

 private:
  int previous_;
};

}  // namespace tfg::torch::compat

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/compat_configs.ipp"
#endif
