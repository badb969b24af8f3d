#pragma once
// The definitions of match_adapter.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/mutate/match_adapter.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::optional<match::attr_value> to_attr(const c10::IValue& v, c10::TypeKind kind) {
  if (v.isNone()) return match::attr_value{std::monostate{}};
  if (v.isBool()) return match::attr_value{v.toBool()};
  if (v.isInt()) {
    if (auto w = word_of_code(kind, v.toInt())) return match::attr_value{std::move(*w)};
    return match::attr_value{static_cast<std::int64_t>(v.toInt())};
  }
  if (v.isDouble()) return match::attr_value{v.toDouble()};
  if (v.isString()) return match::attr_value{v.toStringRef()};
  if (v.isDevice()) return match::attr_value{v.toDevice().str()};
  if (v.isIntList()) {
    auto l = v.toIntList();
    return match::attr_value{std::vector<std::int64_t>(l.begin(), l.end())};
  }
  if (v.isDoubleList()) {
    auto l = v.toDoubleList();
    return match::attr_value{std::vector<double>(l.begin(), l.end())};
  }
  return std::nullopt;
}

}  // namespace tfg::torch
