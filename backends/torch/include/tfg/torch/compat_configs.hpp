#pragma once
/// Version adapters used by the execution configurations (configs.hpp): the calls whose
/// signatures or availability differ between LibTorch 1.13 (Debian) and 2.x.
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
[[nodiscard]] inline ::torch::jit::Module freeze_and_optimize(const ::torch::jit::Module& module) {
  auto m = module;  // a handle: eval() below changes the caller's module too
  if (m.hasattr("training")) m.eval();
  auto frozen = ::torch::jit::freeze(m);
  return ::torch::jit::optimize_for_inference(frozen);
}

/// True when schema argument `a` is a `ScalarType` (or `ScalarType?`): its int constants are dtypes.
/// Uses `real_type()` (ScalarType is passed as int; 1.13 and 2.x both keep the real type).
[[nodiscard]] inline bool is_scalar_type_argument(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  return t->kind() == c10::TypeKind::ScalarTypeType;
}

/// Peak resident set size of this process so far, in bytes (monotonic; 0 when unknown).
[[nodiscard]] inline std::int64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

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
