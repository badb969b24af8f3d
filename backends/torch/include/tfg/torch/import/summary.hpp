#pragma once
/// Human-readable and machine-readable views of a profiled model: the `flowmut profile`
/// summary, the TFG as JSON (with F(e) per profiling input), and Graphviz DOT.
#include "tfg/torch/linkage.hpp"
#include "tfg/graph/dot.hpp"
#include "tfg/graph/json.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/util/json_escape.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>
#include <string>

namespace tfg::torch {

/// Counts that `flowmut profile` prints; computed from the graph and the first profiling run
/// (alias groups and contiguity can differ between runs; the JSON has every run).
struct model_summary {
  std::size_t nodes = 0, edges = 0, tensor_edges = 0, scalar_edges = 0, list_edges = 0;
  std::size_t constant_nodes = 0;
  std::size_t multi_consumer = 0, max_consumers = 0;
  std::size_t aliased_edges = 0, alias_groups = 0;
  std::size_t non_contiguous = 0, channels_last = 0, non_finite = 0;
  std::map<std::string, std::pair<std::size_t, double>> by_kind;  ///< count, seconds per run
};

[[nodiscard]] TFG_TORCH_DECL model_summary summarise(const model& m, const profile& p);

TFG_TORCH_DECL void print_summary(std::ostream& os, const model& m, const profile& p, std::size_t top_kinds = 15);

namespace detail {

TFG_TORCH_DECL void json_number(std::ostream& os, double v);

template <class Range>
void json_ints(std::ostream& os, const Range& r) {
  os << '[';
  bool first = true;
  for (auto v : r) {
    if (!first) os << ',';
    first = false;
    os << v;
  }
  os << ']';
}

TFG_TORCH_DECL std::string ivalue_text(const c10::IValue& v);

TFG_TORCH_DECL void json_state(std::ostream& os, const state::tensor_state& s);

}  // namespace detail

/// The TFG with F(e) as JSON: nodes (kind, scope, source location, constant arguments) and
/// edges (type, per-run tensor state).
TFG_TORCH_DECL void write_json(std::ostream& os, const model& m, const profile* p);

/// The TFG as Graphviz DOT; edges are labelled with shape and dtype of the first run.
TFG_TORCH_DECL void write_dot(std::ostream& os, const model& m, const profile* p);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/summary.ipp"
#endif
