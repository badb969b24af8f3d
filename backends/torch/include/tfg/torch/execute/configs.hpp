#pragma once
/// Execution configurations: semantically equivalent ways to run one model (a seed or a
/// mutant), each named, described and checked for availability, so that oracles
/// (compare.hpp) can judge their disagreements. In-process: a configuration that crashes the
/// process is not contained here (worker-process isolation is a separate layer).
///
/// | name                | how                                                          | compared with   |
/// |---------------------|--------------------------------------------------------------|-----------------|
/// | eager_op_by_op      | tfg::torch::executor, one op at a time (the reference)       | -               |
/// | graph_executor      | `to_module` + `forward` after warm-up (profiling executor)   | eager_op_by_op  |
/// | frozen_optimized    | `freeze` + `optimize_for_inference` (oneDNN, conv-bn folding)| eager_op_by_op  |
/// | float64_reference   | floating constants, dtype arguments and inputs widened to f64| eager_op_by_op  |
/// | channels_last       | rank-4 floating inputs in channels_last memory format        | eager_op_by_op  |
/// | threads_1_vs_n      | op by op with N = hardware threads (others run with 1)      | eager_op_by_op  |
/// | autograd_eager      | d(sum of floating outputs)/d(floating inputs), op by op      | -               |
/// | autograd_float64    | those gradients on the float64-widened model (judge's ref.)  | autograd_eager  |
/// | autograd            | the same gradients through the graph executor                | autograd_eager  |
/// | cuda_eager          | op by op on CUDA (only when `at::hasCUDA()`)                 | eager_op_by_op  |
/// | cuda_graph_executor | graph executor on CUDA (only when `at::hasCUDA()`)           | eager_op_by_op  |
/// | aot_eager           | torch.compile(backend="aot_eager") of the mutant as a .pt2   | eager_op_by_op  |
/// | inductor            | torch.compile() (Inductor, CPU)                              | eager_op_by_op  |
/// | inductor_freezing   | torch.compile() with Inductor's freezing (oneDNN fusions)    | eager_op_by_op  |
/// | inductor_dynamic    | torch.compile(dynamic=True)                                  | eager_op_by_op  |
/// | export_decomposed   | the program after run_decompositions(), ExportedProgram.module() | eager_op_by_op |
/// | inductor_autograd   | autograd_eager's gradients through torch.compile()           | autograd_eager  |
/// | aoti                | AOTInductor package of the program, run from C++             | eager_op_by_op  |
///
/// The last seven are PyTorch 2.x's compiled configurations, run by a Python worker (compiled.hpp);
/// a campaign runs them when asked (`--config`), as they compile for seconds per mutant.
///
/// Every configuration runs with `run_options::threads` intra-op threads (1 by default, so runs
/// are deterministic) except threads_1_vs_n; the previous setting is restored afterwards. The TE
/// fuser is never forced on CPU (Debian's build has no LLVM; see libtorch-notes.md).
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/execute/compat_configs.hpp"
#include "tfg/torch/execute/compiled.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/export.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/schema.hpp"
#include "tfg/util/clock.hpp"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tfg::torch {

/// One execution configuration as `flowmut configs` lists it.
struct config_info {
  std::string name;
  std::string description;
  bool available = true;
  std::string why_not;    ///< when not available: the reason, for the user
  std::string reference;  ///< the configuration its results are compared with; empty for a reference
};

struct run_options {
  std::size_t warmup = 2;      ///< untimed runs on the first input before timing (profiling executor: >= 2)
  int threads = 1;             ///< intra-op threads for every configuration but threads_1_vs_n
  std::size_t max_inputs = 0;  ///< run only the first max_inputs inputs; 0: all of them
};

