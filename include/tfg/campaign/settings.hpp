#pragma once
/// \file
/// How a campaign runs (`options`) and the settings that make a campaign what it is: stored at
/// its start (campaign.db meta "settings"), reused by a resume so that it makes the choices the
/// uninterrupted campaign would. The campaign-defining settings are listed once, in
/// `for_each_setting`; settings_json, apply_settings and the tools' resume checks read that list.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/select/features.hpp"
#include "tfg/util/expected.hpp"

namespace tfg::campaign {

namespace fs = std::filesystem;

/// How a campaign runs.
struct options {
  fs::path seed_model;                 ///< the seed file (ignored on resume: state.json names the seed)
  fs::path out_dir;
  std::vector<fs::path> op_dirs;       ///< operator folders
  fs::path inputs_path;                ///< profiling inputs; empty: the backend's default for the seed
  std::size_t rounds = 250;            ///< mutation rounds (after round 0, the seed's own judgement)
  /// Wall-clock budget of this run's rounds (0: none). Once spent, the loop stops after the
  /// round under way, as request_stop() does; a resumed campaign continues from there. Not a
  /// campaign-defining setting: each run (slice) of a campaign may give another.
  std::chrono::milliseconds time_budget{0};
  std::uint64_t seed = 1;
  std::string policy_name = "linucb";  ///< recorded in the database
  /// The reward the policy learns from: "behaviour" (behaviour.hpp) or "paper" (reward.hpp's
  /// trace novelty, what campaigns before the behaviour reward used).
  std::string reward = "behaviour";
  select::ablation features = select::ablation::all();
  std::vector<std::string> configs;    ///< empty: the backend's default configurations
  fs::path worker_exe;                 ///< the program serving `worker --dir D`
  std::chrono::milliseconds timeout_cap{60000};   ///< per-mutant timeout never exceeds this
  std::chrono::milliseconds timeout_floor{5000};  ///< a loaded machine can take seconds to load a model
  /// Runs of the seed that calibrate the timeout (the last one's time counts): 2 lets the first
  /// pay the worker's one-time costs; 1 where every mutant pays them too (a compiled
  /// configuration compiles each mutant cold, as the seed's first run does).
  int calibration_runs = 2;
  std::int64_t rss_limit_bytes = 0;    ///< 0: min(8 GiB, physical RAM / 2)
  int reruns = 2;                      ///< reliability reruns of each new finding, each in a fresh worker
  int perf_trials = 5;                 ///< interleaved seed/mutant timings that confirm a performance anomaly
  std::size_t metrics_every = 10;      ///< metrics checkpoint period (and the last round)
  bool resume = false;
  bool force = false;                  ///< start over in a folder that holds a campaign
  std::size_t max_seed_nodes = 4000;   ///< do not accept mutants beyond this many nodes
  int threads = 1;
  // Acceptance and the corpus (docs/campaign.md, "Seeds, acceptance and the corpus").
  bool accept_any = false;             ///< accept every legal mutant (findings and new NaN/Inf included)
  std::size_t corpus_size = 8;         ///< accepted seeds kept to go back to (the original always)
  std::size_t return_every = 25;       ///< every N rounds continue from the next corpus member; 0: never
  double min_legal_rate = 0.5;         ///< below this legal rate over the last `legal_window` rounds: back to the original
  std::size_t legal_window = 10;
  double magnitude_limit = 100;        ///< not accepted when a value grows beyond this many times the original's largest
  bool localise = true;                ///< localise differential findings (else: attributed to the mutation)
  /// How the caller built `Policy` (name, parameters): stored with the campaign's settings and
  /// handed back by stored_settings(), so a resumed campaign can build the same policy.
  nlohmann::json policy_spec = nlohmann::json::object();
};

/// Calls `f(key, field)` for every campaign-defining setting of `o` (const or not), in the
/// order they are stored: everything a resumed campaign must reuse to make the same choices.
/// Not among them: rounds, the time budget, the timeout cap, reruns, the memory limit and
/// threads, which each run (slice) of a campaign may give anew. `reward` is not listed here:
/// a campaign stored without it learnt from the paper's reward (apply_settings).
template <class Options, class F>
  requires std::is_same_v<std::remove_const_t<Options>, options>
void for_each_setting(Options& o, F&& f) {
  f("seed", o.seed);
  f("policy_name", o.policy_name);
  f("policy_spec", o.policy_spec);
  f("features", o.features.mask);
  f("configs", o.configs);
  f("accept_any", o.accept_any);
  f("corpus_size", o.corpus_size);
  f("return_every", o.return_every);
  f("min_legal_rate", o.min_legal_rate);
  f("legal_window", o.legal_window);
  f("magnitude_limit", o.magnitude_limit);
  f("max_seed_nodes", o.max_seed_nodes);
  f("localise", o.localise);
  f("metrics_every", o.metrics_every);
}

/// The settings that make a campaign what it is, as stored at its start (meta "settings").
[[nodiscard]] inline nlohmann::json settings_json(const options& o) {
  nlohmann::json j = nlohmann::json::object();
  for_each_setting(o, [&](const char* key, const auto& field) { j[key] = field; });
  j["reward"] = o.reward;
  return j;
}

/// Overwrites `o`'s campaign-defining settings with the stored ones (a missing key keeps o's).
inline void apply_settings(options& o, const nlohmann::json& s) {
  for_each_setting(o, [&](const char* key, auto& field) {
    if (s.contains(key)) field = s.at(key).get<std::remove_reference_t<decltype(field)>>();
  });
  o.reward = s.value("reward", std::string("paper"));  // campaigns before the behaviour reward learnt from the trace
}

/// The settings the campaign in `dir` started with (settings_json), or why there are none.
/// Reads only: a folder without a campaign is left as it is.
[[nodiscard]] inline tfg::expected<nlohmann::json, std::string> stored_settings(const fs::path& dir) {
  const layout files(dir);
  if (!files.holds_campaign())
    return tfg::unexpected(dir.string() + ": no campaign there (no state.json / campaign.db)");
  auto st = store::open(files.database());
  if (!st) return tfg::unexpected(st.error());
  const auto text = st->meta("settings");
  if (!text) return tfg::unexpected(dir.string() + ": the campaign records no settings (started by an older flowmut)");
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return tfg::unexpected(dir.string() + ": unreadable settings in campaign.db");
  return j;
}

}  // namespace tfg::campaign
