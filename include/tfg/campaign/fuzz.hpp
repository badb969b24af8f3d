#pragma once
/// \file
/// Many campaigns as one fuzzing job (`flowmut fuzz`, `flowmut merge`; docs/fuzz.md):
/// durations, the work units (seed x campaign seed) and their deterministic split into shards,
/// the scheduler that shares the time among units (a bandit over units that never starves one),
/// and the findings index over all units, deduplicated by signature key (one finding, several
/// witnesses), whose merge is idempotent and independent of order. Backend-neutral: the units
/// run as campaign processes (tools/fuzz_cmd.cpp); this header decides and records.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/defects.hpp"
#include "tfg/campaign/known_issues.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/util/atomic_file.hpp"

namespace tfg::campaign {

/// Parses a duration: "90", "90s", "10m", "2h", "1h30m", "1d" (a bare number is seconds).
/// nullopt for anything else, or for a duration that is not positive.
[[nodiscard]] inline std::optional<double> parse_duration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  double total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    std::size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
    if (j == i) return std::nullopt;
    double v = 0;
    try {
      std::size_t used = 0;
      v = std::stod(std::string(s.substr(i, j - i)), &used);
      if (used != j - i) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    double unit = 1;
    if (j < s.size()) {
      switch (s[j]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        default: return std::nullopt;
      }
      ++j;
    } else if (any) {
      return std::nullopt;  // "1h30": the unit of the last part is missing
    }
    total += v * unit;
    any = true;
    i = j;
  }
  if (!(total > 0) || !std::isfinite(total)) return std::nullopt;
  return total;
}

/// "1h02m", "3m05s", "42s": a duration for status lines.
[[nodiscard]] inline std::string format_duration(double seconds) {
  const long long s = std::llround(std::max(0.0, seconds));
  char b[32];
  if (s >= 3600) std::snprintf(b, sizeof b, "%lldh%02lldm", s / 3600, (s / 60) % 60);
  else if (s >= 60) std::snprintf(b, sizeof b, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(b, sizeof b, "%llds", s);
  return b;
}

/// `--shard i/N`: this machine does part i (0-based) of N.
struct shard_spec {
  std::size_t index = 0, count = 1;
  [[nodiscard]] std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
  friend bool operator==(const shard_spec&, const shard_spec&) = default;
};

[[nodiscard]] inline std::optional<shard_spec> parse_shard(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size()) return std::nullopt;
  auto number = [](std::string_view t) -> std::optional<std::size_t> {
    std::size_t v = 0;
    for (char c : t) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || v > 1'000'000) return std::nullopt;
      v = v * 10 + static_cast<std::size_t>(c - '0');
    }
    return v;
  };
  const auto i = number(s.substr(0, slash)), n = number(s.substr(slash + 1));
  if (!i || !n || *n == 0 || *i >= *n) return std::nullopt;
  return shard_spec{*i, *n};
}

/// One unit of fuzzing work: a campaign of one seed with one campaign seed, run in slices.
struct fuzz_unit {
  std::string name;            ///< unique, stable: "<seed stem>-c<campaign seed>"
  std::filesystem::path seed;  ///< absolute
  std::uint64_t campaign_seed = 1;
  // What the scheduler knows (fuzz.json).
  std::size_t slices = 0;       ///< slices run
  double reward_sum = 0;        ///< sum of the slices' rewards, each in [0, 1]
  std::int64_t last_pick = -1;  ///< the pick number of its last slice
  std::size_t round = 0;        ///< rounds done (the campaign's state.json)
  std::size_t findings = 0;     ///< the campaign's distinct findings
  double seconds = 0;           ///< wall time in its slices
  double setup_s = 0;           ///< its last slice's time to the end of its first round
  bool done = false;            ///< its round budget is spent, or it failed
  std::string error;            ///< why its campaign failed (then done)
  std::size_t kills = 0;        ///< slices whose process died of a signal (the second ends it)
};

inline void to_json(nlohmann::json& j, const fuzz_unit& u) {
  j = {{"name", u.name},      {"seed", u.seed.string()},    {"campaign_seed", u.campaign_seed},
       {"slices", u.slices},  {"reward_sum", u.reward_sum}, {"last_pick", u.last_pick},
       {"round", u.round},    {"findings", u.findings},     {"seconds", u.seconds},
       {"done", u.done},      {"error", u.error},           {"kills", u.kills},
       {"setup_s", u.setup_s}};
}
inline void from_json(const nlohmann::json& j, fuzz_unit& u) {
  u.name = j.at("name").get<std::string>();
  u.seed = j.at("seed").get<std::string>();
  u.campaign_seed = j.at("campaign_seed").get<std::uint64_t>();
  u.slices = j.value("slices", std::size_t{0});
  u.reward_sum = j.value("reward_sum", 0.0);
  u.last_pick = j.value("last_pick", std::int64_t{-1});
  u.round = j.value("round", std::size_t{0});
  u.findings = j.value("findings", std::size_t{0});
  u.seconds = j.value("seconds", 0.0);
  u.done = j.value("done", false);
  u.error = j.value("error", std::string());
  u.kills = j.value("kills", std::size_t{0});
  u.setup_s = j.value("setup_s", 0.0);
}

