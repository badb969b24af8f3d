#pragma once
/// Control flow of a scripted model specialised on its profiling inputs (docs/design-deltas.md,
/// "Import"): TFG graphs are straight-line, as a torch.export program is after export took the
/// branches of its example inputs. `specialise_control_flow` does the same to a TorchScript
/// forward graph (frozen and inlined):
///
///  - every `prim::If` takes the branch its condition selects on the profiling inputs: the
///    condition is computed by running the graph up to it (TorchScript's interpreter) on each
///    input, and the branch's nodes replace the `prim::If`;
///  - every `prim::Loop` that is a for-loop (its continue condition constant true) gets the trip
///    count the inputs give it and is unrolled: one copy of the body per iteration, the
///    iteration number a constant in each;
///  - rounds repeat until no block is left (branches and loop bodies bring their own);
///  - then lists built by `append` become list values (lists_as_values), attributes freezing
///    kept become constants (fold_attributes, first), `aten::warn` goes.
///
/// Refused with the node, its source line and the reason: inputs that disagree (one takes the
/// true branch, another the false; loops of different trip counts), a while-loop (its condition
/// is computed in the body), more than `max_unrolled` iterations. The result is valid for inputs
/// that take the same paths: that is what a campaign's mutants are judged on.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/model.hpp"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace tfg::torch {

namespace detail {

/// `file:line` of a TorchScript node's source ("" when it has none).
[[nodiscard]] TFG_TORCH_DECL std::string where_of(const ::torch::jit::Node* n);

[[nodiscard]] TFG_TORCH_DECL std::string scope_of(const ::torch::jit::Node* n);

/// "node `kind` at file:line in scope": how a message names a TorchScript node.
[[nodiscard]] TFG_TORCH_DECL std::string describe_node(const ::torch::jit::Node* n);

}  // namespace detail

namespace specialise_detail {

namespace jit = ::torch::jit;

[[nodiscard]] TFG_TORCH_DECL std::string text_of(const c10::IValue& v);

/// The values `vals` (top-level values of `g`) take on each input: `g` with those values as its
/// outputs, dead code removed, run by TorchScript's interpreter.
[[nodiscard]] TFG_TORCH_DECL std::vector<std::vector<c10::IValue>> evaluate(const std::shared_ptr<jit::Graph>& g,
                                                                            const std::vector<jit::Value*>& vals,
                                                                            const input_set& inputs);

/// Copies the nodes of block `b` before the insertion point of `g`, reading `map`'s value for
/// any value it has (the block's inputs, values of earlier copies); returns the copies of the
/// block's outputs. `map` gains the copies of the block's values.
TFG_TORCH_DECL std::vector<jit::Value*> clone_block(jit::Graph& g, jit::Block* b,
                                                    std::unordered_map<jit::Value*, jit::Value*>& map);

/// Replaces `n` (a prim::If) by the nodes of its block `b`.
TFG_TORCH_DECL void inline_block(jit::Graph& g, jit::Node* n, jit::Block* b);

/// Replaces `n` (a for-loop prim::Loop) by `count` copies of its body, the iteration number
/// a constant in each, the carried values threaded through.
TFG_TORCH_DECL void unroll(jit::Graph& g, jit::Node* n, std::int64_t count);

[[nodiscard]] inline bool is_true_constant(jit::Value* v) {
  const auto c = jit::toIValue(v);
  return c && c->isBool() && c->toBool();
}

/// Attributes the forward still reads after freezing (freezing keeps an attribute that flows
/// into a container or a branch it cannot prove read-only, such as MultiheadAttention's
/// `in_proj_weight` in its fast-path checks): each `prim::GetAttr` chain from `self` (the
/// module object `self_object`) that ends in a value a constant can hold becomes that constant.
TFG_TORCH_DECL void fold_attributes(jit::Graph& g, const c10::IValue& self_object);

/// Python lists built by `append` (`features = [x]; for layer in ...: features.append(layer(
/// features))`, DenseNet's and DeepLab's forward), once the loops are unrolled: each read of the
/// list reads a `prim::ListConstruct` of the elements appended so far, and the appends go. Only
/// for a list whose every use is an `append` (its result unused) or a read that does not write
/// it (by the reader's schema); others are left as they are.
TFG_TORCH_DECL void lists_as_values(jit::Graph& g);

}  // namespace specialise_detail

/// The profiling inputs a scripted forward's control flow is specialised on, read only when
/// the forward has some: `inputs_path`, or MODEL.inputs.pt beside `model_path` when that is
/// empty and the file exists (no provider otherwise).
[[nodiscard]] TFG_TORCH_DECL std::function<input_set()> profile_inputs(const std::string& model_path,
                                                                       const std::string& inputs_path);

/// Whether `g` has a node with blocks (`prim::If`, `prim::Loop`) at its top level.
[[nodiscard]] TFG_TORCH_DECL bool has_control_flow(const ::torch::jit::Graph& g);

/// Specialises `g` (a frozen, inlined forward graph; modified in place) on `inputs` (see the
/// file comment). Throws model_error naming `source`, the node and the reason.
TFG_TORCH_DECL void specialise_control_flow(std::shared_ptr<::torch::jit::Graph> g, const input_set& inputs,
                                            const std::string& source, const c10::IValue& self_object = {},
                                            std::int64_t max_unrolled = 4096);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/specialise.ipp"
#endif
