#pragma once
// The definitions of schema.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/schema.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL bool arg_fits(const graph_type& g, graph::node_id n, const argument& a,
                                           const c10::Argument& f) {
  switch (a.how) {
    case argument::form::edge: {
      const auto ins = g.inputs(n);
      if (a.input >= ins.size()) return false;
      const auto& t = g.data(ins[a.input]).type;
      return t && t->isSubtypeOf(*f.type());
    }
    case argument::form::constant: return a.constant.type()->isSubtypeOf(*f.type());
    case argument::form::list:
    case argument::form::tuple: return a.type && a.type->isSubtypeOf(*f.type());
  }
  return false;
}

[[nodiscard]] TFG_TORCH_DECL const c10::FunctionSchema* schema_of(const graph_type& g, graph::node_id n) {
  const auto& d = g.data(n);
  const c10::FunctionSchema* fallback = nullptr;
  for (const auto& op : ::torch::jit::getAllOperatorsFor(d.kind)) {
    const auto& s = op->schema();
    if (s.is_vararg() || s.arguments().size() != d.args.size()) continue;
    if (!fallback) fallback = &s;
    bool fits = true;
    for (std::size_t i = 0; fits && i < d.args.size(); ++i) fits = arg_fits(g, n, d.args[i], s.arguments()[i]);
    if (fits) return &s;
  }
  return fallback;
}

[[nodiscard]] TFG_TORCH_DECL c10::TypeKind real_kind(const c10::Argument& a) {
  c10::TypePtr t = a.real_type();
  if (auto opt = t->cast<c10::OptionalType>()) t = opt->getElementType();
  return t->kind();
}

[[nodiscard]] TFG_TORCH_DECL std::optional<std::string> word_of_code(c10::TypeKind kind, std::int64_t code) {
  switch (kind) {
    case c10::TypeKind::ScalarTypeType: {
      static constexpr std::pair<c10::ScalarType, const char*> names[] = {
          {c10::kHalf, "f16"}, {c10::kBFloat16, "bf16"}, {c10::kFloat, "f32"}, {c10::kDouble, "f64"},
          {c10::kChar, "i8"},  {c10::kByte, "u8"},       {c10::kShort, "i16"}, {c10::kInt, "i32"},
          {c10::kLong, "i64"}, {c10::kBool, "bool"}};
      for (const auto& [t, n] : names)
        if (static_cast<std::int64_t>(t) == code) return std::string(n);
      return std::nullopt;
    }
    case c10::TypeKind::MemoryFormatType:
      switch (static_cast<c10::MemoryFormat>(code)) {
        case c10::MemoryFormat::Contiguous: return std::string("contiguous_format");
        case c10::MemoryFormat::Preserve: return std::string("preserve_format");
        case c10::MemoryFormat::ChannelsLast: return std::string("channels_last_format");
        case c10::MemoryFormat::ChannelsLast3d: return std::string("channels_last_3d_format");
        default: return std::nullopt;
      }
    case c10::TypeKind::LayoutType:
      if (code == static_cast<std::int64_t>(c10::kStrided)) return std::string("strided");
      if (code == static_cast<std::int64_t>(c10::kSparse)) return std::string("sparse_coo");
      if (code == static_cast<std::int64_t>(c10::kMkldnn)) return std::string("mkldnn");
      return std::nullopt;
    default: return std::nullopt;
  }
}

}  // namespace tfg::torch
