#pragma once
// The definitions of worker.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/worker.hpp"

namespace tfg::torch::worker_detail {

TFG_TORCH_DECL void write_current(const worker_state& st, const nlohmann::json& rec) {
  if (st.dir.empty()) return;
  // Not fsync'ed: the reader is the supervisor on this machine, after the worker died.
  const auto record = campaign::worker_layout{st.dir}.current();
  auto tmp = record;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << rec.dump() << "\n";
  }
  std::error_code ec;
  std::filesystem::rename(tmp, record, ec);
}

TFG_TORCH_DECL void reseed_cpu_generator() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(0x7466676d75746174ull);
}

[[nodiscard]] TFG_TORCH_DECL std::uint64_t cpu_generator_state_hash() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  const auto st = gen.get_state();
  const auto* p = st.data_ptr<std::uint8_t>();
  std::uint64_t h = 1469598103934665603ull;
  for (std::int64_t i = 0; i < st.numel(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

[[nodiscard]] TFG_TORCH_DECL std::pair<double, std::size_t> output_excess(const run_result& a, const run_result& b,
                                                                          double atol, double rtol) {
  std::pair<double, std::size_t> worst{-1.0, 0};
  for (std::size_t i = 0; i < a.outputs.size() && i < b.outputs.size(); ++i) {
    const auto& la = a.outputs[i];
    const auto& lb = b.outputs[i];
    if (la.size() != lb.size()) return {std::numeric_limits<double>::infinity(), i};
    for (std::size_t j = 0; j < la.size(); ++j) {
      auto x = la[j].value, y = lb[j].value;
      // float64 runs: compare in float64
      const double e = ivalue::excess(x, y, atol, rtol);
      if (e > worst.first) worst = {e, i};
    }
  }
  return worst;
}

[[nodiscard]] TFG_TORCH_DECL float64_judgement float64_excess(const run_result& mine64, const run_result& theirs64,
                                                              double atol, double rtol) {
  const oracle::tolerance_table table;
  const double a = std::max(atol, table.f64.atol), r = std::max(rtol, table.f64.rtol);
  return {output_excess(mine64, theirs64, a, r), a, r};
}

[[nodiscard]] TFG_TORCH_DECL std::string backend_attribution(const oracle::verdict& v,
                                                             const std::map<std::string, run_result>& results,
                                                             const std::string& ref_name, const run_result& ref,
                                                             const model& m, const std::vector<c10::IValue>& opt_input,
                                                             bool nonfinite, bool nonfinite_forward) {
  const bool aot = ref_name == "export_decomposed";
  if (ref.skipped) return "backend: not attributed (" + ref_name + " did not run: " + ref.error + ")";
  const auto a = results.find(v.config_a);
  if (a == results.end()) return "backend: not attributed";
  const auto r64 = results.find("float64_reference");
  const run_result* ref64 = r64 != results.end() && r64->second.ok() ? &r64->second : nullptr;
  const auto opt = options_for(ref_name, opt_input, nonfinite, nonfinite_forward);
  oracle::verdict w;
  try {
    w = judge(a->second, ref, opt, &m, ref64, {});
  } catch (const std::exception& e) {
    return "backend: not attributed (" + ref_name + " cannot be compared: " + clean_error(e.what()) + ")";
  }
  if (!w.finding())
    return aot ? "backend: AOTInductor (export_decomposed, the same torch.export program decomposed to core ATen and "
                 "run "
                 "eagerly, agrees with " +
                     v.config_a + ")"
               : "backend: Inductor (aot_eager, the same graph capture and AOTAutograd without Inductor, agrees with " +
                     v.config_a + ")";
  return (aot ? "backend: torch.export or its decompositions (export_decomposed, without AOTInductor, disagrees with "
              : "backend: graph capture or AOTAutograd (aot_eager, without Inductor, disagrees with ") +
         v.config_a + " too: " + std::string(oracle::to_string(w.kind)) + ")";
}

[[nodiscard]] TFG_TORCH_DECL double max_finite_magnitude(const at::Tensor& t) {
  if (!t.defined() || !t.is_floating_point() || t.numel() == 0) return 0;
  const auto a = t.detach().to(c10::kDouble).abs();
  return a.masked_fill(a.isfinite().logical_not(), 0).max().item<double>();
}

[[nodiscard]] TFG_TORCH_DECL std::string gradient_range_exceeded(const model& m,
                                                                 const std::vector<c10::IValue>& input) {
  try {
    const auto working = working_dtype(m);
    if (working == c10::kDouble) return {};
    const double largest = working == c10::kHalf       ? 65504.0
                           : working == c10::kBFloat16 ? 3.3895313892515355e38
                                                       : static_cast<double>(std::numeric_limits<float>::max());
    at::AutoGradMode grad_mode(true);
    const model wide = widened_model(m, &input);
    executor ex(wide);
    std::vector<c10::IValue> args;
    for (const auto& v : input) {
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_floating_point())
        args.push_back(c10::IValue(widened_input(v.toTensor()).detach().requires_grad_(true)));
      else args.push_back(ivalue::deep_clone(v));
    }
    std::vector<std::pair<std::size_t, at::Tensor>> seen;  // (position, value) of differentiable outputs
    std::map<graph::node_id, std::size_t> position;
    for (std::size_t i = 0; i < ex.order().size(); ++i) position[ex.order()[i]] = i;
    const c10::IValue out = ex.run(args, [&](graph::node_id n, std::span<const graph::edge_id> edges) {
      if (n == graph::no_node) return;
      for (auto e : edges)
        if (const auto& v = ex.value(e); v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad())
          seen.emplace_back(position[n], v.toTensor());
    });
    const at::Tensor loss = gradient_loss(out);  // autograd_float64's loss
    if (!loss.defined() || seen.empty()) return {};
    std::vector<at::Tensor> wrt;
    for (const auto& [pos, t] : seen) wrt.push_back(t);
    const auto grads = ::torch::autograd::grad({loss}, wrt, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                               /*allow_unused=*/true);
    for (std::size_t i = 0; i < seen.size(); ++i) {
      const double value = max_finite_magnitude(seen[i].second);
      const double grad = grads[i].defined() ? max_finite_magnitude(grads[i]) : 0.0;
      if (value <= largest && grad <= largest) continue;
      const auto n = ex.order()[seen[i].first];
      char buf[320];
      std::snprintf(buf, sizeof buf, "the float64 %s at position %zu (%s) reaches %.3g, beyond %s's largest %.3g",
                    grad > largest ? "gradient" : "value", seen[i].first, wide.graph.data(n).kind.toQualString(),
                    grad > largest ? grad : value, std::string(c10::toString(working)).c_str(), largest);
      return buf;
    }
  } catch (const std::exception&) {
  }
  return {};
}

}  // namespace tfg::torch::worker_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL campaign::worker_reply handle_request(const campaign::worker_request& req,
                                                                   worker_state& st) {
  using nlohmann::json;
  const auto t0 = std::chrono::steady_clock::now();
  campaign::worker_reply reply;
  reply.id = req.id;
  model m;
  const input_set* inputs = nullptr;
  worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", "load"}, {"pid", ::getpid()}});
  try {
    m = load_any(req.model);
    auto it = st.inputs.find(req.inputs);
    if (it == st.inputs.end()) it = st.inputs.emplace(req.inputs, load_inputs(req.inputs, m)).first;
    inputs = &it->second;
  } catch (const std::exception& e) {
    reply.error = clean_error(e.what());
    return reply;
  }
  reply.phases["load"] = ms_since(t0);
  double config_ms = 0;
  const std::vector<std::string> configs = req.configs.empty() ? default_campaign_configs() : req.configs;
  run_options ro;
  ro.threads = req.threads;
  ro.warmup = req.warmup;
  std::map<std::string, run_result> results;
  std::map<std::string, std::uint64_t> rng_after;
  label_sequence sequence;
  event_labels names;
  for (const auto& c : configs) {
    worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", c}, {"pid", ::getpid()}});
    event_trace trace;
    run_result r;
    {
      std::optional<event_recorder> rec;
      if (req.labels) rec.emplace(names, trace);
      worker_detail::reseed_cpu_generator();
      r = run_config(c, m, *inputs, ro);
      rng_after[c] = worker_detail::cpu_generator_state_hash();
    }
    config_ms += r.prepare_ms + r.wall_ms;
    if (is_compiled_config(c)) reply.phases["compile"] += r.prepare_ms;  // within "configs"
    if (r.ok() && req.labels) sequence.append(trace, names, c);          // failures add no labels
    reply.results.push_back(
        {c, r.ok(), r.skipped ? "skipped: " + r.error : r.error, r.wall_ms, r.prepare_ms, r.unsupported});
    results.emplace(c, std::move(r));
  }
  reply.phases["configs"] = config_ms;
  // Beyond the configurations' own times in the loop above: trace recording and bookkeeping.
  reply.phases["labels"] = ms_since(t0) - reply.phases["load"] - config_ms;
  const auto judge_t0 = std::chrono::steady_clock::now();
  worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", "compare"}, {"pid", ::getpid()}});

  // Judge every pair; the float64 pairs last, with the other float32 configurations that
  // agree with the reference as peers (the spread of float32 rounding on this model).
  std::vector<std::string> order;
  for (const auto& c : configs)
    if (c != "float64_reference" && c != "autograd_float64") order.push_back(c);
  for (const auto& c : configs)
    if (c == "float64_reference" || c == "autograd_float64") order.push_back(c);
  std::map<std::string, bool> agrees;            // config -> agrees with its reference (no finding)
  std::vector<std::size_t> attribute;            // verdicts of Inductor configurations to attribute to a backend
  std::map<std::string, run_result> again_runs;  // a reference configuration run a second time
  const auto opt_input = (*inputs).empty() ? std::vector<c10::IValue>{} : (*inputs)[0];
  const bool nonfinite = has_nonfinite_parameters(m);
  const auto eager = results.find("eager_op_by_op");
  const bool nonfinite_forward = eager != results.end() && eager->second.ok() && has_nonfinite_outputs(eager->second);
  for (const auto& c : order) {
    const auto info = find_config(c);
    if (!info || info->reference.empty()) continue;
    const auto a = results.find(info->reference), b = results.find(c);
    if (a == results.end() || b == results.end()) continue;
    if (a->second.skipped || b->second.skipped) continue;  // tfg could not give it the model: nothing to judge
    const bool grad = worker_detail::is_gradient_config(c);
    const char* ref64_name = grad ? "autograd_float64" : "float64_reference";
    const run_result* ref64 = nullptr;
    if (auto r64 = results.find(ref64_name); r64 != results.end() && c != ref64_name && r64->second.ok())
      ref64 = &r64->second;
    // Peers: the other float32 configurations of the same kind (forward or gradients); for the
    // float64 pair only those that agree with the reference.
    std::vector<const run_result*> peers;
    for (const auto& [name, r] : results) {
      if (name == a->first || name == c || r.widened || !r.ok() || worker_detail::is_gradient_config(name) != grad)
        continue;
      if (c == ref64_name && !agrees[name]) continue;
      peers.push_back(&r);
    }
    const auto opt = options_for(c, opt_input, nonfinite, nonfinite_forward);
    oracle::verdict v;
    try {
      v = judge(a->second, b->second, opt, &m, ref64, peers);
      // A numeric disagreement with the float64 truth: is float32 simply this noisy here? Run
      // a's configuration again on inputs and parameters moved by one float32 ulp and judge with
      // that run as one more peer: where the noise alone moves a as far, float32 cannot do
      // better (an ill-conditioned mutant, or float32 formulas unstable at its values).
      const bool against_truth = c == ref64_name || ref64 != nullptr;
      if (v.kind == oracle::verdict_kind::numeric_mismatch && against_truth) {
        worker_detail::write_current(
            st, {{"id", req.id}, {"model", req.model}, {"config", a->first + "+noise"}, {"pid", ::getpid()}});
        const auto noisy = perturbed_inputs(*inputs, 0x1p-23, 0x5eed);
        const auto noisy_m = perturbed_parameters(m, 0x1p-23, 0x5eed + 1);
        worker_detail::reseed_cpu_generator();
        const auto self = run_config(a->first, noisy_m, noisy, ro);
        if (self.ok()) {
          auto with_self = peers;
          with_self.push_back(&self);
          auto v2 = judge(a->second, b->second, opt, &m, ref64, with_self);
          if (!v2.finding()) {
            v2.message = "ill-conditioned at float32, not compared: one-ulp noise on inputs and parameters moves " +
                         a->first + " as far (" + v.message + ")";
            v = std::move(v2);
          }
        }
      }
      // PyTorch's triage runs eager twice and judges only where it agrees with itself: the
      // reference configuration again, with the same random numbers; where its two runs
      // disagree, the model is nondeterministic here and the pair is not compared.
      if (v.kind == oracle::verdict_kind::numeric_mismatch || v.kind == oracle::verdict_kind::nan_inf_mismatch) {
        auto it = again_runs.find(a->first);
        if (it == again_runs.end()) {
          worker_detail::write_current(
              st, {{"id", req.id}, {"model", req.model}, {"config", a->first + "+again"}, {"pid", ::getpid()}});
          worker_detail::reseed_cpu_generator();
          it = again_runs.emplace(a->first, run_config(a->first, m, *inputs, ro)).first;
        }
        const auto& again = it->second;
        if (again.ok()) {
          const auto self = judge(a->second, again, opt, &m, nullptr, {});
          if (self.finding()) {
            v.message = "nondeterministic, not compared: " + a->first + " run twice disagrees with itself (" +
                        self.message + "); " + v.message;
            v.kind = oracle::verdict_kind::within_tolerance;
          }
        }
      }
      // A NaN/Inf only float32's gradients show, where float64's gradient computation holds
      // values beyond float32's range: float32's overflow, not a defect (docs/oracle.md).
      if (v.kind == oracle::verdict_kind::nan_inf_mismatch && c == "autograd_float64") {
        worker_detail::write_current(
            st, {{"id", req.id}, {"model", req.model}, {"config", "autograd_float64+range"}, {"pid", ::getpid()}});
        std::string why;
        for (std::size_t k = 0; k < (*inputs).size() && why.empty(); ++k)
          why = worker_detail::gradient_range_exceeded(m, (*inputs)[k]);
        if (!why.empty()) {
          v.kind = oracle::verdict_kind::within_tolerance;
          v.message = "beyond float32's range, not compared: " + why + " (" + v.message + ")";
        }
      }
    } catch (const std::exception& e) {
      v.kind = oracle::verdict_kind::state_mismatch;
      v.config_a = a->first;
      v.config_b = c;
      v.message = "cannot compare: " + clean_error(e.what());
    }
    // RNG consumption is state: equivalent configurations draw the same random numbers. Widened
    // (float64) runs may legitimately sample differently and are not compared.
    if (!v.finding() && a->second.ok() && b->second.ok() && !a->second.widened && !b->second.widened &&
        !a->second.external && !b->second.external && rng_after[a->first] != rng_after[c]) {
      v.kind = oracle::verdict_kind::state_mismatch;
      v.config_a = a->first;
      v.config_b = c;
      v.message = "random number generator consumption differs between " + a->first + " and " + c;
    }
    agrees[c] = !v.finding() && b->second.ok();
    if ((v.kind == oracle::verdict_kind::numeric_mismatch || v.kind == oracle::verdict_kind::nan_inf_mismatch) &&
        is_onnx_config(c)) {
      // Where in the ONNX model (the bisection over cuts names the TFG operator).
      worker_detail::write_current(
          st, {{"id", req.id}, {"model", req.model}, {"config", c + "+localise"}, {"pid", ::getpid()}});
      v.message += "\nONNX: " + onnx_localise(c, m, *inputs, ro.threads);
    }
    if (v.finding() && ((is_inductor_config(c) && c != "inductor_autograd") || c == "aoti")) {
      // Which backend breaks (PyTorch's triage): Inductor's input run without Inductor (aot_eager;
      // export_decomposed for aoti) against the same reference. Judged after this loop when that
      // configuration ran in this request; otherwise run now.
      attribute.push_back(reply.verdicts.size());
    }
    if (v.finding() || v.kind == oracle::verdict_kind::error_in_both) reply.verdicts.push_back(std::move(v));
  }
  for (auto i : attribute) {
    auto& v = reply.verdicts[i];
    const std::string ref_name = v.config_b == "aoti" ? "export_decomposed" : "aot_eager";
    worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", ref_name}, {"pid", ::getpid()}});
    auto ref = results.find(ref_name);
    if (ref == results.end()) {
      worker_detail::reseed_cpu_generator();
      ref = results.emplace(ref_name, run_config(ref_name, m, *inputs, ro)).first;
    }
    {
      v.message += "\n" + worker_detail::backend_attribution(v, results, ref_name, ref->second, m, opt_input, nonfinite,
                                                             nonfinite_forward);
      // PyTorch's ladder: a finding that static shapes do not show is dynamic shapes'.
      if (v.config_b == "inductor_dynamic" && agrees.count("inductor") && agrees["inductor"])
        v.message += "; dynamic shapes: inductor with static shapes agrees";
      if (v.config_b == "inductor_freezing" && agrees.count("inductor") && agrees["inductor"])
        v.message += "; freezing: inductor without freezing agrees";
    }
  }
  // One ONNX Runtime defect shown with and without graph optimisations is one finding, the
  // unoptimised configuration's (not an optimiser's doing); two findings of one kind were two
  // reports of one runtime (or loader) defect.
  {
    auto at = [&](std::string_view c) {
      for (std::size_t i = 0; i < reply.verdicts.size(); ++i)
        if (reply.verdicts[i].config_b == c && reply.verdicts[i].finding()) return static_cast<std::ptrdiff_t>(i);
      return std::ptrdiff_t{-1};
    };
    const auto opt_i = at("onnxruntime"), noopt_i = at("onnxruntime_noopt");
    if (opt_i >= 0 && noopt_i >= 0 && reply.verdicts[opt_i].kind == reply.verdicts[noopt_i].kind &&
        reply.verdicts[opt_i].config_a == reply.verdicts[noopt_i].config_a) {
      reply.verdicts[noopt_i].message +=
          "\nonnxruntime (graph optimisations on) shows it too: not an optimiser's doing";
      reply.verdicts.erase(reply.verdicts.begin() + opt_i);
    }
  }
  // The metamorphic check: the seed and the mutant, op by op, must agree within the operator's
  // tolerance; a difference is a violation only when the float64 runs differ too (otherwise
  // the model is ill-conditioned in float32, not changed by the mutation).
  reply.phases["judge"] = ms_since(judge_t0);
  if (!req.seed_model.empty()) {
    const auto meta_t0 = std::chrono::steady_clock::now();
    worker_detail::write_current(
        st, {{"id", req.id}, {"model", req.seed_model}, {"config", "metamorphic"}, {"pid", ::getpid()}});
    try {
      const auto seed = load_any(req.seed_model);
      const auto mine = results.find("eager_op_by_op");
      const auto theirs = run_config("eager_op_by_op", seed, *inputs, ro);
      if (mine != results.end() && mine->second.ok() && theirs.ok()) {
        const auto worst = worker_detail::output_excess(mine->second, theirs, req.meta_atol, req.meta_rtol);
        if (worst.first > 0) {
          auto m64 = results.find("float64_reference");
          run_result mine64 = m64 != results.end() ? m64->second : run_config("float64_reference", m, *inputs, ro);
          const auto theirs64 = run_config("float64_reference", seed, *inputs, ro);
          const auto w64 = mine64.ok() && theirs64.ok()
                               ? worker_detail::float64_excess(mine64, theirs64, req.meta_atol, req.meta_rtol).worst
                               : worst;
          if (w64.first > 0) {
            oracle::verdict v;
            v.kind = oracle::verdict_kind::metamorphic_mismatch;
            v.config_a = "seed";
            v.config_b = "mutant";
            v.input_index = w64.second;
            v.max_abs = w64.first;
            char buf[256];
            std::snprintf(buf, sizeof buf,
                          "the mutant's outputs differ from the seed's by %.3g beyond atol %.3g / rtol %.3g, and by "
                          "%.3g beyond the float64 tolerance in float64",
                          worst.first, req.meta_atol, req.meta_rtol, w64.first);
            v.message = buf;
            reply.verdicts.push_back(std::move(v));
          }
        }
      }
    } catch (const std::exception& e) {
      reply.error = "metamorphic check: " + clean_error(e.what());
    }
    reply.phases["metamorphic"] = ms_since(meta_t0);
  }
  const auto labels_t0 = std::chrono::steady_clock::now();
  const auto summary = sequence.summary();
  reply.labels = summary.labels;
  for (auto [i, j] : summary.transitions)
    reply.transitions.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
  reply.phases["labels"] += ms_since(labels_t0);
  reply.ok = true;
  reply.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return reply;
}