/// The seed files named by `args`: files as given, folders by their `*.pt` files that are not
/// inputs (`*.inputs.pt`); absolute, sorted, without repeats. Throws std::invalid_argument for a
/// path that is neither, or when no seed is found.
[[nodiscard]] inline std::vector<std::filesystem::path> collect_seeds(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::set<fs::path> out;
  auto is_seed = [](const fs::path& p) {
    const std::string n = p.filename().string();
    return p.extension() == ".pt" && !(n.size() > 10 && n.ends_with(".inputs.pt"));
  };
  for (const auto& a : args) {
    const fs::path p = fs::absolute(a).lexically_normal();
    if (fs::is_regular_file(p)) {
      out.insert(p);
    } else if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file() && is_seed(e.path())) out.insert(e.path());
    } else {
      throw std::invalid_argument(a + ": no such seed file or folder");
    }
  }
  if (out.empty()) throw std::invalid_argument("no seed (*.pt) in the given paths");
  return {out.begin(), out.end()};
}

/// All units of a fuzzing job: each seed with campaign seeds base, base+1, ... (`per_seed` of
/// them), in a fixed order (seeds sorted, then campaign seed). Names are unique: a stem that
/// two seeds share gets its parent folder's name in front.
[[nodiscard]] inline std::vector<fuzz_unit> plan_units(const std::vector<std::filesystem::path>& seeds,
                                                       std::size_t per_seed, std::uint64_t base_seed) {
  std::map<std::string, int> stems;
  for (const auto& s : seeds) ++stems[s.stem().string()];
  std::vector<fuzz_unit> out;
  std::set<std::string> names;
  for (const auto& s : seeds) {
    std::string stem = s.stem().string();
    if (stems[stem] > 1) stem = s.parent_path().filename().string() + "." + stem;
    for (std::size_t k = 0; k < per_seed; ++k) {
      fuzz_unit u;
      u.campaign_seed = base_seed + k;
      u.name = stem + "-c" + std::to_string(u.campaign_seed);
      for (int n = 2; names.count(u.name); ++n)
        u.name = stem + "-c" + std::to_string(u.campaign_seed) + "." + std::to_string(n);
      names.insert(u.name);
      u.seed = s;
      out.push_back(std::move(u));
    }
  }
  return out;
}

/// The units of shard `sh`: every N-th unit of the planned order, starting at i. N machines
/// given the same seeds and options do the planned work exactly once between them.
[[nodiscard]] inline std::vector<fuzz_unit> shard_units(std::vector<fuzz_unit> all, const shard_spec& sh) {
  std::vector<fuzz_unit> out;
  for (std::size_t i = sh.index; i < all.size(); i += sh.count) out.push_back(std::move(all[i]));
  return out;
}

/// What a slice earned: 1 - exp(-novelty), novelty = findings new to the whole job + a quarter
/// of those new only to the unit + a fiftieth of the new behaviour signatures (the campaign's
/// `signatures` metric grows by tens a minute on a small seed: it must not drown findings). In
/// [0, 1].
[[nodiscard]] inline double slice_reward(std::size_t new_global_findings, std::size_t new_unit_findings,
                                         double new_signatures) {
  const double novelty = static_cast<double>(new_global_findings) + 0.25 * static_cast<double>(new_unit_findings) +
                         0.02 * std::max(0.0, new_signatures);
  return 1.0 - std::exp(-novelty);
}

