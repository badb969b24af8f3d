#pragma once
/// The few places where LibTorch 1.13 (Debian) and LibTorch 2.x differ, behind small adapters.
/// Everything else in tfg::torch spells only APIs that exist unchanged in both.
#include <torch/csrc/api/include/torch/version.h>
#include <torch/script.h>

#include <optional>
#include <string_view>

#define TFG_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace tfg::torch::compat {

/// `torch::jit::Operation` has no default constructor in 1.13; hold it in an optional.
using operation = std::optional<::torch::jit::Operation>;

/// True when this LibTorch was built with CUDA and a device is visible.
[[nodiscard]] inline bool cuda_available() { return at::hasCUDA(); }

/// Whether work that needs device `d` ("cpu", "cuda": an operator's `requires`) can run here.
[[nodiscard]] inline bool device_available(std::string_view d) {
  return d == "cpu" || (d == "cuda" && cuda_available());
}

}  // namespace tfg::torch::compat
