#pragma once
/// \file
/// state.json, the checkpoint a resumed campaign continues from (docs/campaign.md, "Resume"):
/// what it needs beyond campaign.db, written atomically after each round's database commit (a
/// kill between the two redoes that round). `checkpoint` is the file as a value, with one JSON
/// converter; the parts it holds (novelty, behaviour history, metrics tracker, generator,
/// corpus) keep their own JSON forms. Watchers (flowmut fuzz, compare) read it too.
#include <cstddef>
#include <fstream>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tfg/util/atomic_file.hpp"
#include "tfg/util/expected.hpp"

namespace tfg::campaign {

struct checkpoint {
  std::size_t round = 0;                                ///< the next round to run
  std::string seed;                                     ///< the current seed's file, relative to the campaign folder
  std::string rng;                                      ///< the generator's random engine, streamed
  nlohmann::json novelty = nlohmann::json::object();    ///< trace_novelty
  nlohmann::json behaviour = nlohmann::json::object();  ///< behaviour_history (absent before the behaviour reward)
  nlohmann::json metrics = nlohmann::json::object();    ///< metrics::tracker
  nlohmann::json generator = nlohmann::json::object();  ///< generator state
  /// The corpus's part (corpus.hpp: "corpus", "current", "window"), kept at the top level.
  nlohmann::json corpus = nlohmann::json::object();
  std::map<std::string, double> seed_times;  ///< wall ms per configuration on the current seed
  std::int64_t timeout_ms = 0;               ///< the calibrated per-mutant timeout (0: not stored)
  std::size_t legal = 0, executed = 0;
  std::size_t rounds = 0;    ///< the rounds the campaign was asked for (for watchers)
  std::size_t findings = 0;  ///< distinct findings so far (for watchers; not restored)
};

inline void to_json(nlohmann::json& j, const checkpoint& c) {
  j = {{"round", c.round},
       {"seed", c.seed},
       {"rng", c.rng},
       {"novelty", c.novelty},
       {"behaviour", c.behaviour},
       {"metrics", c.metrics},
       {"seed_times", c.seed_times},
       {"timeout_ms", c.timeout_ms},
       {"legal", c.legal},
       {"executed", c.executed},
       {"rounds", c.rounds},
       {"findings", c.findings},
       {"generator", c.generator}};
  for (const auto& [k, v] : c.corpus.items()) j[k] = v;
}

/// Reads what is there: fields a checkpoint of an older flowmut lacks keep their defaults.
inline void from_json(const nlohmann::json& j, checkpoint& c) {
  c.round = j.at("round").get<std::size_t>();
  c.seed = j.value("seed", std::string());
  c.rng = j.value("rng", std::string());
  c.novelty = j.value("novelty", nlohmann::json::object());
  c.behaviour = j.value("behaviour", nlohmann::json::object());
  c.metrics = j.value("metrics", nlohmann::json::object());
  c.generator = j.value("generator", nlohmann::json::object());
  c.corpus = nlohmann::json::object();
  for (const char* k : {"corpus", "current", "window"})
    if (j.contains(k)) c.corpus[k] = j.at(k);
  c.seed_times = j.value("seed_times", std::map<std::string, double>{});
  c.timeout_ms = j.value("timeout_ms", std::int64_t{0});
  c.legal = j.value("legal", std::size_t{0});
  c.executed = j.value("executed", std::size_t{0});
  c.rounds = j.value("rounds", std::size_t{0});
  c.findings = j.value("findings", std::size_t{0});
}

/// Writes `c` to `path` atomically.
inline void write_checkpoint(const std::filesystem::path& path, const checkpoint& c) {
  write_file_atomic(path, nlohmann::json(c).dump());
}

/// The checkpoint in `path`, or why it cannot be read.
[[nodiscard]] inline tfg::expected<checkpoint, std::string> read_checkpoint(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return tfg::unexpected(path.string() + ": cannot read the checkpoint");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("round"))
    return tfg::unexpected(path.string() + ": not a campaign checkpoint");
  try {
    return j.get<checkpoint>();
  } catch (const std::exception& e) {
    return tfg::unexpected(path.string() + ": unreadable checkpoint: " + e.what());
  }
}

}  // namespace tfg::campaign
