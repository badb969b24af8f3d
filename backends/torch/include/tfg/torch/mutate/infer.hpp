#pragma once
/// Constraints decided before execution: the shapes and dtypes a mutant's values will have,
/// inferred without running it, and the conditions those inferred states already refute.
///
/// An instantiated mutant is propagated on LibTorch's *meta* tensors (sizes, strides and dtype,
/// no data): every graph input and every seed edge the replacement reads becomes a meta
/// tensor built from its F(e), run by run; each new node, and each seed node downstream whose
/// input metadata changed, is called through its own kernel on them. Propagation stops where
/// an output's metadata equals the seed's (below that point the mutant is the seed, shape-wise),
/// except below a 0-dim integer tensor or a real one, whose value a state does not show (a
/// traced size: int -> prim::NumToTensor -> arithmetic -> aten::Int): that is always propagated.
/// A kernel without a meta implementation in this LibTorch (1.13 has none for convolution,
/// layer_norm, batch_norm, embedding, hardswish, adaptive pooling) falls back to TorchScript's
/// symbolic shape function for the op: its sizes are kept; its dtype is the one the seed
/// recorded when the node is a seed node whose tensor arguments keep their seed dtypes, and is
/// otherwise *not known* (the propagation carries the promoted dtype of the tensor arguments
/// on, but `dtype(v)` of such a state decides nothing, and neither does a refusal of a kernel
/// that read it); without a shape function the outputs are unknown. A meta kernel that *rejects* its arguments
/// (broadcasting, a view of the wrong size, a rank or a dimension out of range, mixed dtypes)
/// rejects the candidate: the mutant would not run, whatever the values.
///
/// `static_check` then evaluates, on the inferred states: the deferred `require internal` /
/// `require output` conditions and the requirements R(v) of every node reading a new value —
/// only their metadata-only conjuncts (`match::refuted`); values, strides, aliasing and
/// externs stay for the probe. Only `aten::` and `prim::` operators are called, on meta
/// tensors; an operator of another namespace (a custom library, whose kernel may run its real
/// code on any dispatch key) leaves its outputs unknown. No real kernel runs on the model's
/// data (only on sizes that tracing carries in 0-dim tensors), so a campaign can call it in
/// the supervisor before any worker sees the mutant.
#include "tfg/torch/linkage.hpp"
#include "tfg/match/requirement_check.hpp"
#include "tfg/torch/compat.hpp"
#include "tfg/torch/mutate/match_adapter.hpp"
#include "tfg/torch/mutate/mutate.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/torch/import/schema.hpp"

#include <torch/csrc/jit/passes/symbolic_shape_analysis.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace tfg::torch {

/// F of a mutant as far as inference sees it, without running it.
struct inference {
  /// The seed's states, and for every edge the mutant changes (a new edge, or a seed edge
  /// downstream whose metadata differs) its inferred state: kind, shape, strides, dtype, CPU
  /// device; numbers not computed. An edge whose state could not be inferred has no runs.
  profile prof;
  /// Set when a kernel rejected its inferred arguments: the node and the framework's message.
  std::optional<std::string> refusal;
  bool refused_inside = false;  ///< the refusing node is one the replacement added
  std::size_t evaluated = 0;    ///< nodes propagated (runs counted once)
  std::size_t unknown = 0;      ///< of which no output state could be inferred
};