/// What one configuration produced. Never thrown: a failure is recorded in `error`.
struct run_result {
  std::string config;
  std::vector<output_list> outputs;  ///< per input, in input order (empty on error)
  double wall_ms = 0;                ///< the timed runs (all inputs), excluding preparation and warm-up
  double prepare_ms = 0;             ///< export / freeze / conversion plus warm-up
  std::int64_t peak_rss_bytes = 0;   ///< process peak RSS after the run (monotonic, process-wide)
  /// Floating outputs are float64 because the configuration widened the model; compare them
  /// after converting back to the other side's floating dtype.
  bool widened = false;
  std::string error;  ///< exception message (c10 "Exception raised from" tail trimmed); empty: ok
  /// The node (topological position) the failing configuration's own error names: TorchScript
  /// configurations run a module whose nodes carry their positions (to_module's
  /// tag_positions), so the interpreter's traceback says which node raised; -1: unknown.
  std::int64_t failed_position = -1;
  /// The configuration could not be given the model (tfg's own limitation, e.g. a mutant the
  /// torch.export writer cannot express): `error` says why; never judged, never a finding.
  bool skipped = false;
  /// Skipped because the configuration does not support the model (an exporter's missing
  /// operator, a runtime's missing kernel or type): counted and listed by the campaign.
  bool unsupported = false;
  /// The outputs were computed in another process (the Python worker of the compiled
  /// configurations): this process's random number generator says nothing about its draws.
  bool external = false;

  [[nodiscard]] bool ok() const noexcept { return error.empty(); }
};

namespace config_detail {

[[nodiscard]] inline bool is_float_dtype(c10::ScalarType s) {
  return s == c10::kFloat || s == c10::kHalf || s == c10::kBFloat16 || s == c10::kDouble;
}

/// The floating dtype most of `m`'s floating tensor constants (its parameters) have, by element
/// count: the precision the model works in (float32 when it has none).
[[nodiscard]] TFG_TORCH_DECL c10::ScalarType working_dtype(const model& m);

/// `m` for the float64 reference: every floating tensor constant in float64 (values are exact:
/// f16, bf16 and f32 are subsets of f64), and every dtype argument (a `ScalarType` parameter
/// of the node's schema, e.g. `aten::to(x, dtype=float)`) of float32 or of the model's working
/// dtype (a bfloat16 model's `x.to(q.dtype)`) made float64. Other explicit casts to f16 / bf16
/// are kept: a mutation's `aten::to(bf16)` in a float32 model still rounds in the reference,
/// which then computes what the model means, not a more precise model. Integer and bool tensors
/// (indices, masks) are left alone. Works on a copy of the TFG, so node and edge ids are those
/// of `m` (edge-by-edge comparison and localisation rely on it).
///
/// Widening must not change aliasing. `aten::to` returns its input itself when the dtype
/// already matches, so in the widened model a cast that copied in `m` (`x.to(f64).to(f32)`:
/// two copies in float32) becomes a cast to float64 of a float64 tensor, i.e. an alias, and an
/// in-place op after it writes a tensor it did not write in `m` (a result autograd saved, a
/// value another consumer reads). Given `input` (one forward's arguments of `m`, at their own
/// dtypes), `m` is run on it once op by op (only when it has a cast to float64 after widening)
/// and every such `aten::to` that returned a new tensor gets `copy=True`. A cast that aliased
/// in `m` stays an alias. Without `input`, or where `m` fails before a cast ran, casts are left
/// as they are.
[[nodiscard]] TFG_TORCH_DECL std::vector<graph::node_id> copying_casts(const model& m,
                                                                       const std::vector<graph::node_id>& casts,
                                                                       const std::vector<c10::IValue>& input);

[[nodiscard]] TFG_TORCH_DECL model widened_model(const model& m, const std::vector<c10::IValue>* input = nullptr);

/// An input of the float64 configurations: floating tensors copied to float64.
[[nodiscard]] inline at::Tensor widened_input(const at::Tensor& t) {
  return is_float_dtype(t.scalar_type()) ? t.to(c10::kDouble, /*non_blocking=*/false, /*copy=*/true) : t.clone();
}

/// An input of the channels_last configuration: rank-4 floating tensors in that memory format.
[[nodiscard]] inline at::Tensor channels_last_input(const at::Tensor& t) {
  return t.dim() == 4 && t.is_floating_point() ? t.clone(at::MemoryFormat::ChannelsLast) : t.clone();
}

[[nodiscard]] TFG_TORCH_DECL c10::IValue on_device(const c10::IValue& v, c10::Device d);

/// `m` with its tensor constants and device arguments moved to `d` (for exporting to a module
/// that runs there: graph constants do not follow `Module::to`).
[[nodiscard]] TFG_TORCH_DECL model model_on_device(const model& m, c10::Device d);

[[nodiscard]] inline int hardware_threads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

using forward_fn = std::function<c10::IValue(const std::vector<c10::IValue>&)>;
using input_transform = ivalue::tensor_transform;

using tfg::ms_since;

[[nodiscard]] inline std::size_t input_count(const input_set& inputs, const run_options& opt) {
  return opt.max_inputs == 0 ? inputs.size() : std::min(inputs.size(), opt.max_inputs);
}

[[nodiscard]] inline std::vector<c10::IValue> prepared(const std::vector<c10::IValue>& in, const input_transform& tf) {
  return ivalue::deep_clone(in, tf);
}

/// Runs a forward configuration: `make` builds the callable (timed as preparation), then
/// `opt.warmup` runs on the first input, then one timed run per input.
TFG_TORCH_DECL void run_forward(run_result& r, const input_set& inputs, const run_options& opt,
                                const std::function<forward_fn()>& make, const input_transform& tf);

/// The loss the gradient configurations differentiate: the sum, in float64, of every floating
/// output that requires grad (undefined when none does).
[[nodiscard]] TFG_TORCH_DECL at::Tensor gradient_loss(const c10::IValue& out);

/// Gradients of loss = sum over floating output tensors of `out.sum()` (accumulated in f64)
/// w.r.t. every floating input tensor (after `tf`, e.g. widening to f64). A model without a
/// floating input fails with "no floating input tensor ...". The leaves are passed through a
/// `clone()`, so in-place ops on inputs stay legal. An input the loss does not depend on gets a
/// zero gradient.
TFG_TORCH_DECL void run_gradients(run_result& r, const input_set& inputs, const run_options& opt,
                                  const std::function<forward_fn()>& make, const input_transform& tf = {});

[[nodiscard]] inline forward_fn eager(std::shared_ptr<const model> m, execute_options eo = {}) {
  auto ex = std::make_shared<executor>(*m, eo);
  return [m = std::move(m), ex](const std::vector<c10::IValue>& in) { return ex->run(in); };
}

[[nodiscard]] TFG_TORCH_DECL forward_fn scripted(::torch::jit::Module module, std::optional<c10::Device> device = {});

}  // namespace config_detail

