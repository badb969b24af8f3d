#pragma once
// The definitions of observe.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/observe.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::optional<param_type> param_type_of(const c10::Argument& a) {
  using c10::TypeKind;
  c10::TypePtr t = a.real_type();
  bool optional = false;
  if (auto o = t->cast<c10::OptionalType>()) {
    optional = true;
    t = o->getElementType();
  }
  auto of = [&](metrics::param_kind k) { return std::optional<param_type>(param_type{k, optional}); };
  switch (t->kind()) {
    case TypeKind::BoolType: return of(metrics::param_kind::boolean);
    case TypeKind::IntType:
    case TypeKind::SymIntType: return of(metrics::param_kind::integer);
    case TypeKind::FloatType: return of(metrics::param_kind::floating);
    case TypeKind::NumberType: return of(metrics::param_kind::scalar);
    case TypeKind::ScalarTypeType: return of(metrics::param_kind::dtype);
    case TypeKind::LayoutType: return of(metrics::param_kind::layout);
    case TypeKind::DeviceObjType: return of(metrics::param_kind::device);
    case TypeKind::MemoryFormatType: return of(metrics::param_kind::memory_format);
    case TypeKind::ListType: {
      const auto e = t->castRaw<c10::ListType>()->getElementType()->kind();
      if (e == TypeKind::IntType || e == TypeKind::SymIntType) return of(metrics::param_kind::int_list);
      if (e == TypeKind::FloatType) return of(metrics::param_kind::float_list);
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

[[nodiscard]] TFG_TORCH_DECL bool is_tensor_argument(const c10::Argument& a) {
  c10::TypePtr t = a.type();
  if (auto o = t->cast<c10::OptionalType>()) t = o->getElementType();
  if (auto l = t->cast<c10::ListType>()) {
    t = l->getElementType();
    if (auto o = t->cast<c10::OptionalType>()) t = o->getElementType();
  }
  return t->kind() == c10::TypeKind::TensorType;
}

[[nodiscard]] TFG_TORCH_DECL bool counted_overload(const c10::FunctionSchema& s) {
  std::string ov = s.overload_name();
  std::transform(ov.begin(), ov.end(), ov.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ov.find("dimname") != std::string::npos || ov.find("names") != std::string::npos ||
      ov.find("named") != std::string::npos)
    return false;
  bool tensor = false;
  for (const auto& a : s.arguments()) {
    if (a.is_out()) return false;
    tensor |= is_tensor_argument(a);
  }
  for (const auto& r : s.returns()) tensor |= is_tensor_argument(r);
  return tensor;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<std::string> registered_aten_ops() {
  std::set<std::string> names;
  for (const auto& op : ::torch::jit::getAllOperators()) {
    const auto& n = op->schema().name();
    if (n.rfind("aten::", 0) == 0) names.insert(n);
  }
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames())
    if (n.name.rfind("aten::", 0) == 0) names.insert(n.name);
  return {names.begin(), names.end()};
}

[[nodiscard]] TFG_TORCH_DECL metrics::test_space metrics_space(std::span<const std::string> universe_ops) {
  metrics::test_space space;
  for (const auto& name : universe_ops) {
    metrics::op_space o;
    o.name = name;
    for (const auto& op : ::torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(name))) {
      const auto& s = op->schema();
      if (!counted_overload(s)) continue;
      bool takes_tensor = false;
      for (const auto& a : s.arguments()) {
        if (is_tensor_argument(a)) {
          o.inputs.push_back(a.name());
          takes_tensor = true;
        } else if (auto p = param_type_of(a)) {
          o.params.push_back({a.name(), p->kind, p->optional});
        }
      }
      if (takes_tensor) o.overloads.push_back(s.overload_name());
      for (const auto& r : s.returns()) o.produces_tensor |= is_tensor_argument(r);
    }
    space.ops.push_back(std::move(o));
  }
  space.apis = registered_aten_ops();
  space.finalize();
  return space;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<std::string> universe_from_requirements(const std::filesystem::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return {};
  static const std::regex decl(R"(\brequirement\s+([A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*)\s*\()");
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".tfg") continue;
    std::ifstream in(it->path(), std::ios::binary);
    std::string text, line;
    while (std::getline(in, line)) {
      if (auto c = line.find("//"); c != std::string::npos) line.resize(c);  // also drops `///`
      text += line;
      text += '\n';
    }
    for (std::sregex_iterator m(text.begin(), text.end(), decl), end; m != end; ++m) names.insert((*m)[1].str());
  }
  return {names.begin(), names.end()};
}

}  // namespace tfg::torch

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL std::optional<graph::node_id> producing_operator(const graph_type& g, graph::edge_id e) {
  for (int step = 0; step < 8; ++step) {
    const auto p = g.producer(e);
    if (p == graph::no_node) return std::nullopt;
    const auto& d = g.data(p);
    if (is_operator(d)) return p;
    if (d.kind == c10::prim::Constant) return std::nullopt;
    const auto ins = g.inputs(p);
    auto it = std::find_if(ins.begin(), ins.end(),
                           [&](graph::edge_id x) { return g.data(x).kind == state::value_kind::tensor; });
    if (it == ins.end()) return std::nullopt;
    e = *it;
  }
  return std::nullopt;
}

