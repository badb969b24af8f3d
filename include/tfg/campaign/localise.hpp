#pragma once
/// \file
/// Localisation of a differential finding (docs/oracle.md, "Localisation"): the first operator
/// whose output diverges between the two configurations, with its input states and the size
/// of the divergence there. Backend-neutral: the steps are worker requests
/// (tfg/campaign/protocol.hpp), so a step that crashes the framework kills only a worker.
///
///  - op-by-op pairs (both configurations run the model op by op): one `trace` request; the
///    worker compares every edge (3 configuration runs);
///  - graph-level pairs (graph executor, frozen + optimize_for_inference, autograd through the
///    graph executor, the compiled and ONNX configurations) and process-level failures: a
///    bisection over the diverging outputs' cone, a DAG, with `cut` requests (the model cut at
///    an edge, that edge its output; a cut diverges when its cone holds the culprit). The first probe is the cut at the
///    outputs themselves: when the divergence vanishes there, an optimisation across the cut changed what the
///    configuration does and the result says so. After the bisection one more probe checks the culprit's inputs: when
///    one of them diverges, the search continues below it. About log2(n) + 3 steps;
///  - an exception of a graph-level configuration whose own error names the node that raised
///    (`verdict::failed_at`, from the TorchScript interpreter's traceback): that node, described
///    by one cut. A bisection would cut the unoptimised model, and an optimisation of each cut
///    (what `optimize_for_inference` converts to MKLDNN depends on what follows) decides which
///    cut fails first: such findings were named after an unrelated later node.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/graph/concepts.hpp"

namespace tfg::campaign {

/// Where a disagreement starts.
struct localisation {
  bool localised = false;
  std::int64_t position = -1;            ///< in the model's topological order
  graph::node_id node = graph::no_node;  ///< the supervisor's node at that position
  std::string op;                        ///< its kind
  std::string inputs;                    ///< the state class of its inputs
  std::vector<std::string> states;       ///< F of its inputs, for humans
  oracle::verdict divergence;            ///< how its outputs differ
  int runs = 0;                          ///< configuration runs spent
  int requests = 0;                      ///< worker requests spent
  bool confirmed = false;                ///< the culprit's inputs were checked to agree
  bool conditioned = false;              ///< the culprit is accurate on its own inputs (located::conditioned)
  std::string note;                      ///< why not localised, or what to know about the result
};

/// Sends one request to a worker and returns what happened (a dead worker is the caller's to
/// replace before the next call).
using step_function = std::function<run_outcome(const worker_request&)>;

/// Localisation over a graph `g` (the supervisor's copy of the model the worker runs; the
/// same topological order).
template <graph::tensor_graph G>
class localiser {
 public:
  /// `is_tensor(e)`: edges a cut may return; `kind(n)`: node kinds (to check that the worker's
  /// positions are the supervisor's).
  localiser(const G& g, std::function<bool(graph::edge_id)> is_tensor, std::function<std::string(graph::node_id)> kind)
      : g_(g), is_tensor_(std::move(is_tensor)), kind_(std::move(kind)) {
    pos_.assign(g_.node_capacity(), 0);
    std::size_t i = 0;
    for (auto n : g_.topological_order()) pos_[graph::index(n)] = i++;
  }