/// The configuration `run_config` is running on this thread ("" outside it). Test-only fault
/// operators read it to misbehave in one configuration (tests/data/fault_ops).
[[nodiscard]] inline std::string& running_configuration() {
  thread_local std::string name;
  return name;
}

/// Sets running_configuration() for a scope.
class configuration_scope {
 public:
  explicit configuration_scope(std::string_view name) : previous_(running_configuration()) {
    running_configuration() = std::string(name);
  }
  ~configuration_scope() { running_configuration() = previous_; }
  configuration_scope(const configuration_scope&) = delete;
  configuration_scope& operator=(const configuration_scope&) = delete;

 private:
  std::string previous_;
};

/// Every configuration this build knows, in a fixed order, with availability on this machine.
[[nodiscard]] TFG_TORCH_DECL std::vector<config_info> list_configs();

/// Whether a campaign runs configuration `name` by default (when available): every CPU
/// configuration but the compiled ones (they compile for seconds per mutant: asked for with
/// --config). The one rule for the worker's default set and the campaign backend's.
[[nodiscard]] inline bool on_by_default(std::string_view name) {
  return name.rfind("cuda", 0) != 0 && !is_compiled_config(name);
}

/// The configurations a campaign runs by default: the available ones on_by_default.
[[nodiscard]] TFG_TORCH_DECL std::vector<std::string> default_campaign_configs();

/// The entry of `list_configs()` named `name`, or nullptr.
[[nodiscard]] TFG_TORCH_DECL std::optional<config_info> find_config(std::string_view name);

/// Runs `m` on (the first `opt.max_inputs` of) `inputs` in configuration `name`. Never throws:
/// an unknown or unavailable configuration, or any failure while preparing or running, is
/// reported in `run_result::error`.
[[nodiscard]] TFG_TORCH_DECL run_result run_config(std::string_view name, const model& m, const input_set& inputs,
                                                   const run_options& opt = {});

/// Helpers of config_detail other files use (localisation and the worker build the same widened and channels-last
/// variants); the rest of config_detail is this file's own.
using config_detail::channels_last_input;
using config_detail::gradient_loss;
using config_detail::hardware_threads;
using config_detail::widened_input;
using config_detail::widened_model;
using config_detail::working_dtype;

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/configs.ipp"
#endif
