#pragma once
/// Raw influence g(e) of every edge of a model on its output (flowmut-method.md, "Influence"):
///
///     g(e) = mean over profiling inputs x of ||d l(f(x)) / d a(e,x)||_1 / numel(a(e,x))
///
/// with a(e,x) the value of edge e on input x and l = sum of every element of every floating
/// tensor the model returns (accumulated in float64, as configs.hpp's autograd
/// configurations do). Normalising to I(c) in [0, 1] is select/features.hpp's
/// normalise_influence(); this file only produces raw g per edge.
///
/// **Gradient** (the default): one op-by-op forward under autograd per input, in which every
/// floating tensor edge becomes a differentiation point, then one backward
/// (torch::autograd::grad with allow_unused) for all points at once. Cost: about one forward
/// plus one backward per input, plus a copy of every constant and input tensor (those are made
/// leaves; consumers read a copy so that in-place ops on them stay legal).
///  - An edge whose tensor a later in-place op modifies (`aten::relu_`, `aten::add_`) would
///    otherwise report the gradient of the modified value: such an edge, when its producer
///    made a fresh tensor, is detected by its version counter and the input is run again with
///    consumers reading a copy, so the point keeps the pre-modification value. Edges whose
///    tensor aliases their producer's input (views, in-place results) stay the aliased tensor
///    and report the gradient of its last state (an approximation, exact for add_/copy-like
///    mutations, not for relu_ on a view).
///  - A node whose floating output has no derivative (grad_fn `NotImplemented`, e.g.
///    `aten::_native_multi_head_attention` of a traced nn.MultiheadAttention fast path) or
///    returns a view of an input that requires grad without requiring grad itself
///    (`aten::detach`) is a *cut*: its outputs become fresh leaves so the backward never
///    fails and everything downstream keeps exact gradients; edges upstream of a cut (that
///    reach a graph output through it) get their influence by perturbation (below), since
///    their gradient misses the cut path. `note` names the operators without derivative.
///  - An operator argument that must not require grad (native_batch_norm's running_mean /
///    running_var: "not differentiable with respect to argument 'running_mean'") fails the
///    forward at that node: the (operator, argument) slot is recorded from the message and the
///    schema, every edge feeding such a slot stops being a point, and the input runs again
///    (once per slot and model). For aten::batch_norm the statistics' gradients are then
///    derived exactly from those of weight and bias (derive_batch_norm_statistics); other
///    refused edges, and what lies upstream of them, go to perturbation.
///  - A floating edge that reaches a graph output but gets no gradient, with no cut
///    downstream, reaches it only through non-differentiable values (comparisons, integer
///    casts, argmax, shapes): its derivative is 0 almost everywhere and g = 0 (method
///    `gradient`). A finite difference there would measure a jump, not a slope.
///  - An edge with no path to any graph output gets g = 0 exactly (method `gradient`): the
///    output does not depend on it.
///  - If the forward or backward still throws, every edge goes to perturbation and `note`
///    says why.
///
/// **Perturbation** (no gradient, or `force_perturbation`): for anchor a with n elements,
/// eps = relative_eps * mean|a| (relative_eps itself when that is 0), and the realised
/// perturbation d = (a + delta) - a computed in float64 (so low-precision anchors are measured
/// by what actually changed). dl = l(f | a + delta) - l(f), summed element-wise in float64
/// from the output difference (no cancellation of two large sums). Estimator:
///  - n <= probes: coordinate differences, one probe per element:
///        g ~ (1/n) * sum_i |dl_i| / |d_i|  -- the L1 mean itself, up to O(eps) curvature error;
///  - otherwise `probes` Rademacher probes delta = eps * s (s_i = +-1, fixed seed):
///        g ~ mean over probes of |dl| / ||d||_2.
///    Since dl ~ sum_i g_i d_i, E|dl| / ||d||_2 = sqrt(2/pi) * ||grad||_2 / sqrt(n) =
///    sqrt(2/pi) * rms(grad), which equals mean|grad| (the L1 mean above) when the gradient's
///    entries are roughly normally distributed around 0 (typical of network activations) and
///    is 0.8 * mean|grad| when all |grad_i| are equal. One probe's relative spread is about
///    0.75 / sqrt(probes * inputs). It is an L2 (rms) estimate: for a gradient concentrated on
///    k of n elements (a transformer's last block, where only the class token reaches the
///    head) it exceeds mean|grad| by about 0.8 * sqrt(n / k). Measured against the gradient
///    on all edges (zoo, forced): resnet18 log-log correlation 0.93, mean |log ratio| 0.35;
///    vit correlation 0.84, mean |log ratio| 1.5 (that sparsity).
/// Each probe re-runs only the nodes after the anchor's producer (executor::run_from) on a
/// snapshot of the baseline values; a model whose baseline run modified a tensor in place is
/// re-run from its inputs instead. Cost per estimated edge: probes (or n) partial forwards
/// per input; `max_perturbed_edges` caps the edges: first those with no gradient at all
/// (upstream of a cut only, or every edge when autograd failed), then those with a partial
/// gradient upstream of a cut (which keep it when left out); when a group exceeds what is left
/// of the cap, its edges are sampled evenly along the topological order (so the estimate
/// covers the whole model), and the rest stay NaN (method none). Measured (2 shared cores):
/// every zoo seed by gradient in 20-320 ms; forcing perturbation costs about 40x that
/// (resnet18 4.9 s for 172 edges, vit 2.0 s for 185 edges, 2 inputs, 2 probes).
///
/// Not thread-safe with other LibTorch users changing grad mode on this thread; random ops in
/// the model (rand_like, dropout in training mode) add noise to perturbation estimates.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/model.hpp"

