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
#include "tfg/torch/compat_configs.hpp"
#include "tfg/torch/compiled.hpp"
#include "tfg/torch/execute.hpp"
#include "tfg/torch/export.hpp"
#include "tfg/torch/import.hpp"
#include "tfg/torch/inputs.hpp"
#include "tfg/torch/ivalue.hpp"
#include "tfg/torch/model.hpp"
#include "tfg/torch/schema.hpp"
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
[[nodiscard]] inline c10::ScalarType working_dtype(const model& m) {
  std::map<c10::ScalarType, std::int64_t> elements;
  for (auto n : m.graph.nodes()) {
    const auto& c = m.graph.data(n).constant;
    if (!c.isTensor() || !c.toTensor().defined() || !is_float_dtype(c.toTensor().scalar_type())) continue;
    elements[c.toTensor().scalar_type()] += c.toTensor().numel();
  }
  auto best = c10::kFloat;
  std::int64_t most = 0;
  for (const auto& [t, count] : elements)
    if (count > most) {
      best = t;
      most = count;
    }
  return best;
}

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
[[nodiscard]] inline std::vector<graph::node_id> copying_casts(const model& m, const std::vector<graph::node_id>& casts,
                                                               const std::vector<c10::IValue>& input) {
  std::vector<graph::node_id> copied;
  if (casts.empty()) return copied;
  std::vector<bool> watched(m.graph.node_capacity(), false);
  for (auto n : casts) watched[graph::index(n)] = true;
  at::NoGradGuard no_grad;
  executor ex(m);
  const auto& g = m.graph;
  try {
    (void)ex.run(ivalue::deep_clone(input), [&](graph::node_id n, std::span<const graph::edge_id> outs) {
      if (n == graph::no_node || !watched[graph::index(n)] || outs.empty()) return;
      const auto& in = g.inputs(n);
      const auto& d = g.data(n);
      if (d.args.empty() || d.args[0].how != argument::form::edge) return;
      const auto& x = ex.value(in[d.args[0].input]);
      const auto& y = ex.value(outs[0]);
      if (x.isTensor() && y.isTensor() && !y.toTensor().is_same(x.toTensor())) copied.push_back(n);
    });
  } catch (const std::exception&) {
    // the casts that ran before the failure are recorded; the widened run reports the failure
  }
  return copied;
}

[[nodiscard]] inline model widened_model(const model& m, const std::vector<c10::IValue>* input = nullptr) {
  model out = m;
  std::vector<graph::node_id> f64_casts;  // aten::to nodes casting to float64 after widening
  const auto working = working_dtype(m);
  auto& g = out.graph;
  for (auto n : g.nodes()) {
    auto& d = g.data(n);
    if (d.kind == c10::prim::Constant) {
      if (d.constant.isTensor()) {
        const auto& t = d.constant.toTensor();
        if (t.defined() && is_float_dtype(t.scalar_type()) && t.scalar_type() != c10::kDouble)
          d.constant = c10::IValue(t.to(c10::kDouble));
      }
      continue;
    }
    if (d.kind.is_prim()) continue;
    const auto* schema = schema_of(g, n);
    if (!schema) continue;
    for (std::size_t i = 0; i < d.args.size() && i < schema->arguments().size(); ++i) {
      auto& a = d.args[i];
      if (a.how != argument::form::constant || !a.constant.isInt()) continue;
      if (real_kind(schema->arguments()[i]) != c10::TypeKind::ScalarTypeType) continue;
      const auto t = static_cast<c10::ScalarType>(a.constant.toInt());
      if (t == c10::kFloat || t == working) a.constant = c10::IValue(static_cast<std::int64_t>(c10::kDouble));
      if (d.kind == c10::aten::to && static_cast<c10::ScalarType>(a.constant.toInt()) == c10::kDouble)
        f64_casts.push_back(n);
    }
  }
  if (input)
    for (auto n : copying_casts(m, f64_casts, *input)) {
      auto& d = g.data(n);
      const auto* schema = schema_of(g, n);
      const auto& formal = schema->arguments();
      for (std::size_t i = 0; i < d.args.size() && i < formal.size(); ++i)
        if (formal[i].name() == "copy" && d.args[i].how == argument::form::constant)
          d.args[i].constant = c10::IValue(true);
    }
  out.source = m.source + " (float64)";
  return out;
}

