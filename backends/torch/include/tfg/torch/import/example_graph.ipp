#pragma once
// The definitions of example_graph.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/example_graph.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL input_set example_inputs(const dsl::example_graph& eg, std::size_t count,
                                                      std::uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  input_set out(count);
  for (const auto& in : eg.inputs) {
    for (std::size_t k = 0; k < count; ++k) {
      if (!in.tensor) {
        if (in.type_name.text == "int") out[k].emplace_back(static_cast<std::int64_t>(k + 2));
        else if (in.type_name.text == "float") out[k].emplace_back(0.5 + static_cast<double>(k));
        else out[k].emplace_back(k % 2 == 0);
        continue;
      }
      std::vector<std::int64_t> dims;
      for (const auto& d : in.dims) dims.push_back(d.int_value);
      const auto dtype = scalar_type_of_word(in.type_name.text).value_or(c10::kFloat);
      double lo = -1, hi = 1;
      bool channels_last = false, requires_grad = false, nan = false, inf = false;
      for (const auto& a : in.attrs) {
        const auto& key = a.key.text;
        auto number = [&] {
          if (!a.value) return 0.0;
          if (a.value->kind == dsl::expr_kind::int_literal) return static_cast<double>(a.value->int_value);
          if (a.value->kind == dsl::expr_kind::float_literal) return a.value->float_value;
          if (a.value->kind == dsl::expr_kind::unary && !a.value->args.empty())
            return -(a.value->args[0].kind == dsl::expr_kind::int_literal
                         ? static_cast<double>(a.value->args[0].int_value)
                         : a.value->args[0].float_value);
          return 0.0;
        };
        if (key == "min") lo = number();
        else if (key == "max") hi = number();
        else if (key == "channels_last") channels_last = true;
        else if (key == "requires_grad") requires_grad = true;
        else if (key == "nan") nan = true;
        else if (key == "inf") inf = true;
      }
      at::Tensor t;
      if (at::isFloatingType(dtype)) {
        t = at::rand(dims, gen, at::TensorOptions().dtype(at::kDouble)).mul(hi - lo).add(lo).to(dtype);
        if (nan && t.numel() > 0) t.view(-1)[0] = NAN;
        if (inf && t.numel() > 0) t.view(-1)[t.numel() - 1] = INFINITY;
      } else if (dtype == c10::kBool) {
        t = at::randint(0, 2, dims, gen, at::TensorOptions().dtype(dtype));
      } else {
        t = at::randint(static_cast<std::int64_t>(lo < 0 ? 0 : lo), static_cast<std::int64_t>(hi <= 1 ? 8 : hi), dims,
                        gen, at::TensorOptions().dtype(dtype));
      }
      if (channels_last && (t.dim() == 4)) t = t.contiguous(c10::MemoryFormat::ChannelsLast);
      if (requires_grad && t.is_floating_point()) t.requires_grad_(true);
      out[k].emplace_back(t);
    }
  }
  return out;
}

}  // namespace tfg::torch