[[nodiscard]] TFG_TORCH_DECL campaign::skeleton skeleton_of(const model& m) {
  const auto& g = m.graph;
  const auto& order = g.topological_order();
  std::vector<std::int32_t> pos(g.node_capacity(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) pos[graph::index(order[i])] = static_cast<std::int32_t>(i);
  std::vector<std::uint32_t> input_index(g.edge_capacity(), 0);
  const auto ins = g.graph_inputs();
  for (std::size_t i = 0; i < ins.size(); ++i) input_index[graph::index(ins[i])] = static_cast<std::uint32_t>(i);
  campaign::skeleton k;
  k.graph_inputs = static_cast<std::uint32_t>(ins.size());
  for (auto n : order) {
    campaign::skeleton::node x;
    x.kind = g.data(n).name();
    for (auto e : g.inputs(n)) {
      const auto p = g.producer(e);
      if (p == graph::no_node) x.inputs.emplace_back(-1, input_index[graph::index(e)]);
      else x.inputs.emplace_back(pos[graph::index(p)], g.producer_slot(e));
    }
    for (auto e : g.outputs(n)) {
      const auto kind = g.data(e).kind;
      x.tensor_outputs.push_back(kind == state::value_kind::tensor || kind == state::value_kind::tensor_list);
    }
    k.nodes.push_back(std::move(x));
  }
  auto walk = [&](auto&& self, const output_tree& t, const std::string& path) -> void {
    if (t.how == output_tree::form::edge) {
      const auto p = g.producer(t.edge);
      k.outputs.push_back({path, p == graph::no_node ? -1 : pos[graph::index(p)],
                           p == graph::no_node ? input_index[graph::index(t.edge)] : g.producer_slot(t.edge)});
    }
    for (std::size_t i = 0; i < t.items.size(); ++i) self(self, t.items[i], ivalue::child_path(path, i));
  };
  walk(walk, m.output, "");
  return k;
}

[[nodiscard]] TFG_TORCH_DECL campaign::worker_reply handle_localisation(const campaign::worker_request& req,
                                                                        worker_state& st) {
  campaign::worker_reply reply;
  reply.id = req.id;
  worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", "load"}, {"pid", ::getpid()}});
  try {
    std::error_code ec;
    const auto stamp = std::filesystem::last_write_time(req.model, ec);
    const std::string key = req.model + "@" + std::to_string(ec ? 0 : stamp.time_since_epoch().count());
    if (key != st.model_key || !st.loaded) {
      st.loaded.emplace(load_any(req.model));
      st.model_key = key;
      st.cache = {};
    }
    auto it = st.inputs.find(req.inputs);
    if (it == st.inputs.end()) it = st.inputs.emplace(req.inputs, load_inputs(req.inputs, *st.loaded)).first;
    const auto& inputs = it->second;
    const auto& m = *st.loaded;
    if (req.op == campaign::request_op::describe) {
      reply.structure = skeleton_of(m);
      reply.ok = true;
      return reply;
    }
    if (req.op == campaign::request_op::nan_check) {
      worker_detail::write_current(
          st, {{"id", req.id}, {"model", req.model}, {"config", "nan_check"}, {"pid", ::getpid()}});
      oracle::nan_rules rules;
      for (const auto& [op, r] : req.nan_rules)
        if (auto rule = oracle::parse_nan_rule(r)) rules.emplace(op, *rule);
      const auto p = profiler({c10::Device(c10::kCPU), true, false, false}).run(m, inputs);
      const auto found = oracle::nan_vanished(
          m.graph, [&](graph::node_id n) { return m.graph.data(n).name(); },
          [&](graph::edge_id e) -> const state::edge_profile* {
            return graph::index(e) < p.edges.size() ? &p.edges[graph::index(e)] : nullptr;
          },
          rules);
      const auto& order = m.graph.topological_order();
      std::vector<std::size_t> pos(m.graph.node_capacity(), 0);
      for (std::size_t i = 0; i < order.size(); ++i) pos[graph::index(order[i])] = i;
      for (const auto& v : found) {
        campaign::located l;
        l.position = static_cast<std::int64_t>(pos[graph::index(v.node)]);
        l.op = m.graph.data(v.node).name();
        for (auto e : m.graph.inputs(v.node))
          if (graph::index(e) < p.edges.size() && v.run < p.edges[graph::index(e)].runs.size() &&
              p.edges[graph::index(e)].runs[v.run].kind == state::value_kind::tensor)
            l.inputs += (l.inputs.empty() ? "" : "; ") + state::class_of(p.edges[graph::index(e)].runs[v.run]);
        l.divergence.message = v.message;
        l.divergence.input_index = v.run;
        l.runs = 1;
        reply.found.push_back(std::move(l));
      }
      reply.ok = true;
      return reply;
    }
    if (req.input >= inputs.size()) {
      reply.error = "input " + std::to_string(req.input) + " of " + std::to_string(inputs.size());
      return reply;
    }
    const auto& input = inputs[req.input];
    worker_detail::write_current(st,
                                 {{"id", req.id}, {"model", req.model}, {"config", req.config_b}, {"pid", ::getpid()}});
    run_options ro;
    ro.threads = req.threads;
    ro.warmup = req.warmup;
    if (req.op == campaign::request_op::trace) {
      reply.found.push_back(trace_localise(m, input, req.config_a, req.config_b, req.threads));
    } else {
      const std::string key = req.config_a + "#" + std::to_string(req.input);
      if (st.cache.config_a != key) {
        st.cache = {};
        st.cache.model_path = req.model;
        st.cache.input = req.input;
        st.cache.config_a = key;
      }
      reply.found.push_back(probe_cut(m, input, req.config_a, req.config_b, req.cut, st.cache, ro, req.only_b));
    }
    reply.ok = true;
  } catch (const std::exception& e) {
    reply.error = clean_error(e.what());
  }
  return reply;
}

}  // namespace tfg::torch