/// An input of the float64 configurations: floating tensors copied to float64.
[[nodiscard]] inline at::Tensor widened_input(const at::Tensor& t) {
  return is_float_dtype(t.scalar_type()) ? t.to(c10::kDouble, /*non_blocking=*/false, /*copy=*/true) : t.clone();
}

/// An input of the channels_last configuration: rank-4 floating tensors in that memory format.
[[nodiscard]] inline at::Tensor channels_last_input(const at::Tensor& t) {
  return t.dim() == 4 && t.is_floating_point() ? t.clone(at::MemoryFormat::ChannelsLast) : t.clone();
}

[[nodiscard]] inline c10::IValue on_device(const c10::IValue& v, c10::Device d) {
  if (v.isTensor() && v.toTensor().defined()) return c10::IValue(v.toTensor().to(d));
  if (v.isDevice()) return c10::IValue(d);
  return v;
}

/// `m` with its tensor constants and device arguments moved to `d` (for exporting to a module
/// that runs there: graph constants do not follow `Module::to`).
[[nodiscard]] inline model model_on_device(const model& m, c10::Device d) {
  model out = m;
  for (auto n : out.graph.nodes()) {
    auto& data = out.graph.data(n);
    if (data.constant.isTensor()) data.constant = on_device(data.constant, d);
    for (auto& a : data.args) {
      a.constant = on_device(a.constant, d);
      for (auto& item : a.items) item.constant = on_device(item.constant, d);
    }
  }
  return out;
}

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
inline void run_forward(run_result& r, const input_set& inputs, const run_options& opt,
                        const std::function<forward_fn()>& make, const input_transform& tf) {
  at::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  forward_fn fn = make();
  const std::size_t n = input_count(inputs, opt);
  for (std::size_t w = 0; w < opt.warmup && n > 0; ++w) (void)fn(prepared(inputs[0], tf));
  r.prepare_ms = ms_since(t0);
  std::vector<std::vector<c10::IValue>> args;
  for (std::size_t i = 0; i < n; ++i) args.push_back(prepared(inputs[i], tf));
  std::vector<c10::IValue> results;
  const auto t1 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) results.push_back(fn(args[i]));
  r.wall_ms = ms_since(t1);
  for (const auto& v : results) r.outputs.push_back(ivalue::flatten(v));
}

/// The loss the gradient configurations differentiate: the sum, in float64, of every floating
/// output that requires grad (undefined when none does).
[[nodiscard]] inline at::Tensor gradient_loss(const c10::IValue& out) {
  at::Tensor loss;
  for (const auto& t : ivalue::floating_tensors(out))
    if (t.requires_grad()) {
      auto s = t.sum().to(c10::kDouble);
      loss = loss.defined() ? loss + s : s;
    }
  return loss;
}

