#pragma once
/// \file
/// Attribution of a mutant's findings to an operator of the model: `localising_attributor`
/// localises differential findings and crashes in the worker (localise.hpp) on the model's
/// structure as the worker imports it (skeleton.hpp), and maps the culprit onto the campaign's
/// in-memory model by node-kind alignment (graph/align.hpp).
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/localise.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/skeleton.hpp"
#include "tfg/graph/align.hpp"
#include "tfg/oracle/finding.hpp"

namespace tfg::campaign {

/// An attributor for findings of the model in `req.model`: differential verdicts are
/// localised (a trace for op-by-op pairs, a bisection of cuts otherwise), crashes are localised
/// by bisection, everything else (metamorphic, performance, hangs, out of memory) is attributed
/// as `fallback` (the mutation). Positions refer to the model as the worker imports the file:
/// its structure comes from the worker (a `describe` request, once, on the first
/// localisation), so this process never imports a file a worker may not survive. When `judged`
/// is given (the in-memory model the file was exported from, whose node ids the campaign
/// tracks), the culprit is mapped onto it by node-kind alignment (graph/align.hpp). `step`
/// sends one request to a worker and replaces it when it dies. `judged` must outlive the result.
template <class Backend>
[[nodiscard]] attributor localising_attributor(worker_request req, attribution fallback,
                                               std::vector<config_desc> configs, step_function step,
                                               const typename Backend::model_type* judged = nullptr) {
  struct lazy {
    bool asked = false;
    std::optional<skeleton> structure;
    std::optional<skeleton_graph> graph;
    std::string why_not;
    std::optional<std::vector<graph::node_id>> to_judged;
  };
  auto cache = std::make_shared<lazy>();
  return [cache, judged, req = std::move(req), fallback = std::move(fallback), configs = std::move(configs),
          step = std::move(step)](const run_outcome& o, const oracle::verdict* v, oracle::finding_kind k) {
    using K = oracle::finding_kind;
    const bool crash = o.process_failed() && o.exchange.kind == outcome::signaled;
    if (!v && !crash) return fallback;
    if (v && (k == K::metamorphic || k == K::performance)) return fallback;
    auto config = [&](std::string_view name) -> const config_desc* {
      for (const auto& c : configs)
        if (c.name == name) return &c;
      return nullptr;
    };
    attribution at = fallback;
    if (!cache->asked) {
      cache->asked = true;
      auto d = req;
      d.op = request_op::describe;
      const auto r = step(d);
      try {
        if (r.reply && r.reply->ok && r.reply->structure) {
          cache->structure = *r.reply->structure;
          cache->graph.emplace(build_graph(*cache->structure));
        } else {
          cache->why_not = "the worker could not describe the model: " + (r.process_failed()
                                                                              ? std::string(to_string(r.exchange.kind))
                                                                          : r.reply ? r.reply->error
                                                                                    : r.reply_error);
        }
      } catch (const std::exception& e) {
        cache->why_not = std::string("the worker's description of the model is malformed: ") + e.what();
      }
    }
    if (!cache->graph) {
      at.note = cache->why_not;
      return at;
    }
    // Random number consumption is compared over the whole run, and the draws need not change
    // any value: cutting the model moves what an optimiser does with its random operators, so a
    // bisection lands on unrelated nodes. The finding names the model's random operators
    // instead, which makes it the same finding on every mutant of the seed.
    if (v && v->kind == oracle::verdict_kind::state_mismatch &&
        v->message.rfind("random number generator consumption differs", 0) == 0) {
      std::set<std::string> random_ops;
      for (const auto& n : cache->structure->nodes)
        for (std::string_view r : {"dropout", "bernoulli", "rand", "normal", "multinomial", "uniform", "exponential",
                                   "cauchy", "geometric", "poisson", "rrelu"})
          if (n.kind.find(r) != std::string::npos) random_ops.insert(n.kind);
      std::string names;
      for (const auto& r : random_ops) names += (names.empty() ? "" : ",") + r;
      at.culprit_op = names.empty() ? "(no random operator)" : names;
      at.localised = false;
      at.whole_model = true;
      at.note =
          "random number consumption is compared over the whole run: attributed to the model's random "
          "operators, not localised";
      return at;
    }
    const auto& g = *cache->graph;
    localiser<skeleton_graph> loc(
        g, [&](graph::edge_id e) { return g.data(e); }, [&](graph::node_id n) { return g.data(n); });
    worker_request base = req;
    base.seed_model.clear();
    std::vector<graph::edge_id> outs;
    bool op_by_op = false;
    if (v) {
      base.config_a = v->config_a;
      base.config_b = v->config_b;
      base.input = v->input_index == oracle::no_index ? 0 : v->input_index;
      outs = output_edges(g, *cache->structure, v->output_path);
      const auto* ca = config(v->config_a);
      const auto* cb = config(v->config_b);
      op_by_op = ca && cb && ca->op_by_op && cb->op_by_op;
    } else {
      const auto* cb = config(o.running_config);
      if (!cb) return fallback;  // died while loading or comparing: nothing to bisect
      base.config_b = cb->name;
      base.config_a = cb->reference.empty() ? cb->name : cb->reference;
      base.input = 0;
      outs = output_edges(g, *cache->structure, "");
    }
    const auto named = v && v->kind == oracle::verdict_kind::error_in_one ? v->failed_at : std::int64_t{-1};
    const auto l = loc.run(base, outs, op_by_op, crash, step, named);
    at.note = l.note;
    at.runs = l.runs;
    at.conditioned = l.conditioned;
    if (!l.localised) return at;
    at.localised = true;
    at.culprit_op = l.op;
    at.position = l.position;
    at.inputs = l.inputs;
    at.states = l.states;
    at.divergence = l.divergence.message.empty() && v ? v->message : l.divergence.message;
    if (!l.inputs.empty()) at.dtype = l.inputs.substr(0, l.inputs.find(' '));
    at.node = graph::no_node;
    if (judged && l.node != graph::no_node) {
      if (!cache->to_judged)
        cache->to_judged = graph::align_by_kind(
            g, [&](graph::node_id n) { return g.data(n); }, Backend::graph(*judged),
            [&](graph::node_id n) { return std::string(Backend::kind(*judged, n)); });
      at.node =
          graph::index(l.node) < cache->to_judged->size() ? (*cache->to_judged)[graph::index(l.node)] : graph::no_node;
    }
    return at;
  };
}

}  // namespace tfg::campaign
