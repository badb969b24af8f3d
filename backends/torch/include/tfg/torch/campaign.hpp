#pragma once
/// The campaign loop on LibTorch (DESIGN.md section 1, flowmut-method.md "Candidate construction
/// and selection"): profile -> construct -> filter -> select -> apply -> execute -> judge ->
/// reward -> accept, for N rounds, composed at compile time over a selection policy.
///
/// Process model: this process (the supervisor) imports, profiles, constructs and instantiates;
/// it never runs a mutant before a supervised worker process (`flowmut worker`, started by exec)
/// has run it under every configuration and survived. Only then is the mutant probed here (R(v),
/// deferred constraints), judged and, when legal, accepted as the next seed.
///
/// Output folder (see docs/campaign.md): campaign.db (SQLite: rounds, findings, metrics, meta),
/// state.json (checkpoint for --resume), current.pt (the current seed), inputs.pt,
/// findings/<id>/ (mutant.pt, meta.json, worker.log), workers/<n>/ (log, current.json).
#include <tfg/campaign/process.hpp>
#include <tfg/campaign/reward.hpp>
#include <tfg/campaign/stack.hpp>
#include <tfg/campaign/store.hpp>
#include <tfg/match/pool.hpp>
#include <tfg/metrics/metrics.hpp>
#include <tfg/oracle/finding.hpp>
#include <tfg/select/features.hpp>
#include <tfg/select/impact.hpp>
#include <tfg/select/policies.hpp>
#include <tfg/torch/generate.hpp>
#include <tfg/torch/observe.hpp>
#include <tfg/torch/ops_check.hpp>
#include <tfg/torch/worker.hpp>
#include <tfg/util/atomic_file.hpp>

#include <torch/csrc/jit/serialization/pickle.h>

#include <nlohmann/json.hpp>

#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>

namespace tfg::torch {

namespace fs = std::filesystem;

struct campaign_options {
  fs::path seed_model;                 ///< TorchScript .pt (ignored on resume: state.json names the seed)
  fs::path out_dir;
  std::vector<fs::path> op_dirs;       ///< operator folders
  std::string inputs_path;             ///< profiling inputs; empty: MODEL.inputs.pt or 3 random inputs
  std::size_t rounds = 250;            ///< total rounds (a resumed campaign runs up to this count)
  std::uint64_t seed = 1;
  std::string policy_name = "linucb";  ///< recorded in the database
  std::vector<std::string> configs;    ///< empty: every CPU configuration
  fs::path worker_exe;                 ///< the flowmut binary (`worker` subcommand)
  std::chrono::milliseconds timeout_cap{60000};  ///< per-mutant timeout never exceeds this
  std::chrono::milliseconds timeout_floor{5000};  ///< a loaded machine can take seconds to load a model
  std::int64_t rss_limit_bytes = 0;    ///< 0: min(8 GiB, physical RAM / 2)
  int reruns = 2;                      ///< reliability reruns of each new finding
  std::size_t metrics_every = 10;      ///< metrics checkpoint period (and the last round)
  bool resume = false;
  bool force = false;                  ///< start over in a folder that holds a campaign
  std::size_t max_seed_nodes = 4000;   ///< do not accept mutants beyond this many nodes
  int threads = 1;
};

/// One line of progress, for the status display.
struct campaign_status {
  std::size_t round = 0, rounds = 0;
  double rounds_per_s = 0;
  std::size_t legal = 0, executed = 0, findings = 0, instances = 0;
  metrics::snapshot metrics;
  std::string last;  ///< what the round did, one phrase
};

namespace campaign_detail {


inline void save_inputs(const input_set& inputs, const fs::path& path) {
  c10::impl::GenericList list(c10::AnyType::get());
  for (const auto& x : inputs) list.push_back(c10::ivalue::Tuple::create(x));
  const auto bytes = ::torch::jit::pickle_save(c10::IValue(list));
  write_file_atomic(path, std::string_view(bytes.data(), bytes.size()));
}

inline void save_model_atomic(const model& m, const fs::path& path) {
  const auto tmp = path.string() + ".tmp";
  save(m, tmp);
  fs::rename(tmp, path);
}

/// The reward of a trace given as its distinct labels and distinct transitions (what a worker
/// returns) rather than as a sequence: each transition becomes a two-label trace, so the
/// history gains exactly these labels and transitions. Same formula as trace_novelty::observe.
inline campaign::novelty observe_sets(campaign::trace_novelty& history, const std::vector<std::string>& labels,
                                      const std::vector<std::pair<std::string, std::string>>& transitions) {
  campaign::novelty n;
  n.labels = labels.size();
  n.transitions = transitions.size();
  if (labels.empty()) return n;
  for (const auto& l : labels) {
    const std::string one[] = {l};
    if (history.peek(one).new_labels) ++n.new_labels;
  }
  for (const auto& [a, b] : transitions) {
    const std::string two[] = {a, b};
    if (history.peek(two).new_transitions) ++n.new_transitions;
  }
  for (const auto& l : labels) {
    const std::string one[] = {l};
    (void)history.observe(one);
  }
  for (const auto& [a, b] : transitions) {
    const std::string two[] = {a, b};
    (void)history.observe(two);
  }
  const double e = static_cast<double>(n.new_labels) / static_cast<double>(n.labels);
  n.reward = n.transitions ? 0.5 * (e + static_cast<double>(n.new_transitions) / static_cast<double>(n.transitions)) : e;
  return n;
}

}  // namespace campaign_detail

/// A campaign over one seed with selection policy `Policy` (LinUCB, UCB1, random search, fixed
/// priority, one-shot: select/policies.hpp). Not thread-safe; one per process (the worker's
/// event recorder and the supervisor's folder lock are process-wide).
template <select::selection_policy Policy>
class campaign_loop {
 public:
  using status_callback = std::function<void(const campaign_status&)>;

