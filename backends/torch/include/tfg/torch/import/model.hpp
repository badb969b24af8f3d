#pragma once
/// The LibTorch instantiation of the Tensor Flow Graph: what a node and an edge carry.
///
/// A node is one operator call. Its schema arguments are described by `argument`s: an edge
/// (a value computed at run time), a constant (non-tensor constants such as strides, dims,
/// dtypes become node attributes), or a list/tuple assembled from edges and constants (the
/// importer folds `prim::ListConstruct` / `prim::TupleConstruct` into the consumer). Results
/// that the graph unpacked right away (`aten::chunk` followed by `prim::ListUnpack`) become
/// several output edges of the producing node.
#include "tfg/torch/linkage.hpp"
#include "tfg/graph/flow_graph.hpp"
#include "tfg/state/tensor_state.hpp"
#include "tfg/torch/compat.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

namespace tfg::torch {

/// An import, execution or export failure; the message names the file and the node.
class model_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The first non-blank line of a framework error message (LibTorch's TorchScript errors often
/// begin with a newline), without surrounding blanks; "no message from LibTorch" when there is
/// none, so that no error a user sees ends in an empty reason.
[[nodiscard]] TFG_TORCH_DECL std::string first_line(std::string_view what);

/// A framework error message without the c10 backtrace ("\nException raised from ...") and
/// trailing blank lines.
[[nodiscard]] TFG_TORCH_DECL std::string clean_error(std::string what);

struct list_item {
  bool is_edge = false;
  std::uint32_t input = 0;  ///< index into the node's inputs when is_edge
  c10::IValue constant;     ///< the value otherwise
};

struct argument {
  enum class form : std::uint8_t { edge, constant, list, tuple };
  form how = form::constant;
  std::uint32_t input = 0;  ///< form::edge: index into the node's inputs
  c10::IValue constant;     ///< form::constant
  c10::TypePtr type;        ///< form::list / form::tuple: the aggregate's type
  std::vector<list_item> items;
};

struct result_slot {
  /// value: the schema result is one output edge; list / tuple: the result was unpacked at once
  /// and its `count` elements are output edges first_output .. first_output + count - 1.
  enum class form : std::uint8_t { value, list, tuple };
  form how = form::value;
  std::uint32_t first_output = 0;
  std::uint32_t count = 1;
  c10::TypePtr type;
};

struct node_data {
  c10::Symbol kind;
  std::vector<argument> args;
  std::vector<result_slot> results;
  c10::IValue constant;  ///< payload of a tensor `prim::Constant`
  std::string where;     ///< source location of the TorchScript node, for messages
  std::string scope;     ///< module scope (e.g. `__module.layer1.0.conv1`)
  mutable compat::operation
      op;  ///< resolved kernel (mutable: calling a 1.13 Operation is non-const); empty for natively executed prim nodes

  [[nodiscard]] std::string name() const { return kind.toQualString(); }
};

struct edge_data {
  c10::TypePtr type;
  state::value_kind kind = state::value_kind::other;
  std::string name;  ///< debug name from TorchScript (`%input.3`), may be empty
};

using graph_type = graph::flow_graph<node_data, edge_data>;

/// How the graph's outputs assemble into the value `forward` returns.
struct output_tree {
  enum class form : std::uint8_t { edge, list, tuple, constant };
  form how = form::edge;
  graph::edge_id edge{};
  c10::TypePtr type;
  c10::IValue constant;
  std::vector<output_tree> items;
};

struct pt2_program;  // pt2.hpp: the torch.export program a model was imported from

/// A model as the framework sees it: the TFG plus what is needed to run and rebuild it.
struct model {
  graph_type graph;
  output_tree output;
  std::string source;  ///< file it came from (or a description)
  std::vector<std::string> input_names;
  /// The defaults of forward's trailing arguments (a scripted `forward(src, mask=None)`), by
  /// input position (None-typed IValue() where there is none): inputs that leave them out get them.
  std::vector<std::optional<c10::IValue>> input_defaults;
  /// The exported program (`.pt2`) the model was read from, if it was: its weights' names and
  /// the program's metadata, for writing the model or a mutant back as a `.pt2`. Shared by
  /// mutants (a copy of the model copies the pointer).
  std::shared_ptr<const pt2_program> pt2;
};

[[nodiscard]] TFG_TORCH_DECL state::value_kind kind_of(const c10::TypePtr& t);

/// The ScalarType a DSL dtype word names (`f32`, `i64`, `bool`, ...; dsl/spec.md), if any.
[[nodiscard]] TFG_TORCH_DECL std::optional<c10::ScalarType> scalar_type_of_word(std::string_view w);

/// Re-points the output tree's leaves at the graph's outputs (in order: the importer registers
/// one graph output per edge leaf, depth first), after a rewrite moved a graph output.
TFG_TORCH_DECL void sync_outputs(model& m);

/// One line naming a node for error messages: `node 12 (aten::view) at model.py:14`.
[[nodiscard]] TFG_TORCH_DECL std::string describe(const graph_type& g, graph::node_id n);

}  // namespace tfg::torch

// With TFG_TORCH_SEPARATE, the backend's graph type is instantiated once, in tfg::torch_compiled.
#if defined(TFG_TORCH_SEPARATE)
extern template class tfg::graph::flow_graph<tfg::torch::node_data, tfg::torch::edge_data>;
extern template class tfg::graph::rewrite_transaction<tfg::torch::graph_type>;
#endif

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/model.ipp"
#endif
