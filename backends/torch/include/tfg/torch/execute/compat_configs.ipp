#pragma once
// The definitions of compat_configs.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/compat_configs.hpp"

namespace tfg::torch::compat {

[[nodiscard]] TFG_TORCH_DECL ::torch::jit::Module freeze_and_optimize(const ::torch::jit::Module& module) {
  auto m = module;  // a handle: eval() below changes the caller's module too
  if (m.hasattr("training")) m.eval();
  auto frozen = ::torch::jit::freeze(m);
  return ::torch::jit::optimize_for_inference(frozen);
}

[[nodiscard]] TFG_TORCH_DECL bool is_scalar_type_argument(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  return t->kind() == c10::TypeKind::ScalarTypeType;
}

[[nodiscard]] TFG_TORCH_DECL std::int64_t peak_rss_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

}  // namespace tfg::torch::compat
