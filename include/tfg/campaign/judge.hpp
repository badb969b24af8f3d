#pragma once
/// \file
/// From what a worker showed to findings: one function turns a run's outcome (how the worker
/// process ended, and its reply) into finding signatures, and `reproduces(finding, outcome)`
/// is the one answer to "does this run show that finding again" — for the reliability re-runs
/// of a campaign and for `flowmut repro` alike.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <csignal>
#include <functional>

#include <nlohmann/json.hpp>

#include "tfg/campaign/signature_json.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/round.hpp"
#include "tfg/campaign/stack.hpp"
#include "tfg/graph/ids.hpp"
#include "tfg/oracle/finding.hpp"

namespace tfg::campaign {

/// What one execution of a test case in a worker showed.
struct run_outcome {
  exchange_result exchange;           ///< how the exchange ended (process.hpp)
  std::optional<worker_reply> reply;  ///< when the worker replied with a readable line
  std::string reply_error;            ///< the reply was unreadable: why
  std::string running_config;         ///< the configuration a dead worker was running (write-ahead record)

  [[nodiscard]] bool process_failed() const noexcept { return exchange.kind != outcome::reply; }
};

/// Makes a run_outcome of an exchange (parses the reply line).
[[nodiscard]] inline run_outcome make_outcome(exchange_result ex, std::string running_config = {}) {
  run_outcome o;
  o.exchange = std::move(ex);
  o.running_config = std::move(running_config);
  if (o.exchange.kind == outcome::reply) {
    auto r = parse_reply(o.exchange.reply);
    if (r) o.reply = std::move(*r);
    else o.reply_error = r.error();
  }
  return o;
}

/// To whom a finding is attributed: the operator, dtype and device the signature names, the
/// state class of the operator's inputs, and where it was found (tfg/campaign/localise.hpp).
struct attribution {
  std::string culprit_op;
  std::string dtype = "f32";
  std::string device = "cpu";
  std::string inputs;                    ///< state class of the culprit's inputs ("" unknown)
  bool localised = false;                ///< culprit_op is where the values diverge (else: the mutation's op)
  graph::node_id node = graph::no_node;  ///< the culprit in the judged model's graph
  std::int64_t position = -1;            ///< its topological position
  std::vector<std::string> states;       ///< F of its inputs, for humans
  std::string divergence;                ///< how its outputs differ
  std::string note;                      ///< what to know about the localisation
  int runs = 0;                          ///< configuration runs the localisation cost
  /// The culprit computes its outputs accurately from its own inputs in both configurations:
  /// a numeric divergence that is ill-conditioning (findings_of drops it).
  bool conditioned = false;
  /// A property of the whole run, not of a node (random-number consumption): attributed to
  /// `culprit_op` without a node, and inherited by every mutant of a seed that shows it.
  bool whole_model = false;
};

/// Attributes what an outcome shows: `v` is the verdict of a differential finding (nullptr
/// for a process-level failure or a finding of kind `k` without a verdict).
using attributor = std::function<attribution(const run_outcome&, const oracle::verdict* v, oracle::finding_kind k)>;

/// An attributor that names the same culprit for everything (no localisation).
[[nodiscard]] inline attributor fixed_attribution(attribution at) {
  return [at = std::move(at)](const run_outcome&, const oracle::verdict*, oracle::finding_kind) { return at; };
}

/// The performance rule: configuration b is anomalous against its reference a when b/a on the
/// mutant is >= factor times b/a on the seed (and >= factor) and b is >= min_ms slower.
struct performance_rule {
  double factor = 10, min_ms = 100;
  std::map<std::string, double> seed_times;      ///< wall ms of each configuration on the seed
  std::map<std::string, std::string> reference;  ///< configuration -> its reference configuration
  /// Judged for values only: multi-threaded timing on shared cores measures the machine.
  std::set<std::string> untimed{"threads_1_vs_n"};
};

struct slow_pair {
  std::string a, b;
  double a_ms = 0, b_ms = 0, ratio = 0, seed_ratio = 0;

