#pragma once
// The definitions of instantiate.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/mutate/instantiate.hpp"

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL std::optional<std::int64_t> word_code(const std::string& w, c10::TypeKind kind) {
  static const std::pair<const char*, c10::MemoryFormat> formats[] = {
      {"contiguous_format", c10::MemoryFormat::Contiguous},
      {"preserve_format", c10::MemoryFormat::Preserve},
      {"channels_last_format", c10::MemoryFormat::ChannelsLast},
      {"channels_last_3d_format", c10::MemoryFormat::ChannelsLast3d}};
  static const std::pair<const char*, c10::Layout> layouts[] = {
      {"strided", c10::kStrided}, {"sparse_coo", c10::kSparse}, {"mkldnn", c10::kMkldnn}};
  if (kind == c10::TypeKind::ScalarTypeType)
    if (auto t = scalar_type_of_word(w)) return static_cast<std::int64_t>(*t);
  if (kind == c10::TypeKind::MemoryFormatType)
    for (auto& [n, f] : formats)
      if (w == n) return static_cast<std::int64_t>(f);
  if (kind == c10::TypeKind::LayoutType)
    for (auto& [n, l] : layouts)
      if (w == n) return static_cast<std::int64_t>(l);
  return std::nullopt;
}

[[nodiscard]] TFG_TORCH_DECL c10::TypePtr unwrap_optional(const c10::TypePtr& t, bool& optional) {
  optional = false;
  if (auto o = t->cast<c10::OptionalType>()) {
    optional = true;
    return o->getElementType();
  }
  return t;
}