namespace detail {

/// A meta kernel that is missing (not a verdict on the arguments): "Could not run 'aten::x'
/// with arguments from the 'Meta' backend", "convolution_overrideable not implemented",
/// "Tensor.item() cannot be called on meta tensors".
[[nodiscard]] TFG_TORCH_DECL bool meta_missing(std::string_view what);

/// The value a node would read for F(e) run state `s`, as a meta tensor or a scalar; nullopt
/// for what a state does not determine (tensor lists, int lists, unknown dtypes).
[[nodiscard]] TFG_TORCH_DECL std::optional<c10::IValue> value_of_state(const state::tensor_state& s);

/// The inferred state of a value a meta kernel (or a shape function) returned.
[[nodiscard]] TFG_TORCH_DECL std::optional<state::tensor_state> state_of_value(const c10::IValue& v);

/// Whether two states have the same metadata (what inference can change).
[[nodiscard]] TFG_TORCH_DECL bool same_metadata(const state::tensor_state& a, const state::tensor_state& b);

/// Whether some argument (or list element) is a meta tensor.
[[nodiscard]] TFG_TORCH_DECL bool reads_meta(const std::vector<c10::IValue>& args);

/// Whether the dispatcher has a kernel for node `n`'s operator on the Meta key (its own, or a
/// composite one that decomposes into operators that may have one). Ops outside the
/// dispatcher (prim::) are tried.
/// A composite op whose decomposition reached an op without one is remembered
/// (`meta_path_missing`): its exception costs a symbolised backtrace every time (most of the
/// time of inference on a CNN, through `_convolution` and `batch_norm`).
[[nodiscard]] inline std::unordered_set<const c10::FunctionSchema*>& meta_path_missing() {
  thread_local std::unordered_set<const c10::FunctionSchema*> missing;
  return missing;
}
[[nodiscard]] TFG_TORCH_DECL bool has_meta_kernel(const graph_type& g, graph::node_id n);

/// The output sizes of `schema` called on `stack` from TorchScript's symbolic shape functions;
/// nullopt where the op has none or a size is not concrete (a negative extent).
[[nodiscard]] TFG_TORCH_DECL std::optional<std::vector<std::vector<std::int64_t>>> shape_function(
    const c10::FunctionSchema& schema, const ::torch::jit::Stack& stack);

/// The schema a node's shape function is registered under: `aten::_convolution` has none, its
/// first nine arguments are `aten::convolution`'s.
[[nodiscard]] TFG_TORCH_DECL const c10::FunctionSchema* shape_schema(const graph_type& g, graph::node_id n,
                                                                     std::size_t& argc);

}  // namespace detail