[[nodiscard]] TFG_TORCH_DECL std::optional<std::uint32_t> bin_of(const c10::IValue& v, const param_type& t) {
  using metrics::param_kind;
  if (v.isNone()) return t.optional ? std::optional<std::uint32_t>(metrics::base_bins(t.kind)) : std::nullopt;
  switch (t.kind) {
    case param_kind::boolean:
      if (v.isBool()) return metrics::bin_bool(v.toBool());
      break;
    case param_kind::integer:
      if (v.isInt()) return metrics::bin_int(v.toInt());
      break;
    case param_kind::floating:
    case param_kind::scalar:
      if (v.isDouble()) return metrics::bin_float(v.toDouble());
      if (v.isInt()) return metrics::bin_float(static_cast<double>(v.toInt()));
      if (v.isBool()) return metrics::bin_float(v.toBool() ? 1.0 : 0.0);
      break;
    case param_kind::int_list:
      if (v.isIntList()) {
        const auto xs = v.toIntVector();
        return metrics::bin_int_list(xs);
      }
      if (v.isInt()) {  // an int[1] given as one int
        const std::int64_t x = v.toInt();
        return metrics::bin_int_list(std::span<const std::int64_t>(&x, 1));
      }
      break;
    case param_kind::float_list:
      if (v.isDoubleList()) return metrics::bin_float_list(v.toDoubleVector().size());
      break;
    case param_kind::dtype:
      if (v.isInt()) return metrics::bin_dtype(to_state(static_cast<c10::ScalarType>(v.toInt())));
      break;
    case param_kind::layout:
      if (v.isInt()) {
        const auto l = static_cast<c10::Layout>(v.toInt());
        return l == c10::kStrided ? 0u : l == c10::kMkldnn ? 2u : 1u;
      }
      break;
    case param_kind::device:
      if (v.isDevice()) return v.toDevice().is_cpu() ? 0u : v.toDevice().is_cuda() ? 1u : 2u;
      break;
    case param_kind::memory_format:
      if (v.isInt() && v.toInt() >= 0 && v.toInt() < 4) return static_cast<std::uint32_t>(v.toInt());
      break;
  }
  return std::nullopt;
}

