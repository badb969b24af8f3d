#pragma once
/// \file
/// Judging one round's mutant from what the worker replied (docs/campaign.md, "A round"):
/// `judge_mutant` returns a `judgement` value (the verdict, and the findings the mutant
/// showed, each either new or inherited from a root of the current seed) and changes nothing;
/// the loop records the findings, pays the reward and decides acceptance from it. Also the
/// pieces of a round's record every judgement uses: what the NaN-propagation oracle finds on a
/// profiled model, what a model shows the behaviour reward, and the mutation's own attribution.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/behaviour.hpp"
#include "tfg/campaign/corpus.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/round.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/match/candidates.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/oracle/nan_propagation.hpp"
#include "tfg/state/tensor_state.hpp"

namespace tfg::campaign {

[[nodiscard]] inline std::string first_line(std::string s) {
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

/// Sets `key` in a round's extra_json object, keeping what it holds.
inline void put_extra(round_record& rec, const char* key, nlohmann::json value) {
  auto j = nlohmann::json::parse(rec.extra_json.empty() ? "{}" : rec.extra_json, nullptr, false);
  if (j.is_discarded()) j = nlohmann::json::object();
  j[key] = std::move(value);
  rec.extra_json = j.dump();
}

/// The configurations the backend did not run on this mutant because they do not support it
/// (`config_result::unsupported`: an operator an exporter cannot translate, a type a runtime
/// lacks), in the round's extra_json "unsupported" {configuration: why}: counted and listed by
/// flowmut run, never findings.
inline void record_not_run(const worker_reply& reply, round_record& rec) {
  nlohmann::json why = nlohmann::json::object();
  for (const auto& r : reply.results)
    if (r.unsupported) {
      std::string_view e = r.error;
      for (std::string_view prefix : {"skipped: ", "unsupported: "})
        if (e.substr(0, prefix.size()) == prefix) e.remove_prefix(prefix.size());
      why[r.config] = first_line(std::string(e));
    }
  if (why.empty()) return;
  put_extra(rec, "unsupported", std::move(why));
}

/// A disagreement's class for the reward: its kind, the configurations and the operator.
[[nodiscard]] inline std::string disagreement_class(const oracle::finding_signature& s) {
  return std::string(oracle::to_string(s.kind)) + " " + s.config_a + "|" + s.config_b + " " + s.culprit_op;
}

/// What a profiled model shows the behaviour reward: the operator kinds it runs and each
/// node's kind with its tensor inputs' state classes (class_of, plus aliased storage).
template <class Backend>
[[nodiscard]] behaviour_observation behaviour_of(const typename Backend::model_type& m,
                                                 const typename Backend::profile_type& p,
                                                 std::vector<std::string> disagreements) {
  behaviour_observation o;
  o.disagreements = std::move(disagreements);
  const auto& g = Backend::graph(m);
  std::vector<std::string> classes;
  for (auto n : g.nodes()) {
    const std::string kind(Backend::kind(m, n));
    o.kinds.push_back(kind);
    classes.clear();
    for (auto e : g.inputs(n))
      if (const auto* ep = Backend::edge_profile(p, e);
          ep && !ep->runs.empty() && ep->runs[0].kind == state::value_kind::tensor)
        classes.push_back(state::class_of(ep->runs[0]) + (ep->runs[0].aliased() ? " aliased" : ""));
    o.input_classes.push_back(input_class_key(kind, classes));
  }
  return o;
}

/// Findings of the NaN-propagation oracle on a profiled model (F(e) only, no execution).
template <class Backend>
[[nodiscard]] std::vector<observed_finding> nan_findings(const typename Backend::model_type& m,
                                                         const typename Backend::profile_type& p,
                                                         const attribution& fallback, const oracle::nan_rules& rules) {
  std::vector<observed_finding> out;
  const auto& g = Backend::graph(m);
  const auto found = oracle::nan_vanished(
      g, [&](graph::node_id n) { return std::string(Backend::kind(m, n)); },
      [&](graph::edge_id e) { return Backend::edge_profile(p, e); }, rules);
  std::vector<std::size_t> pos(g.node_capacity(), 0);
  std::size_t i = 0;
  for (auto n : g.topological_order()) pos[graph::index(n)] = i++;
  for (const auto& v : found) {
    attribution at = fallback;
    at.localised = true;
    at.culprit_op = std::string(Backend::kind(m, v.node));
    at.node = v.node;
    at.position = static_cast<std::int64_t>(pos[graph::index(v.node)]);
    at.inputs.clear();
    for (auto e : g.inputs(v.node))
      if (const auto* ep = Backend::edge_profile(p, e);
          ep && v.run < ep->runs.size() && ep->runs[v.run].kind == state::value_kind::tensor)
        at.inputs += (at.inputs.empty() ? "" : "; ") + state::class_of(ep->runs[v.run]);
    if (!at.inputs.empty()) at.dtype = at.inputs.substr(0, at.inputs.find(' '));
    at.divergence = v.message;
    out.push_back({signature_of(oracle::finding_kind::nan_vanished, "", "", at), v.message, at});
  }
  return out;
}

/// The mutation's attribution (when a finding is not localised): the dtype of the first value
/// the mutation added (from the probe, else f32) and the first non-prim kind it added, else
/// the kind that produces the anchor in the seed `seed`.
template <class Backend>
[[nodiscard]] attribution mutation_attribution(typename Backend::mutant_type& mu, const match::bindings& b,
                                               const match::compiled_operator& op,
                                               const typename Backend::model_type& seed) {
  attribution at;
  at.dtype = "f32";
  const auto& mm = Backend::mutant_model(mu);
  const auto& g = Backend::graph(mm);
  [&] {
    for (auto n : Backend::added_nodes(mu))
      for (auto e : g.outputs(n))
        if (const auto* ep = Backend::edge_profile(Backend::mutant_profile(mu), e); ep && !ep->runs.empty()) {
          at.dtype = std::string(state::name(ep->runs[0].type));
          return;
        }
  }();
  for (auto n : Backend::added_nodes(mu)) {
    const std::string k{Backend::kind(mm, n)};
    if (k.rfind("prim::", 0) != 0) {
      at.culprit_op = k;
      return at;
    }
  }
  const auto anchor = b.values.at(op.anchor);
  const auto p = Backend::graph(seed).producer(anchor);
  at.culprit_op = p == graph::no_node ? std::string("input") : std::string(Backend::kind(seed, p));
  return at;
}

/// A finding a mutant showed, with the root of the current seed it is inherited from (if any).
struct shown_finding {
  observed_finding finding;
  std::optional<oracle::finding_signature> root;  ///< set: an instance of the seed's own disagreement
};

/// What judging a worker's reply to a mutant decided.
struct judgement {
  round_verdict verdict = round_verdict::legal;
  std::string reason;                ///< why not legal (illegal, worker failure)
  bool executed_legal = false;       ///< counts as legal in the corpus's legal window
  std::vector<shown_finding> shown;  ///< in the order the oracle found them
  /// Findings the reference configuration's internal error showed (recorded; never legal).
  bool internal_error = false;
};

/// Judges the worker's reply `out` to mutant `mu` (the seed's `pick`, bound as `b`): the
/// reference must run (its failure is illegal, unless the framework reports an internal
/// assert, a finding); the mutant's own state must satisfy the operator's deferred constraints
/// (`check`: the generator's, run now that the worker survived the mutant); then every
/// disagreement the oracle finds (`attribute` localises them) and every NaN that vanished is a
/// finding, inherited when `corpus` says the current seed `seed` carries it.
template <class Backend, class Check>
[[nodiscard]] judgement judge_mutant(const run_outcome& out, typename Backend::mutant_type& mu, Check&& check,
                                     const attributor& attribute, const attribution& fallback,
                                     const performance_rule* perf, const oracle::nan_rules& nan,
                                     const corpus<Backend>& corpus, const typename Backend::model_type& seed) {
  judgement j;
  if (!out.reply || !out.reply->ok) {
    j.verdict = round_verdict::worker_failure;
    j.reason = out.reply ? out.reply->error : out.reply_error;
    return j;
  }
  const auto& reply = *out.reply;
  if (const auto ref_error = reference_error(reply); !ref_error.empty()) {
    if (is_internal_error(ref_error)) {
      j.verdict = round_verdict::finding;
      j.internal_error = true;
      for (auto& f : findings_of(out, attribute, nullptr)) j.shown.push_back({std::move(f), std::nullopt});
    } else {
      j.verdict = round_verdict::illegal;
      j.reason = "reference fails: " + first_line(ref_error);
    }
    return j;
  }
  if (auto f = check(mu)) {
    j.verdict = round_verdict::illegal;
    j.reason = f->message;
    return j;
  }
  j.executed_legal = true;
  auto add = [&](observed_finding f) {
    auto root = corpus.inherited_root(f, seed);
    j.shown.push_back({std::move(f), std::move(root)});
  };
  for (auto& f : findings_of(out, attribute, perf)) add(std::move(f));
  for (auto& f : nan_findings<Backend>(Backend::mutant_model(mu), Backend::mutant_profile(mu), fallback, nan))
    add(std::move(f));
  return j;
}

}  // namespace tfg::campaign
