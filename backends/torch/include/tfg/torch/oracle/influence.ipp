#pragma once
// The definitions of influence.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/oracle/influence.hpp"

namespace tfg::torch::influence_detail {

[[nodiscard]] TFG_TORCH_DECL bool is_float_tensor(const c10::IValue& v) {
  if (!v.isTensor()) return false;
  const auto& t = v.toTensor();
  return t.defined() && t.is_floating_point() && t.numel() > 0;
}

[[nodiscard]] TFG_TORCH_DECL bool aliases_input(const executor& ex, graph::node_id n, const at::Tensor& t) {
  if (n == graph::no_node) return false;
  try {
    for (auto i : ex.target().graph.inputs(n)) {
      const auto& v = ex.value(i);
      if (v.isTensor() && v.toTensor().defined() && t.is_alias_of(v.toTensor())) return true;
      if (v.isTensorList())
        for (const at::Tensor& x : v.toTensorList().vec())
          if (x.defined() && t.is_alias_of(x)) return true;
    }
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

[[nodiscard]] TFG_TORCH_DECL bool reads_grad_input(const executor& ex, graph::node_id n) {
  if (n == graph::no_node) return false;
  for (auto i : ex.target().graph.inputs(n)) {
    const auto& v = ex.value(i);
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad()) return true;
    if (v.isTensorList())
      for (const at::Tensor& x : v.toTensorList().vec())
        if (x.defined() && x.requires_grad()) return true;
  }
  return false;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<char> edges_reaching(const graph_type& g,
                                                              const std::vector<graph::node_id>& order,
                                                              const std::vector<char>& node_target,
                                                              bool outputs_are_targets) {
  std::vector<char> node_r(g.node_capacity(), 0), edge_r(g.edge_capacity(), 0);
  auto edge_reaches = [&](graph::edge_id e) {
    if (outputs_are_targets && g.is_graph_output(e)) return true;
    for (const auto& u : g.consumers(e))
      if (node_r[graph::index(u.node)]) return true;
    return false;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const auto n = *it;
    bool r = !node_target.empty() && node_target[graph::index(n)];
    for (auto o : g.outputs(n)) {
      edge_r[graph::index(o)] = edge_reaches(o);
      r = r || edge_r[graph::index(o)];
    }
    node_r[graph::index(n)] = r;
  }
  for (auto e : g.edges())
    if (g.producer(e) == graph::no_node) edge_r[graph::index(e)] = edge_reaches(e);
  return edge_r;
}

TFG_TORCH_DECL void derive_batch_norm_statistics(const executor& ex, const std::vector<at::Tensor>& grad,
                                                 gradient_state& st) {
  const auto& g = ex.target().graph;
  static const auto batch_norm = c10::Symbol::fromQualString("aten::batch_norm");
  for (auto n : ex.order()) {
    const auto& d = g.data(n);
    if (d.kind != batch_norm || d.args.size() != 9) continue;
    const auto& a = d.args;
    auto edge_arg = [&](std::size_t k) {
      return a[k].how == argument::form::edge ? g.inputs(n)[a[k].input] : graph::edge_id{};
    };
    auto is_stat = [&](std::size_t k) {
      if (a[k].how != argument::form::edge) return false;
      const auto e = edge_arg(k);
      return st.no_point[graph::index(e)] && !grad[graph::index(e)].defined() && g.consumers(e).size() == 1 &&
             is_float_tensor(ex.value(e));
    };
    if (a[5].how != argument::form::constant || !a[5].constant.isBool()) continue;
    if (a[5].constant.toBool()) {  // training: batch statistics are used
      for (std::size_t k : {3, 4})
        if (is_stat(k)) st.g.add(graph::index(edge_arg(k)), 0.0);
      continue;
    }
    if (a[7].how != argument::form::constant || !a[7].constant.isDouble()) continue;
    if (a[1].how != argument::form::edge || a[2].how != argument::form::edge || !is_stat(3) || !is_stat(4)) continue;
    const auto& gw = grad[graph::index(edge_arg(1))];
    const auto& gb = grad[graph::index(edge_arg(2))];
    const auto& wv = ex.value(edge_arg(1));
    if (!gw.defined() || !gb.defined() || !is_float_tensor(wv)) continue;
    const auto w = wv.toTensor().detach().to(at::kDouble);
    const auto var = ex.value(edge_arg(4)).toTensor().detach().to(at::kDouble) + a[7].constant.toDouble();
    if (w.sizes() != var.sizes() || gw.sizes() != var.sizes() || gb.sizes() != var.sizes()) continue;
    const auto d_mean = (w / var.sqrt() * gb.to(at::kDouble)).abs().mean().item<double>();
    const auto d_var = (w / (2 * var) * gw.to(at::kDouble)).abs().mean().item<double>();
    st.g.add(graph::index(edge_arg(3)), d_mean);
    st.g.add(graph::index(edge_arg(4)), d_var);
  }
}

TFG_TORCH_DECL bool gradient_pass(executor& ex, const std::vector<c10::IValue>& args, gradient_state& st) {
  const auto& g = ex.target().graph;
  at::AutoGradMode grad_mode(true);
  std::vector<at::Tensor> points(g.edge_capacity());
  std::vector<std::int64_t> version(g.edge_capacity(), -1);
  std::vector<char> fresh(g.edge_capacity(), 0);
  st.next_pos = 0;
  auto observe = [&](graph::node_id n, std::span<const graph::edge_id> outs) {
    if (n != graph::no_node) ++st.next_pos;
    for (auto e : outs) {
      const auto i = graph::index(e);
      auto& v = ex.value_mut(e);
      if (!is_float_tensor(v)) continue;
      st.floating[i] = 1;
      at::Tensor t = v.toTensor();
      const bool is_fresh = !aliases_input(ex, n, t);
      fresh[i] = is_fresh;
      bool cut = false;
      if (t.requires_grad()) {
        const auto fn = t.grad_fn();
        if (fn && fn->name().find("NotImplemented") != std::string::npos) {
          cut = true;
          const auto& name = g.data(n).name();
          if (!st.cut[graph::index(n)] && st.note.find(name) == std::string::npos)
            st.note += (st.note.empty() ? "" : "; ") + name + " has no derivative (upstream edges by perturbation)";
        }
      } else if (!is_fresh && reads_grad_input(ex, n)) {
        cut = true;  // aten::detach & co.: the values pass, the gradient does not (zeros_like is no cut)
      }
      if (cut) st.cut[graph::index(n)] = 1;
      if (!t.requires_grad() && st.no_point[i]) continue;
      if (cut || !t.requires_grad()) {
        st.made_leaf[i] = 1;
        at::Tensor leaf = t.detach().requires_grad_(true);
        points[i] = leaf;
        v = c10::IValue((is_fresh || st.clone_leaves) ? leaf.clone() : leaf);
      } else {
        points[i] = t;
        version[i] = t._version();
        if (is_fresh && st.clone_fresh[i]) v = c10::IValue(t.clone());
      }
    }
  };
  const c10::IValue out = ex.run(args, observe);
  bool grew = false;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (version[i] >= 0 && fresh[i] && !st.clone_fresh[i] && points[i]._version() != version[i]) {
      st.clone_fresh[i] = 1;
      grew = true;
    }
  if (grew) return false;
  std::vector<at::Tensor> outs = ivalue::floating_tensors(out);
  at::Tensor loss;
  for (const auto& t : outs) {
    if (!t.requires_grad()) continue;
    auto s = t.sum(at::kDouble);
    loss = loss.defined() ? loss + s : s;
  }
  std::vector<at::Tensor> inputs;
  std::vector<std::size_t> where;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (points[i].defined()) {
      inputs.push_back(points[i]);
      where.push_back(i);
    }
  if (!loss.defined() || inputs.empty()) {
    for (auto i : where) st.undefined[i] = 1;  // no floating output: nothing to differentiate
    return true;
  }
  const auto grads = ::torch::autograd::grad({loss}, inputs, {}, /*retain_graph=*/false,
                                             /*create_graph=*/false, /*allow_unused=*/true);
  std::vector<at::Tensor> grad_of(points.size());
  for (std::size_t j = 0; j < where.size(); ++j) {
    if (!grads[j].defined()) {  // no differentiable path: 0, unless a cut explains it (influence())
      st.undefined[where[j]] = 1;
      st.g.add(where[j], 0.0);
      continue;
    }
    grad_of[where[j]] = grads[j].detach();
    const double l1 = grads[j].detach().abs().sum(at::kDouble).item<double>();
    st.g.add(where[j], l1 / static_cast<double>(grads[j].numel()));
  }
  derive_batch_norm_statistics(ex, grad_of, st);
  return true;
}

TFG_TORCH_DECL bool refuse_grad_slots(const executor& ex, graph::node_id n, const std::string& what,
                                      gradient_state& st) {
  const auto& g = ex.target().graph;
  const auto& d = g.data(n);
  const auto inputs = g.inputs(n);
  std::vector<std::size_t> slots;
  if (auto p = what.find("argument '"); p != std::string::npos) {
    p += 10;
    const auto name = what.substr(p, what.find('\'', p) - p);
    std::optional<std::size_t> index;
    bool conflict = false;
    for (const auto& op : ::torch::jit::getAllOperatorsFor(d.kind))
      if (auto k = op->schema().argumentIndexWithName(name)) {
        conflict = conflict || (index && *index != static_cast<std::size_t>(*k));
        index = static_cast<std::size_t>(*k);
      }
    if (index && !conflict) slots.push_back(*index);
  }
  if (slots.empty())
    for (std::size_t a = 0; a < d.args.size(); ++a)
      if (d.args[a].how == argument::form::edge && st.made_leaf[graph::index(inputs[d.args[a].input])])
        slots.push_back(a);
  bool added = false;
  for (auto a : slots) {
    const std::pair<c10::Symbol, std::size_t> slot{d.kind, a};
    if (std::find(st.no_grad_slots.begin(), st.no_grad_slots.end(), slot) != st.no_grad_slots.end()) continue;
    st.no_grad_slots.push_back(slot);
    added = true;
  }
  if (!added) return false;
  for (auto m : ex.order()) {
    const auto& dm = g.data(m);
    for (const auto& [kind, a] : st.no_grad_slots)
      if (dm.kind == kind && a < dm.args.size() && dm.args[a].how == argument::form::edge)
        st.no_point[graph::index(g.inputs(m)[dm.args[a].input])] = 1;
  }
  return true;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<graph::edge_id> spread(const std::vector<graph::edge_id>& items,
                                                                std::size_t k) {
  if (items.size() <= k) return items;
  std::vector<graph::edge_id> out;
  out.reserve(k);
  for (std::size_t j = 0; j < k; ++j) out.push_back(items[j * items.size() / k]);
  return out;
}

}  // namespace tfg::torch::influence_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL influence_result influence(const model& m, const input_set& inputs,
                                                        influence_options opt) {
  namespace id = influence_detail;
  const auto t0 = std::chrono::steady_clock::now();
  const auto& g = m.graph;
  const std::size_t cap = g.edge_capacity();
  influence_result r;
  r.g.assign(cap, std::numeric_limits<double>::quiet_NaN());
  r.method.assign(cap, influence_method::none);
  const std::size_t n_inputs = opt.max_inputs ? std::min(opt.max_inputs, inputs.size()) : inputs.size();

  executor ex(m);
  const auto& order = ex.order();
  std::vector<std::size_t> pos_after(cap, 0);  // where a re-run starts for an edge: after its producer
  for (std::size_t p = 0; p < order.size(); ++p)
    for (auto e : g.outputs(order[p])) pos_after[graph::index(e)] = p + 1;
  std::vector<graph::edge_id> topo_edges;  // graph inputs, then node outputs in execution order
  for (auto e : g.graph_inputs()) topo_edges.push_back(e);
  for (auto n : order)
    for (auto e : g.outputs(n)) topo_edges.push_back(e);
  const auto reaches_output = id::edges_reaching(g, order, {}, true);

  // ---- gradient ----
  id::gradient_state st(g);
  bool gradient_ok = !opt.force_perturbation;
  if (gradient_ok) {
    try {
      for (std::size_t k = 0; k < n_inputs; ++k) {
        const auto args = id::copy_arguments(inputs[k]);
        for (int attempt = 0;; ++attempt) {
          if (attempt >= 32)
            throw model_error("the gradient pass kept failing after " + std::to_string(attempt) + " retries");
          try {
            if (id::gradient_pass(ex, args, st)) break;
          } catch (const std::exception& e) {
            const std::string what = e.what();
            // A leaf used in place (a view of a constant, then add_): copy aliasing leaves too.
            const bool in_place =
                what.find("in-place") != std::string::npos || what.find("inplace") != std::string::npos;
            if (in_place && !st.clone_leaves) {
              st.clone_leaves = true;
              continue;
            }
            // An argument that must not require grad (batch_norm's running statistics).
            if (st.next_pos < order.size() && id::refuse_grad_slots(ex, order[st.next_pos], what, st)) continue;
            throw;
          }
        }
      }
    } catch (const std::exception& e) {
      gradient_ok = false;
      std::string what = first_line(e.what());
      r.note = "autograd failed: " + what + "; every edge by perturbation";
      st = id::gradient_state(g);
    }
  } else {
    r.note = "perturbation forced";
  }
  std::vector<char> reaches_cut(cap, 0);
  if (gradient_ok) {
    r.note = st.note;
    std::vector<char> cut_target(g.node_capacity(), 0);
    bool any = false;
    for (auto e : g.edges())  // a refused argument without derived gradient blocks its upstream too
      if (st.no_point[graph::index(e)] && !st.g.count[graph::index(e)])
        for (const auto& u : g.consumers(e)) st.cut[graph::index(u.node)] = 1;
    for (auto n : order)
      if (st.cut[graph::index(n)]) {
        bool live = false;
        for (auto o : g.outputs(n)) live = live || reaches_output[graph::index(o)];
        cut_target[graph::index(n)] = live;
        any = any || live;
      }
    if (any) reaches_cut = id::edges_reaching(g, order, cut_target, false);
    for (auto e : g.edges()) {
      const auto i = graph::index(e);
      if (!st.floating[i]) continue;
      if (!reaches_output[i]) {
        r.g[i] = 0.0;
        r.method[i] = influence_method::gradient;
      } else if (st.g.count[i] && !(st.undefined[i] && reaches_cut[i])) {
        r.g[i] = st.g.mean(i);
        r.method[i] = influence_method::gradient;
      }
    }
  }

  // ---- perturbation ----
  const bool perturb = opt.perturbation_fallback && n_inputs > 0 && opt.max_perturbed_edges > 0;
  if (perturb) {
    std::vector<graph::edge_id> chosen;
    std::vector<char> floating = st.floating;
    id::perturber pt(ex, pos_after);
    at::Generator gen = at::detail::createCPUGenerator(opt.seed);
    id::accumulator acc(cap);
    for (std::size_t k = 0; k < n_inputs; ++k) {
      pt.baseline(inputs[k], floating);
      if (k == 0) {
        std::vector<graph::edge_id> missing, partial;
        for (auto e : topo_edges) {
          const auto i = graph::index(e);
          if (!floating[i] || !reaches_output[i]) continue;
          if (r.method[i] == influence_method::none) missing.push_back(e);
          else if (reaches_cut[i]) partial.push_back(e);
        }
        chosen = id::spread(missing, opt.max_perturbed_edges);
        const auto rest = opt.max_perturbed_edges - chosen.size();
        for (auto e : id::spread(partial, rest)) chosen.push_back(e);
        if (chosen.empty()) break;
      }
      for (auto e : chosen) acc.add(graph::index(e), pt.estimate(e, opt, gen));
    }
    for (auto e : chosen) {
      const auto i = graph::index(e);
      if (!acc.count[i]) continue;  // every probe failed: keep a partial gradient if any
      r.g[i] = acc.mean(i);
      r.method[i] = influence_method::perturbation;
    }
    // Structural zeros need no run: no graph output depends on the edge.
    if (!gradient_ok)
      for (auto e : g.edges()) {
        const auto i = graph::index(e);
        if (floating[i] && !reaches_output[i]) {
          r.g[i] = 0.0;
          r.method[i] = influence_method::gradient;
        }
      }
  }
  for (auto mth : r.method) {
    r.gradient_edges += mth == influence_method::gradient;
    r.perturbed_edges += mth == influence_method::perturbation;
  }
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace tfg::torch
