#pragma once
/// A fuzzing job (`flowmut fuzz`) and the merge of shards (`flowmut merge`), as library code.
///
/// The job runs many campaigns within a wall-clock budget, `jobs` at a time: each slice of a
/// campaign is a child process `FLOWMUT run ... --resume --time S` (spawn.hpp); the bandit of
/// fuzz.hpp picks which campaign runs next and is paid by what the slice found. After every slice
/// the job's state (fuzz.json), the findings index (findings.jsonl) and the representatives'
/// folders are written, so a job killed at any moment resumes with `resume`. It never loads a
/// model itself: no LibTorch here.
///
///     tfg::campaign::fuzz_job_options o;
///     o.seeds = {"zoo/"};  o.out = "runs/fuzz";  o.time_s = 3600;  o.jobs = 2;
///     o.self_exe = "/usr/bin/flowmut";
///     my_observer obs;                      // prints; reduces findings (optional)
///     int code = tfg::campaign::fuzz_job(o).run(obs);   // 0, or 130 when stopped
///
/// What the job says goes through a `fuzz_observer` (the tool prints it); the job decides what
/// is said. `fuzz_job::request_stop()` is async-signal-safe: the running slices are interrupted,
/// their campaigns checkpoint, and `run` returns 130 after writing everything.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/fuzz.hpp"
#include "tfg/campaign/known_issues.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/report.hpp"
#include "tfg/campaign/spawn.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/util/atomic_file.hpp"

namespace tfg::campaign {

/// The settings of a job. The first group makes the job what it is: stored in fuzz.json and
/// taken from there on `resume` (giving one of them again is an error).
struct fuzz_job_options {
  std::vector<std::string> seeds;  ///< seed files and folders
  std::filesystem::path out;       ///< the job's folder (fuzz_layout)
  double time_s = 0;               ///< the wall-clock budget (required unless resume)
  std::string shard = "0/1";       ///< part i of N of the seeds x campaign seeds
  std::size_t rounds = 1000000;    ///< round budget of each campaign
  std::size_t per_seed = 1;        ///< campaigns per seed (campaign seeds seed, seed+1, ...)
  std::uint64_t seed = 1;
  double slice_s = 0;  ///< 0: chosen from the budget, the jobs and the campaigns
  std::vector<std::string> configs, op_dirs;
  std::string policy = "linucb-op";
  int timeout_s = 60;  ///< passed to the campaigns only when given ("timeout" in `given`), else their own default
  /// The campaigns' per-mutant cap for these settings (a slice far past its time is stopped):
  /// the backend raises it for configurations that compile every mutant. Default: timeout_s.
  std::function<int(int timeout_s, const std::vector<std::string>& configs)> timeout_cap_s;
  int reruns = 2;

