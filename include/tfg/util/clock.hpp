#pragma once
/// \file
/// Elapsed wall time in milliseconds (steady clock), the unit every phase time of the project
/// is recorded in.
#include <chrono>

namespace tfg {

[[nodiscard]] inline double ms_since(std::chrono::steady_clock::time_point t0) noexcept {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tfg
