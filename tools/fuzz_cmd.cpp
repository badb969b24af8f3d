// flowmut fuzz / merge: many campaigns within a wall-clock budget, N at a time, each slice of a
// campaign a supervised `flowmut run --resume --time S` process; one findings index over all of
// them (tfg/campaign/fuzz.hpp decides and records; this file runs the processes and prints).
// No LibTorch here: the campaigns run in child processes.
#include "commands.hpp"

#include "tfg/campaign/fuzz.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/report.hpp"
#include "tfg/campaign/sarif.hpp"
#include "tfg/campaign/spawn.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/util/atomic_file.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
namespace tc = tfg::campaign;
using clock_type = std::chrono::steady_clock;
using tfg::write_file_atomic;

namespace {

volatile std::sig_atomic_t g_fuzz_interrupted = 0;
void on_fuzz_signal(int) { g_fuzz_interrupted = 1; }

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return nlohmann::json();
  auto j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

/// The settings that make a fuzzing job what it is (stored in fuzz.json; --resume reuses them).
nlohmann::json fuzz_settings(const fuzz_args& a, const std::vector<fs::path>& seeds) {
  std::vector<std::string> s, ops;
  for (const auto& p : seeds) s.push_back(p.string());
  for (const auto& d : a.op_dirs) ops.push_back(fs::absolute(d).lexically_normal().string());
  return {{"seeds", s},         {"shard", a.shard},         {"rounds", a.rounds},   {"campaigns_per_seed", a.per_seed},
          {"seed", a.seed},     {"slice_s", a.slice_s},     {"configs", a.configs}, {"ops", ops},
          {"policy", a.policy}, {"timeout_s", a.timeout_s}, {"reruns", a.reruns},   {"budget_s", a.time_s}};
}

struct campaign_view {
  std::size_t round = 0, rounds = 0, findings = 0;
  bool exists = false;
};

struct job {
  std::size_t unit = 0;
  pid_t pid = -1;
  clock_type::time_point started;
  double slice_s = 0;
  std::size_t round_before = 0;
  double signatures_before = 0;
  double first_round_s = -1;  ///< when its campaign finished its first round of the slice
  campaign_view view;         ///< its checkpoint, read once per tick by reap()
  bool signalled = false;
};

/// What a unit's campaign checkpoint says (written after every round, atomically).
campaign_view view_of(const fs::path& dir) {
  campaign_view v;
  const auto st = read_json(tc::layout(dir).state());
  if (!st.is_object()) return v;
  v.exists = true;
  v.round = st.value("round", std::size_t{0});
  v.rounds = st.value("rounds", std::size_t{0});
  v.findings = st.value("findings", std::size_t{0});
  return v;
}

/// The campaign's last `signatures` metric (behaviour signatures so far).
double signatures_of(const tc::store& db) {
  const auto m = db.metrics();
  if (m.empty()) return 0;
  auto it = m.back().second.find("signatures");
  return it == m.back().second.end() ? 0 : it->second;
}

double signatures_of(const fs::path& dir) {
  const tc::layout files(dir);
  if (!fs::is_regular_file(files.database())) return 0;
  auto db = tc::store::open(files.database());
  return db ? signatures_of(*db) : 0;
}

/// Starts one slice of `u`'s campaign: `flowmut run` with the job's settings (or --resume),
/// output to logs/UNIT.log. The child dies with this process (PR_SET_PDEATHSIG).
pid_t start_slice(const std::string& self_exe, const fuzz_args& a, const tc::fuzz_unit& u, const fs::path& out,
                  double slice_s) {
  const auto campaign = tc::fuzz_layout(out).campaign(u.name);
  const fs::path dir = campaign.root();
  const bool resume = fs::exists(campaign.state());
  std::vector<std::string> args = {self_exe, "run"};
  if (!resume) {
    args.push_back(u.seed.string());
    args.insert(args.end(), {"--seed", std::to_string(u.campaign_seed), "--policy", a.policy, "--force"});
    for (const auto& c : a.configs) args.insert(args.end(), {"--config", c});
    for (const auto& d : a.op_dirs) args.insert(args.end(), {"--ops", d});
  } else {
    args.push_back("--resume");
  }
  char slice[32];
  std::snprintf(slice, sizeof slice, "%.0f", std::max(1.0, slice_s));
  args.insert(args.end(), {"--out", dir.string(), "--rounds", std::to_string(a.rounds), "--time", slice, "--reruns",
                           std::to_string(a.reruns), "-q"});
  // The job reduces one variant of each defect after its last slice (reduce_findings), not each
  // slice its campaign's findings.
  args.insert(args.end(), {"--reduce-budget", "0"});
  // The campaign's own default unless given (it raises the cap for compiled configurations).
  if (a.given.count("timeout")) args.insert(args.end(), {"--timeout", std::to_string(a.timeout_s)});
  fs::create_directories(tc::fuzz_layout(out).logs_dir());
  const std::string log = tc::fuzz_layout(out).log(u.name).string();
  return tc::spawn_program(std::move(args), log);
}

/// Copies a finding folder into the job's findings/ID (without its reduction tries).
void copy_finding(const fs::path& from, const fs::path& to) {
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
  fuzz_job(fuzz_args a, std::string self_exe)
      : a_(std::move(a)), self_(std::move(self_exe)), out_(a_.out), files_(out_) {}

  int run() {
    setup();
    std::signal(SIGINT, &on_fuzz_signal);
    std::signal(SIGTERM, &on_fuzz_signal);
    std::signal(SIGHUP, &on_fuzz_signal);
    tty_ = ::isatty(2) && !a_.quiet && !std::getenv("NO_COLOR");
    t0_ = clock_type::now();
    std::fprintf(stderr,
                 "flowmut fuzz: %zu campaign(s) over %zu seed(s)%s, %s of %s left, %d job(s), slices of %s -> %s\n",
                 units_.size(), seed_count(), a_.shard == "0/1" ? "" : (" (shard " + a_.shard + ")").c_str(),
                 tc::format_duration(left()).c_str(), tc::format_duration(budget_).c_str(), a_.jobs,
                 tc::format_duration(slice_).c_str(), out_.c_str());
    bool forwarded = false;
    auto last_plain = clock_type::now();
    while (true) {
      const double l = left();
      if (!g_fuzz_interrupted && l > min_slice_s) start_jobs(l);
      if (jobs_.empty()) break;
      reap();
      if ((g_fuzz_interrupted || l <= 0) && !forwarded) {
        for (auto& j : jobs_) tc::interrupt(j.pid), j.signalled = true;
        forwarded = true;
      }
      if (tty_) {
        draw();
      } else if (!a_.quiet && seconds_since(last_plain) >= 30) {
        clear_drawn();
        std::fprintf(stderr, "%s\n", totals().c_str());
        last_plain = clock_type::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    clear_drawn();
    state_["used_s"] = used_ + seconds_since(t0_);
    save_state();
    write_index();
    for (const auto& u : units_)
      if (fs::is_regular_file(files_.campaign(u.name).database())) {
        try {
          (void)tc::write_report(files_.campaign(u.name).root(), known_);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "fuzz: no report for %s: %s\n", u.name.c_str(), e.what());
        }
      }
    if (a_.reduce_budget_s > 0 && !g_fuzz_interrupted) reduce_findings();
    tc::write_fuzz_report(out_, index_, units_, "fuzz", known_);
    print_summary();
    if (g_fuzz_interrupted) {
      std::printf("interrupted with %s of the budget left; continue with: flowmut fuzz --resume --out %s\n",
                  tc::format_duration(left()).c_str(), out_.c_str());
      return 130;
    }
    return 0;
  }

 private:
  static constexpr double min_slice_s = 5;

  void setup() {
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
      units_ = state_.at("units").get<std::vector<tc::fuzz_unit>>();
      used_ = state_.value("used_s", 0.0);
      picks_ = state_.value("picks", std::int64_t{0});
      for (const auto& u : units_) rebuild_unit(u);
    } else {
      if (fs::exists(state_file) && !a_.force)
        throw std::invalid_argument(out_.string() +
                                    " holds a fuzzing job: --resume to continue it, --force to start over");
      if (a_.force) {
        std::error_code ec;
        for (const auto& sub : files_.folders()) fs::remove_all(sub, ec);
        fs::remove(state_file, ec);
      }
      if (a_.time_s <= 0) throw std::invalid_argument("--time is required (e.g. --time 10m)");
      const auto seeds = tc::collect_seeds(a_.seeds);
      const auto shard = tc::parse_shard(a_.shard);
      if (!shard) throw std::invalid_argument("--shard " + a_.shard + ": expected i/N with 0 <= i < N");
      units_ = tc::shard_units(tc::plan_units(seeds, a_.per_seed, a_.seed), *shard);
      fs::create_directories(out_);
      state_ = {{"version", 1}, {"settings", fuzz_settings(a_, seeds)}, {"used_s", 0.0}, {"picks", 0}};
      if (units_.empty())
        std::fprintf(stderr, "fuzz: shard %s has no campaign (%zu seed(s) x %zu campaign(s) for %zu shards)\n",
                     a_.shard.c_str(), seeds.size(), a_.per_seed, shard->count);
    }
    budget_ = a_.time_s;
    slice_ = a_.slice_s > 0
                 ? a_.slice_s
                 : std::clamp(budget_ * a_.jobs / (3.0 * static_cast<double>(std::max<std::size_t>(1, units_.size()))),
                              30.0, 300.0);
    running_.assign(units_.size(), false);
    save_state();
  }

  [[nodiscard]] std::size_t seed_count() const {
    std::set<std::string> s;
    for (const auto& u : units_) s.insert(u.seed.string());
    return s.size();
  }
  [[nodiscard]] double left() const { return budget_ - used_ - seconds_since(t0_); }

  void save_state() {
    state_["units"] = units_;
    state_["picks"] = picks_;
    if (!state_.contains("used_s")) state_["used_s"] = 0.0;
    write_file_atomic(files_.state(), state_.dump(1) + "\n");
  }

  void rebuild_unit(const tc::fuzz_unit& u) {
    const auto campaign = files_.campaign(u.name);
    if (fs::is_regular_file(campaign.database())) index_.add_campaign(u, campaign.root());
  }

  void start_jobs(double l) {
    while (static_cast<int>(jobs_.size()) < a_.jobs) {
      const auto pick = tc::pick_unit(units_, running_, picks_);
      if (!pick) return;
      auto& u = units_[*pick];
      job j;
      j.unit = *pick;
      // At least four times what the campaign took to get going last time (its import, profiling
      // and first round), so that start-up stays under a fifth of a slice.
      j.slice_s = std::min(std::max(slice_, 4 * u.setup_s), l);
      const auto dir = files_.campaign(u.name).root();
      j.view = view_of(dir);
      j.round_before = j.view.round;
      j.signatures_before = signatures_of(dir);
      j.pid = start_slice(self_, a_, u, out_, j.slice_s);
      j.started = clock_type::now();
      u.last_pick = picks_++;
      running_[*pick] = true;
      jobs_.push_back(j);
      if (!tty_ && !a_.quiet)
        std::fprintf(stderr, "[%s] slice %lld: %s from round %zu, %s\n",
                     tc::format_duration(used_ + seconds_since(t0_)).c_str(), static_cast<long long>(u.last_pick),
                     u.name.c_str(), j.round_before, tc::format_duration(j.slice_s).c_str());
    }
  }

  void reap() {
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      const auto exited = tc::poll_exit(it->pid);
      if (!exited) {
        it->view = view_of(files_.campaign(units_[it->unit].name).root());
        if (it->first_round_s < 0 && it->view.round > it->round_before) it->first_round_s = seconds_since(it->started);
        // A slice far past its time (a round stuck beyond the campaign's own timeouts) is told to stop.
        // The campaigns' own cap (15 minutes with a compiled configuration): a slice whose seed
        // calibration compiles cold is not far past its time.
        const double cap_s = campaign_timeout_cap_s(a_.timeout_s, a_.given.count("timeout") > 0, a_.configs);
        if (!it->signalled && seconds_since(it->started) > it->slice_s + 3.0 * cap_s + 60) {
          tc::interrupt(it->pid);
          it->signalled = true;
        }
        ++it;
        continue;
      }
      finish(*it, *exited);
      running_[it->unit] = false;
      it = jobs_.erase(it);
    }
  }

