#pragma once
// The definitions of inputs.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/inputs.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL input_set load_inputs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw model_error(path + ": cannot open the inputs file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue v;
  try {
    v = pickle_load_compatible(bytes);
  } catch (const std::exception& e) {
    std::string what = first_line(e.what());
    throw model_error(path + ": not a torch.save'd list of inputs: " + what);
  }
  if (!v.isList()) throw model_error(path + ": expected a list of inputs, found " + v.tagKind());
  input_set out;
  for (const auto& x : v.toListRef()) {
    if (x.isTuple()) out.emplace_back(x.toTupleRef().elements().begin(), x.toTupleRef().elements().end());
    else if (x.isList()) out.emplace_back(x.toListRef().begin(), x.toListRef().end());
    else out.push_back({x});
  }
  if (out.empty()) throw model_error(path + ": the list of inputs is empty (nothing to profile or compare on)");
  return out;
}

[[nodiscard]] TFG_TORCH_DECL c10::IValue conform(const c10::IValue& v, const c10::TypePtr& t) {
  if (!t) return v;
  switch (t->kind()) {
    case c10::TypeKind::DictType:
      if (v.isGenericDict()) {
        const auto dt = t->expect<c10::DictType>();
        c10::impl::GenericDict d(dt->getKeyType(), dt->getValueType());
        for (const auto& e : v.toGenericDict())
          d.insert(conform(e.key(), dt->getKeyType()), conform(e.value(), dt->getValueType()));
        return d;
      }
      break;
    case c10::TypeKind::ListType:
      if (v.isList()) {
        const auto lt = t->expect<c10::ListType>();
        c10::impl::GenericList l(lt->getElementType());
        for (const auto& e : v.toListRef()) l.push_back(conform(e, lt->getElementType()));
        return l;
      }
      break;
    case c10::TypeKind::TupleType:
      if (v.isTuple()) {
        const auto tt = t->expect<c10::TupleType>();
        const auto& el = v.toTupleRef().elements();
        if (el.size() != tt->elements().size()) break;
        std::vector<c10::IValue> out;
        for (std::size_t i = 0; i < el.size(); ++i) out.push_back(conform(el[i], tt->elements()[i]));
        return c10::ivalue::Tuple::create(std::move(out));
      }
      break;
    case c10::TypeKind::OptionalType:
      if (!v.isNone()) return conform(v, t->expect<c10::OptionalType>()->getElementType());
      break;
    case c10::TypeKind::FloatType:
      if (v.isInt()) return static_cast<double>(v.toInt());
      break;
    default: break;
  }
  return v;
}

TFG_TORCH_DECL void conform_inputs(const model& m, input_set& in) {
  const auto& args = m.graph.graph_inputs();
  for (std::size_t k = 0; k < in.size(); ++k) {
    // Trailing arguments left out take forward's defaults (as a Python call would).
    while (in[k].size() < args.size() && in[k].size() < m.input_defaults.size() && m.input_defaults[in[k].size()])
      in[k].push_back(*m.input_defaults[in[k].size()]);
    if (in[k].size() != args.size())
      throw model_error(m.source + ": forward takes " + std::to_string(args.size()) + " argument(s), input " +
                        std::to_string(k + 1) + " gives " + std::to_string(in[k].size()));
    for (std::size_t i = 0; i < args.size(); ++i) {
      in[k][i] = conform(in[k][i], m.graph.data(args[i]).type);
      // A torch.export program has static shapes: an input of other sizes would run (ATen
      // broadcasts and reshapes as told) but not as the program the user exported.
      if (!m.pt2 || !in[k][i].isTensor()) continue;
      const auto tt = m.graph.data(args[i]).type->cast<c10::TensorType>();
      const auto want = tt ? tt->sizes().concrete_sizes() : decltype(tt->sizes().concrete_sizes()){};
      const auto got = in[k][i].toTensor().sizes().vec();
      if (want && *want != got)
        throw model_error(m.source + ": input " + std::to_string(k + 1) + ", argument " + std::to_string(i + 1) +
                          " has shape " + c10::str(c10::IntArrayRef(got)) + "; the program was exported for " +
                          c10::str(c10::IntArrayRef(*want)) +
                          " (torch.export programs have static shapes: give inputs of these shapes, or export "
                          "the model for the shapes you want)");
    }
  }
}

[[nodiscard]] TFG_TORCH_DECL input_set load_inputs(const std::string& path, const model& m) {
  auto in = load_inputs(path);
  conform_inputs(m, in);
  return in;
}

[[nodiscard]] TFG_TORCH_DECL input_spec parse_input_spec(const std::string& text) {
  const auto open = text.find('[');
  if (open == std::string::npos || text.back() != ']')
    throw model_error("input spec `" + text + "`: expected DTYPE[D0,D1,...], e.g. f32[1,3,64,64]");
  input_spec spec;
  const auto dt = text.substr(0, open);
  const auto type = scalar_type_of_word(dt);
  if (!type) throw model_error("input spec `" + text + "`: unknown dtype `" + dt + "`");
  spec.dtype = *type;
  std::string dims = text.substr(open + 1, text.size() - open - 2);
  for (std::size_t pos = 0; !dims.empty() && pos <= dims.size();) {
    auto comma = dims.find(',', pos);
    if (comma == std::string::npos) comma = dims.size();
    const auto d = dims.substr(pos, comma - pos);
    if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos)
      throw model_error("input spec `" + text + "`: `" + d + "` is not a dimension");
    spec.shape.push_back(std::stoll(d));
    pos = comma + 1;
  }
  return spec;
}

[[nodiscard]] TFG_TORCH_DECL input_set random_inputs(const std::vector<input_spec>& specs, std::size_t count,
                                                     std::uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  input_set out(count);
  for (const auto& spec : specs)
    for (std::size_t k = 0; k < count; ++k) {
      auto opts = at::TensorOptions().dtype(spec.dtype);
      at::Tensor t;
      if (at::isFloatingType(spec.dtype)) t = at::randn(spec.shape, gen, opts);
      else if (spec.dtype == c10::kBool) t = at::randint(0, 2, spec.shape, gen, opts);
      else t = at::randint(0, 8, spec.shape, gen, opts);
      out[k].push_back(t);
    }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL input_set random_inputs(const model& m, std::size_t count, std::uint64_t seed) {
  std::vector<input_spec> specs;
  for (auto e : m.graph.graph_inputs()) {
    const auto& d = m.graph.data(e);
    auto tt = d.type->cast<c10::TensorType>();
    auto sizes = tt ? tt->sizes().concrete_sizes() : decltype(tt->sizes().concrete_sizes()){};
    if (!tt || !sizes || !tt->scalarType())
      throw model_error(m.source + ": input %" + d.name +
                        " has no recorded shape and dtype; pass an inputs file or input shapes (e.g. f32[1,3,64,64])");
    specs.push_back({*sizes, *tt->scalarType()});
  }
  return random_inputs(specs, count, seed);
}

}  // namespace tfg::torch