/// Gradients of loss = sum over floating output tensors of `out.sum()` (accumulated in f64)
/// w.r.t. every floating input tensor (after `tf`, e.g. widening to f64). A model without a
/// floating input fails with "no floating input tensor ...". The leaves are passed through a
/// `clone()`, so in-place ops on inputs stay legal. An input the loss does not depend on gets a
/// zero gradient.
inline void run_gradients(run_result& r, const input_set& inputs, const run_options& opt,
                          const std::function<forward_fn()>& make, const input_transform& tf = {}) {
  at::AutoGradMode grad_mode(true);
  const auto t0 = std::chrono::steady_clock::now();
  forward_fn fn = make();
  auto gradients = [&](const std::vector<c10::IValue>& in) {
    std::vector<at::Tensor> leaves;
    std::vector<std::size_t> positions;
    std::vector<c10::IValue> args;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (in[k].isTensor() && in[k].toTensor().defined() && in[k].toTensor().is_floating_point()) {
        auto leaf = (tf ? tf(in[k].toTensor()) : in[k].toTensor().clone()).detach().requires_grad_(true);
        leaves.push_back(leaf);
        positions.push_back(k);
        args.push_back(c10::IValue(leaf.clone()));
      } else {
        args.push_back(ivalue::deep_clone(in[k]));
      }
    }
    if (leaves.empty()) throw model_error("no floating input tensor to differentiate with respect to");
    const at::Tensor loss = gradient_loss(fn(args));
    if (!loss.defined()) throw model_error("no floating output depends on a floating input (nothing to differentiate)");
    auto grads = ::torch::autograd::grad({loss}, leaves, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                         /*allow_unused=*/true);
    output_list result;
    for (std::size_t j = 0; j < leaves.size(); ++j) {
      at::Tensor g = grads[j].defined() ? grads[j].detach() : at::zeros_like(leaves[j]);
      result.push_back({"grad." + std::to_string(positions[j]), c10::IValue(g.to(c10::kCPU))});
    }
    return result;
  };
  const std::size_t n = input_count(inputs, opt);
  for (std::size_t w = 0; w < opt.warmup && n > 0; ++w) (void)gradients(inputs[0]);
  r.prepare_ms = ms_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) r.outputs.push_back(gradients(inputs[i]));
  r.wall_ms = ms_since(t1);
}

[[nodiscard]] inline forward_fn eager(std::shared_ptr<const model> m, execute_options eo = {}) {
  auto ex = std::make_shared<executor>(*m, eo);
  return [m = std::move(m), ex](const std::vector<c10::IValue>& in) { return ex->run(in); };
}