  int jobs = 0;                ///< campaigns at a time (0: the core count)
  double reduce_budget_s = 0;  ///< after the last slice: reduce one variant of each defect
  bool resume = false, force = false;
  /// The settings the user gave explicitly, by flag name: "time", "shard", "rounds",
  /// "campaigns-per-seed", "seed", "slice", "config", "ops", "policy" are refused on resume;
  /// "timeout" is passed on to the campaigns.
  std::set<std::string> given;
  std::string self_exe;            ///< the flowmut that runs the slices
  std::vector<known_issue> known;  ///< for the index and the reports
};

/// What a job says, by kind (the tool chooses what to show and where).
enum class fuzz_line {
  start,    ///< the job's first line
  slice,    ///< a slice started or ended (the status display shows the same)
  finding,  ///< a finding new to the job
  problem,  ///< a campaign failed, was killed, has no report; a shard without campaigns
  summary,  ///< the end: reduction, totals, defects, paths (stdout)
};

/// Receives what a job says. Every member has a default that ignores it.
struct fuzz_observer {
  virtual ~fuzz_observer() = default;
  virtual void line(fuzz_line, const std::string&) {}
  /// About every 200 ms while slices run: the totals, then one line per running slice.
  virtual void status(const std::vector<std::string>&) {}
  /// Reduces the finding folder within `budget_s`, `timeout_s` per mutant run (the tool runs
  /// `flowmut reduce`); the default does not.
  virtual void reduce(const std::filesystem::path&, double /*budget_s*/, int /*timeout_s*/) {}
};

namespace fuzz_job_detail {

using clock_type = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

[[nodiscard]] inline nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  if (!in) return nlohmann::json();
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

/// The settings that make a fuzzing job what it is (stored in fuzz.json; resume reuses them).
[[nodiscard]] inline nlohmann::json settings_of(const fuzz_job_options& a,
                                                const std::vector<std::filesystem::path>& seeds) {
  std::vector<std::string> s, ops;
  for (const auto& p : seeds) s.push_back(p.string());
  for (const auto& d : a.op_dirs) ops.push_back(std::filesystem::absolute(d).lexically_normal().string());
  return {{"seeds", s},         {"shard", a.shard},         {"rounds", a.rounds},   {"campaigns_per_seed", a.per_seed},
          {"seed", a.seed},     {"slice_s", a.slice_s},     {"configs", a.configs}, {"ops", ops},
          {"policy", a.policy}, {"timeout_s", a.timeout_s}, {"reruns", a.reruns},   {"budget_s", a.time_s}};
}

/// What a unit's campaign checkpoint says (written after every round, atomically).
struct campaign_view {
  std::size_t round = 0, rounds = 0, findings = 0;
  bool exists = false;
};

[[nodiscard]] inline campaign_view view_of(const std::filesystem::path& dir) {
  campaign_view v;
  const auto st = read_json(layout(dir).state());
  if (!st.is_object()) return v;
  v.exists = true;
  v.round = st.value("round", std::size_t{0});
  v.rounds = st.value("rounds", std::size_t{0});
  v.findings = st.value("findings", std::size_t{0});
  return v;
}

/// The campaign's last `signatures` metric (behaviour signatures so far).
[[nodiscard]] inline double signatures_of(const store& db) {
  const auto m = db.metrics();
  if (m.empty()) return 0;
  auto it = m.back().second.find("signatures");
  return it == m.back().second.end() ? 0 : it->second;
}

[[nodiscard]] inline double signatures_of(const std::filesystem::path& dir) {
  const layout files(dir);
  if (!std::filesystem::is_regular_file(files.database())) return 0;
  auto db = store::open(files.database());
  return db ? signatures_of(*db) : 0;
}

/// One running slice.
struct slice {
  std::size_t unit = 0;
  pid_t pid = -1;
  clock_type::time_point started;
  double slice_s = 0;
  std::size_t round_before = 0;
  double signatures_before = 0;
  double first_round_s = -1;  ///< when its campaign finished its first round of the slice
  campaign_view view;         ///< its checkpoint, read once per tick
  bool signalled = false;
};

/// Starts one slice of `u`'s campaign: `flowmut run` with the job's settings (or --resume),
/// output to logs/UNIT.log. The child dies with this process (spawn.hpp).
[[nodiscard]] inline pid_t start_slice(const fuzz_job_options& a, const fuzz_unit& u, double slice_s) {
  const auto campaign = fuzz_layout(a.out).campaign(u.name);
  const bool resume = std::filesystem::exists(campaign.state());
  std::vector<std::string> args = {a.self_exe, "run"};
  if (!resume) {
    args.push_back(u.seed.string());
    args.insert(args.end(), {"--seed", std::to_string(u.campaign_seed), "--policy", a.policy, "--force"});
    for (const auto& c : a.configs) args.insert(args.end(), {"--config", c});
    for (const auto& d : a.op_dirs) args.insert(args.end(), {"--ops", d});
  } else {
    args.push_back("--resume");
  }
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.0f", std::max(1.0, slice_s));
  args.insert(args.end(), {"--out", campaign.root().string(), "--rounds", std::to_string(a.rounds), "--time", seconds,
                           "--reruns", std::to_string(a.reruns), "-q"});
  // The job reduces one variant of each defect after its last slice, not each slice its
  // campaign's findings.
  args.insert(args.end(), {"--reduce-budget", "0"});
  // The campaign's own default unless given (it raises the cap for compiled configurations).
  if (a.given.count("timeout")) args.insert(args.end(), {"--timeout", std::to_string(a.timeout_s)});
  std::filesystem::create_directories(fuzz_layout(a.out).logs_dir());
  return spawn_program(std::move(args), fuzz_layout(a.out).log(u.name).string());
}

/// The job's one stop flag (a signal handler sets it).
inline volatile std::sig_atomic_t& stop_flag() noexcept {
  static volatile std::sig_atomic_t flag = 0;
  return flag;
}

}  // namespace fuzz_job_detail

/// Copies a finding folder into a job's findings/ID (without its reduction tries).
inline void copy_finding(const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    if (e.path().filename() == "reduce") continue;
    fs::copy(e.path(), to / e.path().filename(), fs::copy_options::recursive | fs::copy_options::overwrite_existing,
             ec);
  }
}