/// Chooses the unit for the next slice among those not running and not done. UCB1 over the
/// slices' rewards: a unit never run goes first (in planned order); one not picked in the last
/// 2U picks (U: units still to run) is picked before any UCB choice, so no unit starves however
/// little it has earned; otherwise the highest mean + sqrt(2 ln(picks) / slices), ties in
/// planned order. nullopt when every unit is running or done.
[[nodiscard]] inline std::optional<std::size_t> pick_unit(const std::vector<fuzz_unit>& units,
                                                          const std::vector<bool>& running, std::int64_t picks) {
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < units.size(); ++i)
    if (!units[i].done && !(i < running.size() && running[i])) free.push_back(i);
  if (free.empty()) return std::nullopt;
  for (auto i : free)
    if (units[i].slices == 0) return i;
  std::size_t live = 0;
  for (const auto& u : units) live += !u.done;
  std::optional<std::size_t> starving;
  for (auto i : free)
    if (picks - units[i].last_pick > static_cast<std::int64_t>(2 * live) &&
        (!starving || units[i].last_pick < units[*starving].last_pick))
      starving = i;
  if (starving) return starving;
  std::size_t best = free.front();
  double best_score = -1;
  const double log_picks = std::log(static_cast<double>(std::max<std::int64_t>(picks, 1)));
  for (auto i : free) {
    const auto& u = units[i];
    const double n = static_cast<double>(u.slices);
    const double score = u.reward_sum / n + std::sqrt(2 * log_picks / n);
    if (score > best_score) best_score = score, best = i;
  }
  return best;
}

/// One witness of a finding: the unit whose campaign found it.
struct witness {
  std::string unit, seed, campaign_dir, status;
  std::uint64_t campaign_seed = 0;
  std::int64_t first_round = 0, last_round = 0, instances = 0;
  double reliability = -1;
  friend bool operator<(const witness& a, const witness& b) { return a.unit < b.unit; }
};

inline void to_json(nlohmann::json& j, const witness& w) {
  j = {{"unit", w.unit},
       {"seed", w.seed},
       {"campaign_seed", w.campaign_seed},
       {"campaign_dir", w.campaign_dir},
       {"status", w.status},
       {"first_round", w.first_round},
       {"last_round", w.last_round},
       {"instances", w.instances},
       {"reliability", w.reliability}};
}
inline void from_json(const nlohmann::json& j, witness& w) {
  w.unit = j.at("unit").get<std::string>();
  w.seed = j.value("seed", std::string());
  w.campaign_seed = j.value("campaign_seed", std::uint64_t{0});
  w.campaign_dir = j.value("campaign_dir", std::string());
  w.status = j.value("status", std::string());
  w.first_round = j.value("first_round", std::int64_t{0});
  w.last_round = j.value("last_round", std::int64_t{0});
  w.instances = j.value("instances", std::int64_t{0});
  w.reliability = j.value("reliability", -1.0);
}

/// One distinct finding of a fuzzing job: the store's row of its representative witness (the
/// first by unit name) and every witness. Its folder in the job is `findings/ID/`, a copy of the
/// representative's finding folder.
struct indexed_finding {
  finding_row row;
  std::vector<witness> witnesses;  ///< sorted by unit, one per unit
  /// "flaky" only when no witness reproduced it; instances summed; the best reliability.
  [[nodiscard]] std::string status() const {
    for (const auto& w : witnesses)
      if (w.status != "flaky") return w.status;
    return "flaky";
  }
  /// No witness reproduced it (a hang a loaded machine made is one): listed apart, not a defect.
  [[nodiscard]] static bool is_flaky(const indexed_finding* f) { return f->status() == "flaky"; }
  /// The finding over the whole job: the representative's row with status(), the instances of
  /// every witness, the best reliability, and the representative witness's rounds.
  [[nodiscard]] finding_row job_row() const {
    finding_row r = row;
    r.status = status();
    r.instances = 0;
    r.reliability = -1;
    for (const auto& w : witnesses) r.instances += w.instances, r.reliability = std::max(r.reliability, w.reliability);
    if (!witnesses.empty()) r.first_round = witnesses.front().first_round, r.last_round = witnesses.front().last_round;
    return r;
  }
};