  campaign_loop(campaign_options opt, Policy policy, select::ablation features = select::ablation::all())
      : opt_(std::move(opt)), policy_(std::move(policy)), features_(features) {}

  /// The round generator (after run() set it up): pool, current seed, policy, coverage.
  [[nodiscard]] mutation_generator<Policy>& generator() { return *gen_; }

  /// Runs (or resumes) the campaign. Throws model_error / std::runtime_error on a setup error
  /// (unreadable model, operator file errors, an occupied folder); framework failures during
  /// rounds are findings, never exceptions.
  void run(const status_callback& on_status = {}) {
    setup();
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t first = round_;
    while (round_ < opt_.rounds && !stop_requested()) {
      one_round();
      ++round_;
      checkpoint();
      if (on_status) {
        status_.round = round_;
        status_.rounds = opt_.rounds;
        const double s = config_detail::ms_since(t0) / 1000.0;
        status_.rounds_per_s = s > 0 ? static_cast<double>(round_ - first) / s : 0;
        on_status(status_);
      }
    }
    if (worker_) worker_->shutdown();
  }

  /// Asks the loop to stop after the current round (signal handlers may call it).
  static void request_stop() noexcept { stop_flag() = 1; }

  [[nodiscard]] campaign::store& database() { return *store_; }
  [[nodiscard]] const campaign_status& status() const noexcept { return status_; }

 private:
  static volatile std::sig_atomic_t& stop_flag() {
    static volatile std::sig_atomic_t f = 0;
    return f;
  }
  static bool stop_requested() noexcept { return stop_flag() != 0; }

  // ---- setup ---------------------------------------------------------------------------------

  void setup() {
    fs::create_directories(opt_.out_dir / "workers");
    fs::create_directories(opt_.out_dir / "findings");
    fs::create_directories(opt_.out_dir / "work");
    lock_folder();
    const auto db_path = opt_.out_dir / "campaign.db";
    const bool had_state = fs::exists(opt_.out_dir / "state.json");
    if (had_state && !opt_.resume && !opt_.force)
      throw std::runtime_error(opt_.out_dir.string() +
                               " already holds a campaign: pass --resume to continue it or --force to start over");
    if (opt_.force && !opt_.resume) {
      for (const char* f : {"campaign.db", "campaign.db-wal", "campaign.db-shm", "state.json", "current.pt"})
        fs::remove(opt_.out_dir / f);
      fs::remove_all(opt_.out_dir / "findings");
      fs::create_directories(opt_.out_dir / "findings");
    }
    auto opened = campaign::store::open(db_path);
    if (!opened) throw std::runtime_error(db_path.string() + ": " + opened.error());
    store_.emplace(std::move(*opened));

    gen_.emplace(generator_options{opt_.op_dirs, opt_.seed, features_, true}, std::move(*policy_));
    policy_.reset();
    model seed;

    nlohmann::json state;
    if (opt_.resume) {
      if (!had_state) throw std::runtime_error(opt_.out_dir.string() + ": nothing to resume (no state.json)");
      std::ifstream in(opt_.out_dir / "state.json");
      state = nlohmann::json::parse(in);
      seed_path_ = opt_.out_dir / state.at("seed").get<std::string>();
      seed = torchscript_importer().load(seed_path_.string());
      inputs_ = load_inputs((opt_.out_dir / "inputs.pt").string());
    } else {
      seed = torchscript_importer().load(opt_.seed_model.string());
      inputs_ = initial_inputs(seed);
      campaign_detail::save_inputs(inputs_, opt_.out_dir / "inputs.pt");
      seed_path_ = opt_.out_dir / "current.pt";
      campaign_detail::save_model_atomic(seed, seed_path_);
      store_->set_meta("seed_model", fs::absolute(opt_.seed_model).string());
      store_->set_meta("policy", opt_.policy_name);
      store_->set_meta("seed", std::to_string(opt_.seed));
      store_->set_meta("operators", std::to_string(gen_->pool().operators.size()));
      store_->set_meta("started", std::to_string(std::time(nullptr)));
    }
    if (opt_.configs.empty()) opt_.configs = default_campaign_configs();
    store_->set_meta("configs", nlohmann::json(opt_.configs).dump());

    // Metrics: the test space is fixed by the requirement files and this build's registry.
    universe_ = requirement_universe();
    space_ = metrics_space(universe_);
    tracker_.emplace(space_);

    if (opt_.resume) restore(state);
    spawn_worker();
    calibrate();
    gen_->profile_and_set_seed(std::move(seed), inputs_);
  }