  [[nodiscard]] std::string message() const {
    char buf[240];
    std::snprintf(buf, sizeof buf, "%s takes %.1f ms, %.1fx the %.1f ms of %s (on the seed: %.1fx)", b.c_str(), b_ms,
                  ratio, a_ms, a.c_str(), seed_ratio);
    return buf;
  }
};

/// The performance anomalies of a reply under `rule`.
[[nodiscard]] inline std::vector<slow_pair> slow_configs(const worker_reply& reply, const performance_rule& rule) {
  std::vector<slow_pair> out;
  const auto t = reply.config_times();
  for (const auto& [b, b_ms] : t) {
    const auto ref = rule.reference.find(b);
    if (ref == rule.reference.end() || ref->second.empty() || rule.untimed.count(b)) continue;
    const auto a = t.find(ref->second);
    const auto sa = rule.seed_times.find(ref->second), sb = rule.seed_times.find(b);
    if (a == t.end() || sa == rule.seed_times.end() || sb == rule.seed_times.end()) continue;
    const double ratio = b_ms / std::max(a->second, 1e-3), seed_ratio = sb->second / std::max(sa->second, 1e-3);
    if (ratio > rule.factor * std::max(seed_ratio, 1.0) && b_ms - a->second > rule.min_ms)
      out.push_back({a->first, b, a->second, b_ms, ratio, seed_ratio});
  }
  return out;
}

/// One timed run of a (reference a, configuration b) pair.
struct pair_timing {
  double a_ms = 0, b_ms = 0;
};

/// Whether a performance anomaly survives repeated, interleaved timing: the seed and the mutant
/// were run alternately (seed, mutant, seed, mutant, ...) with only the two configurations, and
/// the anomaly stands when the mutant's *smallest* ratio b/a is above `rule.factor` times the
/// seed's *largest* (at least 1) and the median b is `rule.min_ms` slower than the median a. One
/// slow run, a ratio that overlaps the seed's, or a gap made by the machine does not stand.
struct performance_confirmation {
  bool stands = false;
  std::string message;  ///< medians with their ranges, both ratios; what a report shows
};

[[nodiscard]] inline performance_confirmation confirm_slow(const std::string& a, const std::string& b,
                                                           const std::vector<pair_timing>& seed,
                                                           const std::vector<pair_timing>& mutant,
                                                           const performance_rule& rule) {
  performance_confirmation c;
  if (seed.empty() || mutant.empty()) {
    c.message = "no complete timing of " + a + " and " + b + " on both the seed and the mutant";
    return c;
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  const auto column = [](const std::vector<pair_timing>& t, auto f) {
    std::vector<double> v;
    for (const auto& x : t) v.push_back(f(x));
    return v;
  };
  const auto ratio = [](const pair_timing& x) { return x.b_ms / std::max(x.a_ms, 1e-3); };
  const auto mr = column(mutant, ratio), sr = column(seed, ratio);
  const auto ma = column(mutant, [](const pair_timing& x) { return x.a_ms; });
  const auto mb = column(mutant, [](const pair_timing& x) { return x.b_ms; });
  const auto [mr_lo, mr_hi] = std::minmax_element(mr.begin(), mr.end());
  const auto [sr_lo, sr_hi] = std::minmax_element(sr.begin(), sr.end());
  const auto [mb_lo, mb_hi] = std::minmax_element(mb.begin(), mb.end());
  const double med_a = median(ma), med_b = median(mb);
  c.stands = *mr_lo > rule.factor * std::max(*sr_hi, 1.0) && med_b - med_a > rule.min_ms;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "%s takes %.1f ms (median of %zu, %.1f-%.1f), %.1fx (%.1f-%.1f) the %.1f ms of %s; on the seed, "
                "timed alternately with it: %.1fx (%.1f-%.1f)",
                b.c_str(), med_b, mb.size(), *mb_lo, *mb_hi, median(mr), *mr_lo, *mr_hi, med_a, a.c_str(), median(sr),
                *sr_lo, *sr_hi);
  c.message = buf;
  return c;
}

/// True when an error message is the framework reporting its own defect (an internal assert),
/// not a violated precondition.
[[nodiscard]] inline bool is_internal_error(std::string_view message) noexcept {
  return message.find("INTERNAL ASSERT FAILED") != std::string_view::npos ||
         message.find("please report a bug") != std::string_view::npos;
}

/// The signature of a process-level failure (crash, abort, hang, out of memory, exit).
/// Precondition: o.process_failed().
[[nodiscard]] inline oracle::finding_signature process_signature(const run_outcome& o, const attribution& at) {
  using K = oracle::finding_kind;
  oracle::finding_signature sig;
  sig.culprit_op = at.culprit_op;
  sig.dtype = at.dtype;
  sig.device = at.device;
  sig.inputs = at.inputs;
  sig.config_a = o.running_config.empty() ? std::string("?") : o.running_config;
  const auto& ex = o.exchange;
  switch (ex.kind) {
    case outcome::signaled: sig.kind = ex.signal == SIGABRT ? K::abort : K::crash; break;
    case outcome::timeout: sig.kind = K::hang; break;
    case outcome::out_of_memory: sig.kind = K::out_of_memory; break;
    default: sig.kind = K::crash; break;
  }
  if (ex.kind == outcome::signaled) {
    sig.symptom = signal_name(ex.signal);
    std::string frames;
    if (auto rep = parse_crash_report(ex.log))
      for (const auto& f : meaningful_frames(rep->frames, 3)) frames += (frames.empty() ? "" : " < ") + f;
    sig.detail = signal_name(ex.signal) + (frames.empty() ? "" : " " + frames);
  } else if (ex.kind == outcome::exited) {
    sig.detail = "exit " + std::to_string(ex.exit_code);
  }
  return sig;
}

/// One line for a process-level finding: what happened, where, and the top frames.
[[nodiscard]] inline std::string process_message(const oracle::finding_signature& sig, const run_outcome& o,
                                                 std::int64_t timeout_ms) {
  char buf[128];
  const auto& ex = o.exchange;
  switch (ex.kind) {
    case outcome::timeout:
      std::snprintf(buf, sizeof buf, "no reply within %lld ms", static_cast<long long>(timeout_ms));
      break;
    case outcome::out_of_memory:
      std::snprintf(buf, sizeof buf, "worker RSS reached %lld MiB", static_cast<long long>(ex.peak_rss_bytes >> 20));
      break;
    case outcome::exited: std::snprintf(buf, sizeof buf, "worker exited with status %d", ex.exit_code); break;
    default: std::snprintf(buf, sizeof buf, "worker killed by %s", signal_name(ex.signal).c_str()); break;
  }
  return std::string(buf) + " while running " + sig.config_a + (sig.detail.empty() ? "" : "; " + sig.detail);
}

/// A finding an outcome shows, with its message and attribution.
struct observed_finding {
  oracle::finding_signature signature;
  std::string message;
  attribution where;
  const oracle::verdict* verdict = nullptr;  ///< into the outcome's reply (differential findings)
};

/// The reference configuration's error, when it failed ("" when it ran).
[[nodiscard]] inline std::string reference_error(const worker_reply& reply,
                                                 std::string_view reference = "eager_op_by_op") {
  const auto* r = reply.result(reference);
  return r && !r->ok ? r->error : std::string();
}

/// The signature of a finding of kind `k` between `a` and `b`, attributed as `at`.
[[nodiscard]] inline oracle::finding_signature signature_of(oracle::finding_kind k, std::string a, std::string b,
                                                            const attribution& at, std::string detail = {}) {
  oracle::finding_signature s;
  s.kind = k;
  s.config_a = std::move(a);
  s.config_b = std::move(b);
  s.culprit_op = at.culprit_op;
  s.dtype = at.dtype;
  s.device = at.device;
  s.detail = std::move(detail);
  s.inputs = at.inputs;
  return s;
}

/// Which findings of an outcome to look at: all, or only those that could be `f` (so that
/// reproducing a finding attributes, and localises, only the candidates).
struct finding_filter {
  const oracle::finding_signature* only = nullptr;
  [[nodiscard]] bool admits(oracle::finding_kind k, std::string_view a, std::string_view b) const {
    return !only || (only->kind == k && only->config_a == a && only->config_b == b);
  }
};

/// The recorded key of a finding folder's meta.json with its message normalised by today's
/// rules (`normalise_message`): a finding recorded by an earlier flowmut, whose normaliser kept
/// what it now masks (an ONNX node's name, a generated name's counter), still reproduces when
/// everything else about it is the same. Only exception and export_failure keys carry a
/// normalised message; other keys come back as recorded.
[[nodiscard]] inline std::string recorded_key_today(const nlohmann::json& meta) {
  const std::string key = meta.value("key", "");
  const auto kind = oracle::parse_finding_kind(meta.value("kind", ""));
  if (!kind || (*kind != oracle::finding_kind::exception && *kind != oracle::finding_kind::export_failure) ||
      !meta.contains("message") || key.find(':') < key.find('|'))  // a symptom ("kind:symptom") in the key
    return key;
  oracle::finding_signature s;
  s.dtype = "f32";  // what a meta.json without them meant
  s.device = "cpu";
  from_json(meta, s);  // signature_json.hpp
  s.symptom.clear();   // not part of these keys (checked above)
  s.detail = oracle::normalise_message(meta.value("message", ""));
  return s.key();
}

/// Every finding `o` shows: a process-level failure; an internal assert in the reference
/// configuration; the differential and metamorphic verdicts of the reply (all of them —
/// deciding which are inherited from the seed is the caller's business); performance
/// anomalies when `perf` is given. A reply whose reference configuration failed with an
/// ordinary error shows nothing (an illegal test case). `attribute` names each one's culprit.
[[nodiscard]] inline std::vector<observed_finding> findings_of(const run_outcome& o, const attributor& attribute,
                                                               const performance_rule* perf = nullptr,
                                                               finding_filter filter = {}) {
  using K = oracle::finding_kind;
  std::vector<observed_finding> out;
  if (o.process_failed()) {
    const auto probe = process_signature(o, {});
    if (!filter.admits(probe.kind, probe.config_a, probe.config_b)) return out;
    const auto at = attribute(o, nullptr, probe.kind);
    auto sig = process_signature(o, at);
    out.push_back({sig, process_message(sig, o, 0), at});
    return out;
  }
  if (!o.reply || !o.reply->ok) return out;
  const auto& reply = *o.reply;
  if (const auto err = reference_error(reply); !err.empty()) {
    if (is_internal_error(err) && filter.admits(K::exception, "eager_op_by_op", "")) {
      const auto at = attribute(o, nullptr, K::exception);
      out.push_back({signature_of(K::exception, "eager_op_by_op", "", at, oracle::normalise_message(err)), err, at});
    }
    return out;
  }
  // The float64 autograd pair is localised by bisection, which cannot re-run the culprit on
  // each side's own inputs; its forward is the op-by-op pair's (eager, float64_reference). A
  // disagreement there that the op-by-op pair localised to the same node and found
  // ill-conditioned or beyond the dtype's range is that same legitimate difference.
  std::vector<std::pair<std::int64_t, K>> conditioned_at;  // (position, kind) of the op-by-op pair
  std::vector<std::optional<attribution>> ats(reply.verdicts.size());
  auto attribution_of = [&](std::size_t i, K kind) -> const attribution& {
    if (!ats[i]) ats[i] = attribute(o, &reply.verdicts[i], kind);
    return *ats[i];
  };
  const bool autograd64 = std::any_of(reply.verdicts.begin(), reply.verdicts.end(), [&](const auto& v) {
    const auto k = oracle::finding_kind_of(v.kind);
    return k && (*k == K::numeric || *k == K::nan_inf) && v.config_a == "autograd_eager" &&
           v.config_b == "autograd_float64" && filter.admits(*k, v.config_a, v.config_b);
  });
  for (std::size_t i = 0; autograd64 && i < reply.verdicts.size(); ++i) {
    const auto& v = reply.verdicts[i];
    const auto kind = oracle::finding_kind_of(v.kind);
    if (!kind || v.config_a != "eager_op_by_op" || v.config_b != "float64_reference") continue;
    if (*kind != K::numeric && *kind != K::nan_inf) continue;
    if (const auto& at = attribution_of(i, *kind); at.conditioned && at.position >= 0)
      conditioned_at.emplace_back(at.position, *kind);
  }
  for (std::size_t i = 0; i < reply.verdicts.size(); ++i) {
    const auto& v = reply.verdicts[i];
    auto kind = oracle::finding_kind_of(v.kind);
    // The configuration failed to export the model: the exporter's defect, its own kind.
    if (kind == K::exception && v.message.rfind(v.config_b + ": " + std::string(oracle::export_failure_prefix), 0) == 0)
      kind = K::export_failure;
    if (!kind || !filter.admits(*kind, v.config_a, v.config_b)) continue;
    const auto& at = attribution_of(i, *kind);
    // Ill-conditioned, or beyond the dtype's range: not a defect (docs/oracle.md).
    if (at.conditioned && (*kind == K::numeric || *kind == K::nan_inf)) continue;
    if (v.config_a == "autograd_eager" && v.config_b == "autograd_float64" && at.position >= 0 &&
        std::find(conditioned_at.begin(), conditioned_at.end(), std::make_pair(at.position, *kind)) !=
            conditioned_at.end())
      continue;
    std::string detail;
    if (*kind == K::exception || *kind == K::export_failure) detail = oracle::normalise_message(v.message);
    out.push_back({signature_of(*kind, v.config_a, v.config_b, at, std::move(detail)), v.message, at, &v});
  }
  if (perf)
    for (const auto& sl : slow_configs(reply, *perf))
      if (filter.admits(K::performance, sl.a, sl.b)) {
        const auto at = attribute(o, nullptr, K::performance);
        out.push_back({signature_of(K::performance, sl.a, sl.b, at), sl.message(), at});
      }
  return out;
}

/// Whether `o` shows the finding `f` again: the same signature, attributing (and localising)
/// what it shows with `attribute`. Performance findings need `perf`.
[[nodiscard]] inline bool reproduces(const oracle::finding_signature& f, const run_outcome& o,
                                     const attributor& attribute, const performance_rule* perf = nullptr) {
  const auto id = f.id();
  for (const auto& x : findings_of(o, attribute, perf, finding_filter{&f}))
    if (x.signature.id() == id) return true;
  return false;
}

}  // namespace tfg::campaign
