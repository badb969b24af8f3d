#pragma once
// The definitions of configs.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/configs.hpp"

namespace tfg::torch::config_detail {

[[nodiscard]] TFG_TORCH_DECL c10::ScalarType working_dtype(const model& m) {
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

[[nodiscard]] TFG_TORCH_DECL std::vector<graph::node_id> copying_casts(const model& m,
                                                                       const std::vector<graph::node_id>& casts,
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

[[nodiscard]] TFG_TORCH_DECL model widened_model(const model& m, const std::vector<c10::IValue>* input) {
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

[[nodiscard]] TFG_TORCH_DECL c10::IValue on_device(const c10::IValue& v, c10::Device d) {
  if (v.isTensor() && v.toTensor().defined()) return c10::IValue(v.toTensor().to(d));
  if (v.isDevice()) return c10::IValue(d);
  return v;
}

[[nodiscard]] TFG_TORCH_DECL model model_on_device(const model& m, c10::Device d) {
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

TFG_TORCH_DECL void run_forward(run_result& r, const input_set& inputs, const run_options& opt,
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

[[nodiscard]] TFG_TORCH_DECL at::Tensor gradient_loss(const c10::IValue& out) {
  at::Tensor loss;
  for (const auto& t : ivalue::floating_tensors(out))
    if (t.requires_grad()) {
      auto s = t.sum().to(c10::kDouble);
      loss = loss.defined() ? loss + s : s;
    }
  return loss;
}

TFG_TORCH_DECL void run_gradients(run_result& r, const input_set& inputs, const run_options& opt,
                                  const std::function<forward_fn()>& make, const input_transform& tf) {
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

[[nodiscard]] TFG_TORCH_DECL forward_fn scripted(::torch::jit::Module module, std::optional<c10::Device> device) {
  return [module, device](const std::vector<c10::IValue>& in) mutable {
    if (!device) return module.forward(in);
    std::vector<c10::IValue> moved;
    for (const auto& v : in) moved.push_back(v.isTensor() ? on_device(v, *device) : v);
    return module.forward(std::move(moved));
  };
}

}  // namespace tfg::torch::config_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::vector<config_info> list_configs() {
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

[[nodiscard]] TFG_TORCH_DECL std::vector<std::string> default_campaign_configs() {
  std::vector<std::string> out;
  for (const auto& c : list_configs())
    if (c.available && on_by_default(c.name)) out.push_back(c.name);
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::optional<config_info> find_config(std::string_view name) {
  for (auto& c : list_configs())
    if (c.name == name) return c;
  return std::nullopt;
}

[[nodiscard]] TFG_TORCH_DECL run_result run_config(std::string_view name, const model& m, const input_set& inputs,
                                                   const run_options& opt) {
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

}  // namespace tfg::torch