  void lock_folder() {
    lock_fd_ = ::open((opt_.out_dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0 || ::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
      throw std::runtime_error(opt_.out_dir.string() + " is in use by another flowmut process");
  }

  [[nodiscard]] std::vector<std::string> requirement_universe() const {
    std::vector<std::string> u;
    for (const auto& dir : opt_.op_dirs)
      if (fs::is_directory(dir / "requirements"))
        for (auto& op : universe_from_requirements(dir / "requirements")) u.push_back(op);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    return u;
  }

  [[nodiscard]] input_set initial_inputs(const model& seed) const {
    if (!opt_.inputs_path.empty()) return load_inputs(opt_.inputs_path);
    const auto conventional = inputs_path_for(opt_.seed_model.string());
    if (fs::exists(conventional)) return load_inputs(conventional);
    return random_inputs(seed, 3);
  }

  void spawn_worker() {
    campaign::spawn_options so;
    const auto dir = opt_.out_dir / "workers" / std::to_string(worker_serial_);
    fs::create_directories(dir);
    so.argv = {opt_.worker_exe.string(), "worker", "--dir", dir.string()};
    so.env_extra = {"GLOG_minloglevel=2"};
    so.log_path = dir / "log";
    so.rss_limit_bytes = rss_limit();
    auto w = campaign::worker::spawn(std::move(so));
    if (!w) throw std::runtime_error("cannot start a worker: " + w.error());
    worker_.emplace(std::move(*w));
    worker_dir_ = dir;
    ++worker_serial_;
  }

  [[nodiscard]] std::int64_t rss_limit() const {
    if (opt_.rss_limit_bytes > 0) return opt_.rss_limit_bytes;
    const std::int64_t ram = static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
    return std::min<std::int64_t>(std::int64_t{8} << 30, ram / 2);
  }

  /// Runs the seed itself twice under every configuration: the second run's time sets the
  /// per-mutant timeout (max(floor, 10 x seed time), at most the cap), and its verdicts are the
  /// seed's own baseline (differences a mutant inherits are not attributed to the mutation).
  void calibrate() {
    nlohmann::json base;
    double ms = 0;
    for (int i = 0; i < 2; ++i) {
      auto r = worker_->exchange(request(seed_path_).dump(), opt_.timeout_cap);
      if (r.kind != campaign::outcome::reply)
        throw std::runtime_error("the seed model fails in the worker (" + std::string(campaign::to_string(r.kind)) +
                                 "): " + r.log.substr(r.log.size() > 2000 ? r.log.size() - 2000 : 0));
      base = nlohmann::json::parse(r.reply);
      if (!base.value("ok", false)) throw std::runtime_error("the seed model does not load in the worker: " + base.value("error", ""));
      ms = r.wall_ms;
    }
    timeout_ = std::clamp(std::chrono::milliseconds(static_cast<std::int64_t>(10 * ms)), std::min(opt_.timeout_floor, opt_.timeout_cap), opt_.timeout_cap);
    store_->set_meta("timeout_ms", std::to_string(timeout_.count()));
    if (!opt_.resume) baseline_ = verdict_keys(base);
    seed_times_ = config_times(base);
  }

  [[nodiscard]] nlohmann::json request(const fs::path& model_path) const {
    return {{"id", static_cast<std::int64_t>(round_)},
            {"model", fs::absolute(model_path).string()},
            {"inputs", fs::absolute(opt_.out_dir / "inputs.pt").string()},
            {"configs", opt_.configs},
            {"threads", opt_.threads}};
  }

  [[nodiscard]] static std::set<std::string> verdict_keys(const nlohmann::json& reply) {
    std::set<std::string> keys;
    for (const auto& v : reply.value("verdicts", nlohmann::json::array()))
      keys.insert(v.value("kind", "") + "|" + v.value("a", "") + "|" + v.value("b", ""));
    return keys;
  }

  // ---- one round -----------------------------------------------------------------------------

  void one_round() {
    using clk = std::chrono::steady_clock;
    campaign::round_record rec;
    rec.round = static_cast<std::int64_t>(round_);
    rec.policy = opt_.policy_name;
    rec.model_hash = gen_->seed_hash();
    // The first round pays for profiling the initial seed (later seeds are paid by the round
    // that accepted them, under "reseed" and "influence").
    if (const auto [seed_ms, influence_ms] = gen_->take_seed_times(); seed_ms + influence_ms > 0) {
      rec.phase_ms["profile"] = seed_ms;
      rec.phase_ms["influence"] = influence_ms;
    }

    auto gen = gen_->next(round_);
    for (const auto& [k, v] : gen.phase_ms) rec.phase_ms[k] = v;
    rec.candidates = static_cast<std::int64_t>(gen.candidates);
    if (!gen.selected) {
      rec.verdict = "no_candidate";
      rec.reason = "no untried candidate on this seed";
      status_.last = "no candidate";
      store_->put_round(rec);
      record_metrics();
      return;
    }
    const auto& pick = gen.pick;
    const auto& op = gen_->pool().operators[pick.c.op];
    rec.op = gen.op;
    rec.arm = pick.c.op;
    rec.context = pick.x.x;
    rec.site = gen.site;
    if (auto* f = std::get_if<mutation_failure>(&gen.result)) {
      rec.verdict = "rejected";
      rec.reason = f->message;
      status_.last = "rejected " + op.name;
      store_->put_round(rec);
      record_metrics();
      return;
    }
    const auto& b = gen.bindings;
    auto t = clk::now();
    auto& mu = std::get<mutant>(gen.result);
    const auto mutant_path = opt_.out_dir / "work" / "mutant.pt";
    try {
      campaign_detail::save_model_atomic(mu.graph_model, mutant_path);
    } catch (const std::exception& e) {
      rec.phase_ms["export"] = config_detail::ms_since(t);
      rec.verdict = "rejected";
      rec.reason = "export: " + config_detail::clean_error(e.what());
      store_->put_round(rec);
      record_metrics();
      return;
    }
    rec.phase_ms["export"] = config_detail::ms_since(t);

    // Execute in the worker.
    t = clk::now();
    const auto req = request(mutant_path);
    auto ex = worker_->exchange(req.dump(), timeout_);
    rec.phase_ms["execute"] = config_detail::ms_since(t);
    ++status_.executed;
    rec.extra_json = nlohmann::json{{"elements", mutation_generator<Policy>::elements_of(pick)}}.dump();

    t = clk::now();
    const std::string culprit = culprit_of(mu, b, op);
    double reward = 0;
    if (ex.kind != campaign::outcome::reply) {
      // The framework killed the worker (or we did): a crash-class finding.
      auto sig = process_signature(ex, culprit, mu);
      const auto log = ex.log;
      spawn_worker();  // the old one is dead; reruns need a live one
      rec.verdict = "finding";
      rec.reason = record_finding(sig, process_message(sig, ex) + "\n" + log, mu, op, rec, /*process_level=*/true, req);
      status_.last = std::string(oracle::to_string(sig.kind)) + " in " + op.name;
    } else {
      const auto reply = nlohmann::json::parse(ex.reply, nullptr, false);
      judge_reply(reply, mu, op, pick, b, culprit, rec, req, reward);
    }
    rec.phase_ms["judge"] = config_detail::ms_since(t) - accept_ms_;
    accept_ms_ = 0;
    gen_->feedback(pick, reward);
    rec.reward = reward;
    store_->put_round(rec);
    record_metrics();
  }

  /// Metric checkpoints: after round 0, every metrics_every rounds, and after the last round
  /// (also after rounds that end early, so every recorded round has a curve point near it).
  void record_metrics() {
    if (round_ == 0 || (round_ + 1) % opt_.metrics_every == 0 || round_ + 1 == opt_.rounds)
      store_->put_metrics(static_cast<std::int64_t>(round_), metrics_map());
  }

  void judge_reply(const nlohmann::json& reply, mutant& mu, const match::compiled_operator& op,
                   const chosen_candidate& pick, const match::bindings& b,
                   const std::string& culprit, campaign::round_record& rec, const nlohmann::json& req, double& reward) {
    if (reply.is_discarded() || !reply.value("ok", false)) {
      rec.verdict = "worker_failure";
      rec.reason = reply.is_discarded() ? "unreadable worker reply" : reply.value("error", "");
      status_.last = "worker failure";
      return;
    }
    // The reference configuration must run; its failure is a violated precondition (illegal)
    // unless the framework reports an internal assert (a finding).
    std::string ref_error;
    for (const auto& r : reply["results"])
      if (r.value("config", "") == "eager_op_by_op" && !r.value("ok", false)) ref_error = r.value("error", "");
    if (!ref_error.empty()) {
      if (ref_error.find("INTERNAL ASSERT FAILED") != std::string::npos || ref_error.find("please report a bug") != std::string::npos) {
        oracle::finding_signature sig{oracle::finding_kind::exception, "eager_op_by_op", "", culprit, dtype_of(mu), "cpu",
                                      oracle::normalise_message(ref_error)};
        rec.verdict = "finding";
        rec.reason = record_finding(sig, ref_error, mu, op, rec, false, req);
      } else {
        rec.verdict = "illegal";
        rec.reason = "reference fails: " + first_line(ref_error);
        status_.last = "illegal " + op.name;
      }
      return;
    }
    // Legality on the mutant's own state (safe now: the worker ran it op by op).
    if (auto f = gen_->check(mu, pick, b)) {
      rec.verdict = "illegal";
      rec.reason = f->message;
      status_.last = "illegal " + op.name;
      return;
    }
    ++status_.legal;
    rec.verdict = "legal";
    // Differential findings not already shown by the seed.
    std::vector<std::string> ids;
    for (const auto& v : reply["verdicts"]) {
      const std::string key = v.value("kind", "") + "|" + v.value("a", "") + "|" + v.value("b", "");
      if (baseline_.count(key)) continue;
      const auto kind = finding_kind_of(v.value("kind", ""));
      if (!kind) continue;
      oracle::finding_signature sig{*kind, v.value("a", ""), v.value("b", ""), culprit, dtype_of(mu), "cpu",
                                    *kind == oracle::finding_kind::exception ? oracle::normalise_message(v.value("message", "")) : ""};
      ids.push_back(record_finding(sig, v.value("message", ""), mu, op, rec, false, req));
    }
    for (const auto& sl : slow_configs(reply)) {
      oracle::finding_signature sig{oracle::finding_kind::performance, sl.a, sl.b, culprit, dtype_of(mu), "cpu", ""};
      char buf[200];
      std::snprintf(buf, sizeof buf, "%s takes %.1f ms, %.1fx the %.1f ms of %s (on the seed: %.1fx)", sl.b.c_str(),
                    sl.b_ms, sl.ratio, sl.a_ms, sl.a.c_str(), sl.seed_ratio);
      ids.push_back(record_finding(sig, buf, mu, op, rec, false, req));
    }
    // Metamorphic: only over finite seed outputs (NaN/Inf a seed already carries, from an earlier
    // accepted mutation, make "the same values" ill-defined).
    if (op.preserves_values && all_finite(gen_->current_profile().outputs)) {
      const double atol = op.atol.value_or(0.0), rtol = op.rtol.value_or(0.0);
      const auto& seed_outputs = gen_->current_profile().outputs;
      for (std::size_t i = 0; i < mu.probe.outputs.size() && i < seed_outputs.size(); ++i) {
        const double ex = detail::excess(mu.probe.outputs[i], seed_outputs[i], atol, rtol);
        if (ex > 0) {
          oracle::finding_signature sig{oracle::finding_kind::metamorphic, "seed", "mutant", culprit, dtype_of(mu), "cpu", op.name};
          ids.push_back(record_finding(sig, op.name + " claims to preserve values; input " + std::to_string(i) +
                                                " differs by " + std::to_string(ex) + " beyond its tolerance",
                                       mu, op, rec, false, req));
          break;
        }
      }
    }
    if (!ids.empty()) {
      rec.verdict = "finding";
      for (const auto& id : ids) rec.reason += (rec.reason.empty() ? "" : ",") + id;
    }
    // Reward: novelty of the runtime trace (the reference ran, so the execution completed).
    std::vector<std::string> labels = reply.value("labels", std::vector<std::string>{});
    std::vector<std::pair<std::string, std::string>> transitions;
    for (const auto& tr : reply.value("transitions", nlohmann::json::array()))
      transitions.emplace_back(labels.at(tr[0].get<std::size_t>()), labels.at(tr[1].get<std::size_t>()));
    const auto nov = campaign_detail::observe_sets(novelty_, labels, transitions);
    reward = nov.reward;
    rec.new_labels = static_cast<std::int64_t>(nov.new_labels);
    rec.new_transitions = static_cast<std::int64_t>(nov.new_transitions);
    // Metrics over legal test cases.
    tracker_->observe(observe(mu.graph_model, mu.probe));
    // Accept: the mutant becomes the next seed (its probe is its profile).
    if (mu.graph_model.graph.node_count() <= opt_.max_seed_nodes) {
      rec.accepted = true;
      // The mutant was exported for the worker already: publish that file, do not export again.
      fs::copy_file(req.at("model").get<std::string>(), opt_.out_dir / "current.pt.tmp", fs::copy_options::overwrite_existing);
      fs::rename(opt_.out_dir / "current.pt.tmp", opt_.out_dir / "current.pt");
      baseline_ = verdict_keys(reply);
      seed_times_ = config_times(reply);
      gen_->set_seed(std::move(mu.graph_model), std::move(mu.probe), inputs_);
      const auto [setup_ms, influence_ms] = gen_->take_seed_times();  // this round pays for the new seed
      rec.phase_ms["reseed"] += setup_ms;
      rec.phase_ms["influence"] += influence_ms;
      accept_ms_ = setup_ms + influence_ms;
    }
    if (status_.last.empty() || rec.verdict == "legal") status_.last = "legal " + op.name;
  }

  // ---- findings ------------------------------------------------------------------------------

  /// Wall time of every configuration that ran, from a worker reply.
  [[nodiscard]] static std::map<std::string, double> config_times(const nlohmann::json& reply) {
    std::map<std::string, double> t;
    for (const auto& r : reply.value("results", nlohmann::json::array()))
      if (r.value("ok", false)) t[r.value("config", "")] = r.value("wall_ms", 0.0);
    return t;
  }

  struct slow_pair {
    std::string a, b;
    double a_ms = 0, b_ms = 0, ratio = 0, seed_ratio = 0;
  };

  /// Performance anomalies: configuration b is at least `perf_factor` times slower relative to
  /// its reference a than it is on the current seed, and at least `perf_min_ms` slower in
  /// absolute terms. Judging the ratio against the seed's own ratio cancels what a
  /// configuration normally costs (warm-up of the graph executor, threads on a busy machine).
  [[nodiscard]] std::vector<slow_pair> slow_configs(const nlohmann::json& reply) const {
    std::vector<slow_pair> out;
    const auto t = config_times(reply);
    for (const auto& [b, b_ms] : t) {
      const auto info = find_config(b);
      if (!info || info->reference.empty()) continue;
      // Multi-threaded timing measures the machine (cores shared with other processes make
      // OpenMP barriers spin), not the mutant: threads_1_vs_n is judged for values only.
      if (b == "threads_1_vs_n") continue;
      const auto a = t.find(info->reference);
      const auto sa = seed_times_.find(info->reference), sb = seed_times_.find(b);
      if (a == t.end() || sa == seed_times_.end() || sb == seed_times_.end()) continue;
      const double ratio = b_ms / std::max(a->second, 1e-3), seed_ratio = sb->second / std::max(sa->second, 1e-3);
      if (ratio > perf_factor * std::max(seed_ratio, 1.0) && b_ms - a->second > perf_min_ms)
        out.push_back({a->first, b, a->second, b_ms, ratio, seed_ratio});
    }
    return out;
  }

  [[nodiscard]] static std::optional<oracle::finding_kind> finding_kind_of(std::string_view verdict_kind) {
    using K = oracle::finding_kind;
    if (verdict_kind == "numeric_mismatch") return K::numeric;
    if (verdict_kind == "nan_inf_mismatch") return K::nan_inf;
    if (verdict_kind == "state_mismatch") return K::state;
    if (verdict_kind == "error_in_one") return K::exception;
    return std::nullopt;
  }

  [[nodiscard]] static bool all_finite(const std::vector<c10::IValue>& outputs) {
    std::function<bool(const c10::IValue&)> finite = [&](const c10::IValue& v) -> bool {
      if (v.isTensor()) {
        const auto& t = v.toTensor();
        return !t.defined() || !t.is_floating_point() || t.numel() == 0 || t.isfinite().all().item<bool>();
      }
      if (v.isTuple()) {
        for (const auto& e : v.toTupleRef().elements())
          if (!finite(e)) return false;
        return true;
      }
      if (v.isList()) {
        for (const auto& e : v.toListRef())
          if (!finite(e)) return false;
        return true;
      }
      return true;
    };
    for (const auto& o : outputs)
      if (!finite(o)) return false;
    return true;
  }

  [[nodiscard]] static std::string first_line(std::string s) {
    if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
    return s;
  }

  [[nodiscard]] std::string dtype_of(const mutant& mu) const {
    for (auto n : mu.added)
      for (auto e : mu.graph_model.graph.outputs(n))
        if (graph::index(e) < mu.probe.edges.size() && !mu.probe.edges[graph::index(e)].runs.empty())
          return std::string(state::name(mu.probe.edges[graph::index(e)].runs[0].type));
    return "f32";
  }

  /// The operator a finding is attributed to: the first non-prim kind the mutation added, else
  /// the kind that produces the anchor.
  [[nodiscard]] std::string culprit_of(const mutant& mu, const match::bindings& b, const match::compiled_operator& op) const {
    for (auto n : mu.added) {
      const std::string k = mu.graph_model.graph.data(n).kind.toQualString();
      if (k.rfind("prim::", 0) != 0) return k;
    }
    const auto anchor = b.values.at(op.anchor);
    const auto& g = gen_->current().graph;
    const auto p = g.producer(anchor);
    return p == graph::no_node ? std::string("input") : std::string(g.data(p).kind.toQualString());
  }

  [[nodiscard]] oracle::finding_signature process_signature(const campaign::exchange_result& ex, const std::string& culprit,
                                                            const mutant& mu) const {
    oracle::finding_signature sig;
    sig.culprit_op = culprit;
    sig.dtype = dtype_of(mu);
    sig.device = "cpu";
    sig.config_a = current_config();
    using K = oracle::finding_kind;
    switch (ex.kind) {
      case campaign::outcome::signaled: sig.kind = ex.signal == SIGABRT ? K::abort : K::crash; break;
      case campaign::outcome::timeout: sig.kind = K::hang; break;
      case campaign::outcome::out_of_memory: sig.kind = K::out_of_memory; break;
      default: sig.kind = K::crash; break;
    }
    if (ex.kind == campaign::outcome::signaled) {
      sig.symptom = campaign::signal_name(ex.signal);
      std::string frames;
      if (auto rep = campaign::parse_crash_report(ex.log)) {
        for (const auto& f : campaign::meaningful_frames(rep->frames, 3)) frames += (frames.empty() ? "" : " < ") + f;
      }
      sig.detail = campaign::signal_name(ex.signal) + (frames.empty() ? "" : " " + frames);
    } else if (ex.kind == campaign::outcome::exited) {
      sig.detail = "exit " + std::to_string(ex.exit_code);
    }
    return sig;
  }

  /// One line for a process-level finding: what happened, where, and the top frames.
  [[nodiscard]] std::string process_message(const oracle::finding_signature& sig, const campaign::exchange_result& ex) const {
    char buf[96];
    switch (ex.kind) {
      case campaign::outcome::timeout: std::snprintf(buf, sizeof buf, "no reply within %lld ms", static_cast<long long>(timeout_.count())); break;
      case campaign::outcome::out_of_memory: std::snprintf(buf, sizeof buf, "worker RSS reached %lld MiB", static_cast<long long>(ex.peak_rss_bytes >> 20)); break;
      case campaign::outcome::exited: std::snprintf(buf, sizeof buf, "worker exited with status %d", ex.exit_code); break;
      default: std::snprintf(buf, sizeof buf, "worker killed by %s", campaign::signal_name(ex.signal).c_str()); break;
    }
    return std::string(buf) + " while running " + sig.config_a + (sig.detail.empty() ? "" : "; " + sig.detail);
  }

  /// The configuration the worker was running when it died (its write-ahead record).
  [[nodiscard]] std::string current_config() const {
    std::ifstream in(worker_dir_ / "current.json");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    return j.is_discarded() ? std::string("?") : j.value("config", "?");
  }

  /// Stores one instance of a finding. A new signature gets its folder first (published
  /// atomically), then its database row (the commit is the report), then reliability reruns.
  /// Returns the signature id.
  std::string record_finding(const oracle::finding_signature& sig, const std::string& message, const mutant& mu,
                             const match::compiled_operator& op, const campaign::round_record& rec, bool process_level,
                             const nlohmann::json& req) {
    const auto id = sig.id();
    const bool known = known_findings_.count(id) > 0;
    const auto rel_dir = fs::path("findings") / id;
    if (!known) {
      const auto staging = opt_.out_dir / "work" / ("staging-" + id);
      fs::remove_all(staging);
      fs::create_directories(staging);
      fs::copy_file(opt_.out_dir / "work" / "mutant.pt", staging / "mutant.pt", fs::copy_options::overwrite_existing);
      fs::copy_file(opt_.out_dir / "inputs.pt", staging / "inputs.pt", fs::copy_options::overwrite_existing);
      // The seed the mutant was made from (the metamorphic oracle's reference; reduction's start).
      fs::copy_file(opt_.out_dir / "current.pt", staging / "seed.pt", fs::copy_options::overwrite_existing);
      nlohmann::json meta = {{"id", id},
                             {"title", sig.title()},
                             {"key", sig.key()},
                             {"kind", std::string(oracle::to_string(sig.kind))},
                             {"round", rec.round},
                             {"operator", op.name},
                             {"site", rec.site},
                             {"configs", opt_.configs},
                             {"message", message},
                             {"seed_model", store_->meta("seed_model").value_or("")},
                             {"repro", "flowmut repro " + (opt_.out_dir / rel_dir).string()}};
      write_file_atomic(staging / "meta.json", meta.dump(2));
      std::ofstream(staging / "worker.log") << message;
      publish_directory_atomic(staging, opt_.out_dir / rel_dir);
    }
    const bool fresh = store_->add_finding(sig, rec.round, first_line(message), rel_dir.string());
    ++status_.instances;
    if (fresh) {
      known_findings_.insert(id);
      ++status_.findings;
      const auto [reliability, runs] = rerun(sig, req, process_level);
      // Timing is noisy on a shared machine: a performance anomaly must reproduce every time.
      const double needed = sig.kind == oracle::finding_kind::performance ? 1.0 : 0.15;
      store_->set_finding_status(id, reliability, reliability >= needed ? "reproduced" : "flaky");
      (void)runs;
    }
    (void)mu;
    return id;
  }

  /// Reruns a new finding's request `reruns` times in fresh workers (the same worker for
  /// differential findings) and returns the share of runs with the same signature id.
  std::pair<double, int> rerun(const oracle::finding_signature& sig, const nlohmann::json& req, bool process_level) {
    if (opt_.reruns <= 0) return {1.0, 0};
    int same = 0;
    const auto id = sig.id();
    // A mutant reused by the rerun: the staged copy in the finding folder.
    auto r = req;
    r["model"] = fs::absolute(opt_.out_dir / "findings" / id / "mutant.pt").string();
    const int runs = (sig.kind == oracle::finding_kind::hang || sig.kind == oracle::finding_kind::out_of_memory) ? 1 : opt_.reruns;
    for (int i = 0; i < runs; ++i) {
      const auto timeout = sig.kind == oracle::finding_kind::hang ? 2 * timeout_ : timeout_;
      auto ex = worker_->exchange(r.dump(), timeout);
      if (process_level) {
        if (ex.kind != campaign::outcome::reply) {
          auto again = process_signature(ex, sig.culprit_op, {});
          again.culprit_op = sig.culprit_op;
          again.dtype = sig.dtype;
          if (again.id() == id) ++same;
          spawn_worker();
        }
      } else if (ex.kind == campaign::outcome::reply) {
        const auto reply = nlohmann::json::parse(ex.reply, nullptr, false);
        if (!reply.is_discarded())
          for (const auto& v : reply.value("verdicts", nlohmann::json::array()))
            if (finding_kind_of(v.value("kind", "")) == sig.kind && v.value("a", "") == sig.config_a &&
                v.value("b", "") == sig.config_b) {
              ++same;
              break;
            }
        if (sig.kind == oracle::finding_kind::metamorphic) ++same;  // deterministic: decided in this process
        if (sig.kind == oracle::finding_kind::performance && !reply.is_discarded())
          for (const auto& sl : slow_configs(reply))
            if (sl.a == sig.config_a && sl.b == sig.config_b) {
              ++same;
              break;
            }
      } else {
        spawn_worker();
      }
    }
    return {static_cast<double>(same) / runs, runs};
  }

  // ---- metrics, checkpoints ------------------------------------------------------------------

  [[nodiscard]] std::map<std::string, double> metrics_map() const {
    const auto s = tracker_->current();
    status_.metrics = s;
    return {{"lic", s.lic},
            {"lpc", s.lpc},
            {"lsc", s.lsc},
            {"dfsd", s.dfsd},
            {"signatures", static_cast<double>(s.signatures)},
            {"api_coverage", s.api_coverage},
            {"apis", static_cast<double>(s.apis)},
            {"test_cases", static_cast<double>(s.test_cases)},
            {"findings", static_cast<double>(status_.findings)}};
  }

  /// state.json: what a resumed campaign needs beyond the database (written after the round's
  /// database commit; a kill between the two redoes that round).
  void checkpoint() {
    std::ostringstream rng_state;
    rng_state << gen_->random();
    nlohmann::json st = {{"round", round_},
                         {"seed", fs::relative(opt_.out_dir / "current.pt", opt_.out_dir).string()},
                         {"rng", rng_state.str()},
                         {"novelty", novelty_.to_json()},
                         {"metrics", tracker_->to_json()},
                         {"baseline", baseline_},
                         {"seed_times", seed_times_},
                         {"timeout_ms", timeout_.count()},
                         {"legal", status_.legal},
                         {"executed", status_.executed}};
    write_file_atomic(opt_.out_dir / "state.json", st.dump());
  }

  void restore(const nlohmann::json& st) {
    round_ = st.at("round").get<std::size_t>();
    std::istringstream rng_state(st.at("rng").get<std::string>());
    rng_state >> gen_->random();
    novelty_ = campaign::trace_novelty::from_json(st.at("novelty"));
    tracker_.emplace(metrics::tracker::from_json(st.at("metrics"), space_));
    baseline_ = st.at("baseline").get<std::set<std::string>>();
    seed_times_ = st.value("seed_times", std::map<std::string, double>{});
    status_.legal = st.value("legal", std::size_t{0});
    status_.executed = st.value("executed", std::size_t{0});
    // The policy and the coverage counts are replayed from the recorded rounds.
    for (const auto& r : store_->rounds()) {
      if (r.round >= static_cast<std::int64_t>(round_)) break;
      if (r.arm < 0 || r.verdict == "rejected" || r.verdict == "no_candidate") continue;
      const auto extra = nlohmann::json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
      std::vector<std::uint64_t> el;
      if (!extra.is_discarded() && extra.contains("elements")) el = extra["elements"].get<std::vector<std::uint64_t>>();
      gen_->replay(select::context{r.context}, static_cast<std::uint32_t>(r.arm), r.reward, el);
    }
    for (const auto& f : store_->findings()) known_findings_.insert(f.id);
    status_.findings = known_findings_.size();
  }

  campaign_options opt_;
  std::optional<Policy> policy_;  ///< moved into the generator by setup()
  select::ablation features_;
  std::optional<campaign::store> store_;
  std::optional<mutation_generator<Policy>> gen_;
  fs::path seed_path_;
  input_set inputs_;
  campaign::trace_novelty novelty_;
  std::vector<std::string> universe_;
  metrics::test_space space_;
  std::optional<metrics::tracker> tracker_;
  std::optional<campaign::worker> worker_;
  fs::path worker_dir_;
  std::size_t worker_serial_ = 0;
  std::chrono::milliseconds timeout_{10000};
  std::set<std::string> baseline_;
  std::map<std::string, double> seed_times_;
  double accept_ms_ = 0;  ///< time the current round spent re-seeding (excluded from "judge")
  static constexpr double perf_factor = 10, perf_min_ms = 100;
  std::set<std::string> known_findings_;
  std::size_t round_ = 0;
  int lock_fd_ = -1;
  mutable campaign_status status_;
};

}  // namespace tfg::torch