#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tfg::torch {

struct influence_options {
  std::size_t max_inputs = 2;             ///< profiling inputs used (g is the mean over them); 0: all
  bool perturbation_fallback = true;      ///< estimate by perturbation where there is no gradient
  std::size_t max_perturbed_edges = 256;  ///< cap on edges estimated by perturbation; the rest stay NaN
  double relative_eps = 1e-3;  ///< perturbation size relative to the anchor's mean |value| (absolute when that is 0)
  std::size_t probes = 2;      ///< Rademacher probes per edge and input (coordinate probes when numel <= probes)
  bool force_perturbation = false;  ///< skip autograd: every edge by perturbation (tests, comparisons)
  std::uint64_t seed = 0;           ///< seed of the probe signs
};

enum class influence_method : std::uint8_t { none, gradient, perturbation };

struct influence_result {
  std::vector<double>
      g;  ///< by edge index (edge_capacity): raw g(e); NaN when unknown (non-floating, dead, not computed)
  std::vector<influence_method> method;  ///< by edge index
  std::size_t gradient_edges = 0;        ///< edges whose g came from autograd (including structural zeros)
  std::size_t perturbed_edges = 0;       ///< edges whose g came from perturbation
  double ms = 0;                         ///< wall time of the whole computation
  std::string note;                      ///< why autograd was (partly) unavailable, e.g. "aten::X has no derivative"
};