  void finish(const job& j, int status) {
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
    if (retry && !a_.quiet)
      std::fprintf(stderr, "fuzz: the process of %s was killed; it resumes at its next slice\n", u.name.c_str());
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
      u.error += " (" + tc::fuzz_layout::log_rel(u.name).string() + ")";
    }
    u.round = v.round;
    if (v.exists && v.round > a_.rounds) u.done = true;
    // Reward: tc::slice_reward (findings new to the job, new to the unit, new behaviour signatures).
    std::size_t new_global = 0, new_unit = 0;
    double signatures = j.signatures_before;
    std::vector<std::string> fresh;
    if (fs::is_regular_file(tc::layout(dir).database())) {
      if (auto db = tc::store::open(tc::layout(dir).database())) {
        const auto rows = db->findings();
        u.findings = rows.size();
        signatures = signatures_of(*db);
        for (const auto& r : rows) {
          const auto* f = index_.find(r.key);
          if (!f) {
            ++new_global;
            fresh.push_back(r.title + " [" + r.id + "]");
          } else if (std::none_of(f->witnesses.begin(), f->witnesses.end(),
                                  [&](const tc::witness& w) { return w.unit == u.name; })) {
            ++new_unit;
          }
        }
      }
      index_.add_campaign(u, dir);
    }
    const double reward = tc::slice_reward(new_global, new_unit, signatures - j.signatures_before);
    u.reward_sum += reward;
    state_["used_s"] = used_ + seconds_since(t0_);
    save_state();
    write_index();
    if (!a_.quiet) {
      clear_drawn();
      for (const auto& t : fresh) std::fprintf(stderr, "NEW FINDING %s  (%s)\n", t.c_str(), u.name.c_str());
      if (!tty_ || !u.error.empty())
        std::fprintf(stderr, "[%s] %s: rounds %zu->%zu in %s, reward %.2f%s%s\n",
                     tc::format_duration(used_ + seconds_since(t0_)).c_str(), u.name.c_str(), j.round_before, v.round,
                     tc::format_duration(took).c_str(), reward, u.done && u.error.empty() ? ", done" : "",
                     u.error.empty() ? "" : (", FAILED: " + u.error).c_str());
    }
  }

  /// findings.jsonl and the representatives' folders (findings/ID).
  void write_index() {
    for (const auto* f : index_.entries()) {
      const auto& w = f->witnesses.front();
      const fs::path from = tc::layout(w.campaign_dir).finding(f->row.id).dir();
      const fs::path to = out_ / f->row.dir;
      const auto copied = read_json(tc::finding_layout(to).witness());
      const bool current = copied.is_object() && copied.value("unit", "") == w.unit &&
                           copied.value("last_round", std::int64_t{-1}) == w.last_round &&
                           copied.value("instances", std::int64_t{-1}) == w.instances;
      if (current || !fs::is_directory(from)) continue;
      copy_finding(from, to);
      write_file_atomic(tc::finding_layout(to).witness(), nlohmann::json(w).dump(1) + "\n");
    }
    write_file_atomic(files_.findings_jsonl(), index_.to_jsonl(known_));
  }

  void reduce_findings() {
    const auto deadline =
        clock_type::now() + std::chrono::milliseconds(static_cast<long long>(a_.reduce_budget_s * 1000));
    std::printf("\nreducing one reproduced variant of each defect (budget %.0f s):\n", a_.reduce_budget_s);
    for (const auto& d : index_.defects()) {
      const auto it = std::find_if(d.variants.begin(), d.variants.end(),
                                   [](const tc::indexed_finding* v) { return !tc::indexed_finding::is_flaky(v); });
      if (it == d.variants.end()) continue;
      const auto* f = *it;
      const double l = std::chrono::duration<double>(deadline - clock_type::now()).count();
      if (l <= 0 || g_fuzz_interrupted) {
        std::printf("budget spent: the other findings are not reduced (flowmut reduce %s/findings/ID)\n", out_.c_str());
        break;
      }
      std::fflush(stdout);
      (void)run_reduce_command((out_ / f->row.dir).string(), self_, a_.timeout_s, 8192, default_python(), true, l,
                               false);
    }
  }

  [[nodiscard]] std::string totals() const {
    std::size_t done = 0, rounds = 0;
    for (const auto& u : units_) done += u.done, rounds += u.round;
    for (const auto& j : jobs_) rounds += std::max(j.view.round, units_[j.unit].round) - units_[j.unit].round;
    char b[256];
    std::snprintf(b, sizeof b,
                  "fuzz %s left of %s  jobs %zu/%d  campaigns %zu (%zu done)  slices %lld  rounds %zu  findings: ",
                  tc::format_duration(std::max(0.0, left())).c_str(), tc::format_duration(budget_).c_str(),
                  jobs_.size(), a_.jobs, units_.size(), done, static_cast<long long>(picks_), rounds);
    return b + tc::describe(index_.counts()) + ", " + std::to_string(index_.witnesses()) + " witnesses";
  }

  void draw() {
    std::ostringstream s;
    s << totals() << "\n";
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      const auto& j = jobs_[i];
      const auto& u = units_[j.unit];
      const auto& v = j.view;
      char b[256];
      std::snprintf(b, sizeof b, "  [%zu] %-28s round %5zu  findings %3zu  slice %s of %s%s", i + 1,
                    u.name.substr(0, 28).c_str(), v.round, v.findings,
                    tc::format_duration(seconds_since(j.started)).c_str(), tc::format_duration(j.slice_s).c_str(),
                    j.signalled ? "  stopping" : "");
      s << b << "\n";
    }
    clear_drawn();
    const std::string text = s.str();
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
  }

  void clear_drawn() {
    if (!tty_ || drawn_ == 0) return;
    std::fprintf(stderr, "\x1b[%zuA\x1b[J", drawn_);
    drawn_ = 0;
  }

  void print_summary() const {
    std::printf("%s\n", totals().c_str());
    for (const auto& u : units_)
      if (!u.error.empty()) std::printf("  campaign %s FAILED: %s\n", u.name.c_str(), u.error.c_str());
    std::printf("findings: %s\n", tc::describe(index_.counts()).c_str());
    auto print_finding = [](const tc::indexed_finding* f, const char* indent) {
      std::string w;
      for (const auto& x : f->witnesses) w += (w.empty() ? "" : ", ") + x.unit;
      std::printf("%s%s  %-12s %-9s %s\n%s    witnesses: %s\n", indent, f->row.id.c_str(), f->row.kind.c_str(),
                  f->status().c_str(), f->row.title.c_str(), indent, w.c_str());
    };
    const auto defects = index_.defects();
    for (const auto& d : defects) {
      if (!d.reproduced) continue;
      std::size_t n = 0;
      for (const auto* f : d.variants) n += !tc::indexed_finding::is_flaky(f);
      std::printf("  defect %s: %s at %s, %s vs %s (%zu variant%s)\n", d.id.c_str(),
                  d.variants.front()->row.kind.c_str(), d.variants.front()->row.culprit_op.c_str(),
                  d.variants.front()->row.config_a.c_str(), d.variants.front()->row.config_b.c_str(), n,
                  n == 1 ? "" : "s");
      for (const auto* f : d.variants)
        if (!tc::indexed_finding::is_flaky(f)) print_finding(f, "    ");
    }
    bool header = false;
    for (const auto* f : index_.entries())
      if (tc::indexed_finding::is_flaky(f)) {
        if (!header) std::printf("  not reproduced on a rerun (flaky, not counted as defects):\n");
        header = true;
        print_finding(f, "    ");
      }
    std::printf("report: %s\nfindings: %s\n", fs::absolute(files_.report()).c_str(),
                fs::absolute(files_.findings_jsonl()).c_str());
  }

  fuzz_args a_;
  std::string self_;
  fs::path out_;
  tc::fuzz_layout files_;
  nlohmann::json state_;
  std::vector<tc::fuzz_unit> units_;
  std::vector<bool> running_;
  std::vector<job> jobs_;
  tc::findings_index index_;
  std::vector<tc::known_issue> known_ = known_issues();  // known-issues/*.json
  std::int64_t picks_ = 0;
  double budget_ = 0, slice_ = 0, used_ = 0;
  clock_type::time_point t0_;
  bool tty_ = false;
  std::size_t drawn_ = 0;
};

}  // namespace