  /// Localises the disagreement of `base.config_a` / `base.config_b` on input `base.input`
  /// that shows at `outputs` (the graph output edges the verdict is about). `op_by_op`: both
  /// configurations run op by op (one trace request). `crash`: the finding is a process-level
  /// failure of config_b; a probe that kills the worker counts as diverging. `named`: the
  /// position the failing configuration's own error names (verdict::failed_at), -1 if none.
  [[nodiscard]] localisation run(worker_request base, std::span<const graph::edge_id> outputs, bool op_by_op,
                                 bool crash, const step_function& step, std::int64_t named = -1) const {
    localisation out;
    const auto n_nodes = static_cast<std::int64_t>(std::ranges::distance(g_.topological_order()));
    if (named >= 0 && named < n_nodes && !crash) {
      // One cut at the named node describes it (its inputs' states); whether the cut alone
      // fails does not matter: the configuration said which node raised.
      base.op = request_op::cut;
      base.cut = {{static_cast<std::uint32_t>(named), -1}};
      base.only_b = false;
      const auto o = step(base);
      ++out.requests;
      out.position = named;
      out.node = order_at(static_cast<std::size_t>(named));
      out.op = kind_(out.node);
      out.localised = true;
      out.confirmed = true;
      out.note = base.config_b + " names this node as the one that raised (its own error traceback)";
      if (o.reply && o.reply->ok && !o.reply->found.empty()) {
        const auto& l = o.reply->found.front();
        out.runs = l.runs;
        out.inputs = l.inputs;
        out.states = l.states;
        if (!l.op.empty() && l.op != out.op) {
          out.note = "the worker's node at position " + std::to_string(named) + " is " + l.op + ", here " + out.op;
          out.op = l.op;
          out.node = graph::no_node;
        }
      }
      return out;
    }
    if (op_by_op && !crash) {
      base.op = request_op::trace;
      base.cut.clear();
      const auto o = step(base);
      ++out.requests;
      if (!o.reply || !o.reply->ok || o.reply->found.empty()) {
        out.note = "trace failed: " + describe_failure(o);
        return out;
      }
      const auto& l = o.reply->found.front();
      out.runs = l.runs;
      if (l.position < 0) {
        out.note = l.note.empty() ? "no edge differs" : l.note;
        return out;
      }
      take(out, l);
      out.confirmed = true;  // every edge was compared: the inputs agreed
      out.conditioned = l.conditioned;
      if (l.conditioned) out.note = l.note;
      return out;
    }
    // Bisection over the cone of the diverging outputs: a search over the DAG. `live` holds
    // the candidates that may still be the culprit: the ancestors of the lowest cut known to
    // diverge (`top`), less the ancestors of every cut that did not. Each probe cuts the live
    // node whose live ancestors are closest to half of them; a diverging cut becomes `top`, a
    // clean one removes its ancestors. Cutting at a position in execution order instead (a
    // bisection over positions) assumes every later cut contains the culprit: a node of an
    // independent branch (BERT's attention mask after a pooling inserted on the hidden states)
    // cut clean and moved the search past the culprit, onto an unrelated later operator.
    const auto cands = candidates(outputs);
    if (cands.empty()) {
      out.note = "no operator produces the diverging outputs";
      return out;
    }
    base.op = request_op::cut;
    base.only_b = crash;
    auto probe = [&](std::vector<cut_edge> cut) -> std::optional<bool> {
      auto r = base;
      r.cut = std::move(cut);
      const auto o = step(r);
      ++out.requests;
      if (crash) {  // localising a crash of b: the probe crashing is the answer
        if (o.process_failed()) return true;
        if (o.reply && o.reply->ok) {
          if (!o.reply->found.empty()) out.runs += o.reply->found.front().runs;
          return false;
        }
        out.note = "a localisation step failed: " + describe_failure(o);
        return std::nullopt;
      }
      if (o.process_failed() || !o.reply || !o.reply->ok || o.reply->found.empty()) {
        out.note = "a localisation step failed: " + describe_failure(o);
        return std::nullopt;
      }
      const auto& l = o.reply->found.front();
      out.runs += l.runs;
      if (l.diverges.empty()) {
        out.note = l.note.empty() ? "a localisation step returned nothing" : l.note;
        return std::nullopt;
      }
      last_ = l;
      return std::any_of(l.diverges.begin(), l.diverges.end(), [](auto d) { return d != 0; });
    };
    auto cut_at = [](std::size_t pos) { return std::vector<cut_edge>{{static_cast<std::uint32_t>(pos), -1}}; };
    // The cut at the outputs' producers must show the divergence: the first that does is `top`.
    std::vector<std::size_t> producers;
    for (auto e : outputs)
      if (auto p = g_.producer(e); p != graph::no_node && std::ranges::binary_search(cands, pos_[graph::index(p)]))
        producers.push_back(pos_[graph::index(p)]);
    std::ranges::sort(producers);
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    if (producers.empty()) producers.push_back(cands.back());
    std::size_t top = producers.front();
    std::optional<campaign::located> found;
    {
      bool any = false;
      if (crash || producers.size() == 1) {  // a crash cannot say which of several edges crashed
        for (auto p : producers) {
          const auto d = probe(cut_at(p));
          if (!d) return out;
          if (*d) {
            top = p;
            any = true;
            break;
          }
        }
      } else {
        std::vector<cut_edge> all;
        for (auto p : producers) all.push_back({static_cast<std::uint32_t>(p), -1});
        const auto d = probe(all);
        if (!d) return out;
        // Each flagged producer alone, in order, until one diverges (its own cut describes it;
        // an exception flags every edge of the cut that raised).
        const auto flagged = last_.diverges;
        for (std::size_t k = 0; *d && k < producers.size() && k < flagged.size() && !any; ++k) {
          if (!flagged[k]) continue;
          const auto alone = probe(cut_at(producers[k]));
          if (!alone) return out;
          if (*alone) {
            top = producers[k];
            any = true;
          }
        }
      }
      if (!any) {
        out.note =
            "the divergence vanishes when the model is cut at its output's producer: an optimisation across "
            "the cut (fusion of what follows) changes what the configuration does; not localised";
        out.position = static_cast<std::int64_t>(producers.back());
        return out;
      }
      if (!crash) found = last_;
    }
    std::vector<char> live = ancestors(top, cands);
    for (int attempt = 0; attempt < 3; ++attempt) {
      for (;;) {
        std::size_t n_live = 0;
        for (auto c : cands) n_live += live[c] ? 1 : 0;
        if (n_live <= 1) break;
        // The live node whose live ancestors (itself included) are closest to half the live set,
        // among at most 64 live nodes spread over the execution order (each costs a walk of
        // the graph; a 5,000-node model would otherwise cost 25 million steps per probe).
        std::vector<std::size_t> pool;
        for (auto c : cands)
          if (live[c] && c != top) pool.push_back(c);
        if (pool.size() > 64) {
          std::vector<std::size_t> spread;
          for (std::size_t i = 0; i < 64; ++i) spread.push_back(pool[i * pool.size() / 64]);
          pool = std::move(spread);
        }
        std::size_t best = top;
        std::size_t best_gap = n_live + 1;
        for (auto c : pool) {
          const auto a = ancestors(c, cands);
          std::size_t inside = 0;
          for (auto x : cands) inside += (live[x] && a[x]) ? 1 : 0;
          const auto gap = inside * 2 > n_live ? inside * 2 - n_live : n_live - inside * 2;
          if (gap < best_gap || (gap == best_gap && c < best)) {
            best_gap = gap;
            best = c;
          }
        }
        const auto d = probe(cut_at(best));
        if (!d) return out;
        const auto a = ancestors(best, cands);
        if (*d) {
          top = best;
          if (!crash) found = last_;
          for (auto c : cands) live[c] = live[c] && a[c];
        } else {
          for (auto c : cands)
            if (a[c]) live[c] = 0;
        }
      }
      // Check the culprit's inputs: they must agree.
      const auto culprit = order_at(top);
      std::vector<cut_edge> ins;
      std::vector<std::size_t> producer_index;
      // Only inputs computed from the graph's inputs can differ: a constant or a parameter
      // (a node without inputs) is the same value in both configurations.
      for (auto e : g_.inputs(culprit)) {
        const auto p = g_.producer(e);
        if (p == graph::no_node || !is_tensor_(e) || !std::ranges::binary_search(cands, pos_[graph::index(p)]))
          continue;
        ins.push_back(
            {static_cast<std::uint32_t>(pos_[graph::index(p)]), static_cast<std::int32_t>(g_.producer_slot(e))});
        producer_index.push_back(pos_[graph::index(p)]);
      }
      if (ins.empty() || crash) {
        out.confirmed = !crash;
        break;
      }
      const auto d = probe(ins);
      if (!d) return out;
      if (!*d) {
        out.confirmed = true;
        break;
      }
      // An exception fails a cut of several edges as a whole: which input fails is asked one
      // by one (an exporter's error on BERT marked a linear's weight and bias too).
      if (ins.size() > 1 && last_.divergence.kind == oracle::verdict_kind::error_in_one) {
        std::vector<std::uint8_t> each(ins.size(), 0);
        for (std::size_t k = 0; k < ins.size(); ++k) {
          const auto dk = probe({ins[k]});
          if (!dk) return out;
          each[k] = *dk ? 1 : 0;
        }
        last_.diverges = each;
      }
      // An input diverges although a clean cut above it said otherwise (what is optimised
      // across a cut depends on the cut): continue from the earliest diverging input.
      std::size_t bound = top;
      for (std::size_t k = 0; k < ins.size(); ++k)
        if (k < last_.diverges.size() && last_.diverges[k]) bound = std::min(bound, producer_index[k]);
      if (bound == top) break;
      if (!std::ranges::binary_search(cands, bound)) {
        out.note = "a diverging input comes from outside the outputs' cone";
        break;
      }
      top = bound;
      live = ancestors(top, cands);
      // Re-probe the new top so `found` describes it.
      const auto again = probe(cut_at(top));
      if (!again) return out;
      if (*again) found = last_;
    }
    out.position = static_cast<std::int64_t>(top);
    out.node = order_at(top);
    out.op = kind_(out.node);
    out.localised = true;
    if (found) {
      out.divergence = found->divergence;
      out.inputs = found->inputs;
      out.states = found->states;
    }
    return out;
  }

