#pragma once
/// Localisation primitives of the LibTorch worker: where in a model two execution
/// configurations start to disagree (docs/oracle.md, "Localisation").
///
///  - `snapshot_run`: one op-by-op run of an op-by-op configuration (eager_op_by_op,
///    float64_reference, channels_last, threads_1_vs_n) that keeps every edge's value as
///    produced (tensors copied before a later in-place op can write them);
///  - `trace_localise`: for two op-by-op configurations, the first node in execution order
///    whose output differs beyond tolerance (judged against the float64 run, as the outputs
///    are), in three runs;
///  - `cut_model` / `probe_cut`: a model truncated to the cone of some edges that become its
///    outputs, run in configuration b (graph executor, frozen + optimize_for_inference, the
///    autograd configurations, ...) and compared with configuration a on those edges; the
///    supervisor bisects over such cuts (tfg/campaign/localise.hpp), one request each;
///  - `located_node`: the node's kind and the state class of its inputs, for the signature.
/// Positions are indices into `graph.topological_order()`.
#include "tfg/torch/linkage.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/torch/oracle/compare.hpp"
#include "tfg/torch/execute/configs.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/torch/import/summary.hpp"
#include "tfg/torch/execute/window.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

/// True for the configurations that run the model op by op with tfg::torch::executor, whose
/// disagreements can be localised edge by edge.
[[nodiscard]] inline bool is_op_by_op_config(std::string_view c) {
  return c == "eager_op_by_op" || c == "float64_reference" || c == "channels_last" || c == "threads_1_vs_n";
}

/// Every edge's value from one op-by-op run, as produced.
struct edge_values {
  std::vector<c10::IValue> at;        ///< by edge index; None for edges not produced
  bool widened = false;               ///< floating values are float64 (float64_reference)
  std::string error;                  ///< the run failed: why ("" when it completed)
  std::int64_t failed_position = -1;  ///< the node that threw

  [[nodiscard]] bool ok() const noexcept { return error.empty(); }
};

namespace localise_detail {

/// A copy of a produced value that a later in-place write cannot change.
[[nodiscard]] TFG_TORCH_DECL c10::IValue frozen_copy(const c10::IValue& v);

}  // namespace localise_detail

/// Runs `m` on `input` in op-by-op configuration `config`, keeping every edge's value.
[[nodiscard]] TFG_TORCH_DECL edge_values snapshot_run(std::string_view config, const model& m,
                                                      const std::vector<c10::IValue>& input, int threads = 1);

/// The kind of the node at `position` and the state class of its inputs (from `values`).
TFG_TORCH_DECL void describe_node(const model& m, std::size_t position, const edge_values& values,
                                  campaign::located& out);

/// Judges one edge value of b against a (r: the float64 value, or null).
[[nodiscard]] TFG_TORCH_DECL oracle::verdict judge_value(const c10::IValue& a, const c10::IValue& b,
                                                         const c10::IValue* r, bool a_widened, bool b_widened,
                                                         const leaf_traits& tr, const compare_options& opt,
                                                         double spread = 0);

/// Options the worker judges configuration b against a with (layout-changing b, arithmetic
/// rewriting b, the inputs' lowest precision); `nonfinite_parameters`: has_nonfinite_parameters;
/// `nonfinite_forward`: has_nonfinite_outputs of the op-by-op reference run.
[[nodiscard]] TFG_TORCH_DECL compare_options options_for(std::string_view b, const std::vector<c10::IValue>& input,
                                                         bool nonfinite_parameters = false,
                                                         bool nonfinite_forward = false);

/// Whether node `n` computes its outputs, from the inputs configuration run `vals` gave it,
/// within the float32 floor of float64 on those same inputs: `n` alone (its window of depth 0)
/// runs in float64 on `vals`'s values of its inputs, widened, and each output of `vals` is
/// judged against it rounded to the output's own dtype, as against a float64 run. Rounded: an
/// exact value beyond the dtype's range is ±Inf there (IEEE overflow, the correctly rounded
/// result), so a float32 Inf where the exact value is 1e40 is accurate. A float64 run
/// (`vals.widened`) is accurate by definition. When the inputs it read are not all recorded,
/// false (no dismissal).
[[nodiscard]] TFG_TORCH_DECL bool accurate_on_own_inputs(const model& m, graph::node_id n, const edge_values& vals,
                                                         const std::vector<leaf_traits>& traits,
                                                         const compare_options& opt);

/// Whether node `n` reads an integer tensor derived from a selecting operator (top-k indices,
/// `idx // nc`, a repeat of them: `leaf_traits::selection`) that differs between runs a and b:
/// the two chose other elements at near-equal scores.
[[nodiscard]] TFG_TORCH_DECL bool reads_flipped_selection(const model& m, graph::node_id n, const edge_values& a,
                                                          const edge_values& b, const std::vector<leaf_traits>& traits);

/// The first node (in execution order) whose output differs between op-by-op configurations
/// a and b on `input`, judged against the float64 run, with threads_1_vs_n and channels_last
/// (those not a or b) as the peers whose spread is the float32 rounding noise of each edge: 4
/// or 5 runs. When b fails, the node that threw.
[[nodiscard]] TFG_TORCH_DECL campaign::located trace_localise(const model& m, const std::vector<c10::IValue>& input,
                                                              std::string_view a_name, std::string_view b_name,
                                                              int threads = 1);

/// `m` truncated to the cone of `edges`, which become its outputs (a tuple, in that order);
/// every graph input stays. Node order is kept.
[[nodiscard]] TFG_TORCH_DECL model cut_model(const model& m, std::span<const graph::edge_id> edges);

/// Per (model, input): the reference values a cut is compared with, computed once.
struct probe_cache {
  std::string model_path;
  std::size_t input = static_cast<std::size_t>(-1);
  std::string config_a;
  std::optional<edge_values> a, r64;
  std::vector<edge_values> peers;  ///< threads_1_vs_n, channels_last: float32 rounding noise
};

/// Runs configuration b on `m` cut at `cut` (positions into the topological order) on `input`
/// and compares each cut edge with configuration a. Forward configurations compare with a's
/// op-by-op values (from `cache`, computed once per model and input); autograd configurations
/// run a, b and autograd_float64 on the cut (the gradient of the cut's outputs). `diverges`
/// holds one flag per cut edge; an error of b on the cut diverges everywhere.
[[nodiscard]] TFG_TORCH_DECL campaign::located probe_cut(const model& m, const std::vector<c10::IValue>& input,
                                                         std::string_view a_name, std::string_view b_name,
                                                         std::span<const campaign::cut_edge> cut, probe_cache& cache,
                                                         const run_options& ro = {}, bool only_b = false);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/oracle/localise.ipp"
#endif