[[nodiscard]] inline forward_fn scripted(::torch::jit::Module module, std::optional<c10::Device> device = {}) {
  return [module, device](const std::vector<c10::IValue>& in) mutable {
    if (!device) return module.forward(in);
    std::vector<c10::IValue> moved;
    for (const auto& v : in) moved.push_back(v.isTensor() ? on_device(v, *device) : v);
    return module.forward(std::move(moved));
  };
}

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
[[nodiscard]] inline std::vector<config_info> list_configs() {
  const bool cuda = compat::cuda_available();
  const std::string no_cuda = "this LibTorch has no CUDA or no CUDA device is visible (at::hasCUDA() is false)";
  const int hw = config_detail::hardware_threads();
  const bool compiled = compiled_available();
  const std::string why_compiled = unavailable_reason();
  const std::string why_onnx = onnx_unavailable_reason();
  const bool onnx = why_onnx.empty();
  return {
      {"eager_op_by_op", "op by op with tfg::torch::executor; the reference", true, "", ""},
      {"graph_executor",
       "the model exported with to_module, run through TorchScript forward after warm-up runs (profiling "
       "executor; the TE fuser is not forced on CPU)",
       true, "", "eager_op_by_op"},
      {"frozen_optimized",
       "torch::jit::freeze + optimize_for_inference on the exported module (conv-bn folding, oneDNN ops)", true, "",
       "eager_op_by_op"},
      {"float64_reference",
       "op by op with floating tensor constants, float32 dtype arguments and floating inputs in float64 "
       "(explicit f16/bf16 casts kept, integer and bool tensors untouched); the judge's reference",
       true, "", "eager_op_by_op"},
      {"channels_last", "op by op with rank-4 floating inputs in channels_last memory format", true, "",
       "eager_op_by_op"},
      {"threads_1_vs_n",
       "op by op with " + std::to_string(std::max(2, hw)) +
           " intra-op threads (the hardware concurrency; every other configuration runs with run_options::threads, "
           "1 by default)",
       hw >= 2, hw >= 2 ? "" : "this machine has one hardware thread", "eager_op_by_op"},
      {"autograd_eager",
       "gradients of sum(floating outputs) w.r.t. the floating inputs, op by op; the reference for autograd", true, "",
       ""},
      {"autograd_float64",
       "the autograd_eager gradients on the float64-widened model (as float64_reference); the judge's reference "
       "for autograd",
       true, "", "autograd_eager"},
      {"autograd", "the same gradients through the TorchScript graph executor (after warm-up)", true, "",
       "autograd_eager"},
      {"cuda_eager", "op by op on CUDA device 0", cuda, cuda ? "" : no_cuda, "eager_op_by_op"},
      {"cuda_graph_executor", "the exported module with constants on CUDA device 0, run through forward", cuda,
       cuda ? "" : no_cuda, "eager_op_by_op"},
      {"aot_eager",
       "torch.compile(backend=\"aot_eager\") of the mutant written as a torch.export program: graph capture and "
       "AOTAutograd without Inductor (Python worker)",
       compiled, why_compiled, "eager_op_by_op"},
      {"inductor", "torch.compile() with its defaults: Inductor's CPU code (Python worker)", compiled, why_compiled,
       "eager_op_by_op"},
      {"inductor_freezing",
       "torch.compile() with torch._inductor.config.freezing: weights as constants, oneDNN prepacking and "
       "conv/linear + unary fusions (Python worker)",
       compiled, why_compiled, "eager_op_by_op"},
      {"inductor_dynamic", "torch.compile(dynamic=True): shapes symbolic (Python worker)", compiled, why_compiled,
       "eager_op_by_op"},
      {"export_decomposed",
       "the torch.export program after run_decompositions() (core ATen), run by ExportedProgram.module() "
       "(Python worker)",
       compiled, why_compiled, "eager_op_by_op"},
      {"inductor_autograd", "autograd_eager's gradients through torch.compile() (Inductor's backward; Python worker)",
       compiled, why_compiled, "autograd_eager"},
      {"aoti",
       "AOTInductor: the program compiled into a package by the Python worker (aoti_compile_and_package), loaded "
       "and run here in C++ by torch::inductor::AOTIModelPackageLoader, as a C++ deployment runs it",
       compiled, why_compiled, "eager_op_by_op"},
      {"onnxruntime",
       "the mutant's torch.export program exported to ONNX (torch.onnx.export, dynamo exporter) and run by ONNX "
       "Runtime's CPU execution provider with its graph optimisations at their default level (Python worker)",
       onnx, why_onnx, "eager_op_by_op"},
      {"onnxruntime_noopt", "the same ONNX model run by ONNX Runtime with its graph optimisations off (Python worker)",
       onnx, why_onnx, "eager_op_by_op"},
  };
}

/// Whether a campaign runs configuration `name` by default (when available): every CPU
/// configuration but the compiled ones (they compile for seconds per mutant: asked for with
/// --config). The one rule for the worker's default set and the campaign backend's.
[[nodiscard]] inline bool on_by_default(std::string_view name) {
  return name.rfind("cuda", 0) != 0 && !is_compiled_config(name);
}

/// The configurations a campaign runs by default: the available ones on_by_default.
[[nodiscard]] inline std::vector<std::string> default_campaign_configs() {
  std::vector<std::string> out;
  for (const auto& c : list_configs())
    if (c.available && on_by_default(c.name)) out.push_back(c.name);
  return out;
}

/// The entry of `list_configs()` named `name`, or nullptr.
[[nodiscard]] inline std::optional<config_info> find_config(std::string_view name) {
  for (auto& c : list_configs())
    if (c.name == name) return c;
  return std::nullopt;
}