/// Propagates the metadata of mutant `mu` of the seed seen through `seed` (its F(e)) on meta
/// tensors; see the file comment. Node and edge ids of `mu` are the seed's where they exist
/// (ids are never reused). Runs no real kernel on the model's data; does not throw for a kernel's
/// refusal (that is `refusal`).
template <class Adapter>
[[nodiscard]] inference infer_mutant(const mutant& mu, const Adapter& seed) {
  const auto& g = mu.graph_model.graph;
  const auto& sg = seed.graph();
  inference out;
  auto& prof = out.prof.edges;
  prof.resize(g.edge_capacity());
  std::size_t runs = 0;
  for (auto e : g.edges()) {
    prof[graph::index(e)] = seed.profile(e);  // ids are never reused: new edges have no seed profile
    runs = std::max(runs, prof[graph::index(e)].runs.size());
  }
  out.prof.runs = runs;
  // changed[e]: the mutant's state of e is inferred (or unknown), not the seed's.
  std::vector<char> changed(g.edge_capacity(), 0), added(g.node_capacity(), 0);
  for (auto n : mu.added) added[graph::index(n)] = 1;
  for (auto n : mu.added)
    for (auto e : g.outputs(n)) changed[graph::index(e)] = 1, prof[graph::index(e)].runs.clear();

  std::vector<std::vector<c10::IValue>> values(g.edge_capacity());  // meta values by run, filled lazily
  std::vector<char> guessed(g.edge_capacity(), 0);                  // the dtype is a guess (see the file comment)
  auto value = [&](graph::edge_id e, std::size_t r) -> std::optional<c10::IValue> {
    auto& v = values[graph::index(e)];
    if (v.size() > r && !v[r].isNone()) return v[r];
    const auto& st = prof[graph::index(e)].runs;
    if (r >= st.size()) return std::nullopt;
    auto made = detail::value_of_state(st[r]);
    if (!made) return std::nullopt;
    if (v.size() <= r) v.resize(runs);
    v[r] = *made;
    return made;
  };

  ::torch::jit::Stack stack;
  for (auto n : g.topological_order()) {
    const auto ins = g.inputs(n);
    const auto outs = g.outputs(n);
    const bool is_new = added[graph::index(n)] != 0;
    // A seed node is evaluated when it reads a changed edge or was rewired to another edge.
    const bool rewired = !is_new && (!sg.alive(n) || !std::ranges::equal(sg.inputs(n), ins));
    if (!is_new && !rewired &&
        std::none_of(ins.begin(), ins.end(), [&](auto e) { return changed[graph::index(e)] != 0; }))
      continue;
    const auto& d = g.data(n);
    ++out.evaluated;
    std::vector<std::vector<state::tensor_state>> got(outs.size());  // per output, per run
    // Only the framework's own operators are called on meta tensors in this process: a kernel
    // of another namespace (a custom operator library) may run its real code whatever the
    // dispatch key, and a crash there would take the supervisor down. Their outputs are unknown.
    bool known = d.kind == c10::prim::Constant || (d.op.has_value() && (d.kind.is_aten() || d.kind.is_prim()));
    // A kernel that read a guessed dtype proves nothing by refusing, and passes the guess on.
    const bool inputs_guessed =
        std::any_of(ins.begin(), ins.end(), [&](auto e) { return guessed[graph::index(e)] != 0; });
    bool guess = inputs_guessed;
    for (std::size_t r = 0; known && r < runs; ++r) {
      stack.clear();
      if (d.kind == c10::prim::Constant) {
        auto c = d.constant;
        if (c.isTensor() && c.toTensor().defined()) c = c10::IValue(c.toTensor().to(c10::kMeta));
        stack.push_back(std::move(c));
      } else {
        for (const auto& a : d.args) {
          switch (a.how) {
            case argument::form::edge:
              if (auto v = value(ins[a.input], r)) stack.push_back(std::move(*v));
              else known = false;
              break;
            case argument::form::constant: stack.push_back(a.constant); break;
            case argument::form::list: {
              c10::impl::GenericList list(a.type->castRaw<c10::ListType>()->getElementType());
              for (const auto& it : a.items) {
                if (!it.is_edge) {
                  list.push_back(it.constant);
                } else if (auto v = value(ins[it.input], r)) {
                  list.push_back(std::move(*v));
                } else {
                  known = false;
                  break;
                }
              }
              stack.push_back(c10::IValue(std::move(list)));
              break;
            }
            case argument::form::tuple: known = false; break;
          }
          if (!known) break;
        }
        if (!known) break;
        const auto args = stack;
        // An op the dispatcher has no Meta kernel for is not called: the exception it would
        // throw costs a symbolised backtrace (most of the time of inference on a CNN). An op
        // that reads no meta tensor (aten::Int of a traced size, arithmetic on 0-dim tensors
        // from prim::NumToTensor) runs on its real, tiny arguments whatever the cache says:
        // aten::Int has no meta path, but a real scalar it converts.
        const bool reads_meta = detail::reads_meta(args);
        bool missing = reads_meta && !detail::has_meta_kernel(g, n);
        if (!missing) {
          try {
            (*d.op)(stack);
          } catch (const std::exception& e) {
            const std::string what = clean_error(e.what());
            missing = detail::meta_missing(what);
            if (missing && reads_meta)
              if (const auto* sc = schema_of(g, n)) detail::meta_path_missing().insert(sc);
            if (!missing && guess) {
              known = false;
              break;
            }
            if (!missing) {
              out.refusal = describe(g, n) + ": " + what;
              out.refused_inside = is_new;
              return out;
            }
          }
        }
        if (missing) {
          // No meta kernel: TorchScript's shape function, if the op has one.
          stack.clear();
          std::size_t argc = 0;
          const auto* schema = detail::shape_schema(g, n, argc);
          std::optional<std::vector<std::vector<std::int64_t>>> sizes;
          if (schema && d.results.size() == 1 && d.results[0].how == result_slot::form::value && argc <= args.size()) {
            try {
              sizes = detail::shape_function(*schema, ::torch::jit::Stack(args.begin(), args.begin() + argc));
            } catch (const std::exception&) {
              sizes.reset();  // a shape function that asserts decides nothing: the probe will
            }
          }
          std::optional<c10::ScalarType> promoted;
          for (const auto& v : args)
            if (v.isTensor() && v.toTensor().defined())
              promoted =
                  promoted ? c10::promoteTypes(*promoted, v.toTensor().scalar_type()) : v.toTensor().scalar_type();
          if (!sizes || sizes->size() != 1 || !promoted) {
            known = false;
            break;
          }
          // A seed node whose tensor arguments have the dtypes they had in the seed returns the
          // dtype it returned there (its record); otherwise the promoted dtype is a guess.
          bool recorded = !is_new && !inputs_guessed && sg.alive(n) && outs.size() == 1;
          if (recorded) {
            const auto sins = sg.inputs(n);
            for (std::size_t i = 0; recorded && i < d.args.size(); ++i) {
              if (d.args[i].how != argument::form::edge || !args[i].isTensor()) continue;
              const auto& was = seed.profile(sins[d.args[i].input]).runs;
              recorded =
                  r < was.size() && scalar_type_of_word(state::name(was[r].type)) == args[i].toTensor().scalar_type();
            }
            const auto& out_was = seed.profile(outs[0]).runs;
            if (recorded && r < out_was.size()) {
              if (auto t = scalar_type_of_word(state::name(out_was[r].type))) promoted = *t;
              else recorded = false;
            } else {
              recorded = false;
            }
          }
          if (!recorded) guess = true;
          stack.push_back(
              c10::IValue(at::empty(sizes->front(), at::TensorOptions().device(c10::kMeta).dtype(*promoted))));
        }
      }
      // Results into the node's output edges, as the executor unpacks them.
      std::vector<c10::IValue> flat(outs.size());
      if (d.kind == c10::prim::Constant) {
        if (!outs.empty()) flat[0] = stack.at(0);
      } else {
        if (stack.size() != d.results.size()) {
          known = false;
          break;
        }
        for (std::size_t i = 0; i < d.results.size(); ++i) {
          const auto& rs = d.results[i];
          if (rs.how == result_slot::form::value) {
            if (rs.first_output < flat.size()) flat[rs.first_output] = stack[i];
          } else if (rs.how == result_slot::form::list && stack[i].isList()) {
            auto l = stack[i].toList();
            for (std::uint32_t j = 0; j < rs.count && j < l.size() && rs.first_output + j < flat.size(); ++j)
              flat[rs.first_output + j] = l.get(j);
          } else if (rs.how == result_slot::form::tuple && stack[i].isTuple()) {
            const auto& el = stack[i].toTupleRef().elements();
            for (std::uint32_t j = 0; j < rs.count && j < el.size() && rs.first_output + j < flat.size(); ++j)
              flat[rs.first_output + j] = el[j];
          }
        }
      }
      for (std::size_t k = 0; k < outs.size(); ++k) {
        auto s = detail::state_of_value(flat[k]);
        if (!s) {
          got[k].clear();
          continue;
        }
        s->type_known = !guess;
        if (got[k].size() == r) got[k].push_back(std::move(*s));
        if (values[graph::index(outs[k])].size() < runs) values[graph::index(outs[k])].resize(runs);
        values[graph::index(outs[k])][r] = flat[k];
      }
    }
    if (!known) ++out.unknown;
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const auto e = outs[k];
      auto& p = prof[graph::index(e)].runs;
      const bool full = known && got[k].size() == runs;
      if (!is_new && full && p.size() == runs) {
        // Below an output whose metadata is the seed's, the mutant is the seed, shape-wise. A
        // guessed dtype (and the contiguous strides a shape function implies) that agrees with
        // the seed's shape and dtype is taken as the seed's state.
        // A traced size travels in a 0-dim integer tensor: int -> prim::NumToTensor ->
        // floor_divide / mul -> aten::Int -> view. Its value is what matters and equal metadata
        // says nothing about it, so such an output (and any real, not meta, tensor) stays
        // changed and its readers are evaluated: with a real value they compute the new size,
        // with a meta one (a seed edge read back from its state) aten::Int leaves it unknown.
        // Otherwise aten::Int would keep the seed's size and a legal view would be refused.
        bool same =
            std::none_of(values[graph::index(e)].begin(), values[graph::index(e)].end(), [](const c10::IValue& v) {
              if (!v.isTensor() || !v.toTensor().defined()) return false;
              const auto& t = v.toTensor();
              return !t.is_meta() || (t.dim() == 0 && c10::isIntegralType(t.scalar_type(), /*includeBool=*/true));
            });
        for (std::size_t r = 0; same && r < runs; ++r)
          same = guess ? got[k][r].kind == p[r].kind && got[k][r].shape == p[r].shape && got[k][r].type == p[r].type
                       : detail::same_metadata(p[r], got[k][r]);
        if (same) {
          values[graph::index(e)].clear();
          continue;
        }
      }
      changed[graph::index(e)] = 1;
      guessed[graph::index(e)] = guess;
      values[graph::index(e)].resize(full ? runs : 0);
      if (full) p = std::move(got[k]);
      else p.clear();
    }
  }
  return out;
}

