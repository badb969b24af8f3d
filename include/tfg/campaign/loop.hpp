#pragma once
/// \file
/// The campaign loop (DESIGN.md section 1, flowmut-method.md "Candidate construction and
/// selection"): profile -> construct -> filter -> select -> apply -> execute -> judge ->
/// reward -> accept, for N rounds, over any `backend` (backend.hpp) and selection policy.
///
///     tfg::torch::backend b;
///     tfg::campaign::loop<tfg::torch::backend> c(b, options, *tfg::select::make_policy("linucb"));
///     c.run([](const tfg::campaign::status& s) { ... });
///
/// `Policy` defaults to `select::any_policy`, so one instantiation serves every policy; pass a
/// concrete policy type for static dispatch.
///
/// Process model: this process (the supervisor) imports, profiles, constructs and instantiates;
/// it never runs a mutant before a supervised worker process (`options::worker_exe worker
/// --dir D`, speaking protocol.hpp) has run it under every configuration and survived. Only then
/// is the mutant probed here (R(v), deferred constraints), judged and, when legal, accepted as
/// the next seed.
///
/// Output folder (docs/campaign.md): campaign.db (SQLite: rounds, findings, metrics, meta),
/// state.json (checkpoint for --resume), current.pt (the current seed), inputs.pt,
/// findings/<id>/ (mutant.pt, seed.pt, inputs.pt, meta.json, worker.log), workers/<n>/ (log,
/// current.json).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/generator.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/reward.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/metrics/metrics.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/select/registry.hpp"
#include "tfg/util/atomic_file.hpp"

namespace tfg::campaign {

namespace fs = std::filesystem;

/// How a campaign runs.
struct options {
  fs::path seed_model;                 ///< the seed file (ignored on resume: state.json names the seed)
  fs::path out_dir;
  std::vector<fs::path> op_dirs;       ///< operator folders
  fs::path inputs_path;                ///< profiling inputs; empty: the backend's default for the seed
  std::size_t rounds = 250;            ///< total rounds (a resumed campaign runs up to this count)
  std::uint64_t seed = 1;
  std::string policy_name = "linucb";  ///< recorded in the database
  select::ablation features = select::ablation::all();
  std::vector<std::string> configs;    ///< empty: the backend's default configurations
  fs::path worker_exe;                 ///< the program serving `worker --dir D`
  std::chrono::milliseconds timeout_cap{60000};   ///< per-mutant timeout never exceeds this
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
struct status {
  std::size_t round = 0, rounds = 0;
  double rounds_per_s = 0;
  std::size_t legal = 0, executed = 0, findings = 0, instances = 0;
  metrics::snapshot metrics;
  std::string last;  ///< what the round did, one phrase
};

/// A campaign over one seed with backend `Backend` and selection policy `Policy`. Not
/// thread-safe; one per process (the worker's event recorder and the folder lock are
/// process-wide).
template <class Backend, class Policy = select::any_policy>
class loop {
  static_assert(check_backend<Backend>());
  static_assert(select::check_selection_policy<Policy>());

 public:
  using status_callback = std::function<void(const status&)>;
  using generator_type = generator<Backend, Policy>;
  using model_type = typename Backend::model_type;
  using mutant_type = typename Backend::mutant_type;
  using failure_type = typename Backend::failure_type;

  /// `backend` must outlive the loop.
  loop(Backend& backend, options opt, Policy policy) : b_(backend), opt_(std::move(opt)), policy_(std::move(policy)) {}

  /// The round generator (after run() set it up): pool, current seed, policy, coverage.
  [[nodiscard]] generator_type& generation() { return *gen_; }