namespace influence_detail {

[[nodiscard]] TFG_TORCH_DECL bool is_float_tensor(const c10::IValue& v);

/// A copy of forward arguments whose tensors are detached clones, so a model that modifies
/// an input in place does not modify the caller's inputs.
[[nodiscard]] inline std::vector<c10::IValue> copy_arguments(const std::vector<c10::IValue>& in) {
  return ivalue::deep_clone(in, [](const at::Tensor& t) { return t.detach().clone(); });
}

/// Whether `t` shares storage with a tensor that node `n` read (views, in-place results,
/// `aten::contiguous` of a contiguous input). Unknown (no storage) counts as aliasing.
[[nodiscard]] TFG_TORCH_DECL bool aliases_input(const executor& ex, graph::node_id n, const at::Tensor& t);

[[nodiscard]] TFG_TORCH_DECL bool reads_grad_input(const executor& ex, graph::node_id n);

/// Edges from which a target is reachable, by edge index. A node is a target when
/// `node_target[node]` is set; a graph output edge is one when `outputs_are_targets`.
[[nodiscard]] TFG_TORCH_DECL std::vector<char> edges_reaching(const graph_type& g,
                                                              const std::vector<graph::node_id>& order,
                                                              const std::vector<char>& node_target,
                                                              bool outputs_are_targets);

/// Per-edge accumulators over inputs.
struct accumulator {
  std::vector<double> sum;
  std::vector<std::uint32_t> count;
  explicit accumulator(std::size_t n = 0) : sum(n, 0.0), count(n, 0) {}
  void add(std::size_t i, double v) {
    if (!std::isfinite(v)) return;
    sum[i] += v;
    ++count[i];
  }
  [[nodiscard]] double mean(std::size_t i) const {
    return count[i] ? sum[i] / count[i] : std::numeric_limits<double>::quiet_NaN();
  }
};

/// State of the gradient passes over all inputs.
struct gradient_state {
  explicit gradient_state(const graph_type& g)
      : clone_fresh(g.edge_capacity(), 0),
        no_point(g.edge_capacity(), 0),
        made_leaf(g.edge_capacity(), 0),
        cut(g.node_capacity(), 0),
        floating(g.edge_capacity(), 0),
        undefined(g.edge_capacity(), 0),
        g(g.edge_capacity()) {}
  std::vector<char> clone_fresh;  ///< by edge: consumers read a copy (a later in-place op modified it)
  std::vector<char> no_point;     ///< by edge: a leaf that an operator refuses to see require grad
  std::vector<char> made_leaf;    ///< by edge: turned into a leaf that requires grad
  std::vector<std::pair<c10::Symbol, std::size_t>> no_grad_slots;  ///< (operator, argument index) refusing grad
  std::size_t next_pos = 0;     ///< position of the node running now (the failing one after a throw)
  std::vector<char> cut;        ///< by node: no derivative through this node
  std::vector<char> floating;   ///< by edge: a floating tensor was seen
  std::vector<char> undefined;  ///< by edge: floating, but autograd gave no gradient
  bool clone_leaves = false;    ///< retry mode: aliasing leaves are copied too
  accumulator g;
  std::string note;
};

/// Gradients of aten::batch_norm's running statistics, which native_batch_norm refuses to
/// differentiate (they are no points, see refuse_grad_slots), derived from those of weight and
/// bias: in inference mode y = w (x - rm) / sqrt(rv + eps) + b, so
///     dl/drm = -w / sqrt(rv + eps) * dl/db,   dl/drv = -w / (2 (rv + eps)) * dl/dw;
/// in training mode y does not depend on them (0). Only for statistics edges read by that node
/// alone, with weight and bias edges that got gradients; the others stay for perturbation.
TFG_TORCH_DECL void derive_batch_norm_statistics(const executor& ex, const std::vector<at::Tensor>& grad,
                                                 gradient_state& st);

/// One forward + backward on `args`. Returns false (nothing accumulated) when an in-place op
/// modified a fresh point: clone_fresh grew and the caller runs the input again.
TFG_TORCH_DECL bool gradient_pass(executor& ex, const std::vector<c10::IValue>& args, gradient_state& st);

/// After the forward failed at node `n` with `what` (e.g. native_batch_norm: "not
/// differentiable with respect to argument 'running_mean'"): records the refusing argument
/// slot of that operator (by the schema's argument name when the message names one, else
/// every argument that is a leaf made here) and marks every edge feeding such a slot of any
/// node as no point (no gradient: left to perturbation). Returns whether anything was added.
TFG_TORCH_DECL bool refuse_grad_slots(const executor& ex, graph::node_id n, const std::string& what,
                                      gradient_state& st);

/// Perturbation runs on one input: a baseline, then probes of the selected edges.
class perturber {
 public:
  perturber(executor& ex, const std::vector<std::size_t>& pos_after) : ex_(ex), pos_after_(pos_after) {}

  /// Runs the baseline on `args` (no grad); records floating edges into `floating`.
  void baseline(const std::vector<c10::IValue>& args, std::vector<char>& floating) {
    at::NoGradGuard no_grad;
    const auto& g = ex_.target().graph;
    args_ = &args;
    std::vector<std::pair<at::Tensor, std::int64_t>> seen;
    seen.reserve(g.edge_capacity());
    auto observe = [&](graph::node_id, std::span<const graph::edge_id> outs) {
      for (auto e : outs) {
        const auto& v = ex_.value(e);
        if (!v.isTensor() || !v.toTensor().defined()) continue;
        seen.emplace_back(v.toTensor(), v.toTensor()._version());
        if (is_float_tensor(v)) floating[graph::index(e)] = 1;
      }
    };
    const auto out = ex_.run(copy_arguments(args), observe);
    mutates_ = false;
    for (const auto& [t, ver] : seen) mutates_ = mutates_ || t._version() != ver;
    base_ = outputs_f64(out);
    snapshot_.assign(g.edge_capacity(), c10::IValue());
    for (auto e : g.edges()) snapshot_[graph::index(e)] = ex_.value(e);
  }