[[nodiscard]] TFG_TORCH_DECL std::optional<std::uint32_t> bin_of(const state::tensor_state& s, const param_type& t) {
  using state::value_kind;
  if (s.kind != value_kind::integer && s.kind != value_kind::floating && s.kind != value_kind::boolean)
    return std::nullopt;
  switch (t.kind) {
    case metrics::param_kind::boolean: return metrics::bin_bool(s.scalar != 0);
    case metrics::param_kind::integer: return metrics::bin_int(static_cast<std::int64_t>(s.scalar));
    case metrics::param_kind::floating:
    case metrics::param_kind::scalar: return metrics::bin_float(s.scalar);
    case metrics::param_kind::dtype:
      return metrics::bin_dtype(to_state(static_cast<c10::ScalarType>(static_cast<std::int64_t>(s.scalar))));
    default: return std::nullopt;
  }
}

}  // namespace tfg::torch::detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL metrics::observation observe(const model& m, const profile& p) {
  metrics::observation obs;
  const auto& g = m.graph;
  auto runs_of = [&](graph::edge_id e) -> const std::vector<state::tensor_state>& {
    static const std::vector<state::tensor_state> none;
    const auto i = graph::index(e);
    return i < p.edges.size() ? p.edges[i].runs : none;
  };
  std::set<std::string> apis;
  for (const auto n : g.nodes()) {
    const auto& d = g.data(n);
    if (!detail::is_operator(d)) continue;
    const auto outs = g.outputs(n);
    if (!outs.empty() && std::none_of(outs.begin(), outs.end(), [&](graph::edge_id e) { return !runs_of(e).empty(); }))
      continue;  // not executed
    const std::string name = d.name();
    apis.insert(name);
    const auto ins = g.inputs(n);
    const auto* schema = schema_of(g, n);
    const std::string overload = schema ? schema->overload_name() : std::string("?");

    // Pairs and signatures: every tensor input edge.
    for (const auto e : ins) {
      const auto prod = detail::producing_operator(g, e);
      if (!prod) continue;
      const std::string pname = g.data(*prod).name();
      bool tensor = false;
      for (const auto& s : runs_of(e)) {
        if (s.kind != state::value_kind::tensor) continue;
        tensor = true;
        obs.signatures.push_back({pname, name, overload, metrics::signature_hash(pname, name, overload, s)});
      }
      if (tensor) obs.pairs.push_back({pname, name});
    }
    if (!schema) continue;

    // Input classes and parameter bins, by schema argument.
    const auto& formal = schema->arguments();
    for (std::size_t i = 0; i < d.args.size() && i < formal.size(); ++i) {
      const auto& a = d.args[i];
      const auto& f = formal[i];
      if (is_tensor_argument(f)) {
        auto take = [&](std::uint32_t input) {
          if (input >= ins.size()) return;
          for (const auto& s : runs_of(ins[input]))
            if (auto c = metrics::input_class(s)) obs.inputs.push_back({name, f.name(), *c});
        };
        if (a.how == argument::form::edge) take(a.input);
        else if (a.how == argument::form::list)
          for (const auto& it : a.items)
            if (it.is_edge) take(it.input);
        continue;
      }
      const auto t = param_type_of(f);
      if (!t) continue;
      const std::string key = metrics::param_key(f.name(), t->kind, t->optional);
      switch (a.how) {
        case argument::form::constant:
          if (auto b = detail::bin_of(a.constant, *t)) obs.params.push_back({name, key, *b});
          break;
        case argument::form::edge:
          if (a.input < ins.size())
            for (const auto& s : runs_of(ins[a.input]))
              if (auto b = detail::bin_of(s, *t)) obs.params.push_back({name, key, *b});
          break;
        case argument::form::list: {
          if (t->kind == metrics::param_kind::float_list) {
            obs.params.push_back({name, key, metrics::bin_float_list(a.items.size())});
            break;
          }
          if (t->kind != metrics::param_kind::int_list) break;
          // Runs differ only in the items computed at run time.
          std::size_t runs = 1;
          for (const auto& it : a.items)
            if (it.is_edge && it.input < ins.size()) runs = std::max(runs, runs_of(ins[it.input]).size());
          for (std::size_t r = 0; r < runs; ++r) {
            std::vector<std::int64_t> xs;
            bool ok = true;
            for (const auto& it : a.items) {
              if (!it.is_edge) {
                ok = ok && it.constant.isInt();
                if (ok) xs.push_back(it.constant.toInt());
                continue;
              }
              const auto& rs = it.input < ins.size() ? runs_of(ins[it.input]) : runs_of(graph::no_edge);
              ok = ok && r < rs.size() && rs[r].kind == state::value_kind::integer;
              if (ok) xs.push_back(static_cast<std::int64_t>(rs[r].scalar));
            }
            if (ok) obs.params.push_back({name, key, metrics::bin_int_list(xs)});
          }
          break;
        }
        case argument::form::tuple: break;
      }
    }
  }
  obs.apis.assign(apis.begin(), apis.end());
  return obs;
}

}  // namespace tfg::torch
