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

#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/round.hpp"
#include "tfg/campaign/stack.hpp"
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

/// To whom a finding is attributed: the operator, dtype and device the signature names.
struct attribution {
  std::string culprit_op;
  std::string dtype = "f32";
  std::string device = "cpu";
};

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
    case outcome::timeout: std::snprintf(buf, sizeof buf, "no reply within %lld ms", static_cast<long long>(timeout_ms)); break;
    case outcome::out_of_memory:
      std::snprintf(buf, sizeof buf, "worker RSS reached %lld MiB", static_cast<long long>(ex.peak_rss_bytes >> 20));
      break;
    case outcome::exited: std::snprintf(buf, sizeof buf, "worker exited with status %d", ex.exit_code); break;
    default: std::snprintf(buf, sizeof buf, "worker killed by %s", signal_name(ex.signal).c_str()); break;
  }
  return std::string(buf) + " while running " + sig.config_a + (sig.detail.empty() ? "" : "; " + sig.detail);
}

/// A finding an outcome shows, with its message.
struct observed_finding {
  oracle::finding_signature signature;
  std::string message;
};

/// The reference configuration's error, when it failed ("" when it ran).
[[nodiscard]] inline std::string reference_error(const worker_reply& reply, std::string_view reference = "eager_op_by_op") {
  const auto* r = reply.result(reference);
  return r && !r->ok ? r->error : std::string();
}

/// Every finding `o` shows: a process-level failure; an internal assert in the reference
/// configuration; the differential verdicts of the reply (all of them — filtering those the
/// seed already shows is the caller's business); performance anomalies when `perf` is given.
/// A reply whose reference configuration failed with an ordinary error shows nothing (an
/// illegal test case).
[[nodiscard]] inline std::vector<observed_finding> findings_of(const run_outcome& o, const attribution& at,
                                                               const performance_rule* perf = nullptr) {
  std::vector<observed_finding> out;
  if (o.process_failed()) {
    auto sig = process_signature(o, at);
    out.push_back({sig, process_message(sig, o, 0)});
    return out;
  }
  if (!o.reply || !o.reply->ok) return out;
  const auto& reply = *o.reply;
  if (const auto err = reference_error(reply); !err.empty()) {
    if (is_internal_error(err))
      out.push_back({{oracle::finding_kind::exception, "eager_op_by_op", "", at.culprit_op, at.dtype, at.device,
                      oracle::normalise_message(err)},
                     err});
    return out;
  }
  for (const auto& v : reply.verdicts) {
    const auto kind = oracle::finding_kind_of(v.kind);
    if (!kind) continue;
    out.push_back({{*kind, v.config_a, v.config_b, at.culprit_op, at.dtype, at.device,
                    *kind == oracle::finding_kind::exception ? oracle::normalise_message(v.message) : ""},
                   v.message});
  }
  if (perf)
    for (const auto& sl : slow_configs(reply, *perf))
      out.push_back({{oracle::finding_kind::performance, sl.a, sl.b, at.culprit_op, at.dtype, at.device, ""}, sl.message()});
  return out;
}

/// Whether `o` shows the finding `f` again (the same signature), attributing what it shows as
/// `at`. Performance findings need `perf`.
[[nodiscard]] inline bool reproduces(const oracle::finding_signature& f, const run_outcome& o, const attribution& at,
                                     const performance_rule* perf = nullptr) {
  const auto id = f.id();
  for (const auto& x : findings_of(o, at, perf))
    if (x.signature.id() == id) return true;
  return false;
}

}  // namespace tfg::campaign