/// Runs `m` on (the first `opt.max_inputs` of) `inputs` in configuration `name`. Never throws:
/// an unknown or unavailable configuration, or any failure while preparing or running, is
/// reported in `run_result::error`.
[[nodiscard]] inline run_result run_config(std::string_view name, const model& m, const input_set& inputs,
                                           const run_options& opt = {}) {
  run_result r;
  r.config = std::string(name);
  const auto info = find_config(name);
  if (!info) {
    r.error = "unknown configuration `" + r.config + "`";
    return r;
  }
  if (!info->available) {
    r.error = "configuration `" + r.config + "` is not available: " + info->why_not;
    return r;
  }
  const int threads = name == "threads_1_vs_n" ? std::max(2, config_detail::hardware_threads()) : opt.threads;
  const configuration_scope running(name);
  try {
    compat::intra_op_threads thread_scope(threads);
    namespace cd = config_detail;
    auto shared = [&] { return std::make_shared<const model>(m); };
    auto widened = [&] {
      return std::make_shared<const model>(cd::widened_model(m, inputs.empty() ? nullptr : &inputs[0]));
    };
    static const std::string kTag = "__torch__.tfg.Mutant";
    const cd::input_transform to_f64 = cd::widened_input;
    const cd::input_transform to_channels_last = cd::channels_last_input;
    if (name == "eager_op_by_op" || name == "threads_1_vs_n") {
      cd::run_forward(r, inputs, opt, [&] { return cd::eager(shared()); }, {});
    } else if (name == "graph_executor") {
      cd::run_forward(r, inputs, opt, [&] { return cd::scripted(to_module(m, kTag, true)); }, {});
    } else if (name == "frozen_optimized") {
      cd::run_forward(r, inputs, opt,
                      [&] { return cd::scripted(compat::freeze_and_optimize(to_module(m, kTag, true))); }, {});
    } else if (name == "float64_reference") {
      r.widened = true;
      cd::run_forward(
          r, inputs, opt, [&] { return cd::eager(widened()); }, to_f64);
    } else if (name == "channels_last") {
      cd::run_forward(
          r, inputs, opt, [&] { return cd::eager(shared()); }, to_channels_last);
    } else if (name == "autograd_eager") {
      cd::run_gradients(r, inputs, opt, [&] { return cd::eager(shared()); });
    } else if (name == "autograd_float64") {
      r.widened = true;
      cd::run_gradients(
          r, inputs, opt, [&] { return cd::eager(widened()); }, to_f64);
    } else if (name == "autograd") {
      cd::run_gradients(r, inputs, opt, [&] { return cd::scripted(to_module(m, kTag, true)); });
    } else if (name == "cuda_eager") {
      execute_options eo;
      eo.device = c10::Device(c10::kCUDA, 0);
      cd::run_forward(r, inputs, opt, [&] { return cd::eager(shared(), eo); }, {});
    } else if (name == "cuda_graph_executor") {
      const c10::Device cuda(c10::kCUDA, 0);
      cd::run_forward(r, inputs, opt, [&] { return cd::scripted(to_module(cd::model_on_device(m, cuda)), cuda); }, {});
    } else if (is_compiled_config(name)) {
      auto c = run_compiled(name, m, inputs, opt.max_inputs, opt.warmup, threads);
      r.outputs = std::move(c.outputs);
      r.wall_ms = c.wall_ms;
      r.prepare_ms = c.prepare_ms;
      r.error = std::move(c.error);
      r.skipped = c.skipped;
      r.unsupported = c.unsupported;
      r.external = true;
    } else {
      r.error = "configuration `" + r.config + "` is listed but has no runner";
    }
  } catch (const std::exception& e) {
    r.outputs.clear();
    const auto named = failed_position_of(clean_error(e.what()));
    r.error = named.message;
    r.failed_position = named.position;
  } catch (...) {
    r.outputs.clear();
    r.error = "unknown exception";
  }
  r.peak_rss_bytes = compat::peak_rss_bytes();
  return r;
}

/// Helpers of config_detail other files use (localisation and the worker build the same widened and channels-last
/// variants); the rest of config_detail is this file's own.
using config_detail::channels_last_input;
using config_detail::gradient_loss;
using config_detail::hardware_threads;
using config_detail::widened_input;
using config_detail::widened_model;
using config_detail::working_dtype;

}  // namespace tfg::torch