namespace detail {

/// F of replacement values from an inference.
class inferred_probe final : public match::probe_source {
 public:
  inferred_probe(const mutant& m, const inference& inf) : m_(m), inf_(inf) {}
  [[nodiscard]] const state::edge_profile* profile(std::uint32_t slot) const override {
    auto it = m_.value_edges.find(slot);
    if (it == m_.value_edges.end() || graph::index(it->second) >= inf_.prof.edges.size()) return nullptr;
    const auto& p = inf_.prof.edges[graph::index(it->second)];
    return p.runs.empty() ? nullptr : &p;
  }

 private:
  const mutant& m_;
  const inference& inf_;
};

}  // namespace detail

/// The legality checks of `mu` that need no execution (see the file comment): a kernel that
/// rejects its inferred arguments, the deferred conditions and the R(v) of the readers of new
/// values that the inferred metadata refutes. Returns nullopt when nothing is refuted (the
/// probe still decides the rest). Messages start with "before execution:". The stage follows
/// the paper's groups: a node of the replacement refusing its arguments is `internal` (data
/// flow inside the replacement), a seed node downstream refusing, a deferred output condition
/// or a reader's R(v) is `output` (edges the replacement produces and the rest consumes).
template <class Adapter>
[[nodiscard]] std::optional<mutation_failure> static_check(const mutant& mu, const Adapter& seed,
                                                           const match::compiled_operator& op, const match::bindings& b,
                                                           match::symbol_table& symbols,
                                                           const match::requirement_table& requirements,
                                                           match::workspace& ws) {
  const auto inf = infer_mutant(mu, seed);
  const std::string head = op.name + ": before execution: ";
  if (inf.refusal)
    return mutation_failure{inf.refused_inside ? match::reject_stage::internal : match::reject_stage::output,
                            head + "the mutant would not run: " + *inf.refusal};
  detail::inferred_probe probe(mu, inf);
  if (auto st = match::refute_deferred(op, seed, b, probe, ws); st != match::reject_stage::accepted)
    return mutation_failure{st, head + "a constraint on the replacement's shapes or dtypes does not hold"};
  torch_match_adapter after(mu.graph_model, inf.prof, symbols);
  std::vector<graph::node_id> readers;
  const auto& g = mu.graph_model.graph;
  for (auto n : mu.added)
    for (auto e : g.outputs(n))
      for (const auto& u : g.consumers(e))
        if (std::find(readers.begin(), readers.end(), u.node) == readers.end()) readers.push_back(u.node);
  for (auto r : readers) {
    const match::compiled_requirement* failed = nullptr;
    if (match::evaluate_requirement(requirements, after, r, ws, graph::no_edge, nullptr, &failed, true) ==
        match::requirement_outcome::fails)
      return mutation_failure{
          match::reject_stage::output,
          head + std::string(after.op_kind(r)) + " rejects its new input" + (failed ? " (" + failed->where + ")" : "")};
  }
  return std::nullopt;
}

}  // namespace tfg::torch

// With TFG_TORCH_SEPARATE, instantiated once, in tfg::torch_compiled (src/mutate.cpp).
#if defined(TFG_TORCH_SEPARATE)
extern template tfg::torch::inference tfg::torch::infer_mutant<tfg::torch::torch_match_adapter>(
    const tfg::torch::mutant&, const tfg::torch::torch_match_adapter&);
#endif

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/mutate/infer.ipp"
#endif
