#pragma once
/// Operator schemas of a model's nodes, and the DSL's words for the codes TorchScript passes
/// as ints (ScalarType, MemoryFormat, Layout): what the match adapter shows the core instead of
/// c10 numbers.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/model.hpp"

#include <torch/csrc/jit/runtime/operator.h>

#include <optional>
#include <string>

namespace tfg::torch {

/// True when the TorchScript value `a` of node `n` can bind to schema argument `f`.
[[nodiscard]] TFG_TORCH_DECL bool arg_fits(const graph_type& g, graph::node_id n, const argument& a,
                                           const c10::Argument& f);

/// The schema node `n` was called through: the first registered overload of its kind whose
/// arguments accept the node's arguments (falling back to the first with as many arguments);
/// nullptr when none has as many (or the kind has no schema, e.g. prim nodes).
[[nodiscard]] TFG_TORCH_DECL const c10::FunctionSchema* schema_of(const graph_type& g, graph::node_id n);

/// The kind of a schema argument's real type, looking through Optional.
[[nodiscard]] TFG_TORCH_DECL c10::TypeKind real_kind(const c10::Argument& a);

/// The DSL word of an int constant passed for a ScalarType, MemoryFormat or Layout argument
/// ("f32", "channels_last_format", "strided"); nullopt for other arguments or unknown codes.
[[nodiscard]] TFG_TORCH_DECL std::optional<std::string> word_of_code(c10::TypeKind kind, std::int64_t code);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/schema.ipp"
#endif
