#pragma once
// The definitions of model.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/model.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::string first_line(std::string_view what) {
  while (!what.empty()) {
    const auto nl = what.find('\n');
    auto line = what.substr(0, nl);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\r'))
      line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) line.remove_suffix(1);
    if (!line.empty()) return std::string(line);
    if (nl == std::string_view::npos) break;
    what.remove_prefix(nl + 1);
  }
  return "no message from LibTorch";
}

[[nodiscard]] TFG_TORCH_DECL std::string clean_error(std::string what) {
  if (auto p = what.find("Exception raised from"); p != std::string::npos) what.resize(p);
  while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
  return what.empty() ? std::string("unknown error") : what;
}

[[nodiscard]] TFG_TORCH_DECL state::value_kind kind_of(const c10::TypePtr& t) {
  using c10::TypeKind;
  switch (t->kind()) {
    case TypeKind::TensorType: return state::value_kind::tensor;
    case TypeKind::IntType: return state::value_kind::integer;
    case TypeKind::FloatType: return state::value_kind::floating;
    case TypeKind::BoolType: return state::value_kind::boolean;
    case TypeKind::ListType:
      if (t->castRaw<c10::ListType>()->getElementType()->kind() == TypeKind::TensorType)
        return state::value_kind::tensor_list;
      if (t->castRaw<c10::ListType>()->getElementType()->kind() == TypeKind::IntType)
        return state::value_kind::int_list;
      return state::value_kind::other;
    default: return state::value_kind::other;
  }
}

[[nodiscard]] TFG_TORCH_DECL std::optional<c10::ScalarType> scalar_type_of_word(std::string_view w) {
  static constexpr std::pair<std::string_view, c10::ScalarType> names[] = {
      {"f16", c10::kHalf}, {"bf16", c10::kBFloat16}, {"f32", c10::kFloat}, {"f64", c10::kDouble}, {"i8", c10::kChar},
      {"u8", c10::kByte},  {"i16", c10::kShort},     {"i32", c10::kInt},   {"i64", c10::kLong},   {"bool", c10::kBool}};
  for (const auto& [n, t] : names)
    if (w == n) return t;
  return std::nullopt;
}

TFG_TORCH_DECL void sync_outputs(model& m) {
  std::size_t next = 0;
  const auto outs = m.graph.graph_outputs();
  auto walk = [&](auto&& self, output_tree& t) -> void {
    if (t.how == output_tree::form::edge && next < outs.size()) t.edge = outs[next++];
    for (auto& i : t.items) self(self, i);
  };
  walk(walk, m.output);
}

[[nodiscard]] TFG_TORCH_DECL std::string describe(const graph_type& g, graph::node_id n) {
  const auto& d = g.data(n);
  std::string s = "node " + std::to_string(graph::index(n)) + " (" + d.name() + ")";
  if (!d.scope.empty()) s += " in " + d.scope;
  if (!d.where.empty()) s += " at " + d.where;
  return s;
}

}  // namespace tfg::torch
