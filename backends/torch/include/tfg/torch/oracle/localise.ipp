#pragma once
// The definitions of localise.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/oracle/localise.hpp"

namespace tfg::torch::localise_detail {

[[nodiscard]] TFG_TORCH_DECL c10::IValue frozen_copy(const c10::IValue& v) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    return t.defined() ? c10::IValue(t.detach().clone()) : v;
  }
  if (v.isTensorList() || v.isTuple() || v.isList())
    return ivalue::deep_clone(v, [](const at::Tensor& t) { return t.detach().clone(); });
  return v;
}

}  // namespace tfg::torch::localise_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL edge_values snapshot_run(std::string_view config, const model& m,
                                                      const std::vector<c10::IValue>& input, int threads) {
  edge_values out;
  out.at.assign(m.graph.edge_capacity(), c10::IValue());
  const configuration_scope running(config);
  std::optional<model> widened;
  const model* run = &m;
  ivalue::tensor_transform tf;
  int n_threads = threads;
  if (config == "float64_reference") {
    widened.emplace(widened_model(m, &input));
    run = &*widened;
    tf = widened_input;
    out.widened = true;
  } else if (config == "channels_last") {
    tf = channels_last_input;
  } else if (config == "threads_1_vs_n") {
    n_threads = std::max(2, hardware_threads());
  } else if (config != "eager_op_by_op") {
    out.error = "configuration `" + std::string(config) + "` does not run op by op";
    return out;
  }
  compat::intra_op_threads thread_scope(n_threads);
  at::NoGradGuard no_grad;
  executor ex(*run);
  const auto& order = ex.order();
  std::size_t done = 0;
  try {
    (void)ex.run(ivalue::deep_clone(input, tf), [&](graph::node_id n, std::span<const graph::edge_id> edges) {
      for (auto e : edges) out.at[graph::index(e)] = localise_detail::frozen_copy(ex.value(e));
      if (n != graph::no_node) ++done;
    });
  } catch (const std::exception& e) {
    out.error = clean_error(e.what());
    out.failed_position = done < order.size() ? static_cast<std::int64_t>(done) : -1;
  }
  return out;
}