 private:
  /// By topological position: 1 for the candidates among `pos`'s ancestors, `pos` included.
  [[nodiscard]] std::vector<char> ancestors(std::size_t pos, const std::vector<std::size_t>& cands) const {
    std::vector<char> seen(g_.node_capacity(), 0);
    std::vector<char> out(pos_.empty() ? 0 : order_size(), 0);
    std::vector<graph::node_id> stack{order_at(pos)};
    while (!stack.empty()) {
      const auto n = stack.back();
      stack.pop_back();
      if (seen[graph::index(n)]) continue;
      seen[graph::index(n)] = 1;
      out[pos_[graph::index(n)]] = 1;
      for (auto e : g_.inputs(n))
        if (auto p = g_.producer(e); p != graph::no_node && !seen[graph::index(p)]) stack.push_back(p);
    }
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i] && !std::ranges::binary_search(cands, i)) out[i] = 0;
    return out;
  }

  [[nodiscard]] std::size_t order_size() const {
    return static_cast<std::size_t>(std::ranges::distance(g_.topological_order()));
  }

  [[nodiscard]] graph::node_id order_at(std::size_t pos) const {
    const auto& order = g_.topological_order();
    return *std::next(std::begin(order), static_cast<std::ptrdiff_t>(pos));
  }

  /// Positions of the nodes in the cone of `outputs` that produce a tensor edge, ascending.
  [[nodiscard]] std::vector<std::size_t> candidates(std::span<const graph::edge_id> outputs) const {
    std::vector<char> seen(g_.node_capacity(), 0);
    std::vector<graph::node_id> stack;
    for (auto e : outputs)
      if (auto p = g_.producer(e); p != graph::no_node) stack.push_back(p);
    std::vector<std::size_t> out;
    while (!stack.empty()) {
      const auto n = stack.back();
      stack.pop_back();
      if (seen[graph::index(n)]) continue;
      seen[graph::index(n)] = 1;
      bool tensor = false;
      for (auto e : g_.outputs(n)) tensor = tensor || is_tensor_(e);
      if (tensor && !g_.inputs(n).empty()) out.push_back(pos_[graph::index(n)]);
      for (auto e : g_.inputs(n))
        if (auto p = g_.producer(e); p != graph::no_node && !seen[graph::index(p)]) stack.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  void take(localisation& out, const located& l) const {
    out.localised = true;
    out.position = l.position;
    out.inputs = l.inputs;
    out.states = l.states;
    out.divergence = l.divergence;
    if (l.position >= 0 && static_cast<std::size_t>(l.position) < pos_.size() &&
        static_cast<std::size_t>(l.position) <
            static_cast<std::size_t>(std::ranges::distance(g_.topological_order()))) {
      out.node = order_at(static_cast<std::size_t>(l.position));
      out.op = kind_(out.node);
      if (!l.op.empty() && l.op != out.op) {
        out.note = "the worker's node at position " + std::to_string(l.position) + " is " + l.op + ", here " + out.op;
        out.op = l.op;
        out.node = graph::no_node;
      }
    } else {
      out.op = l.op;
    }
  }

  [[nodiscard]] static std::string describe_failure(const run_outcome& o) {
    if (o.process_failed()) return "the worker " + std::string(to_string(o.exchange.kind));
    if (!o.reply) return o.reply_error;
    if (!o.reply->ok) return o.reply->error;
    return "no result";
  }

  const G& g_;
  std::function<bool(graph::edge_id)> is_tensor_;
  std::function<std::string(graph::node_id)> kind_;
  std::vector<std::size_t> pos_;  ///< topological position by node index
  mutable located last_;
};

}  // namespace tfg::campaign
