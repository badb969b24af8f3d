#pragma once
/// Windows of an operator: the operator and its producers up to some depth, as a model of its
/// own whose graph inputs are the values that flow into it from outside (reduction of findings,
/// reduce.hpp; the operator-local accuracy check of localisation, localise.hpp).
///
///  - `locate_culprit(m, position, op)`: the node a finding's localisation names.
///  - `window_of(m, culprit, depth)`: the nodes of the window (constants feeding it included).
///  - `window_model(m, window, culprit)`: the window as a model; `boundary` lists, per new
///    graph input, the original edge it stands for.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/model.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

/// The node at `position` of `m`'s execution order when its kind is `op`; else the node of kind
/// `op` nearest to that position; nullopt when `m` has none.
[[nodiscard]] TFG_TORCH_DECL std::optional<graph::node_id> locate_culprit(const model& m, std::size_t position,
                                                                          std::string_view op);

/// A window: membership flags indexed by node, and how many non-constant nodes it holds.
struct window {
  std::vector<char> member;
  std::size_t nodes = 0;    ///< operators (tensor constants not counted)
  bool whole_cone = false;  ///< growing it further adds nothing
};

namespace reduce_detail {
[[nodiscard]] inline bool is_constant_node(const model& m, graph::node_id n) {
  return m.graph.inputs(n).empty() && m.graph.data(n).kind == c10::prim::Constant;
}
}  // namespace reduce_detail

/// `culprit` and every producer at most `depth` edges upstream of it, plus the tensor
/// constants (prim::Constant nodes) any of them reads.
[[nodiscard]] TFG_TORCH_DECL window window_of(const model& m, graph::node_id culprit, std::size_t depth);

/// Adds node `n` of `from` to `to` with its inputs read through `map` (edge index of `from` ->
/// edge of `to`), and records its outputs there. The node-copying step of every derived model
/// (windows, cuts).
TFG_TORCH_DECL void copy_node_into(const graph_type& from, graph::node_id n, graph_type& to,
                                   std::vector<graph::edge_id>& map);

/// The number of operators (tensor constants not counted) of `m`.
[[nodiscard]] TFG_TORCH_DECL std::size_t operator_count(const model& m);

struct window_result {
  model reduced;
  std::vector<graph::edge_id> boundary;  ///< per graph input of `reduced`: the edge of the original
};

/// The window as a model: node order kept, every edge read from outside the window a graph
/// input (in order of first use), the culprit's outputs its outputs (one: the value, several:
/// a tuple).
[[nodiscard]] TFG_TORCH_DECL window_result window_model(const model& m, const window& w, graph::node_id culprit);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/window.ipp"
#endif