[[nodiscard]] TFG_TORCH_DECL std::optional<c10::IValue> constant_for(const match::attr_value& a,
                                                                     const c10::TypePtr& type,
                                                                     const c10::TypePtr& real_type) {
  bool optional = false;
  const auto t = unwrap_optional(type, optional);
  bool real_optional = false;
  const auto rt = unwrap_optional(real_type, real_optional);
  const auto k = t->kind();
  if (std::holds_alternative<std::monostate>(a))
    return optional ? std::optional<c10::IValue>(c10::IValue()) : std::nullopt;
  if (const auto* s = std::get_if<std::string>(&a)) {
    if (k == c10::TypeKind::StringType) return c10::IValue(*s);  // gelu's approximate="none"
    if (*s == "none") return optional ? std::optional<c10::IValue>(c10::IValue()) : std::nullopt;
    if (auto code = word_code(*s, rt->kind())) return c10::IValue(*code);
    if (k == c10::TypeKind::DeviceObjType) {
      try {
        return c10::IValue(c10::Device(*s));
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }
  if (const auto* b = std::get_if<bool>(&a)) {
    if (k == c10::TypeKind::BoolType) return c10::IValue(*b);
    if (k == c10::TypeKind::NumberType) return c10::IValue(*b);  // Scalar
    return std::nullopt;
  }
  if (const auto* i = std::get_if<std::int64_t>(&a)) {
    if (k == c10::TypeKind::IntType || k == c10::TypeKind::NumberType || k == c10::TypeKind::SymIntType)
      return c10::IValue(*i);
    if (k == c10::TypeKind::FloatType) return c10::IValue(static_cast<double>(*i));
    if (k == c10::TypeKind::ListType) {  // int[1] arguments accept a single int
      auto elem = t->castRaw<c10::ListType>()->getElementType()->kind();
      if (elem == c10::TypeKind::IntType || elem == c10::TypeKind::SymIntType)
        return c10::IValue(c10::List<std::int64_t>({*i}));
    }
    return std::nullopt;
  }
  if (const auto* d = std::get_if<double>(&a)) {
    if (k == c10::TypeKind::FloatType || k == c10::TypeKind::NumberType) return c10::IValue(*d);
    return std::nullopt;
  }
  if (const auto* il = std::get_if<std::vector<std::int64_t>>(&a)) {
    if (k != c10::TypeKind::ListType) return std::nullopt;
    auto elem = t->castRaw<c10::ListType>()->getElementType()->kind();
    if (elem == c10::TypeKind::IntType || elem == c10::TypeKind::SymIntType)
      return c10::IValue(c10::List<std::int64_t>(*il));
    if (elem == c10::TypeKind::FloatType)
      return c10::IValue(c10::List<double>(std::vector<double>(il->begin(), il->end())));
    return std::nullopt;
  }
  if (const auto* dl = std::get_if<std::vector<double>>(&a)) {
    if (k == c10::TypeKind::ListType &&
        t->castRaw<c10::ListType>()->getElementType()->kind() == c10::TypeKind::FloatType)
      return c10::IValue(c10::List<double>(*dl));
    return std::nullopt;
  }
  return std::nullopt;
}

[[nodiscard]] TFG_TORCH_DECL bool edge_fits(state::value_kind kind, const c10::TypePtr& type) {
  bool optional = false;
  const auto t = unwrap_optional(type, optional);
  switch (t->kind()) {
    case c10::TypeKind::TensorType: return kind == state::value_kind::tensor;
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: return kind == state::value_kind::integer;
    case c10::TypeKind::FloatType: return kind == state::value_kind::floating;
    case c10::TypeKind::BoolType: return kind == state::value_kind::boolean;
    case c10::TypeKind::NumberType:
      return kind == state::value_kind::integer || kind == state::value_kind::floating ||
             kind == state::value_kind::boolean;
    case c10::TypeKind::ListType: {
      const auto elem = t->castRaw<c10::ListType>()->getElementType()->kind();
      if (elem == c10::TypeKind::TensorType) return kind == state::value_kind::tensor_list;
      if (elem == c10::TypeKind::IntType || elem == c10::TypeKind::SymIntType)
        return kind == state::value_kind::int_list;
      return false;
    }
    default: return false;
  }
}

[[nodiscard]] TFG_TORCH_DECL bool fit(const c10::FunctionSchema& schema, const std::vector<proto_arg>& args,
                                      std::vector<argument>& out) {
  const auto& formal = schema.arguments();
  if (args.size() > formal.size() || schema.is_vararg()) return false;
  out.clear();
  for (std::size_t i = 0; i < formal.size(); ++i) {
    const auto& f = formal[i];
    argument a;
    if (i >= args.size()) {
      if (!f.default_value()) return false;
      a.how = argument::form::constant;
      a.constant = *f.default_value();
      out.push_back(std::move(a));
      continue;
    }
    const auto& p = args[i].v;
    if (const auto* e = std::get_if<proto_arg::edge_ref>(&p)) {
      if (!edge_fits(e->kind, f.type())) return false;
      a.how = argument::form::edge;
      a.input = e->input;
    } else if (const auto* c = std::get_if<match::attr_value>(&p)) {
      auto iv = constant_for(*c, f.type(), f.real_type());
      if (!iv) return false;
      a.how = argument::form::constant;
      a.constant = std::move(*iv);
    } else {
      const auto& items = std::get<std::vector<proto_arg>>(p);
      bool optional = false;
      auto t = unwrap_optional(f.type(), optional);
      if (t->kind() != c10::TypeKind::ListType) return false;
      auto elem = t->castRaw<c10::ListType>()->getElementType();
      a.how = argument::form::list;
      a.type = t;
      for (const auto& item : items) {
        list_item li;
        if (const auto* e = std::get_if<proto_arg::edge_ref>(&item.v)) {
          if (!edge_fits(e->kind, elem)) return false;
          li.is_edge = true;
          li.input = e->input;
        } else if (const auto* c = std::get_if<match::attr_value>(&item.v)) {
          auto iv = constant_for(*c, elem, elem);
          if (!iv) return false;
          li.constant = std::move(*iv);
        } else {
          return false;  // nested lists
        }
        a.items.push_back(std::move(li));
      }
    }
    out.push_back(std::move(a));
  }
  return true;
}

}  // namespace tfg::torch::detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL built_node build_node(const std::string& op_name, const std::vector<proto_arg>& args) {
  const auto sym = c10::Symbol::fromQualString(op_name);
  const auto& candidates = ::torch::jit::getAllOperatorsFor(sym);
  if (candidates.empty())
    throw model_error("error[E050]: no operator named " + op_name + " in this LibTorch (" TORCH_VERSION ")");
  for (const auto& op : candidates) {
    const auto& schema = op->schema();
    std::vector<argument> laid;
    if (!detail::fit(schema, args, laid)) continue;
    // Schemas whose results are not all plain values (e.g. aliasing tuples) are fine: each
    // result is one output edge.
    built_node b;
    b.data.kind = sym;
    b.data.args = std::move(laid);
    for (std::size_t r = 0; r < schema.returns().size(); ++r) {
      const auto& t = schema.returns()[r].type();
      b.data.results.push_back({result_slot::form::value, static_cast<std::uint32_t>(r), 1, t});
      b.outputs.push_back(edge_data{t, kind_of(t), ""});
    }
    try {
      b.data.op = op->getOperation();
    } catch (const std::exception& e) {
      continue;  // needs a jit::Node to create its kernel: not usable for mutations
    }
    return b;
  }
  std::string msg =
      "no overload of " + op_name + " accepts these " + std::to_string(args.size()) + " arguments; schemas:";
  for (const auto& op : candidates) msg += "\n  " + c10::toString(op->schema());
  throw model_error(msg);
}

}  // namespace tfg::torch
