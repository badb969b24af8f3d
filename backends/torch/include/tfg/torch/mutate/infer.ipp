#pragma once
// The definitions of infer.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/mutate/infer.hpp"

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL bool meta_missing(std::string_view what) {
  std::string low(what.substr(0, std::min<std::size_t>(what.size(), 400)));
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return low.find("meta") != std::string::npos || low.find("not implemented") != std::string::npos ||
         low.find("overrideable") != std::string::npos || low.find("data-dependent") != std::string::npos;
}

[[nodiscard]] TFG_TORCH_DECL std::optional<c10::IValue> value_of_state(const state::tensor_state& s) {
  switch (s.kind) {
    case state::value_kind::tensor: {
      if (s.tensor_layout != state::layout::strided) return std::nullopt;
      const auto t = scalar_type_of_word(state::name(s.type));
      if (!t) return std::nullopt;
      const auto opt = at::TensorOptions().device(c10::kMeta).dtype(*t);
      if (s.strides.size() == s.shape.size()) return c10::IValue(at::empty_strided(s.shape, s.strides, opt));
      return c10::IValue(at::empty(s.shape, opt));
    }
    case state::value_kind::integer: return c10::IValue(static_cast<std::int64_t>(s.scalar));
    case state::value_kind::floating: return c10::IValue(s.scalar);
    case state::value_kind::boolean: return c10::IValue(s.scalar != 0);
    default: return std::nullopt;
  }
}

[[nodiscard]] TFG_TORCH_DECL std::optional<state::tensor_state> state_of_value(const c10::IValue& v) {
  state::tensor_state s;
  if (v.isTensor()) {
    if (!v.toTensor().defined()) return std::nullopt;
    s = tensor_state_of(v.toTensor(), false);
    s.device = {state::device_kind::cpu, -1};  // the reference runs on the CPU
    s.storage_nbytes = 0;
    return s;
  }
  if (v.isInt()) s.kind = state::value_kind::integer, s.scalar = static_cast<double>(v.toInt());
  else if (v.isDouble()) s.kind = state::value_kind::floating, s.scalar = v.toDouble();
  else if (v.isBool()) s.kind = state::value_kind::boolean, s.scalar = v.toBool();
  else return std::nullopt;
  return s;
}

[[nodiscard]] TFG_TORCH_DECL bool same_metadata(const state::tensor_state& a, const state::tensor_state& b) {
  if (a.kind != b.kind) return false;
  if (a.kind != state::value_kind::tensor) return a.scalar == b.scalar;
  return a.shape == b.shape && a.type == b.type && a.type_known == b.type_known && a.strides == b.strides;
}

[[nodiscard]] TFG_TORCH_DECL bool reads_meta(const std::vector<c10::IValue>& args) {
  const auto meta = [](const c10::IValue& v) {
    return v.isTensor() && v.toTensor().defined() && v.toTensor().is_meta();
  };
  for (const auto& v : args) {
    if (meta(v)) return true;
    if (v.isList())
      for (const auto& x : v.toListRef())
        if (meta(x)) return true;
  }
  return false;
}

[[nodiscard]] TFG_TORCH_DECL bool has_meta_kernel(const graph_type& g, graph::node_id n) {
  const auto* schema = schema_of(g, n);
  if (!schema) return true;
  if (meta_path_missing().contains(schema)) return false;
  const auto h = c10::Dispatcher::singleton().findOp(schema->operator_name());
  return !h || h->hasComputedKernelForDispatchKey(c10::DispatchKey::Meta);
}

[[nodiscard]] TFG_TORCH_DECL std::optional<std::vector<std::vector<std::int64_t>>> shape_function(
    const c10::FunctionSchema& schema, const ::torch::jit::Stack& stack) {
  std::vector<::torch::jit::SSAInput> in;
  in.reserve(stack.size());
  for (const auto& v : stack) {
    if (v.isTensor() && v.toTensor().defined()) in.emplace_back(c10::SymbolicShape(v.toTensor().sizes()));
    else in.emplace_back(v);
  }
  auto r = ::torch::jit::calculateSymbolicShapesOnOp(&schema, in);
  if (!r) return std::nullopt;
  std::vector<std::vector<std::int64_t>> out;
  for (const auto& s : *r) {
    const auto sizes = s.sizes();
    if (!sizes) return std::nullopt;
    auto& dims = out.emplace_back();
    for (const auto& d : *sizes) {
      if (!d.is_static() || d.static_size() < 0) return std::nullopt;
      dims.push_back(d.static_size());
    }
  }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL const c10::FunctionSchema* shape_schema(const graph_type& g, graph::node_id n,
                                                                     std::size_t& argc) {
  const auto& d = g.data(n);
  argc = d.args.size();
  if (d.kind == c10::Symbol::fromQualString("aten::_convolution")) {
    argc = 9;
    for (const auto& op : ::torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString("aten::convolution")))
      if (op->schema().overload_name().empty()) return &op->schema();
    return nullptr;
  }
  return schema_of(g, n);
}

}  // namespace tfg::torch::detail
