#pragma once
/// Profiling inputs: read from a `NAME.inputs.pt` file written by `torch.save([(x0,), (x1,)])`,
/// or synthesised from the input types a trace recorded.
#include <tfg/torch/model.hpp>

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tfg::torch {

using input_set = std::vector<std::vector<c10::IValue>>;  ///< one positional-argument list per input

/// Reads a list of profiling inputs; each element is a tuple (or list) of forward arguments, or a
/// single tensor. Throws model_error naming the file.
[[nodiscard]] inline input_set load_inputs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw model_error(path + ": cannot open the inputs file");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue v;
  try {
    v = ::torch::jit::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    throw model_error(path + ": not a torch.save'd list of inputs: " + what);
  }
  if (!v.isList()) throw model_error(path + ": expected a list of inputs, found " + v.tagKind());
  input_set out;
  for (const auto& x : v.toListRef()) {
    if (x.isTuple()) out.emplace_back(x.toTupleRef().elements().begin(), x.toTupleRef().elements().end());
    else if (x.isList()) out.emplace_back(x.toListRef().begin(), x.toListRef().end());
    else out.push_back({x});
  }
  return out;
}

/// The conventional inputs file of a model: `foo.pt` -> `foo.inputs.pt`.
[[nodiscard]] inline std::string inputs_path_for(const std::string& model_path) {
  std::filesystem::path p(model_path);
  return (p.parent_path() / (p.stem().string() + ".inputs.pt")).string();
}

/// Shape and dtype of one synthesised input.
struct input_spec {
  std::vector<std::int64_t> shape;
  c10::ScalarType dtype = c10::kFloat;
};

/// Parses `f32[1,3,64,64]` (the DSL's tensor-type syntax; dtypes f16 bf16 f32 f64 i8 u8 i16
/// i32 i64 bool). Throws model_error quoting the text.
[[nodiscard]] inline input_spec parse_input_spec(const std::string& text) {
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

/// `count` random inputs of the given specs (floating: standard normal; integer: uniform in
/// [0, 8); bool: fair coin), deterministic for `seed`.
[[nodiscard]] inline input_set random_inputs(const std::vector<input_spec>& specs, std::size_t count,
                                             std::uint64_t seed = 0) {
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

/// Random inputs from the complete tensor types recorded on the graph inputs (a trace in
/// memory records them; a saved and reloaded `.pt` does not). Throws model_error naming the
/// input when its shape or dtype is unknown.
[[nodiscard]] inline input_set random_inputs(const model& m, std::size_t count, std::uint64_t seed = 0) {
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