namespace tfg::torch::worker_detail {

[[noreturn]] TFG_TORCH_DECL void end_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace tfg::torch::worker_detail

namespace tfg::torch {

TFG_TORCH_DECL int serve_requests(const std::filesystem::path& dir) {
  compiled_defaults().propagate_deaths = true;  // a dying Python worker is this worker's crash
  campaign::install_crash_handler();
  campaign::worker_channel ch;
  if (!ch.valid()) {
    std::fprintf(stderr, "flowmut worker: not started by a supervisor (fds 3 and 4 are not open)\n");
    return 2;
  }
  worker_state st;
  st.dir = dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  // The Python worker's files go under this folder; what earlier workers killed at a timeout
  // left goes now.
  compiled_defaults().work_root = dir;
  sweep_dead_work_dirs(dir);
  const char* persistent_env = std::getenv("TFG_WORKER_PERSISTENT");
  bool fork_server = !(persistent_env && std::string_view(persistent_env) == "1");
  std::optional<std::string> pending;  // a request a localisation session handed back
  for (;;) {
    auto line = pending ? std::move(pending) : ch.next_request();
    pending.reset();
    if (!line) break;
    campaign::worker_reply reply;
    const auto req = campaign::parse_request(*line);
    if (!req || req->op == campaign::request_op::ping) {
      if (!req) reply.error = req.error();
      else reply.id = req->id, reply.ok = true, reply.pid = ::getpid();
      ch.reply(campaign::to_line(reply));
      continue;
    }
    if (worker_detail::uses_cuda(*req)) fork_server = false;
    auto handle = [&] {
      return req->op == campaign::request_op::run ? handle_request(*req, st) : handle_localisation(*req, st);
    };
    if (!fork_server) {
      ch.reply(campaign::to_line(handle()));
      continue;
    }
    std::fflush(nullptr);
    int hand[2] = {-1, -1};
    const pid_t child = ::pipe2(hand, O_CLOEXEC) == 0 ? ::fork() : -1;
    if (child < 0) {  // no fork: serve this one in-process
      for (int fd : hand)
        if (fd >= 0) ::close(fd);
      ch.reply(campaign::to_line(handle()));
      continue;
    }
    if (child == 0) {
      ::close(hand[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() == 1) ::_exit(1);  // the server died before prctl took effect
      ch.reply(campaign::to_line(handle()));
      // A localisation session goes on while localisation steps come; anything else goes
      // back to the server.
      if (req->op != campaign::request_op::run) {
        while (auto next = ch.next_request()) {
          const auto r = campaign::parse_request(*next);
          if (!r || r->op == campaign::request_op::run || r->op == campaign::request_op::ping ||
              worker_detail::uses_cuda(*r)) {
            std::string out = *next + "\n";
            for (std::size_t off = 0; off < out.size();) {
              const ssize_t w = ::write(hand[1], out.data() + off, out.size() - off);
              if (w < 0 && errno == EINTR) continue;
              if (w <= 0) break;
              off += static_cast<std::size_t>(w);
            }
            break;
          }
          ch.reply(campaign::to_line(handle_localisation(*r, st)));
        }
      }
      std::fflush(nullptr);
      ::_exit(0);  // no atexit handlers or static destructors of the server's libraries
    }
    ::close(hand[1]);
    // The pipe first (it reaches EOF when the child ends), so a long handed-back line cannot
    // block the child while the server waits for it.
    std::string handed;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(hand[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      handed.append(buf, static_cast<std::size_t>(n));
    }
    ::close(hand[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) worker_detail::end_like(status);
    if (!handed.empty()) pending = handed.substr(0, handed.find('\n'));
  }
  return 0;
}

}  // namespace tfg::torch
