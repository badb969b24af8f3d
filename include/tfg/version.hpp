#pragma once
/// \file
/// The version of tfg and flowmut. CMakeLists.txt reads it into `project(tfg VERSION ...)`.
#include <string_view>

namespace tfg {
inline constexpr std::string_view version = "0.1.0";
}  // namespace tfg