TFG_TORCH_DECL void describe_node(const model& m, std::size_t position, const edge_values& values,
                                  campaign::located& out) {
  const auto& g = m.graph;
  const auto& order = g.topological_order();
  if (position >= order.size()) return;
  const auto n = order[position];
  out.position = static_cast<std::int64_t>(position);
  out.op = g.data(n).name();
  std::string cls;
  for (auto e : g.inputs(n)) {
    const auto& v = values.at[graph::index(e)];
    if (!v.isTensor() || !v.toTensor().defined()) continue;
    const auto st = tensor_state_of(v.toTensor(), /*with_numbers=*/true);
    cls += (cls.empty() ? "" : "; ") + state::class_of(st);
    std::string shape = "[";
    for (std::size_t i = 0; i < st.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(st.shape[i]);
    shape += "]";
    std::string strides = "[";
    for (std::size_t i = 0; i < st.strides.size(); ++i) strides += (i ? "," : "") + std::to_string(st.strides[i]);
    strides += "]";
    char range[96];
    std::snprintf(range, sizeof range, " range [%.4g, %.4g]", st.numbers.min, st.numbers.max);
    out.states.push_back(state::class_of(st) + " " + shape + " strides " + strides + " offset " +
                         std::to_string(st.storage_offset) + range);
  }
  out.inputs = cls;
}

[[nodiscard]] TFG_TORCH_DECL oracle::verdict judge_value(const c10::IValue& a, const c10::IValue& b,
                                                         const c10::IValue* r, bool a_widened, bool b_widened,
                                                         const leaf_traits& tr, const compare_options& opt,
                                                         double spread) {
  oracle::verdict v;
  try {
    if (a.isTensorList() || b.isTensorList()) {
      const auto la = ivalue::flatten(a), lb = ivalue::flatten(b);
      const auto lr = r ? ivalue::flatten(*r) : output_list{};
      if (la.size() != lb.size()) {
        v.kind = oracle::verdict_kind::state_mismatch;
        v.message = "tensor lists of different length";
        return v;
      }
      for (std::size_t i = 0; i < la.size(); ++i) {
        oracle::verdict w;
        compare_leaf(w, la[i].value, lb[i].value, i < lr.size() ? &lr[i].value : nullptr, a_widened, b_widened, tr,
                     false, opt);
        if (w.kind > v.kind) v = w;
      }
      return v;
    }
    compare_leaf(v, a, b, r, a_widened, b_widened, tr, false, opt, spread);
  } catch (const std::exception& e) {
    v.kind = oracle::verdict_kind::state_mismatch;
    v.message = "cannot compare: " + clean_error(e.what());
  }
  return v;
}

[[nodiscard]] TFG_TORCH_DECL compare_options options_for(std::string_view b, const std::vector<c10::IValue>& input,
                                                         bool nonfinite_parameters, bool nonfinite_forward) {
  compare_options opt;
  // Compiled configurations choose their outputs' strides and, but for aot_eager (the same ATen
  // calls, functionalised), rewrite the arithmetic (fusion, decomposition, vectorised math).
  const bool compiled = is_compiled_config(b);
  opt.layout_changes = b == "channels_last" || b == "frozen_optimized" || compiled;
  // The float64 runs take other kernels too (no oneDNN in float64: the native convolution
  // multiplies the zero padding, oneDNN skips it, so Inf weights give NaN at the borders in
  // one only).
  opt.rewrites_arithmetic = b == "frozen_optimized" || b == "autograd" || b == "float64_reference" ||
                            b == "autograd_float64" || (compiled && b != "aot_eager");
  opt.nonfinite_parameters = nonfinite_parameters;
  opt.nonfinite_forward = nonfinite_forward;
  opt.input_precision = input_precision(input);
  return opt;
}

[[nodiscard]] TFG_TORCH_DECL bool accurate_on_own_inputs(const model& m, graph::node_id n, const edge_values& vals,
                                                         const std::vector<leaf_traits>& traits,
                                                         const compare_options& opt) {
  if (vals.widened) return true;
  try {
    const auto w = window_of(m, n, 0);
    const auto wm = window_model(m, w, n);
    std::vector<c10::IValue> in;
    for (auto e : wm.boundary) in.push_back(vals.at.at(graph::index(e)));
    const auto wide = widened_model(wm.reduced, &in);
    const configuration_scope running("float64_reference");
    at::NoGradGuard no_grad;
    executor ex(wide);
    (void)ex.run(ivalue::deep_clone(in, widened_input));
    const auto outs = m.graph.outputs(n);
    const auto wide_outs = wide.graph.graph_outputs();
    if (outs.size() != wide_outs.size()) return false;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const auto& got = vals.at.at(graph::index(outs[k]));
      if (!(got.isTensor() || got.isTensorList())) continue;
      auto exact = ex.value(wide_outs[k]);
      if (got.isTensor() && exact.isTensor() && got.toTensor().defined() && exact.toTensor().defined() &&
          got.toTensor().is_floating_point() && exact.toTensor().is_floating_point())
        exact = c10::IValue(exact.toTensor().to(got.toTensor().scalar_type()));
      const auto v = judge_value(got, exact, nullptr, false, true, traits[graph::index(outs[k])], opt);
      if (v.finding()) return false;
    }
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

[[nodiscard]] TFG_TORCH_DECL bool reads_flipped_selection(const model& m, graph::node_id n, const edge_values& a,
                                                          const edge_values& b,
                                                          const std::vector<leaf_traits>& traits) {
  for (auto in : m.graph.inputs(n)) {
    const auto k = graph::index(in);
    // `selection` alone: `tie` also marks element-wise and full-reduction max/min, which select
    // nothing, so an integer max that differs would pass for a flip.
    if (!traits[k].selection || k >= a.at.size() || k >= b.at.size()) continue;
    if (!a.at[k].isTensor() || !b.at[k].isTensor()) continue;
    const auto& ia = a.at[k].toTensor();
    const auto& ib = b.at[k].toTensor();
    if (!ia.defined() || !ib.defined() || ia.is_floating_point() || ia.sizes() != ib.sizes() ||
        ia.scalar_type() != ib.scalar_type())
      continue;
    if (!at::equal(ia, ib)) return true;
  }
  return false;
}

[[nodiscard]] TFG_TORCH_DECL campaign::located trace_localise(const model& m, const std::vector<c10::IValue>& input,
                                                              std::string_view a_name, std::string_view b_name,
                                                              int threads) {
  campaign::located out;
  const auto a = snapshot_run(a_name, m, input, threads);
  const auto b = snapshot_run(b_name, m, input, threads);
  out.runs = 2;
  std::optional<edge_values> r64;
  if (a_name != "float64_reference" && b_name != "float64_reference") {
    r64.emplace(snapshot_run("float64_reference", m, input, threads));
    ++out.runs;
  }
  // Peers: the other float32 op-by-op configurations (their spread around a is this model's
  // float32 rounding noise at each edge).
  std::vector<edge_values> peers;
  for (const char* p : {"threads_1_vs_n", "channels_last"}) {
    if (p == a_name || p == b_name) continue;
    auto pv = snapshot_run(p, m, input, threads);
    ++out.runs;
    if (pv.ok()) peers.push_back(std::move(pv));
  }
  if (!a.ok() && !b.ok()) {
    out.note = "both configurations fail: " + a.error;
    return out;
  }
  if (a.ok() != b.ok()) {
    const auto& bad = a.ok() ? b : a;
    if (bad.failed_position >= 0) describe_node(m, static_cast<std::size_t>(bad.failed_position), a.ok() ? a : b, out);
    out.divergence.kind = oracle::verdict_kind::error_in_one;
    out.divergence.config_a = std::string(a_name);
    out.divergence.config_b = std::string(b_name);
    out.divergence.message = (a.ok() ? std::string(b_name) : std::string(a_name)) + ": " + bad.error;
    return out;
  }
  const auto traits = edge_traits(m);
  const auto opt = options_for(b_name, input, has_nonfinite_parameters(m));
  const auto& g = m.graph;
  const auto& order = g.topological_order();
  for (std::size_t pos = 0; pos < order.size(); ++pos) {
    const auto n = order[pos];
    if (g.data(n).kind == c10::prim::Constant) continue;
    for (auto e : g.outputs(n)) {
      const auto i = graph::index(e);
      const auto& va = a.at[i];
      const auto& vb = b.at[i];
      if (!(va.isTensor() || va.isTensorList()) || !(vb.isTensor() || vb.isTensorList())) continue;
      const c10::IValue* vr = r64 && r64->ok() ? &r64->at[i] : nullptr;
      double spread = 0;
      for (const auto& p : peers) spread = std::max(spread, spread_of(va, p.at[i], false));
      auto v = judge_value(va, vb, vr, a.widened, b.widened, traits[i], opt, spread);
      if (!v.finding()) continue;
      v.config_a = std::string(a_name);
      v.config_b = std::string(b_name);
      out.divergence = v;
      describe_node(m, pos, a, out);
      // A selection flip (reads_flipped_selection): everything downstream legitimately differs.
      if (reads_flipped_selection(m, n, a, b, traits)) {
        out.conditioned = true;
        out.note = out.op + " reads indices that differ between " + std::string(a_name) + " and " +
                   std::string(b_name) +
                   " and come from a tie-dependent operator: the configurations selected other elements at "
                   "near-equal scores, a legitimate difference, not a defect";
        return out;
      }
      // Ill-conditioning: an operator that computes its outputs accurately from the inputs each
      // configuration gave it (e.g. a softmax after x + (-1e4): the float32 add's absorption,
      // within tolerance at the add, is amplified by the softmax) is not wrong; the divergence
      // is upstream rounding it amplifies.
      // The same holds for NaN and Inf that appear in one run only: an operator whose exact
      // result exceeds float32's range gives Inf in float32 and a finite value in float64 (a
      // division by a denormal), and both are right.
      const bool nonfinite = v.kind == oracle::verdict_kind::nan_inf_mismatch;
      if ((v.kind == oracle::verdict_kind::numeric_mismatch || nonfinite) &&
          accurate_on_own_inputs(m, n, a, traits, opt) && accurate_on_own_inputs(m, n, b, traits, opt)) {
        out.conditioned = true;
        out.note =
            nonfinite ? out.op + " computes its output correctly rounded from its inputs in " + std::string(a_name) +
                            " and " + std::string(b_name) + ": NaN or Inf in one of them only is the dtype's range " +
                            "(an exact value beyond float32's largest overflows to Inf), not a defect"
                      : out.op + " computes its output accurately from its inputs in " + std::string(a_name) + " and " +
                            std::string(b_name) + " (within the float32 floor of float64 on the same inputs): the " +
                            "divergence is upstream float32 rounding it amplifies (ill-conditioned), not a defect";
      }
      return out;
    }
  }
  out.note = "no edge differs beyond tolerance in op-by-op runs";
  return out;
}

[[nodiscard]] TFG_TORCH_DECL model cut_model(const model& m, std::span<const graph::edge_id> edges) {
  const auto& g = m.graph;
  std::vector<char> in_cone(g.node_capacity(), 0);
  std::vector<graph::node_id> stack;
  for (auto e : edges)
    if (auto p = g.producer(e); p != graph::no_node) stack.push_back(p);
  while (!stack.empty()) {
    const auto n = stack.back();
    stack.pop_back();
    if (in_cone[graph::index(n)]) continue;
    in_cone[graph::index(n)] = 1;
    for (auto e : g.inputs(n))
      if (auto p = g.producer(e); p != graph::no_node && !in_cone[graph::index(p)]) stack.push_back(p);
  }
  model out;
  out.source = m.source + " (cut)";
  out.input_names = m.input_names;
  std::vector<graph::edge_id> map(g.edge_capacity(), graph::no_edge);
  for (auto e : g.graph_inputs()) map[graph::index(e)] = out.graph.add_input(g.data(e));
  for (auto n : g.topological_order())
    if (in_cone[graph::index(n)]) copy_node_into(g, n, out.graph, map);
  out.output.how = output_tree::form::tuple;
  std::vector<c10::TypePtr> types;
  for (auto e : edges) {
    const auto ne = map[graph::index(e)];
    out.graph.add_output(ne);
    output_tree leaf;
    leaf.how = output_tree::form::edge;
    leaf.edge = ne;
    leaf.type = g.data(e).type;
    types.push_back(c10::unshapedType(g.data(e).type));
    out.output.items.push_back(std::move(leaf));
  }
  out.output.type = c10::TupleType::create(types);
  return out;
}

[[nodiscard]] TFG_TORCH_DECL campaign::located probe_cut(const model& m, const std::vector<c10::IValue>& input,
                                                         std::string_view a_name, std::string_view b_name,
                                                         std::span<const campaign::cut_edge> cut, probe_cache& cache,
                                                         const run_options& ro, bool only_b) {
  campaign::located out;
  const auto& g = m.graph;
  const auto& order = g.topological_order();
  std::vector<graph::edge_id> edges;
  std::vector<std::size_t> owner;  // edges[k] belongs to cut[owner[k]]
  for (std::size_t i = 0; i < cut.size(); ++i) {
    const auto& c = cut[i];
    if (c.position >= order.size()) {
      out.note = "cut position " + std::to_string(c.position) + " beyond the model's " + std::to_string(order.size()) +
                 " nodes";
      return out;
    }
    const auto n = order[c.position];
    out.kinds.push_back(g.data(n).name());
    const auto outs = g.outputs(n);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      if (c.output >= 0 && static_cast<std::size_t>(c.output) != k) continue;
      const auto kind = g.data(outs[k]).kind;
      if (kind != state::value_kind::tensor && kind != state::value_kind::tensor_list) continue;
      edges.push_back(outs[k]);
      owner.push_back(i);
    }
  }
  out.diverges.assign(cut.size(), 0);
  if (edges.empty()) {
    out.note = "the cut has no tensor edge";
    return out;
  }
  const auto cut_m = cut_model(m, edges);
  const input_set one{input};
  const bool gradient = is_gradient_config(b_name);
  auto opt = options_for(b_name, input, has_nonfinite_parameters(m));
  if (only_b) {  // localising a crash: that b completes on this cut is the answer
    const auto rb = run_config(b_name, cut_m, one, ro);
    out.runs = 1;
    if (!rb.ok()) out.note = std::string(b_name) + " fails on the cut: " + rb.error;
    return out;
  }
  if (!cache.a) {  // the caller resets the cache when the model, the input or a change
    cache.a.emplace(snapshot_run(gradient ? "eager_op_by_op" : a_name, m, input, ro.threads));
    cache.r64.emplace(snapshot_run("float64_reference", m, input, ro.threads));
    out.runs += 2;
    if (!gradient)
      for (const char* p : {"threads_1_vs_n", "channels_last"}) {
        auto pv = snapshot_run(p, m, input, ro.threads);
        ++out.runs;
        if (pv.ok()) cache.peers.push_back(std::move(pv));
      }
  }
  // A one-node cut describes its node (the bisection's answer is one of these).
  if (cut.size() == 1) {
    describe_node(m, cut[0].position, *cache.a, out);
    out.divergence = {};
  }
  if (gradient) {
    const auto ra = run_config(a_name, cut_m, one, ro);
    const auto rb = run_config(b_name, cut_m, one, ro);
    const auto rr = run_config("autograd_float64", cut_m, one, ro);
    out.runs += 3;
    const auto v = judge(ra, rb, opt, &cut_m, rr.ok() ? &rr : nullptr);
    out.divergence = v;
    if (v.finding()) out.diverges.assign(cut.size(), 1);
    return out;
  }
  const auto rb = run_config(b_name, cut_m, one, ro);
  out.runs += 1;
  if (!rb.ok()) {
    out.divergence.kind = oracle::verdict_kind::error_in_one;
    out.divergence.message = std::string(b_name) + ": " + rb.error;
    out.diverges.assign(cut.size(), 1);
    return out;
  }
  const auto traits = edge_traits(m);
  const auto& leaves = rb.outputs.at(0);
  // The cut returns a tuple of its edges; b's outputs are flattened leaves ("k" for a tensor
  // edge, "k.j" for element j of a tensor-list edge). Each edge is judged against its own
  // leaves, reassembled into a list for a list edge: pairing edges and leaves by position
  // shifted every edge after a list (a chunk's two tensors) onto the wrong value.
  auto value_of = [&](std::size_t k) -> c10::IValue {
    const auto key = std::to_string(k);
    std::vector<at::Tensor> items;
    for (const auto& l : leaves) {
      if (l.path == key) return l.value;
      if (l.path.size() > key.size() && l.path.compare(0, key.size() + 1, key + ".") == 0 && l.value.isTensor())
        items.push_back(l.value.toTensor());
    }
    if (items.empty()) return c10::IValue();
    return c10::IValue(c10::List<at::Tensor>(items));
  };
  for (std::size_t k = 0; k < edges.size(); ++k) {
    const auto i = graph::index(edges[k]);
    const auto& va = cache.a->at[i];
    const auto vb = value_of(k);
    if (vb.isNone()) continue;
    const c10::IValue* vr = cache.r64 && cache.r64->ok() ? &cache.r64->at[i] : nullptr;
    double spread = 0;
    for (const auto& p : cache.peers) spread = std::max(spread, spread_of(va, p.at[i], false));
    auto v = judge_value(va, vb, vr, false, rb.widened, traits[i], opt, spread);
    v.config_a = std::string(a_name);
    v.config_b = std::string(b_name);
    if (v.finding()) out.diverges[owner[k]] = 1;
    if (v.kind > out.divergence.kind) out.divergence = v;
  }
  return out;
}

}  // namespace tfg::torch
