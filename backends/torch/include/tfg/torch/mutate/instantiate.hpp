#pragma once
/// Building new TFG nodes from operator names and backend-neutral arguments: overload
/// resolution against the registered schemas, conversion of DSL words ("f32", "cpu",
/// "channels_last_format", "none") into the IValues TorchScript expects, trailing defaults.
/// Used when a mutation's replacement template is instantiated and when example graphs of
/// operator files are built.
#include "tfg/torch/linkage.hpp"
#include "tfg/match/adapter.hpp"
#include "tfg/torch/import/model.hpp"

#include <torch/csrc/jit/runtime/operator.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tfg::torch {

/// One argument of a node being built: a value flowing along an edge (its kind decides which
/// overload fits), a constant, or a list of those.
struct proto_arg {
  struct edge_ref {
    std::uint32_t input = 0;  ///< index into the node's inputs
    state::value_kind kind = state::value_kind::tensor;
  };
  std::variant<edge_ref, match::attr_value, std::vector<proto_arg>> v;
};

/// A resolved node: its data (args, results, kernel) and the types of its output edges.
struct built_node {
  node_data data;
  std::vector<edge_data> outputs;
};

namespace detail {

[[nodiscard]] TFG_TORCH_DECL std::optional<std::int64_t> word_code(const std::string& w, c10::TypeKind kind);

/// The kind a schema argument accepts, looking through Optional.
[[nodiscard]] TFG_TORCH_DECL c10::TypePtr unwrap_optional(const c10::TypePtr& t, bool& optional);

/// Converts `a` for schema type `real` (the declared type: ScalarType, MemoryFormat, ...) and
/// `type` (how TorchScript passes it). nullopt when it does not fit.
[[nodiscard]] TFG_TORCH_DECL std::optional<c10::IValue> constant_for(const match::attr_value& a,
                                                                     const c10::TypePtr& type,
                                                                     const c10::TypePtr& real_type);

[[nodiscard]] TFG_TORCH_DECL bool edge_fits(state::value_kind kind, const c10::TypePtr& type);

/// Tries to lay out `args` against `schema`; fills `out` on success.
[[nodiscard]] TFG_TORCH_DECL bool fit(const c10::FunctionSchema& schema, const std::vector<proto_arg>& args,
                                      std::vector<argument>& out);

}  // namespace detail

/// Resolves `op_name` ("aten::clone") for `args` (overloads tried in registration order; the
/// first whose schema accepts every argument wins; omitted trailing arguments take schema
/// defaults). Throws model_error saying which op and why when nothing fits.
[[nodiscard]] TFG_TORCH_DECL built_node build_node(const std::string& op_name, const std::vector<proto_arg>& args);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/mutate/instantiate.ipp"
#endif