  /// Runs (or resumes) the campaign. Throws std::runtime_error (or the backend's error type) on
  /// a setup error (unreadable model, operator file errors, an occupied folder); framework
  /// failures during rounds are findings, never exceptions.
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
        const double s = ms_since(t0) / 1000.0;
        status_.rounds_per_s = s > 0 ? static_cast<double>(round_ - first) / s : 0;
        on_status(status_);
      }
    }
    if (worker_) worker_->shutdown();
  }

  /// Asks the loop to stop after the current round (signal handlers may call it).
  static void request_stop() noexcept { stop_flag() = 1; }
  /// True once request_stop() was called.
  [[nodiscard]] static bool stop_requested() noexcept { return stop_flag() != 0; }

  [[nodiscard]] store& database() { return *store_; }
  [[nodiscard]] const status& progress() const noexcept { return status_; }

 private:
  static volatile std::sig_atomic_t& stop_flag() {
    static volatile std::sig_atomic_t f = 0;
    return f;
  }

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
    auto opened = store::open(db_path);
    if (!opened) throw std::runtime_error(db_path.string() + ": " + opened.error());
    store_.emplace(std::move(*opened));

    gen_.emplace(b_, generator_options{opt_.op_dirs, opt_.seed, opt_.features, true}, std::move(*policy_));
    policy_.reset();

    nlohmann::json state;
    std::optional<model_type> seed;
    if (opt_.resume) {
      if (!had_state) throw std::runtime_error(opt_.out_dir.string() + ": nothing to resume (no state.json)");
      std::ifstream in(opt_.out_dir / "state.json");
      state = nlohmann::json::parse(in);
      seed_path_ = opt_.out_dir / state.at("seed").get<std::string>();
      seed.emplace(b_.load(seed_path_));
      inputs_.emplace(b_.load_inputs(opt_.out_dir / "inputs.pt"));
    } else {
      seed.emplace(b_.load(opt_.seed_model));
      inputs_.emplace(b_.seed_inputs(*seed, opt_.seed_model, opt_.inputs_path));
      b_.save_inputs(*inputs_, opt_.out_dir / "inputs.pt");
      seed_path_ = opt_.out_dir / "current.pt";
      b_.save(*seed, seed_path_);
      store_->set_meta("seed_model", fs::absolute(opt_.seed_model).string());
      store_->set_meta("policy", opt_.policy_name);
      store_->set_meta("seed", std::to_string(opt_.seed));
      store_->set_meta("operators", std::to_string(gen_->pool().operators.size()));
      store_->set_meta("started", std::to_string(std::time(nullptr)));
    }
    configs_ = b_.configs();
    if (opt_.configs.empty())
      for (const auto& c : configs_)
        if (c.available && c.default_on) opt_.configs.push_back(c.name);
    store_->set_meta("configs", nlohmann::json(opt_.configs).dump());
    for (const auto& c : configs_) perf_.reference[c.name] = c.reference;

    // Metrics: the test space is fixed by the requirement files and this build's registry.
    universe_ = requirement_universe();
    space_ = b_.metrics_space(universe_);
    tracker_.emplace(space_);

    if (opt_.resume) restore(state);
    spawn_worker();
    calibrate();
    gen_->profile_and_set_seed(std::move(*seed), *inputs_);
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
        for (auto& op : b_.requirement_universe(dir / "requirements")) u.push_back(op);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    return u;
  }

  void spawn_worker() {
    spawn_options so;
    const auto dir = opt_.out_dir / "workers" / std::to_string(worker_serial_);
    fs::create_directories(dir);
    so.argv = {opt_.worker_exe.string(), "worker", "--dir", dir.string()};
    so.env_extra = {"GLOG_minloglevel=2"};
    so.log_path = dir / "log";
    so.rss_limit_bytes = rss_limit();
    auto w = worker::spawn(std::move(so));
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

  /// Runs the request in the worker and reads the outcome (the write-ahead record names the
  /// configuration a dead worker was running).
  run_outcome execute(const worker_request& req, std::chrono::milliseconds timeout) {
    auto ex = worker_->exchange(to_line(req), timeout);
    const bool died = ex.kind != outcome::reply;
    return make_outcome(std::move(ex), died ? running_config() : std::string());
  }

  /// Runs the seed itself twice under every configuration: the second run's time sets the
  /// per-mutant timeout (max(floor, 10 x seed time), at most the cap), and its verdicts are the
  /// seed's own baseline (differences a mutant inherits are not attributed to the mutation).
  void calibrate() {
    std::optional<worker_reply> base;
    double ms = 0;
    for (int i = 0; i < 2; ++i) {
      auto o = execute(request(seed_path_), opt_.timeout_cap);
      if (o.process_failed())
        throw std::runtime_error("the seed model fails in the worker (" + std::string(to_string(o.exchange.kind)) +
                                 "): " + o.exchange.log.substr(o.exchange.log.size() > 2000 ? o.exchange.log.size() - 2000 : 0));
      if (!o.reply) throw std::runtime_error("the worker's reply on the seed is unreadable: " + o.reply_error);
      if (!o.reply->ok) throw std::runtime_error("the seed model does not load in the worker: " + o.reply->error);
      base = std::move(o.reply);
      ms = o.exchange.wall_ms;
    }
    timeout_ = std::clamp(std::chrono::milliseconds(static_cast<std::int64_t>(10 * ms)),
                          std::min(opt_.timeout_floor, opt_.timeout_cap), opt_.timeout_cap);
    store_->set_meta("timeout_ms", std::to_string(timeout_.count()));
    if (!opt_.resume) baseline_ = verdict_keys(*base);
    perf_.seed_times = base->config_times();
  }

  [[nodiscard]] worker_request request(const fs::path& model_path) const {
    worker_request r;
    r.id = static_cast<std::int64_t>(round_);
    r.model = fs::absolute(model_path).string();
    r.inputs = fs::absolute(opt_.out_dir / "inputs.pt").string();
    r.configs = opt_.configs;
    r.threads = opt_.threads;
    return r;
  }

  [[nodiscard]] static std::string verdict_key(const oracle::verdict& v) {
    return std::string(oracle::to_string(v.kind)) + "|" + v.config_a + "|" + v.config_b;
  }

  [[nodiscard]] static std::set<std::string> verdict_keys(const worker_reply& reply) {
    std::set<std::string> keys;
    for (const auto& v : reply.verdicts) keys.insert(verdict_key(v));
    return keys;
  }

  // ---- one round -----------------------------------------------------------------------------

  void one_round() {
    using clk = std::chrono::steady_clock;
    round_record rec;
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
      rec.verdict = round_verdict::no_candidate;
      rec.reason = "no untried candidate on this seed";
      status_.last = "no candidate";
      finish_round(rec);
      return;
    }
    const auto& pick = gen.pick;
    const auto& op = gen_->pool().operators[pick.c.op];
    rec.op = gen.op;
    rec.arm = pick.c.op;
    rec.context = pick.x.x;
    rec.site = gen.site;
    if (auto* f = std::get_if<failure_type>(&gen.result)) {
      rec.verdict = round_verdict::rejected;
      rec.reason = f->message;
      status_.last = "rejected " + op.name;
      finish_round(rec);
      return;
    }
    const auto& b = gen.bindings;
    auto t = clk::now();
    auto& mu = std::get<mutant_type>(gen.result);
    const auto mutant_path = opt_.out_dir / "work" / "mutant.pt";
    try {
      b_.save(Backend::mutant_model(mu), mutant_path);
    } catch (const std::exception& e) {
      rec.phase_ms["export"] = ms_since(t);
      rec.verdict = round_verdict::rejected;
      rec.reason = std::string("export: ") + e.what();
      finish_round(rec);
      return;
    }
    rec.phase_ms["export"] = ms_since(t);

    // Execute in the worker.
    t = clk::now();
    const auto req = request(mutant_path);
    auto out = execute(req, timeout_);
    rec.phase_ms["execute"] = ms_since(t);
    ++status_.executed;
    rec.extra_json = nlohmann::json{{"elements", pick.elements()}}.dump();

    t = clk::now();
    const attribution at = attribution_of(mu, b, op);
    double reward = 0;
    if (out.process_failed()) {
      // The framework killed the worker (or we did): a crash-class finding.
      auto sig = process_signature(out, at);
      spawn_worker();  // the old one is dead; reruns need a live one
      rec.verdict = round_verdict::finding;
      rec.reason = record_finding(sig, process_message(sig, out, timeout_.count()) + "\n" + out.exchange.log, op, rec,
                                  req, at);
      status_.last = std::string(oracle::to_string(sig.kind)) + " in " + op.name;
    } else {
      judge_reply(out, mu, op, pick, b, at, rec, req, reward);
    }
    rec.phase_ms["judge"] = ms_since(t) - accept_ms_;
    accept_ms_ = 0;
    gen_->feedback(pick, reward);
    rec.reward = reward;
    finish_round(rec);
  }

  void finish_round(const round_record& rec) {
    store_->put_round(rec);
    record_metrics();
  }

  /// Metric checkpoints: after round 0, every metrics_every rounds, and after the last round
  /// (also after rounds that end early, so every recorded round has a curve point near it).
  void record_metrics() {
    if (round_ == 0 || (round_ + 1) % opt_.metrics_every == 0 || round_ + 1 == opt_.rounds)
      store_->put_metrics(static_cast<std::int64_t>(round_), metrics_map());
  }

  void judge_reply(const run_outcome& out, mutant_type& mu, const match::compiled_operator& op,
                   const chosen_candidate& pick, const match::bindings& b, const attribution& at, round_record& rec,
                   const worker_request& req, double& reward) {
    if (!out.reply || !out.reply->ok) {
      rec.verdict = round_verdict::worker_failure;
      rec.reason = out.reply ? out.reply->error : out.reply_error;
      status_.last = "worker failure";
      return;
    }
    const auto& reply = *out.reply;
    // The reference configuration must run; its failure is a violated precondition (illegal)
    // unless the framework reports an internal assert (a finding).
    if (const auto ref_error = reference_error(reply); !ref_error.empty()) {
      if (is_internal_error(ref_error)) {
        const auto found = findings_of(out, at);
        rec.verdict = round_verdict::finding;
        rec.reason = record_finding(found.at(0).signature, ref_error, op, rec, req, at);
      } else {
        rec.verdict = round_verdict::illegal;
        rec.reason = "reference fails: " + first_line(ref_error);
        status_.last = "illegal " + op.name;
      }
      return;
    }
    // Legality on the mutant's own state (safe now: the worker ran it op by op).
    if (auto f = gen_->check(mu, pick, b)) {
      rec.verdict = round_verdict::illegal;
      rec.reason = f->message;
      status_.last = "illegal " + op.name;
      return;
    }
    ++status_.legal;
    rec.verdict = round_verdict::legal;
    // Differential and performance findings not already shown by the seed.
    std::vector<std::string> ids;
    for (const auto& f : findings_of(out, at, &perf_)) {
      const auto& s = f.signature;
      if (s.kind != oracle::finding_kind::performance &&
          baseline_.count(std::string(oracle::to_string(verdict_kind_of(s))) + "|" + s.config_a + "|" + s.config_b))
        continue;
      ids.push_back(record_finding(s, f.message, op, rec, req, at));
    }
    // Metamorphic: only over finite seed outputs (NaN/Inf a seed already carries, from an earlier
    // accepted mutation, make "the same values" ill-defined).
    const auto& seed_profile = gen_->current_profile();
    if (op.preserves_values && Backend::outputs_finite(seed_profile)) {
      const double atol = op.atol.value_or(0.0), rtol = op.rtol.value_or(0.0);
      const double ex = Backend::output_excess(Backend::mutant_profile(mu), seed_profile, atol, rtol);
      if (ex > 0) {
        oracle::finding_signature sig{oracle::finding_kind::metamorphic, "seed", "mutant", at.culprit_op, at.dtype,
                                      at.device, op.name};
        ids.push_back(record_finding(sig, op.name + " claims to preserve values; an output differs by " +
                                              std::to_string(ex) + " beyond its tolerance",
                                     op, rec, req, at));
      }
    }
    if (!ids.empty()) {
      rec.verdict = round_verdict::finding;
      for (const auto& id : ids) rec.reason += (rec.reason.empty() ? "" : ",") + id;
    }
    // Reward: novelty of the runtime trace (the reference ran, so the execution completed).
    const auto transitions = reply.transition_labels();
    const auto nov = novelty_.observe_sets(reply.labels, transitions);
    reward = nov.reward;
    rec.new_labels = static_cast<std::int64_t>(nov.new_labels);
    rec.new_transitions = static_cast<std::int64_t>(nov.new_transitions);
    // Metrics over legal test cases.
    tracker_->observe(b_.observe(Backend::mutant_model(mu), Backend::mutant_profile(mu)));
    // Accept: the mutant becomes the next seed (its probe is its profile).
    if (Backend::graph(Backend::mutant_model(mu)).node_count() <= opt_.max_seed_nodes) {
      rec.accepted = true;
      // The mutant was exported for the worker already: publish that file, do not export again.
      fs::copy_file(req.model, opt_.out_dir / "current.pt.tmp", fs::copy_options::overwrite_existing);
      fs::rename(opt_.out_dir / "current.pt.tmp", opt_.out_dir / "current.pt");
      baseline_ = verdict_keys(reply);
      perf_.seed_times = reply.config_times();
      gen_->set_seed(std::move(Backend::mutant_model(mu)), std::move(Backend::mutant_profile(mu)), *inputs_);
      const auto [setup_ms, influence_ms] = gen_->take_seed_times();  // this round pays for the new seed
      rec.phase_ms["reseed"] += setup_ms;
      rec.phase_ms["influence"] += influence_ms;
      accept_ms_ = setup_ms + influence_ms;
    }
    if (status_.last.empty() || rec.verdict == round_verdict::legal) status_.last = "legal " + op.name;
  }

  /// The verdict kind a differential finding kind comes from (for the seed's baseline keys).
  [[nodiscard]] static oracle::verdict_kind verdict_kind_of(const oracle::finding_signature& s) {
    using K = oracle::finding_kind;
    using V = oracle::verdict_kind;
    switch (s.kind) {
      case K::numeric: return V::numeric_mismatch;
      case K::nan_inf: return V::nan_inf_mismatch;
      case K::state: return V::state_mismatch;
      case K::exception: return V::error_in_one;
      default: return V::equal;
    }
  }

  // ---- findings ------------------------------------------------------------------------------

  [[nodiscard]] static std::string first_line(std::string s) {
    if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
    return s;
  }

  /// The dtype of the first value the mutation added (from the probe), else f32.
  [[nodiscard]] static std::string dtype_of(mutant_type& mu) {
    const auto& g = Backend::graph(Backend::mutant_model(mu));
    for (auto n : Backend::added_nodes(mu))
      for (auto e : g.outputs(n))
        if (const auto* ep = Backend::edge_profile(Backend::mutant_profile(mu), e); ep && !ep->runs.empty())
          return std::string(state::name(ep->runs[0].type));
    return "f32";
  }

  /// To whom a finding of this round is attributed: the first non-prim kind the mutation
  /// added, else the kind that produces the anchor.
  [[nodiscard]] attribution attribution_of(mutant_type& mu, const match::bindings& b, const match::compiled_operator& op) const {
    attribution at;
    at.dtype = dtype_of(mu);
    const auto& mm = Backend::mutant_model(mu);
    for (auto n : Backend::added_nodes(mu)) {
      const std::string k{Backend::kind(mm, n)};
      if (k.rfind("prim::", 0) != 0) {
        at.culprit_op = k;
        return at;
      }
    }
    const auto anchor = b.values.at(op.anchor);
    const auto& cur = gen_->current();
    const auto p = Backend::graph(cur).producer(anchor);
    at.culprit_op = p == graph::no_node ? std::string("input") : std::string(Backend::kind(cur, p));
    return at;
  }

  /// The configuration the worker was running when it died (its write-ahead record).
  [[nodiscard]] std::string running_config() const {
    std::ifstream in(worker_dir_ / "current.json");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    return j.is_discarded() ? std::string("?") : j.value("config", "?");
  }

  /// Stores one instance of a finding. A new signature gets its folder first (published
  /// atomically), then its database row (the commit is the report), then reliability reruns.
  /// Returns the signature id.
  std::string record_finding(const oracle::finding_signature& sig, const std::string& message,
                             const match::compiled_operator& op, const round_record& rec, const worker_request& req,
                             const attribution& at) {
    const auto id = sig.id();
    const bool known = known_findings_.count(id) > 0;
    const auto rel_dir = fs::path("findings") / id;
    if (!known) {
      const auto staging = opt_.out_dir / "work" / ("staging-" + id);
      fs::remove_all(staging);
      fs::create_directories(staging);
      fs::copy_file(req.model, staging / "mutant.pt", fs::copy_options::overwrite_existing);
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
                             {"culprit_op", at.culprit_op},
                             {"dtype", at.dtype},
                             {"device", at.device},
                             {"timeout_ms", timeout_.count()},
                             {"seed_times", perf_.seed_times},
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
      const double reliability = rerun(sig, req, at);
      // Timing is noisy on a shared machine: a performance anomaly must reproduce every time.
      const double needed = sig.kind == oracle::finding_kind::performance ? 1.0 : 0.15;
      store_->set_finding_status(id, reliability, reliability >= needed ? "reproduced" : "flaky");
    }
    return id;
  }

  /// Reruns a new finding's request `reruns` times (hangs and out-of-memory once, at twice the
  /// timeout) on the copy in its finding folder and returns the share of runs that reproduce
  /// it. A worker that died is replaced.
  double rerun(const oracle::finding_signature& sig, const worker_request& req, const attribution& at) {
    if (opt_.reruns <= 0) return 1.0;
    using K = oracle::finding_kind;
    if (sig.kind == K::metamorphic) return 1.0;  // deterministic: decided in this process
    auto r = req;
    r.model = fs::absolute(opt_.out_dir / "findings" / sig.id() / "mutant.pt").string();
    const int runs = (sig.kind == K::hang || sig.kind == K::out_of_memory) ? 1 : opt_.reruns;
    int same = 0;
    for (int i = 0; i < runs; ++i) {
      const auto timeout = sig.kind == K::hang ? 2 * timeout_ : timeout_;
      auto o = execute(r, timeout);
      if (reproduces(sig, o, at, &perf_)) ++same;
      if (o.process_failed()) spawn_worker();
    }
    return static_cast<double>(same) / runs;
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
                         {"seed_times", perf_.seed_times},
                         {"timeout_ms", timeout_.count()},
                         {"legal", status_.legal},
                         {"executed", status_.executed}};
    write_file_atomic(opt_.out_dir / "state.json", st.dump());
  }

  void restore(const nlohmann::json& st) {
    round_ = st.at("round").get<std::size_t>();
    std::istringstream rng_state(st.at("rng").get<std::string>());
    rng_state >> gen_->random();
    novelty_ = trace_novelty::from_json(st.at("novelty"));
    tracker_.emplace(metrics::tracker::from_json(st.at("metrics"), space_));
    baseline_ = st.at("baseline").get<std::set<std::string>>();
    perf_.seed_times = st.value("seed_times", std::map<std::string, double>{});
    status_.legal = st.value("legal", std::size_t{0});
    status_.executed = st.value("executed", std::size_t{0});
    // The policy and the coverage counts are replayed from the recorded rounds.
    for (const auto& r : store_->rounds()) {
      if (r.round >= static_cast<std::int64_t>(round_)) break;
      if (r.arm < 0 || r.verdict == round_verdict::rejected || r.verdict == round_verdict::no_candidate) continue;
      const auto extra = nlohmann::json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
      std::vector<std::uint64_t> el;
      if (!extra.is_discarded() && extra.contains("elements")) el = extra["elements"].get<std::vector<std::uint64_t>>();
      gen_->replay(select::context{r.context}, static_cast<std::uint32_t>(r.arm), r.reward, el);
    }
    for (const auto& f : store_->findings()) known_findings_.insert(f.id);
    status_.findings = known_findings_.size();
  }

  Backend& b_;
  options opt_;
  std::optional<Policy> policy_;  ///< moved into the generator by setup()
  std::optional<store> store_;
  std::optional<generator_type> gen_;
  std::vector<config_desc> configs_;
  fs::path seed_path_;
  std::optional<typename Backend::inputs_type> inputs_;
  trace_novelty novelty_;
  std::vector<std::string> universe_;
  metrics::test_space space_;
  std::optional<metrics::tracker> tracker_;
  std::optional<worker> worker_;
  fs::path worker_dir_;
  std::size_t worker_serial_ = 0;
  std::chrono::milliseconds timeout_{10000};
  std::set<std::string> baseline_;
  performance_rule perf_;
  double accept_ms_ = 0;  ///< time the current round spent re-seeding (excluded from "judge")
  std::set<std::string> known_findings_;
  std::size_t round_ = 0;
  int lock_fd_ = -1;
  mutable status status_;
};

}  // namespace tfg::campaign