int run_fuzz_command(fuzz_args a, const std::string& self_exe) {
  if (a.jobs <= 0) a.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  fuzz_job job(std::move(a), self_exe);
  return job.run();
}

int run_merge_command(const std::vector<std::string>& dirs, const std::string& out) {
  try {
    const fs::path o = fs::absolute(out).lexically_normal();
    tc::findings_index idx;
    std::map<std::string, tc::fuzz_unit> units;
    std::map<std::string, fs::path> holder;  // a finding's representative sighting -> the input folder with its copy
    auto sighting = [](const tc::indexed_finding& f) {
      const auto& w = f.witnesses.front();
      return f.row.id + "|" + w.unit + "|" + w.campaign_dir + "|" + std::to_string(w.last_round) + "|" +
             std::to_string(w.instances);
    };
    for (const auto& d : dirs) {
      const fs::path p = fs::absolute(d).lexically_normal();
      if (p == o) throw std::invalid_argument(d + ": the output folder cannot be one of the inputs");
      const auto state = read_json(tc::fuzz_layout(p).state());
      if (!state.is_object() || !fs::is_regular_file(tc::fuzz_layout(p).findings_jsonl()))
        throw std::invalid_argument(d + ": not the output of flowmut fuzz or merge (fuzz.json, findings.jsonl)");
      const auto part = tc::findings_index::from_jsonl(tc::fuzz_layout(p).findings_jsonl());
      for (const auto* f : part.entries())
        if (!f->witnesses.empty()) holder.emplace(sighting(*f), p);
      idx.add_index(part);
      for (const auto& u : state.value("units", nlohmann::json::array()).get<std::vector<tc::fuzz_unit>>()) {
        auto it = units.find(u.name);
        if (it == units.end() || u.round > it->second.round ||
            (u.round == it->second.round && u.slices > it->second.slices))
          units[u.name] = u;
      }
    }
    fs::create_directories(o);
    std::vector<tc::fuzz_unit> merged;
    for (auto& [n, u] : units) merged.push_back(u);
    for (const auto* f : idx.entries()) {
      const auto it = holder.find(sighting(*f));
      if (it == holder.end()) continue;
      const fs::path from = it->second / f->row.dir, to = o / f->row.dir;
      if (fs::is_directory(from) && fs::absolute(from) != fs::absolute(to)) copy_finding(from, to);
    }
    const auto known = known_issues();
    write_file_atomic(tc::fuzz_layout(o).findings_jsonl(), idx.to_jsonl(known));
    write_file_atomic(tc::fuzz_layout(o).state(),
                      nlohmann::json({{"version", 1}, {"merged", true}, {"units", merged}}).dump(1) + "\n");
    tc::write_fuzz_report(o, idx, merged, "merge", known);
    std::printf(
        "merged %zu folder(s): %zu campaigns, %zu distinct findings (%s), %zu witnesses\nreport: %s\nfindings: %s\n",
        dirs.size(), merged.size(), idx.size(), tc::describe(idx.counts()).c_str(), idx.witnesses(),
        tc::fuzz_layout(o).report().c_str(), tc::fuzz_layout(o).findings_jsonl().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "flowmut merge: " << e.what() << "\n";
    return 2;
  }
}
