#pragma once
/// \file
/// Replaying a stored finding (`flowmut repro DIR/findings/ID`): the finding folder's model is
/// run in a fresh supervised worker exactly as the campaign ran it, judged and localised the
/// same way, and the finding reproduces when the same signature shows again (judge.hpp,
/// `reproduces`). Backend-neutral.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/attribute.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/machine_load.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/supervisor.hpp"
#include "tfg/oracle/nan_propagation.hpp"

namespace tfg::campaign {

/// What a replay showed.
struct replay_result {
  bool reproduced = false;
  run_outcome outcome;                     ///< of the main run (or of the nan_check)
  std::vector<observed_finding> observed;  ///< what it shows of the finding's kind and pair
  std::string error;                       ///< the folder could not be replayed: why
  /// The recorded localisation had failed on a step and was done again: the finding shows up
  /// (same kind and pair) under the operator it localises to now, not the recorded key.
  bool relocalised = false;
};

/// Replays the finding in `dir` with `worker_exe` (serving `worker --dir D`). `nan_rules`:
/// the propagation rules of the requirement files (nan_vanished findings).
template <class Backend>
[[nodiscard]] replay_result replay(Backend& backend, const std::filesystem::path& dir,
                                   const std::filesystem::path& worker_exe, std::chrono::milliseconds timeout,
                                   std::int64_t rss_limit_bytes, const oracle::nan_rules& nan_rules = {}) {
  namespace fs = std::filesystem;
  replay_result out;
  const auto files = finding_layout::of<Backend>(dir);
  std::ifstream in(files.meta());
  const auto meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded() || !fs::exists(files.mutant())) {
    out.error = dir.string() + " is not a finding folder (meta.json, " + files.mutant_name() + ")";
    return out;
  }
  const auto kind = oracle::parse_finding_kind(meta.value("kind", ""));
  if (!kind) {
    out.error = dir.string() + ": unknown finding kind `" + meta.value("kind", "") + "`";
    return out;
  }
  // The recorded signature, rebuilt from its fields; the key must match.
  oracle::finding_signature sig;
  sig.kind = *kind;
  sig.config_a = meta.value("config_a", "");
  sig.config_b = meta.value("config_b", "");
  const auto work = fs::temp_directory_path() / ("flowmut-replay-" + std::to_string(::getpid()));
  fs::create_directories(work);
  // Workers in work/0, work/1, ...; the timeout scaled by the load from now on.
  supervisor workers(work, worker_exe, worker_environment<Backend>(), rss_limit_bytes);
  workers.restore_calibration(timeout, machine_load_factor(), timeout, timeout);
  auto step = [&](const worker_request& r) { return workers.execute(r); };
  workers.spawn();
  worker_request req;
  req.id = 0;
  req.model = fs::absolute(files.mutant()).string();
  req.inputs = fs::absolute(files.inputs()).string();
  req.configs = meta.value("configs", std::vector<std::string>{});
  if (sig.kind == oracle::finding_kind::metamorphic) {
    req.seed_model = fs::absolute(files.seed()).string();
    req.meta_atol = meta["metamorphic"].value("atol", 0.0);
    req.meta_rtol = meta["metamorphic"].value("rtol", 0.0);
  }
  attribution fallback;
  fallback.culprit_op = meta.value("culprit_op", "");
  fallback.dtype = meta.value("dtype", "f32");
  fallback.device = meta.value("device", "cpu");
  fallback.inputs = meta.value("inputs", "");
  const std::string key = meta.value("key", "");
  const std::string key_today = recorded_key_today(meta);
  const auto same_key = [&](const std::string& k) { return k == key || k == key_today; };
  if (sig.kind == oracle::finding_kind::nan_vanished) {
    auto q = req;
    q.op = request_op::nan_check;
    for (const auto& [op, rule] : nan_rules) q.nan_rules.emplace(op, std::string(oracle::to_string(rule)));
    out.outcome = step(q);
    if (out.outcome.reply && out.outcome.reply->ok)
      for (const auto& l : out.outcome.reply->found) {
        attribution at = fallback;
        at.culprit_op = l.op;
        at.inputs = l.inputs;
        at.localised = true;
        at.divergence = l.divergence.message;
        auto s = signature_of(oracle::finding_kind::nan_vanished, "", "", at);
        if (!l.inputs.empty()) s.dtype = l.inputs.substr(0, l.inputs.find(' '));
        out.observed.push_back({s, l.divergence.message, at});
        if (same_key(s.key())) out.reproduced = true;
      }
  } else {
    out.outcome = step(req);
    performance_rule perf;
    perf.seed_times = meta.value("seed_times", std::map<std::string, double>{});
    for (const auto& c : backend.configs()) perf.reference[c.name] = c.reference;
    const bool process = out.outcome.process_failed();
    const bool localised = meta.contains("localisation") && meta["localisation"].value("localised", false);
    // A localisation that failed on a step (a tool error, perhaps fixed since) is tried again;
    // one that found nothing to localise is not.
    const bool step_failed = meta.contains("localisation") &&
                             meta["localisation"].value("note", "").rfind("a localisation step failed", 0) == 0;
    // A crash keeps its recorded attribution (bisecting it again costs a worker per step).
    const attributor at = process || (!localised && !step_failed)
                              ? fixed_attribution(fallback)
                              : localising_attributor<Backend>(req, fallback, backend.configs(), step);
    for (auto& f : findings_of(out.outcome, at, &perf, finding_filter{&sig})) out.observed.push_back(std::move(f));
    for (const auto& f : out.observed)
      if (same_key(f.signature.key())) out.reproduced = true;
    if (!out.reproduced && step_failed && !out.observed.empty()) out.reproduced = out.relocalised = true;
  }
  workers.shutdown();
  std::error_code ec;
  fs::remove_all(work, ec);
  return out;
}

}  // namespace tfg::campaign
