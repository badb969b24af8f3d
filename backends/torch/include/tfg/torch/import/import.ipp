#pragma once
// The definitions of import.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/import.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::string forward_method(const ::torch::jit::Module& module, const std::string& source) {
  if (module.find_method("forward")) return "forward";
  std::string overloads, tensor_one;
  int tensor_ones = 0;
  for (const auto& m : module.get_methods()) {
    if (m.name().rfind("forward__", 0) != 0) continue;
    overloads += (overloads.empty() ? "" : ", ") + m.name();
    const auto& args = m.function().getSchema().arguments();
    if (args.size() >= 2 && args[1].type()->kind() == c10::TypeKind::TensorType) {
      tensor_one = m.name();
      ++tensor_ones;
    }
  }
  if (tensor_ones == 1) return tensor_one;
  if (!overloads.empty())
    throw model_error(source + ": the scripted module has no single forward but the overloads " + overloads +
                      ", none of them (or more than one) taking a tensor first; trace it with torch.jit.trace, or "
                      "script a wrapper module whose forward calls it with tensors");
  throw model_error(source + ": the module has no forward method");
}

[[nodiscard]] TFG_TORCH_DECL std::shared_ptr<::torch::jit::Graph> frozen_forward_graph(::torch::jit::Module module,
                                                                                       c10::IValue* self_object,
                                                                                       const std::string& method) {
  module.eval();
  {
    auto graph = module.get_method(method).graph()->copy();
    ::torch::jit::Inline(*graph);
    bool reads_attributes = false;
    for (const auto* n : graph->nodes())
      if (n->kind() == c10::prim::GetAttr || n->kind() == c10::prim::SetAttr || n->kind() == c10::prim::CallMethod) {
        reads_attributes = true;
        break;
      }
    if (!reads_attributes && (graph->inputs().empty() || !graph->inputs()[0]->hasUses())) {
      if (self_object) *self_object = module._ivalue();
      return graph;
    }
  }
  // Freezing keeps `forward` only, unless told which other methods to keep.
  auto frozen = method == "forward" ? ::torch::jit::freeze_module(module)
                                    : ::torch::jit::freeze_module(module, std::vector<std::string>{method});
  if (self_object) *self_object = frozen._ivalue();
  auto graph = frozen.get_method(method).graph()->copy();
  ::torch::jit::Inline(*graph);
  return graph;
}

[[nodiscard]] TFG_TORCH_DECL ::torch::jit::Module load_module(const std::string& path) {
  try {
    auto module = ::torch::jit::load(path);
    // LibTorch loads a truncated tensor record without complaint and reads beyond it.
    if (const auto bad = check_storage_records(path); !bad.empty())
      throw model_error(path + ": " + bad + ": the archive is truncated or corrupt");
    return module;
  } catch (const model_error&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = first_line(e.what());
    // A zip archive without TorchScript's constants: what torch.save writes for a tensor, a
    // state dict or a pickled nn.Module.
    if (what.find("constants.pkl") != std::string::npos)
      throw model_error(path +
                        ": not a TorchScript module: a torch.save'd object (a tensor, a state dict or a "
                        "pickled nn.Module?); save a scripted or traced module with torch.jit.save");
    // An operator of an extension library (torchvision::nms, a custom op): LibTorch registers
    // it only when that library is loaded, and flowmut loads none.
    if (what.rfind("Unknown builtin op: ", 0) == 0 && what.find("aten::") == std::string::npos &&
        what.find("prim::") == std::string::npos)
      what += " (an operator of an extension library, which this LibTorch process has not loaded)";
    throw model_error(path + ": cannot load TorchScript module: " + what);
  }
}

[[nodiscard]] TFG_TORCH_DECL bool storage_holds(const at::Tensor& t, std::size_t& needed, std::size_t& held) {
  if (!t.defined() || t.layout() != c10::kStrided || !t.has_storage() || t.numel() == 0) return true;
  needed = at::detail::computeStorageNbytes(t.sizes(), t.strides(), t.dtype().itemsize(),
                                            static_cast<std::size_t>(t.storage_offset()));
  held = t.storage().nbytes();
  return needed <= held;
}

TFG_TORCH_DECL void validate_storages(const ::torch::jit::Graph& graph, const std::string& path) {
  std::size_t needed = 0, held = 0, index = 0;
  for (const auto* n : graph.nodes()) {
    ++index;
    if (n->kind() != c10::prim::Constant || n->outputs().size() != 1) continue;
    const auto v = ::torch::jit::toIValue(n->output());
    if (v && v->isTensor() && !storage_holds(v->toTensor(), needed, held))
      throw model_error(path + ": the tensor constant %" + n->output()->debugName() + " (node " +
                        std::to_string(index) + ") reads " + std::to_string(needed) + " bytes, its storage holds " +
                        std::to_string(held) + ": the archive is truncated or corrupt");
  }
}

}  // namespace tfg::torch