/// The findings of many campaigns, one entry per signature key.
class findings_index {
 public:
  /// Adds `w`'s sighting of `row`. A unit already there keeps one witness: the sighting with
  /// more rounds, then more instances (then a fixed order of the other fields), so adding the
  /// same campaign twice, or sightings in any order, gives the same index. The entry's row is
  /// the one that came with its first witness by unit name.
  void add(const finding_row& row, const witness& w) {
    auto& f = by_key_[row.key];
    auto it = std::find_if(f.witnesses.begin(), f.witnesses.end(), [&](const witness& x) { return x.unit == w.unit; });
    bool taken = true;
    if (it == f.witnesses.end()) {
      f.witnesses.push_back(w);
    } else if (later(w, *it)) {
      *it = w;
    } else {
      taken = false;
    }
    std::sort(f.witnesses.begin(), f.witnesses.end());
    if (taken && f.witnesses.front().unit == w.unit) {
      f.row = row;
      f.row.dir = "findings/" + row.id;
    }
  }
  /// Adds every finding of the campaign in `campaign_dir` as witnessed by `unit`.
  void add_campaign(const fuzz_unit& unit, const std::filesystem::path& campaign_dir) {
    auto opened = store::open(layout(campaign_dir).database());
    if (!opened) throw std::runtime_error(opened.error());
    for (const auto& r : opened->findings()) {
      witness w;
      w.unit = unit.name;
      w.seed = unit.seed.string();
      w.campaign_seed = unit.campaign_seed;
      w.campaign_dir = std::filesystem::absolute(campaign_dir).lexically_normal().string();
      w.status = r.status;
      w.first_round = r.first_round;
      w.last_round = r.last_round;
      w.instances = r.instances;
      w.reliability = r.reliability;
      add(r, w);
    }
  }
  /// Adds every entry of another index (its findings.jsonl).
  void add_index(const findings_index& other) {
    for (const auto& [key, f] : other.by_key_)
      for (const auto& w : f.witnesses) add(f.row, w);
  }
  /// The sighting a unit keeps of two: more rounds, more instances, then a fixed order.
  [[nodiscard]] static bool later(const witness& a, const witness& b) {
    return std::tie(a.last_round, a.instances, a.first_round, a.reliability, a.campaign_dir, a.status, a.seed,
                    a.campaign_seed) > std::tie(b.last_round, b.instances, b.first_round, b.reliability, b.campaign_dir,
                                                b.status, b.seed, b.campaign_seed);
  }
  [[nodiscard]] std::size_t size() const noexcept { return by_key_.size(); }
  [[nodiscard]] std::size_t witnesses() const noexcept {
    std::size_t n = 0;
    for (const auto& [k, f] : by_key_) n += f.witnesses.size();
    return n;
  }
  /// In key order.
  [[nodiscard]] std::vector<const indexed_finding*> entries() const {
    std::vector<const indexed_finding*> out;
    for (const auto& [k, f] : by_key_) out.push_back(&f);
    return out;
  }
  /// The findings grouped into defects by mechanism (tfg/campaign/defects.hpp), in key order;
  /// a group is `reproduced` when one of its findings is not flaky.
  [[nodiscard]] std::vector<defect_group<const indexed_finding*>> defects() const {
    return group_defects(
        entries(), [](const indexed_finding* f) { return f->row.key; }, &indexed_finding::is_flaky);
  }
  /// Defects with a reproduced variant, their reproduced variants, and the findings that never
  /// reproduced.
  [[nodiscard]] defect_counts counts() const { return count_defects(defects(), &indexed_finding::is_flaky); }
  [[nodiscard]] bool contains(const std::string& key) const { return by_key_.count(key) != 0; }
  /// The entry of `key`, or nullptr.
  [[nodiscard]] const indexed_finding* find(const std::string& key) const {
    const auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : &it->second;
  }

  /// One JSON object a line, in key order: the representative's row (its `dir` the job's
  /// `findings/ID`), the overall status and instance count, and the witnesses.
  /// One line per finding, with "defect", the id of its mechanism's group (findings of one
  /// defect share it); a finding that matches one of `known` gets a "known" field.
  [[nodiscard]] std::string to_jsonl(const std::vector<known_issue>& known = {}) const {
    std::string out;
    for (const auto& [key, f] : by_key_) {
      nlohmann::json j = f.job_row();
      j["defect"] = defect_id(mechanism_of(key));
      j["witnesses"] = f.witnesses;
      if (const auto* k = known_issue_of(known, f.job_row())) j["known"] = known_json(*k);
      out += j.dump() + "\n";
    }
    return out;
  }
  /// Reads what to_jsonl wrote. Throws std::runtime_error naming the file and line of a bad line.
  [[nodiscard]] static findings_index from_jsonl(const std::filesystem::path& file) {
    findings_index idx;
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    std::string line;
    for (std::size_t n = 1; std::getline(in, line); ++n) {
      if (line.empty()) continue;
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.contains("key") || !j.contains("witnesses"))
        throw std::runtime_error(file.string() + ":" + std::to_string(n) + ": not a findings-index line");
      auto& f = idx.by_key_[j.at("key").get<std::string>()];
      auto& r = f.row;
      r = j.get<finding_row>();
      f.witnesses = j.at("witnesses").get<std::vector<witness>>();
      std::sort(f.witnesses.begin(), f.witnesses.end());
      // The row's own numbers are those of the representative witness.
      if (!f.witnesses.empty()) {
        const auto& w = f.witnesses.front();
        r.status = w.status;
        r.first_round = w.first_round;
        r.last_round = w.last_round;
        r.instances = w.instances;
        r.reliability = w.reliability;
      }
    }
    return idx;
  }

 private:
  std::map<std::string, indexed_finding> by_key_;
};

}  // namespace tfg::campaign
