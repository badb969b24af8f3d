#pragma once
/// Profiling inputs: read from a `NAME.inputs.pt` file written by `torch.save([(x0,), (x1,)])`,
/// or synthesised from the input types a trace recorded.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/pickle_compat.hpp"

#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/script.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace tfg::torch {

using input_set = std::vector<std::vector<c10::IValue>>;  ///< one positional-argument list per input

/// Reads a list of profiling inputs; each element is a tuple (or list) of forward arguments, or a
/// single value (a tensor, a dict, an int, ...). One-element lists and dicts, which LibTorch
/// 1.13's unpickler cannot read, are read through pickle_compat.hpp. Throws model_error naming
/// the file (also for an empty list).
[[nodiscard]] TFG_TORCH_DECL input_set load_inputs(const std::string& path);

/// `v` retyped as forward declares it: Python's pickles carry untyped dicts and lists
/// (Dict[Any, Any]), which TorchScript refuses for a Dict[str, Tensor] argument; their
/// elements are retyped recursively, tuples element by element, a Python int given for a
/// float becomes a float. Anything else is returned as it is (the executor reports a mismatch).
[[nodiscard]] TFG_TORCH_DECL c10::IValue conform(const c10::IValue& v, const c10::TypePtr& t);

/// Every input of `in` retyped to the types `m`'s forward declares (conform()); a wrong number
/// of arguments is a model_error naming the model.
TFG_TORCH_DECL void conform_inputs(const model& m, input_set& in);

/// load_inputs(path), retyped for `m` (conform_inputs).
[[nodiscard]] TFG_TORCH_DECL input_set load_inputs(const std::string& path, const model& m);

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
[[nodiscard]] TFG_TORCH_DECL input_spec parse_input_spec(const std::string& text);

/// `count` random inputs of the given specs (floating: standard normal; integer: uniform in
/// [0, 8); bool: fair coin), deterministic for `seed`.
[[nodiscard]] TFG_TORCH_DECL input_set random_inputs(const std::vector<input_spec>& specs, std::size_t count,
                                                     std::uint64_t seed = 0);

/// Random inputs from the complete tensor types recorded on the graph inputs (a trace in
/// memory records them; a saved and reloaded `.pt` does not). Throws model_error naming the
/// input when its shape or dtype is unknown.
[[nodiscard]] TFG_TORCH_DECL input_set random_inputs(const model& m, std::size_t count, std::uint64_t seed = 0);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/inputs.ipp"
#endif