class fuzz_job {
 public:
  explicit fuzz_job(fuzz_job_options o) : a_(std::move(o)), files_(a_.out) {
    if (a_.jobs <= 0) a_.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  /// Ends the run under way soon (async-signal-safe); `run` returns 130.
  static void request_stop() noexcept { fuzz_job_detail::stop_flag() = 1; }

  /// Runs the job to its budget (or a stop) and writes fuzz.json, findings.jsonl, the findings'
  /// folders, each campaign's report and report.html. Throws std::invalid_argument for settings
  /// that cannot start a job (nothing to resume, a folder with a job and no force, no budget).
  int run(fuzz_observer& obs) {
    using namespace fuzz_job_detail;
    namespace fs = std::filesystem;
    stop_flag() = 0;
    obs_ = &obs;
    setup();
    t0_ = clock_type::now();
    obs.line(fuzz_line::start,
             "flowmut fuzz: " + std::to_string(units_.size()) + " campaign(s) over " + std::to_string(seed_count()) +
                 " seed(s)" + (a_.shard == "0/1" ? "" : " (shard " + a_.shard + ")") + ", " + format_duration(left()) +
                 " of " + format_duration(budget_) + " left, " + std::to_string(a_.jobs) + " job(s), slices of " +
                 format_duration(slice_) + " -> " + a_.out.string());
    bool forwarded = false;
    while (true) {
      const double l = left();
      if (!stop_flag() && l > min_slice_s) start_slices(l);
      if (slices_.empty()) break;
      reap();
      if ((stop_flag() || l <= 0) && !forwarded) {
        for (auto& j : slices_) interrupt(j.pid), j.signalled = true;
        forwarded = true;
      }
      obs.status(status_lines());
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const bool stopped = stop_flag() != 0;
    state_["used_s"] = used_ + seconds_since(t0_);
    save_state();
    write_index();
    for (const auto& u : units_)
      if (fs::is_regular_file(files_.campaign(u.name).database())) {
        try {
          (void)write_report(files_.campaign(u.name).root(), a_.known);
        } catch (const std::exception& e) {
          obs.line(fuzz_line::problem, "fuzz: no report for " + u.name + ": " + e.what());
        }
      }
    if (a_.reduce_budget_s > 0 && !stop_flag()) reduce_findings();
    write_fuzz_report(a_.out, index_, units_, "fuzz", a_.known);
    summary();
    if (stopped) {
      obs.line(fuzz_line::summary, "interrupted with " + format_duration(left()) +
                                       " of the budget left; continue with: flowmut fuzz --resume --out " +
                                       a_.out.string());
      return 130;
    }
    return 0;
  }

  /// The totals line the status display starts with.
  [[nodiscard]] std::string totals() const {
    std::size_t done = 0, rounds = 0;
    for (const auto& u : units_) done += u.done, rounds += u.round;
    for (const auto& j : slices_) rounds += std::max(j.view.round, units_[j.unit].round) - units_[j.unit].round;
    char b[256];
    std::snprintf(b, sizeof b,
                  "fuzz %s left of %s  jobs %zu/%d  campaigns %zu (%zu done)  slices %lld  rounds %zu  findings: ",
                  format_duration(std::max(0.0, left())).c_str(), format_duration(budget_).c_str(), slices_.size(),
                  a_.jobs, units_.size(), done, static_cast<long long>(picks_), rounds);
    return b + describe(index_.counts()) + ", " + std::to_string(index_.witnesses()) + " witnesses";
  }

 private:
  static constexpr double min_slice_s = 5;

  void setup() {
    using namespace fuzz_job_detail;
    namespace fs = std::filesystem;
    const fs::path state_file = files_.state();
    if (a_.resume) {
      state_ = read_json(state_file);
      if (!state_.is_object() || !state_.contains("settings"))
        throw std::invalid_argument("--resume: " + state_file.string() +
                                    " is not a fuzzing job's state (nothing to resume)");
      const auto& s = state_["settings"];
      for (const char* flag :
           {"time", "shard", "rounds", "campaigns-per-seed", "seed", "slice", "config", "ops", "policy"})
        if (a_.given.count(flag))
          throw std::invalid_argument(
              std::string("--") + flag +
              ": a resumed fuzzing job keeps its settings (only --jobs, --quiet and --reduce-budget "
              "may change; the time left is the budget's rest)");
      a_.time_s = s.at("budget_s").get<double>();
      a_.shard = s.at("shard").get<std::string>();
      a_.rounds = s.at("rounds").get<std::size_t>();
      a_.per_seed = s.at("campaigns_per_seed").get<std::size_t>();
      a_.seed = s.at("seed").get<std::uint64_t>();
      a_.slice_s = s.at("slice_s").get<double>();
      a_.configs = s.at("configs").get<std::vector<std::string>>();
      a_.op_dirs = s.at("ops").get<std::vector<std::string>>();
      a_.policy = s.at("policy").get<std::string>();
      a_.timeout_s = s.at("timeout_s").get<int>();
      a_.reruns = s.at("reruns").get<int>();
      units_ = state_.at("units").get<std::vector<fuzz_unit>>();
      used_ = state_.value("used_s", 0.0);
      picks_ = state_.value("picks", std::int64_t{0});
      for (const auto& u : units_) {
        const auto campaign = files_.campaign(u.name);
        if (fs::is_regular_file(campaign.database())) index_.add_campaign(u, campaign.root());
      }
    } else {
      if (fs::exists(state_file) && !a_.force)
        throw std::invalid_argument(a_.out.string() +
                                    " holds a fuzzing job: --resume to continue it, --force to start over");
      if (a_.force) {
        std::error_code ec;
        for (const auto& sub : files_.folders()) fs::remove_all(sub, ec);
        fs::remove(state_file, ec);
      }
      if (a_.time_s <= 0) throw std::invalid_argument("--time is required (e.g. --time 10m)");
      const auto seeds = collect_seeds(a_.seeds);
      const auto shard = parse_shard(a_.shard);
      if (!shard) throw std::invalid_argument("--shard " + a_.shard + ": expected i/N with 0 <= i < N");
      units_ = shard_units(plan_units(seeds, a_.per_seed, a_.seed), *shard);
      fs::create_directories(a_.out);
      state_ = {{"version", 1}, {"settings", settings_of(a_, seeds)}, {"used_s", 0.0}, {"picks", 0}};
      if (units_.empty())
        obs_->line(fuzz_line::problem, "fuzz: shard " + a_.shard + " has no campaign (" + std::to_string(seeds.size()) +
                                           " seed(s) x " + std::to_string(a_.per_seed) + " campaign(s) for " +
                                           std::to_string(shard->count) + " shards)");
    }
    budget_ = a_.time_s;
    slice_ = a_.slice_s > 0
                 ? a_.slice_s
                 : std::clamp(budget_ * a_.jobs / (3.0 * static_cast<double>(std::max<std::size_t>(1, units_.size()))),
                              30.0, 300.0);
    running_.assign(units_.size(), false);
    cap_s_ = a_.timeout_cap_s ? a_.timeout_cap_s(a_.timeout_s, a_.configs) : a_.timeout_s;
    save_state();
  }

  [[nodiscard]] std::size_t seed_count() const {
    std::set<std::string> s;
    for (const auto& u : units_) s.insert(u.seed.string());
    return s.size();
  }
  [[nodiscard]] double left() const { return budget_ - used_ - fuzz_job_detail::seconds_since(t0_); }
  [[nodiscard]] std::string at() const {
    return "[" + format_duration(used_ + fuzz_job_detail::seconds_since(t0_)) + "]";
  }

  void save_state() {
    state_["units"] = units_;
    state_["picks"] = picks_;
    if (!state_.contains("used_s")) state_["used_s"] = 0.0;
    write_file_atomic(files_.state(), state_.dump(1) + "\n");
  }

  void start_slices(double l) {
    using namespace fuzz_job_detail;
    while (static_cast<int>(slices_.size()) < a_.jobs) {
      const auto pick = pick_unit(units_, running_, picks_);
      if (!pick) return;
      auto& u = units_[*pick];
      slice j;
      j.unit = *pick;
      // At least four times what the campaign took to get going last time (its import, profiling
      // and first round), so that start-up stays under a fifth of a slice.
      j.slice_s = std::min(std::max(slice_, 4 * u.setup_s), l);
      const auto dir = files_.campaign(u.name).root();
      j.view = view_of(dir);
      j.round_before = j.view.round;
      j.signatures_before = signatures_of(dir);
      j.pid = start_slice(a_, u, j.slice_s);
      j.started = clock_type::now();
      u.last_pick = picks_++;
      running_[*pick] = true;
      slices_.push_back(j);
      obs_->line(fuzz_line::slice, at() + " slice " + std::to_string(u.last_pick) + ": " + u.name + " from round " +
                                       std::to_string(j.round_before) + ", " + format_duration(j.slice_s));
    }
  }

  void reap() {
    using namespace fuzz_job_detail;
    for (auto it = slices_.begin(); it != slices_.end();) {
      const auto exited = poll_exit(it->pid);
      if (!exited) {
        it->view = view_of(files_.campaign(units_[it->unit].name).root());
        if (it->first_round_s < 0 && it->view.round > it->round_before) it->first_round_s = seconds_since(it->started);
        // A slice far past its time (a round stuck beyond the campaign's own timeouts) is told to
        // stop. The campaigns' own cap (15 minutes with a compiled configuration): a slice whose
        // seed calibration compiles cold is not far past its time.
        if (!it->signalled && seconds_since(it->started) > it->slice_s + 3.0 * cap_s_ + 60) {
          interrupt(it->pid);
          it->signalled = true;
        }
        ++it;
        continue;
      }
      finish(*it, *exited);
      running_[it->unit] = false;
      it = slices_.erase(it);
    }
  }

  void finish(const fuzz_job_detail::slice& j, int status) {
    using namespace fuzz_job_detail;
    namespace fs = std::filesystem;
    auto& u = units_[j.unit];
    const auto dir = files_.campaign(u.name).root();
    const double took = seconds_since(j.started);
    u.seconds += took;
    if (j.first_round_s >= 0) u.setup_s = j.first_round_s;
    ++u.slices;
    const auto v = view_of(dir);
    const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    // A campaign process killed by a signal (the kernel's OOM killer, say) resumes from its
    // checkpoint once; a second kill, or an error exit, ends the campaign.
    const bool retry = code < 0 && ++u.kills < 2;
    if (retry)
      obs_->line(fuzz_line::problem, "fuzz: the process of " + u.name + " was killed; it resumes at its next slice");
    if (code != 0 && code != 130 && !retry) {
      u.done = true;
      u.error = code < 0 ? "the campaign process was killed" : "the campaign exited " + std::to_string(code);
      {
        std::ifstream log(files_.log(u.name));
        std::string line, said;
        while (std::getline(log, line))
          if (line.rfind("flowmut: error: ", 0) == 0) said = line.substr(16);
        if (!said.empty()) u.error += ": " + said.substr(0, 300);
      }
      u.error += " (" + fuzz_layout::log_rel(u.name).string() + ")";
    }
    u.round = v.round;
    if (v.exists && v.round > a_.rounds) u.done = true;
    // Reward: slice_reward (findings new to the job, new to the unit, new behaviour signatures).
    std::size_t new_global = 0, new_unit = 0;
    double signatures = j.signatures_before;
    std::vector<std::string> fresh;
    if (fs::is_regular_file(layout(dir).database())) {
      if (auto db = store::open(layout(dir).database())) {
        const auto rows = db->findings();
        u.findings = rows.size();
        signatures = signatures_of(*db);
        for (const auto& r : rows) {
          const auto* f = index_.find(r.key);
          if (!f) {
            ++new_global;
            fresh.push_back(r.title + " [" + r.id + "]");
          } else if (std::none_of(f->witnesses.begin(), f->witnesses.end(),
                                  [&](const witness& w) { return w.unit == u.name; })) {
            ++new_unit;
          }
        }
      }
      index_.add_campaign(u, dir);
    }
    const double reward = slice_reward(new_global, new_unit, signatures - j.signatures_before);
    u.reward_sum += reward;
    state_["used_s"] = used_ + seconds_since(t0_);
    save_state();
    write_index();
    for (const auto& t : fresh) obs_->line(fuzz_line::finding, "NEW FINDING " + t + "  (" + u.name + ")");
    char r[32];
    std::snprintf(r, sizeof r, "%.2f", reward);
    obs_->line(u.error.empty() ? fuzz_line::slice : fuzz_line::problem,
               at() + " " + u.name + ": rounds " + std::to_string(j.round_before) + "->" + std::to_string(v.round) +
                   " in " + format_duration(took) + ", reward " + r + (u.done && u.error.empty() ? ", done" : "") +
                   (u.error.empty() ? "" : ", FAILED: " + u.error));
  }

  /// findings.jsonl and the representatives' folders (findings/ID).
  void write_index() {
    using namespace fuzz_job_detail;
    for (const auto* f : index_.entries()) {
      const auto& w = f->witnesses.front();
      const std::filesystem::path from = layout(w.campaign_dir).finding(f->row.id).dir();
      const std::filesystem::path to = a_.out / f->row.dir;
      const auto copied = read_json(finding_layout(to).witness());
      const bool current = copied.is_object() && copied.value("unit", "") == w.unit &&
                           copied.value("last_round", std::int64_t{-1}) == w.last_round &&
                           copied.value("instances", std::int64_t{-1}) == w.instances;
      if (current || !std::filesystem::is_directory(from)) continue;
      copy_finding(from, to);
      write_file_atomic(finding_layout(to).witness(), nlohmann::json(w).dump(1) + "\n");
    }
    write_file_atomic(files_.findings_jsonl(), index_.to_jsonl(a_.known));
  }

  void reduce_findings() {
    using namespace fuzz_job_detail;
    const auto deadline =
        clock_type::now() + std::chrono::milliseconds(static_cast<long long>(a_.reduce_budget_s * 1000));
    char b[96];
    std::snprintf(b, sizeof b, "\nreducing one reproduced variant of each defect (budget %.0f s):", a_.reduce_budget_s);
    obs_->line(fuzz_line::summary, b);
    for (const auto& d : index_.defects()) {
      const auto it = std::find_if(d.variants.begin(), d.variants.end(),
                                   [](const indexed_finding* v) { return !indexed_finding::is_flaky(v); });
      if (it == d.variants.end()) continue;
      const double l = std::chrono::duration<double>(deadline - clock_type::now()).count();
      if (l <= 0 || stop_flag()) {
        obs_->line(fuzz_line::summary, "budget spent: the other findings are not reduced (flowmut reduce " +
                                           a_.out.string() + "/findings/ID)");
        break;
      }
      obs_->reduce(a_.out / (*it)->row.dir, l, a_.timeout_s);
    }
  }

  /// The status display: the totals, then one line per running slice.
  [[nodiscard]] std::vector<std::string> status_lines() const {
    std::vector<std::string> lines{totals()};
    for (std::size_t i = 0; i < slices_.size(); ++i) {
      const auto& j = slices_[i];
      const auto& u = units_[j.unit];
      char b[256];
      std::snprintf(b, sizeof b, "  [%zu] %-28s round %5zu  findings %3zu  slice %s of %s%s", i + 1,
                    u.name.substr(0, 28).c_str(), j.view.round, j.view.findings,
                    format_duration(fuzz_job_detail::seconds_since(j.started)).c_str(),
                    format_duration(j.slice_s).c_str(), j.signalled ? "  stopping" : "");
      lines.emplace_back(b);
    }
    return lines;
  }

  void summary() const {
    auto say = [&](const std::string& s) { obs_->line(fuzz_line::summary, s); };
    say(totals());
    for (const auto& u : units_)
      if (!u.error.empty()) say("  campaign " + u.name + " FAILED: " + u.error);
    say("findings: " + describe(index_.counts()));
    auto finding_lines = [&](const indexed_finding* f, const char* indent) {
      std::string w;
      for (const auto& x : f->witnesses) w += (w.empty() ? "" : ", ") + x.unit;
      char b[1024];
      std::snprintf(b, sizeof b, "%s%s  %-12s %-9s %s", indent, f->row.id.c_str(), f->row.kind.c_str(),
                    f->status().c_str(), f->row.title.c_str());
      say(b);
      say(std::string(indent) + "    witnesses: " + w);
    };
    for (const auto& d : index_.defects()) {
      if (!d.reproduced) continue;
      std::size_t n = 0;
      for (const auto* f : d.variants) n += !indexed_finding::is_flaky(f);
      const auto& row = d.variants.front()->row;
      // A finding of one configuration alone (a crash, say) has no second configuration.
      const std::string configs = row.config_b.empty() ? "in " + row.config_a : row.config_a + " vs " + row.config_b;
      say("  defect " + d.id + ": " + row.kind + " at " + row.culprit_op + ", " + configs + " (" + std::to_string(n) +
          " variant" + (n == 1 ? "" : "s") + ")");
      for (const auto* f : d.variants)
        if (!indexed_finding::is_flaky(f)) finding_lines(f, "    ");
    }
    bool header = false;
    for (const auto* f : index_.entries())
      if (indexed_finding::is_flaky(f)) {
        if (!header) say("  not reproduced on a rerun (flaky, not counted as defects):");
        header = true;
        finding_lines(f, "    ");
      }
    say("report: " + std::filesystem::absolute(files_.report()).string() +
        "\nfindings: " + std::filesystem::absolute(files_.findings_jsonl()).string());
  }

  fuzz_job_options a_;
  fuzz_layout files_;
  fuzz_observer* obs_ = nullptr;
  nlohmann::json state_;
  std::vector<fuzz_unit> units_;
  std::vector<bool> running_;
  std::vector<fuzz_job_detail::slice> slices_;
  findings_index index_;
  std::int64_t picks_ = 0;
  double budget_ = 0, slice_ = 0, used_ = 0;
  int cap_s_ = 60;
  fuzz_job_detail::clock_type::time_point t0_;
};

/// What `merge_fuzz_folders` made.
struct fuzz_merge_result {
  std::size_t folders = 0, campaigns = 0, findings = 0, witnesses = 0;
  std::string counts;  ///< describe(index.counts())
  std::filesystem::path report, findings_jsonl;
};

/// Merges the outputs of fuzz shards (or of earlier merges) into `out`: one deduplicated
/// findings index, each finding's representative folder, the units (the furthest sighting of
/// each), report.html. Throws std::invalid_argument naming an input that is not a fuzz or merge
/// output, or `out` among the inputs.
inline fuzz_merge_result merge_fuzz_folders(const std::vector<std::string>& dirs, const std::filesystem::path& out,
                                            const std::vector<known_issue>& known) {
  namespace fs = std::filesystem;
  const fs::path o = fs::absolute(out).lexically_normal();
  findings_index idx;
  std::map<std::string, fuzz_unit> units;
  std::map<std::string, fs::path> holder;  // a finding's representative sighting -> the input folder with its copy
  auto sighting = [](const indexed_finding& f) {
    const auto& w = f.witnesses.front();
    return f.row.id + "|" + w.unit + "|" + w.campaign_dir + "|" + std::to_string(w.last_round) + "|" +
           std::to_string(w.instances);
  };
  for (const auto& d : dirs) {
    const fs::path p = fs::absolute(d).lexically_normal();
    if (p == o) throw std::invalid_argument(d + ": the output folder cannot be one of the inputs");
    const auto state = fuzz_job_detail::read_json(fuzz_layout(p).state());
    if (!state.is_object() || !fs::is_regular_file(fuzz_layout(p).findings_jsonl()))
      throw std::invalid_argument(d + ": not the output of flowmut fuzz or merge (fuzz.json, findings.jsonl)");
    const auto part = findings_index::from_jsonl(fuzz_layout(p).findings_jsonl());
    for (const auto* f : part.entries())
      if (!f->witnesses.empty()) holder.emplace(sighting(*f), p);
    idx.add_index(part);
    for (const auto& u : state.value("units", nlohmann::json::array()).get<std::vector<fuzz_unit>>()) {
      auto it = units.find(u.name);
      if (it == units.end() || u.round > it->second.round ||
          (u.round == it->second.round && u.slices > it->second.slices))
        units[u.name] = u;
    }
  }
  fs::create_directories(o);
  std::vector<fuzz_unit> merged;
  for (auto& [n, u] : units) merged.push_back(u);
  for (const auto* f : idx.entries()) {
    const auto it = holder.find(sighting(*f));
    if (it == holder.end()) continue;
    const fs::path from = it->second / f->row.dir, to = o / f->row.dir;
    if (fs::is_directory(from) && fs::absolute(from) != fs::absolute(to)) copy_finding(from, to);
  }
  write_file_atomic(fuzz_layout(o).findings_jsonl(), idx.to_jsonl(known));
  write_file_atomic(fuzz_layout(o).state(),
                    nlohmann::json({{"version", 1}, {"merged", true}, {"units", merged}}).dump(1) + "\n");
  write_fuzz_report(o, idx, merged, "merge", known);
  return {dirs.size(),
          merged.size(),
          idx.size(),
          idx.witnesses(),
          describe(idx.counts()),
          fuzz_layout(o).report(),
          fuzz_layout(o).findings_jsonl()};
}

}  // namespace tfg::campaign
