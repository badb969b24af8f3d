#pragma once
// The definitions of execute.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/execute.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::string describe_arguments(const std::vector<c10::IValue>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ", ";
    if (a.isTensor() && a.toTensor().defined()) {
      const auto& t = a.toTensor();
      std::string dims;
      for (auto d : t.sizes()) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      out += (dims.empty() ? std::string("scalar") : dims) + " " + std::string(c10::toString(t.scalar_type()));
    } else {
      out += a.tagKind();
    }
  }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL model_error input_error(const std::exception& e,
                                                     const std::vector<std::vector<c10::IValue>>& inputs,
                                                     std::size_t k) {
  const auto these = describe_arguments(inputs[k]);
  std::string msg = e.what();
  msg +=
      "\n  on profiling input " + std::to_string(k + 1) + " of " + std::to_string(inputs.size()) + " (" + these + ")";
  if (const auto first = describe_arguments(inputs[0]); k > 0 && these != first)
    msg += "; input 1 is " + first +
           ". A traced model keeps the shapes its trace saw wherever its code turned a shape into a number "
           "(torch.jit.trace's TracerWarnings): trace it again for these shapes, script it, or profile with "
           "inputs of the traced shapes";
  return model_error(msg);
}

}  // namespace tfg::torch
