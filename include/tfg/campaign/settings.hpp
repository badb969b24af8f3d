#pragma once
/// \file
/// How a campaign runs (`options`) and the settings that make a campaign what it is: stored at
/// its start (campaign.db meta "settings"), reused by a resume so that it makes the choices the
/// uninterrupted campaign would. The campaign-defining settings are listed once, in
/// `for_each_setting`; settings_json, apply_settings and the tools' resume checks read that list.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/select/features.hpp"
#include "tfg/util/expected.hpp"

namespace tfg::campaign {

namespace fs = std::filesystem;

/// How a campaign runs.
struct options {
  fs::path seed_model;  ///< the seed file (ignored on resume: state.json names the seed)
  fs::path out_dir;
  std::vector<fs::path> op_dirs;  ///< operator folders
  fs::path inputs_path;           ///< profiling inputs; empty: the backend's default for the seed
  std::size_t rounds = 250;       ///< mutation rounds (after round 0, the seed's own judgement)
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
  std::vector<std::string> configs;               ///< empty: the backend's default configurations
  fs::path worker_exe;                            ///< the program serving `worker --dir D`
  std::chrono::milliseconds timeout_cap{60000};   ///< per-mutant timeout never exceeds this
  std::chrono::milliseconds timeout_floor{5000};  ///< a loaded machine can take seconds to load a model
  /// Runs of the seed that calibrate the timeout (the last one's time counts): 2 lets the first
  /// pay the worker's one-time costs; 1 where every mutant pays them too (a compiled
  /// configuration compiles each mutant cold, as the seed's first run does).
  int calibration_runs = 2;
  std::int64_t rss_limit_bytes = 0;  ///< 0: min(8 GiB, physical RAM / 2)
  int reruns = 2;                    ///< reliability reruns of each new finding, each in a fresh worker
  int perf_trials = 5;               ///< interleaved seed/mutant timings that confirm a performance anomaly
  std::size_t metrics_every = 10;    ///< metrics checkpoint period (and the last round)
  bool resume = false;
  bool force = false;                 ///< start over in a folder that holds a campaign
  std::size_t max_seed_nodes = 4000;  ///< do not accept mutants beyond this many nodes
  int threads = 1;
  // Acceptance and the corpus (docs/campaign.md, "Seeds, acceptance and the corpus").
  bool accept_any = false;        ///< accept every legal mutant (findings and new NaN/Inf included)
  std::size_t corpus_size = 8;    ///< accepted seeds kept to go back to (the original always)
  std::size_t return_every = 25;  ///< every N rounds continue from the next corpus member; 0: never
  double min_legal_rate = 0.5;    ///< below this legal rate over the last `legal_window` rounds: back to the original
  std::size_t legal_window = 10;
  double magnitude_limit = 100;  ///< not accepted when a value grows beyond this many times the original's largest
  bool localise = true;          ///< localise differential findings (else: attributed to the mutation)
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

/// The settings stored at a campaign's start (meta "settings"): settings_json, the operator
/// copies relative to the folder, the operator folders and inputs file they came from
/// (absolute: a resume given the same paths again is not a change).
[[nodiscard]] inline nlohmann::json start_settings_json(const options& o, const std::vector<fs::path>& operators_from) {
  auto settings = settings_json(o);
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& d : o.op_dirs) ops.push_back(d.lexically_relative(o.out_dir).string());
  settings["operators"] = ops;
  nlohmann::json from = nlohmann::json::array();
  for (const auto& d : operators_from) from.push_back(fs::absolute(d).lexically_normal().string());
  settings["operators_from"] = from;
  settings["inputs_from"] =
      o.inputs_path.empty() ? std::string() : fs::absolute(o.inputs_path).lexically_normal().string();
  return settings;
}

/// Refuses (std::invalid_argument) what cannot run, before anything is written: no folder or
/// a file in its place, nothing to resume, a campaign already there (without --force), no seed,
/// a non-positive timeout or memory limit, an unknown reward, an empty corpus, a configuration
/// `known` does not list or this machine does not have.
inline void validate(const options& o, const std::vector<config_desc>& known) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  const layout files(o.out_dir);
  if (o.out_dir.empty()) bad("the campaign folder (--out) is empty");
  std::error_code ec;
  if (fs::exists(o.out_dir, ec) && !fs::is_directory(o.out_dir, ec))
    bad(o.out_dir.string() + " exists and is not a folder");
  if (o.resume && !fs::exists(files.state(), ec))
    bad(o.out_dir.string() + ": nothing to resume (no campaign there: no state.json)");
  if (!o.resume && fs::exists(files.state(), ec) && !o.force)
    bad(o.out_dir.string() + " already holds a campaign: pass --resume to continue it or --force to start over");
  if (!o.resume) {
    if (o.seed_model.empty()) bad("a seed model is required (or --resume)");
    if (!fs::is_regular_file(o.seed_model, ec)) bad(o.seed_model.string() + ": no such file");
  }
  if (o.timeout_cap.count() <= 0) bad("the timeout must be positive");
  if (o.reward != "behaviour" && o.reward != "paper") bad("unknown reward `" + o.reward + "` (behaviour, paper)");
  if (o.corpus_size == 0) bad("the corpus keeps at least the original seed (--corpus >= 1)");
  if (o.rss_limit_bytes < 0) bad("the memory limit must be positive");
  for (const auto& name : o.configs) {
    const auto it = std::find_if(known.begin(), known.end(), [&](const auto& c) { return c.name == name; });
    if (it == known.end()) {
      std::string names;
      for (const auto& c : known) names += (names.empty() ? "" : ", ") + c.name;
      bad("unknown configuration '" + name + "' (known: " + names + ")");
    }
    if (!it->available) bad("configuration '" + name + "' is not available on this machine (flowmut configs)");
  }
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

/// Resume: the stored settings of the campaign in `o.out_dir` replace `o`'s, and the operator
/// pool is the campaign's own copy (a campaign started before settings were stored keeps the
/// given ones). Throws std::invalid_argument when `o` names another policy.
inline void restore_settings(options& o) {
  const auto st = stored_settings(o.out_dir);
  if (!st) return;
  const auto& stored = *st;
  const auto policy = stored.value("policy_name", o.policy_name);
  if (policy != o.policy_name)
    throw std::invalid_argument(o.out_dir.string() + " runs policy " + policy + ", not " + o.policy_name +
                                ": a resumed campaign keeps its policy");
  apply_settings(o, stored);
  if (stored.contains("operators")) {
    o.op_dirs.clear();
    for (const auto& d : stored.at("operators")) o.op_dirs.push_back(o.out_dir / d.get<std::string>());
  }
}

}  // namespace tfg::campaign
