#pragma once
/// The LibTorch side of the diversity metrics (tfg/metrics/metrics.hpp): the test space built
/// from the registered operator schemas, the API-coverage denominator, the operator universe
/// U, and the observation of one profiled test case. docs/metrics.md defines what is counted.
///
///     auto universe = tfg::torch::universe_from_requirements("operators/requirements");
///     tfg::metrics::tracker t(tfg::torch::metrics_space(universe));
///     t.observe(tfg::torch::observe(mutant, profiler.run(mutant, inputs)));  // legal mutants only
#include "tfg/torch/linkage.hpp"
#include "tfg/metrics/metrics.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/torch/import/schema.hpp"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

// ---- schema classification ----------------------------------------------------------------------

/// The type of a schema argument as a metrics parameter slot, or nullopt when it is not one:
/// tensors (inputs, not parameters) and str, Generator, Dimname, bool[], Scalar[], ... (no
/// fixed bins). Looks through Optional (then `optional` is set).
struct param_type {
  metrics::param_kind kind;
  bool optional = false;
};

[[nodiscard]] TFG_TORCH_DECL std::optional<param_type> param_type_of(const c10::Argument& a);

/// True for Tensor, Tensor?, Tensor[] and Tensor?[] arguments: tensor input slots.
[[nodiscard]] TFG_TORCH_DECL bool is_tensor_argument(const c10::Argument& a);

/// Overloads that enter the test space: not an `out=` variant, not a named-tensor overload
/// (overload name mentions dimname / names / named: TorchScript cannot call those), and taking
/// or returning a tensor (this drops `aten::add.int`, `aten::add.str` and the like).
[[nodiscard]] TFG_TORCH_DECL bool counted_overload(const c10::FunctionSchema& s);

// ---- denominators -------------------------------------------------------------------------------

/// Distinct `aten::` operator names (overloads folded) registered in this LibTorch build, in
/// the dispatcher and in the TorchScript operator registry (which adds JIT-only ops such as
/// `aten::size`, `aten::Int`, list ops): the API-coverage denominator. Sorted.
[[nodiscard]] TFG_TORCH_DECL std::vector<std::string> registered_aten_ops();

/// The test space over universe `universe_ops` (qualified names; unknown names stay in U with
/// no slots). Per operator, over its counted overloads: tensor arguments are input slots (by
/// argument name), other arguments with a param_type are parameter slots (by name and type),
/// overload names are the DFSD paths of those that take a tensor, and the operator produces a
/// tensor when some counted overload returns one. `apis` is registered_aten_ops().
[[nodiscard]] TFG_TORCH_DECL metrics::test_space metrics_space(std::span<const std::string> universe_ops);

/// U from the requirement declarations under `dir` (recursively, `*.tfg`): every operator named
/// by `requirement <ns>::<name>(` outside `//` comments. A textual scan, so it needs no DSL
/// parser; load_pool's requirement table gives the same names (see the overload below).
/// Sorted, distinct; empty when `dir` does not exist.
[[nodiscard]] TFG_TORCH_DECL std::vector<std::string> universe_from_requirements(const std::filesystem::path& dir);

/// U from a loaded pool: the operators its requirement table declares (`pool.requirements`
/// with the `symbol_table` it was compiled with). Generic so this header need not include the
/// DSL compiler. Sorted, distinct.
template <class RequirementTable, class SymbolTable>
[[nodiscard]] std::vector<std::string> universe_from_requirements(const RequirementTable& table,
                                                                  const SymbolTable& symbols) {
  std::set<std::string> names;
  for (const auto& [id, alternatives] : table.by_op) names.emplace(symbols.name(id));
  return {names.begin(), names.end()};
}

// ---- observation --------------------------------------------------------------------------------

namespace detail {

/// A node kind that is an operator for the metrics: anything outside the `prim::` namespace
/// (constants, list/tuple plumbing, attribute access are structure, not operators).
[[nodiscard]] inline bool is_operator(const node_data& d) { return !d.kind.is_prim(); }

/// The operator that produced the tensor on `e`, looking through non-constant prim nodes (to
/// their first tensor input) up to a few steps; nullopt for graph inputs and constants.
[[nodiscard]] TFG_TORCH_DECL std::optional<graph::node_id> producing_operator(const graph_type& g, graph::edge_id e);

/// The bin of constant `v` for a parameter of type `t`, or nullopt when it has none.
[[nodiscard]] TFG_TORCH_DECL std::optional<std::uint32_t> bin_of(const c10::IValue& v, const param_type& t);

/// The bin of a scalar computed at run time (a `state::tensor_state` of an int/float/bool edge).
[[nodiscard]] TFG_TORCH_DECL std::optional<std::uint32_t> bin_of(const state::tensor_state& s, const param_type& t);

}  // namespace detail

/// What one profiled test case exercised, for every executed operator node (a non-prim node
/// whose outputs were recorded in `p`, or that has no outputs), over every profiling run:
///  * inputs: the input class of each tensor argument (list items included), by schema name;
///  * params: the bin of each parameter argument (constants, and int/float/bool values or int
///    lists computed at run time), by param_slot::key;
///  * pairs: (producer kind, consumer kind) for each tensor input whose producer is an operator
///    (looking through non-constant prim nodes; graph inputs and constants have none);
///  * signatures: metrics::signature_hash(producer, consumer, overload, F(e)) for those inputs;
///  * apis: the kind of every executed operator node.
/// Nodes whose schema cannot be resolved contribute pairs, signatures (overload "?") and apis.
/// O(sum over nodes of arguments x runs).
[[nodiscard]] TFG_TORCH_DECL metrics::observation observe(const model& m, const profile& p);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/observe.ipp"
#endif