  /// Estimate of the L1-mean gradient at edge e on this input (see the file comment); NaN
  /// when every probe failed.
  double estimate(graph::edge_id e, const influence_options& opt, at::Generator& gen) {
    at::NoGradGuard no_grad;
    const auto& v = snapshot_[graph::index(e)];
    if (!is_float_tensor(v)) return std::numeric_limits<double>::quiet_NaN();
    const at::Tensor a = v.toTensor();
    const auto n = a.numel();
    double scale = a.abs().mean(at::kDouble).item<double>();
    if (!(scale > 0) || !std::isfinite(scale)) scale = 1.0;
    const double eps = opt.relative_eps * scale;
    accumulator acc(1);
    const auto probes = static_cast<std::int64_t>(std::max<std::size_t>(opt.probes, 1));
    if (n <= probes) {
      double total = 0;
      bool ok = true;
      for (std::int64_t k = 0; k < n && ok; ++k) {
        auto delta = at::zeros_like(a);
        delta.view(-1)[k].fill_(eps);
        at::Tensor d;
        const double dl = probe(e, delta, d);
        const double dk = d.view(-1)[k].item<double>();
        if (!std::isfinite(dl) || dk == 0) ok = false;
        else total += std::abs(dl) / std::abs(dk);
      }
      if (ok) acc.add(0, total / static_cast<double>(n));
    } else {
      for (std::int64_t k = 0; k < probes; ++k) {
        auto s = at::randint(0, 2, a.sizes(), gen, at::TensorOptions().dtype(at::kDouble)).mul_(2).sub_(1);
        const auto delta = s.mul_(eps).to(a.scalar_type());
        at::Tensor d;
        const double dl = probe(e, delta, d);
        const double norm = d.defined() ? d.norm().item<double>() : 0.0;
        if (std::isfinite(dl) && norm > 0) acc.add(0, std::abs(dl) / norm);
      }
    }
    return acc.mean(0);
  }

 private:
  [[nodiscard]] static std::vector<at::Tensor> outputs_f64(const c10::IValue& out) {
    std::vector<at::Tensor> ts = ivalue::floating_tensors(out);
    for (auto& t : ts) t = t.detach().to(at::kDouble, /*non_blocking=*/false, /*copy=*/true);
    return ts;
  }

  /// dl for anchor value a + delta; `realised` gets (a + delta) - a in float64. NaN on failure.
  double probe(graph::edge_id e, const at::Tensor& delta, at::Tensor& realised) {
    const auto& g = ex_.target().graph;
    try {
      c10::IValue out;
      auto substitute = [&](const at::Tensor& a) {
        at::Tensor p = a + delta;
        realised = p.to(at::kDouble) - a.to(at::kDouble);
        return p;
      };
      if (!mutates_) {
        for (auto x : g.edges()) ex_.value_mut(x) = snapshot_[graph::index(x)];
        ex_.value_mut(e) = substitute(snapshot_[graph::index(e)].toTensor());
        out = ex_.run_from(pos_after_[graph::index(e)], [](graph::node_id, std::span<const graph::edge_id>) {});
      } else {
        const auto producer = g.producer(e);
        out = ex_.run(copy_arguments(*args_), [&](graph::node_id n, std::span<const graph::edge_id>) {
          if (n != producer) return;
          auto& v = ex_.value_mut(e);
          if (is_float_tensor(v)) v = substitute(v.toTensor());
        });
      }
      const auto ts = outputs_f64(out);
      if (ts.size() != base_.size() || !realised.defined()) return std::numeric_limits<double>::quiet_NaN();
      double dl = 0;
      for (std::size_t k = 0; k < ts.size(); ++k) {
        if (!ts[k].sizes().equals(base_[k].sizes())) return std::numeric_limits<double>::quiet_NaN();
        dl += (ts[k] - base_[k]).sum().item<double>();
      }
      return dl;
    } catch (const std::exception&) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  }

  executor& ex_;
  const std::vector<std::size_t>& pos_after_;
  const std::vector<c10::IValue>* args_ = nullptr;
  std::vector<c10::IValue> snapshot_;
  std::vector<at::Tensor> base_;
  bool mutates_ = false;
};

/// Up to `k` of `items`, evenly spaced (all of them when they fit).
[[nodiscard]] TFG_TORCH_DECL std::vector<graph::edge_id> spread(const std::vector<graph::edge_id>& items,
                                                                std::size_t k);

}  // namespace influence_detail

/// Raw influence g(e) of every edge on `m`'s output over the first `opt.max_inputs` of
/// `inputs` (see the file comment for the gradient and the perturbation estimator). Never
/// throws for a model that runs: failures become NaN entries and `note`. Throws model_error
/// when the model itself fails to run on an input.
[[nodiscard]] TFG_TORCH_DECL influence_result influence(const model& m, const input_set& inputs,
                                                        influence_options opt = {});

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/oracle/influence.ipp"
#endif
