#pragma once
/// \file
/// The campaign loop (DESIGN.md section 1, flowmut-method.md "Candidate construction and
/// selection"): round 0 judges the seed itself; then profile -> construct -> filter -> select
/// -> apply -> execute -> judge -> localise -> reward -> accept, for N rounds, over any
/// `backend` (backend.hpp) and selection policy.
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
/// is the mutant probed here (R(v), deferred constraints), judged and, when healthy, accepted.
///
/// Findings (docs/campaign.md, docs/oracle.md): every differential finding is localised to the
/// first operator whose output diverges (localise.hpp) and deduplicated by that operator and
/// the state class of its inputs. A mutant's disagreement is inherited only when it localises
/// to the same original node as one of the seed's own (round 0) findings, or is the same
/// whole-model finding (random-number consumption); everything else is new. Only healthy
/// mutants (legal, no new finding, no new NaN/Inf in the outputs) become seeds; a corpus of
/// accepted seeds (the original always in it) lets the campaign go back.
///
/// The loop composes its parts: settings.hpp (options, the stored settings), supervisor.hpp (the
/// worker process and its timeout), generator.hpp (candidates, selection, instantiation),
/// round_judge.hpp (a mutant's judgement as a value), recorder.hpp (finding folders, database
/// rows, reruns), corpus.hpp (accepted seeds, their roots, the schedule) and the checkpoint
/// here. Output folder: layout.hpp names every file of it.
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
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/attribute.hpp"
#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/behaviour.hpp"
#include "tfg/campaign/checkpoint.hpp"
#include "tfg/campaign/corpus.hpp"
#include "tfg/campaign/folder.hpp"
#include "tfg/campaign/generator.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/recorder.hpp"
#include "tfg/campaign/reward.hpp"
#include "tfg/campaign/round_judge.hpp"
#include "tfg/campaign/settings.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/campaign/supervisor.hpp"
#include "tfg/metrics/metrics.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/oracle/nan_propagation.hpp"
#include "tfg/select/registry.hpp"
#include "tfg/util/atomic_file.hpp"
#include "tfg/util/clock.hpp"

namespace tfg::campaign {

/// One line of progress, for the status display.
struct status {
  std::size_t round = 0, rounds = 0;
  double rounds_per_s = 0;
  std::size_t legal = 0, executed = 0, findings = 0, instances = 0, inherited = 0;
  metrics::snapshot metrics;
  std::string last;          ///< what the round did, one phrase
  bool out_of_time = false;  ///< run() stopped because options::time_budget was spent
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
  using profile_type = typename Backend::profile_type;
  using mutant_type = typename Backend::mutant_type;
  using failure_type = typename Backend::failure_type;
  using corpus_type = corpus<Backend>;

  /// `backend` must outlive the loop.
  loop(Backend& backend, options opt, Policy policy)
      : b_(backend), opt_(std::move(opt)), files_(layout::of<Backend>(opt_.out_dir)), policy_(std::move(policy)) {}
  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;

  /// The round generator (after run() set it up): pool, current seed, policy, coverage.
  [[nodiscard]] generator_type& generation() { return *gen_; }

  /// Runs (or resumes) the campaign. Throws std::runtime_error (or the backend's error type) on
  /// a setup error (unreadable model, operator file errors, an occupied folder); framework
  /// failures during rounds are findings, never exceptions.
  void run(const status_callback& on_status = {}) {
    setup();
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t first = round_;
    auto report = [&] {
      if (!on_status) return;
      status_.round = round_;
      status_.rounds = opt_.rounds;
      const double s = ms_since(t0) / 1000.0;
      status_.rounds_per_s = s > 0 ? static_cast<double>(round_ - first) / s : 0;
      on_status(status_);
    };
    if (round_ == 0) {
      judge_seed();
      write_state();
      report();
    }
    auto out_of_time = [&] {
      return opt_.time_budget.count() > 0 && ms_since(t0) >= static_cast<double>(opt_.time_budget.count());
    };
    while (round_ <= opt_.rounds && !stop_requested()) {
      if (out_of_time()) {
        status_.out_of_time = true;
        break;
      }
      one_round();
      ++round_;
      write_state();
      corpus_->remove_evicted();
      report();
    }
    if (workers_) workers_->shutdown();
    stop_flag() = 0;  // a stop ends this run: a later loop of this process (a resume) runs
  }

  /// Asks the loop to stop after the current round (signal handlers may call it). The request
  /// holds until the run under way (or the next one) returns.
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

  /// Everything that can be refused is refused first, before anything is written: a bad option
  /// (settings.hpp validate), an operator pool with errors, a seed that does not load.
  void setup() {
    validate(opt_, b_.configs());
    if (opt_.resume) restore_settings(opt_);
    // The operator pool and the seed load before the folder is touched: a failure leaves nothing.
    if (opt_.resume) make_generator();
    else check_pool();
    std::optional<model_type> seed;
    if (!opt_.resume) {
      // A backend may need the inputs to read the seed (a scripted forward's control flow is
      // specialised on them).
      if constexpr (requires { b_.load_seed(opt_.seed_model, opt_.inputs_path); })
        seed.emplace(b_.load_seed(opt_.seed_model, opt_.inputs_path));
      else seed.emplace(b_.load(opt_.seed_model));
      inputs_.emplace(b_.seed_inputs(*seed, opt_.seed_model, opt_.inputs_path));
      // A seed whose own execution disagrees with its framework would make every finding ours.
      if constexpr (requires { b_.check_seed(*seed, opt_.seed_model, *inputs_); })
        if (const std::string why = b_.check_seed(*seed, opt_.seed_model, *inputs_); !why.empty())
          throw std::invalid_argument(opt_.seed_model.string() + ": the seed fails its own check: " + why);
    }
    for (const auto& d : files_.folders()) fs::create_directories(d);
    lock_ = folder_lock(files_);
    const bool had_state = fs::exists(files_.state());
    if (had_state && !opt_.resume && !opt_.force)
      throw std::runtime_error(opt_.out_dir.string() +
                               " already holds a campaign: pass --resume to continue it or --force to start over");
    if (opt_.force && !opt_.resume) clear_campaign(files_);
    if (!opt_.resume) {
      // The campaign keeps its own copy of the operator pool: a resume uses the same operators
      // whatever happened to the folders since.
      operators_from_ = opt_.op_dirs;
      opt_.op_dirs = snapshot_operators(files_, opt_.op_dirs);
      make_generator();
    }
    auto opened = store::open(files_.database());
    if (!opened) throw std::runtime_error(files_.database().string() + ": " + opened.error());
    store_.emplace(std::move(*opened));

    for (const auto& [op, rule] : gen_->pool().requirements.nan_rules)
      if (auto r = oracle::parse_nan_rule(rule)) nan_rules_.emplace(op, *r);

    checkpoint state;
    if (opt_.resume) {
      if (!had_state) throw std::runtime_error(opt_.out_dir.string() + ": nothing to resume (no state.json)");
      auto read = read_checkpoint(files_.state());
      if (!read) throw std::runtime_error(read.error());
      state = std::move(*read);
      seed.emplace(b_.load(opt_.out_dir / state.seed));
      inputs_.emplace(b_.load_inputs(files_.inputs()));
    } else {
      b_.save_inputs(*inputs_, files_.inputs());
      b_.save(*seed, files_.current());
      fs::copy_file(files_.current(), opt_.out_dir / files_.corpus_member(0), fs::copy_options::overwrite_existing);
      // Every model the campaign continues from is the import of its saved file and the inputs
      // are those of the inputs file, exactly what a resumed campaign loads (node ids, hence
      // candidate order and keys, are the file's; the inputs' states are the saved ones).
      seed.emplace(b_.load(opt_.out_dir / files_.corpus_member(0)));
      inputs_.emplace(b_.load_inputs(files_.inputs()));
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
    if (!opt_.resume) store_->set_meta("settings", start_settings_json(opt_, operators_from_).dump());
    for (const auto& c : configs_) perf_.reference[c.name] = c.reference;

    // Metrics: the test space is fixed by the requirement files and this build's registry.
    universe_ = generator_type::requirement_universe(opt_.op_dirs, b_);
    space_ = b_.metrics_space(universe_);
    tracker_.emplace(space_);

    corpus_.emplace(files_, corpus_type::rules::of(opt_));
    workers_.emplace(files_.workers_dir(), opt_.worker_exe, worker_environment<Backend>(), opt_.rss_limit_bytes);
    recorder_.emplace(files_, finding_recorder<Backend>::rules::of(opt_), *store_, *workers_, configs_, perf_,
                      nan_rules_);
    workers_->spawn();
    if (!(opt_.resume && resume_calibration(state))) calibrate();
    gen_->profile_and_set_seed(std::move(*seed), *inputs_);
    if (opt_.resume) restore(state);
    else corpus_->admit({files_.corpus_member(0), gen_->current(), gen_->current_profile(), {}});
  }

  /// Throws the pool's diagnostics as one error (before the folder is touched; the generator
  /// loads the campaign's copy of the pool once it exists).
  void check_pool() {
    match::symbol_table symbols;
    (void)generator_type::load_pool(opt_.op_dirs, symbols, b_);
  }

  void make_generator() {
    gen_.emplace(b_, generator_options{opt_.op_dirs, opt_.seed, opt_.features, true}, std::move(*policy_));
    policy_.reset();
  }

  /// Runs the seed `calibration_runs` times under every configuration: the last run's time sets
  /// the per-mutant timeout (max(floor, 10 x seed time), at most the cap); its outcome is round 0's.
  void calibrate() {
    seed_outcome_ =
        workers_->calibrate_on(request(files_.current()), opt_.calibration_runs, opt_.timeout_floor, opt_.timeout_cap);
    store_->set_meta("timeout_ms", std::to_string(workers_->timeout().count()));
    store_->set_meta("calibration_load", std::to_string(workers_->calibration_load()));
    perf_.seed_times = seed_outcome_->reply->config_times();
  }

  /// A resumed campaign past round 0 keeps the timeout it calibrated (within this run's cap) and
  /// the load it was calibrated at, instead of running the seed again: with compiled
  /// configurations a calibration costs minutes, and a fuzz job resumes each campaign once per
  /// slice. False (calibrate) for a campaign stored before its calibration was.
  bool resume_calibration(const checkpoint& state) {
    const auto load = store_->meta("calibration_load");
    const auto ms = state.timeout_ms;
    if (state.round == 0 || ms <= 0 || !load) return false;
    workers_->restore_calibration(std::chrono::milliseconds(ms), std::stod(*load), opt_.timeout_floor,
                                  opt_.timeout_cap);
    return true;
  }

  [[nodiscard]] worker_request request(const fs::path& model_path) const {
    worker_request r;
    r.id = static_cast<std::int64_t>(round_);
    r.model = fs::absolute(model_path).string();
    r.inputs = fs::absolute(files_.inputs()).string();
    r.configs = opt_.configs;
    r.threads = opt_.threads;
    return r;
  }

  // ---- round 0: the seed ---------------------------------------------------------------------

  /// The unmutated seed judged like any mutant: its disagreements (localised) and vanished NaN
  /// are findings, and become the roots its mutants may inherit; its trace is the novelty
  /// baseline.
  void judge_seed() {
    round_record rec;
    rec.round = 0;
    rec.policy = opt_.policy_name;
    rec.model_hash = gen_->seed_hash();
    rec.op = "(seed)";
    rec.site = "the unmutated seed";
    rec.verdict = round_verdict::legal;
    const auto [seed_ms, influence_ms] = gen_->take_seed_times();
    rec.phase_ms["profile"] = seed_ms;
    rec.phase_ms["influence"] = influence_ms;
    const auto t = std::chrono::steady_clock::now();
    const auto& o = *seed_outcome_;
    const auto req = request(files_.current());
    attribution none;
    none.culprit_op = "(seed)";
    const auto& seed_model = gen_->current();
    std::vector<std::string> ids, disagreements;
    if (const auto err = reference_error(*o.reply); !err.empty())
      throw std::runtime_error("the seed fails in its reference configuration: " + first_line(err));
    auto found = findings_of(o, attributor_for(seed_model, req, none), nullptr);
    for (auto& f : nan_findings<Backend>(seed_model, gen_->current_profile(), none, nan_rules_))
      found.push_back(std::move(f));
    for (const auto& f : found) {
      ids.push_back(recorder_->record(f, origin(rec), req, files_.current()));
      corpus_->add_root(f);
      disagreements.push_back(disagreement_class(f.signature));
    }
    if (!ids.empty()) {
      rec.verdict = round_verdict::finding;
      for (const auto& id : ids) rec.reason += (rec.reason.empty() ? "" : ",") + id;
    }
    const auto nov = novelty_.observe_sets(o.reply->labels, o.reply->transition_labels());
    rec.new_labels = static_cast<std::int64_t>(nov.new_labels);
    rec.new_transitions = static_cast<std::int64_t>(nov.new_transitions);
    behaviour_.seed(behaviour_of<Backend>(seed_model, gen_->current_profile(), std::move(disagreements)));
    rec.phase_ms["judge"] = ms_since(t);
    status_.last =
        ids.empty() ? "seed agrees in every configuration" : "seed: " + std::to_string(ids.size()) + " finding(s)";
    finish_round(rec);
    ++round_;
  }

  [[nodiscard]] static finding_origin origin(const round_record& rec) { return {rec.round, rec.op, rec.site}; }

  /// An attributor for findings of `m` (exported as `req.model`), localising in the worker;
  /// culprits are nodes of `m`.
  [[nodiscard]] attributor attributor_for(const model_type& m, const worker_request& req, attribution fallback) {
    if (!opt_.localise) return fixed_attribution(std::move(fallback));
    auto r = req;
    r.id = static_cast<std::int64_t>(round_);
    return localising_attributor<Backend>(
        std::move(r), std::move(fallback), configs_, [this](const worker_request& q) { return workers_->execute(q); },
        &m);
  }

  // ---- one round -----------------------------------------------------------------------------

  void one_round() {
    using clk = std::chrono::steady_clock;
    if (auto note = corpus_->schedule(round_)) {
      const auto& m = corpus_->current();
      gen_->set_seed(m.model, m.profile, *inputs_);
      switched_ = std::move(*note);
    }
    round_record rec;
    rec.round = static_cast<std::int64_t>(round_);
    rec.policy = opt_.policy_name;
    rec.model_hash = gen_->seed_hash();
    if (const auto [seed_ms, influence_ms] = gen_->take_seed_times(); seed_ms + influence_ms > 0) {
      rec.phase_ms["reseed"] = seed_ms;
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
    rec.extra_json = nlohmann::json{{"class", pick.cls}}.dump();
    auto reject = [&](std::string why) {
      rec.verdict = round_verdict::rejected;
      rec.reason = std::move(why);
      status_.last = "rejected " + op.name;
      gen_->reject(pick);
      finish_round(rec);
    };
    if (auto* f = std::get_if<failure_type>(&gen.result)) return reject(f->message);
    const auto& b = gen.bindings;
    auto t = clk::now();
    auto& mu = std::get<mutant_type>(gen.result);
    const auto mutant_path = files_.work_mutant();
    try {
      b_.save(Backend::mutant_model(mu), mutant_path);
    } catch (const std::exception& e) {
      rec.phase_ms["export"] = ms_since(t);
      return reject(std::string("export: ") + e.what());
    }
    rec.phase_ms["export"] = ms_since(t);

    // Execute in the worker (with the metamorphic check when the operator claims to preserve
    // values).
    t = clk::now();
    auto req = request(mutant_path);
    if (op.preserves_values) {
      req.seed_model = fs::absolute(files_.current()).string();
      req.meta_atol = op.atol.value_or(0.0);
      req.meta_rtol = op.rtol.value_or(0.0);
    }
    auto out = workers_->execute(req);
    rec.phase_ms["execute"] = ms_since(t);
    if (out.reply)  // where the worker spent it (execute.load, execute.configs, ...); the rest is IPC
      for (const auto& [k, v] : out.reply->phases) rec.phase_ms["execute." + k] = v;
    ++status_.executed;
    rec.extra_json = nlohmann::json{{"class", pick.cls}, {"elements", pick.elements()}}.dump();

    t = clk::now();
    const attribution at = mutation_attribution<Backend>(mu, b, op, gen_->current());
    double reward = 0;
    if (out.process_failed()) {
      // The framework killed the worker (or we did): a crash-class finding, localised by
      // bisection for crashes.
      const auto loc0 = clk::now();
      const auto found = findings_of(out, attributor_for(Backend::mutant_model(mu), req, at), nullptr);
      rec.phase_ms["localise"] = ms_since(loc0);
      rec.verdict = round_verdict::finding;
      for (const auto& f : found) {
        auto g = f;
        g.message = process_message(f.signature, out, workers_->used_timeout().count()) + "\n" + out.exchange.log;
        rec.reason += (rec.reason.empty() ? "" : ",") + recorder_->record(g, origin(rec), req, mutant_path);
      }
      status_.last =
          std::string(found.empty() ? "crash" : oracle::to_string(found[0].signature.kind)) + " in " + op.name;
      corpus_->record_window(true);
    } else {
      const auto l0 = clk::now();
      auto j = judge_mutant<Backend>(
          out, mu, [&](mutant_type& m) { return gen_->check(m, pick, b); },
          attributor_for(Backend::mutant_model(mu), req, at), at, &perf_, nan_rules_, *corpus_, gen_->current());
      if (out.reply && out.reply->ok) record_not_run(*out.reply, rec);
      reward = settle(std::move(j), out, mu, op, pick, rec, req, l0);
    }
    rec.phase_ms["judge"] = ms_since(t) - accept_ms_ - rec.phase_ms["localise"];
    accept_ms_ = 0;
    gen_->feedback(pick, reward);
    rec.reward = reward;
    finish_round(rec);
  }

  /// Acts on a mutant's judgement: records its findings (new ones get folders and reruns; a
  /// performance anomaly must first stand interleaved timing), pays the reward, and makes a
  /// healthy mutant the next seed. Returns the round's reward (0 unless it was legal).
  /// `localise_start`: when judging began (the round's "localise" phase runs to the last record).
  double settle(judgement j, const run_outcome& out, mutant_type& mu, const match::compiled_operator& op,
                const chosen_candidate& pick, round_record& rec, const worker_request& req,
                std::chrono::steady_clock::time_point localise_start) {
    rec.verdict = j.verdict;
    rec.reason = j.reason;
    if (j.verdict == round_verdict::worker_failure) {
      status_.last = "worker failure";
      return 0;
    }
    if (!j.executed_legal) {  // the reference failed (illegal, or an internal assert: a finding)
      for (const auto& s : j.shown)
        rec.reason += (rec.reason.empty() ? "" : ",") + recorder_->record(s.finding, origin(rec), req, req.model);
      if (j.verdict == round_verdict::illegal) status_.last = "illegal " + op.name;
      corpus_->record_window(false);
      return 0;
    }
    ++status_.legal;
    corpus_->record_window(true);
    const auto& reply = *out.reply;
    const auto& mm = Backend::mutant_model(mu);
    const auto& mp = Backend::mutant_profile(mu);
    std::vector<std::string> ids;
    std::vector<observed_finding> shown;  // localised findings this mutant shows (roots if it is accepted)
    std::size_t inherited = 0;
    std::vector<std::string> disagreements;  // classes of what it showed, new or inherited (the reward's)
    for (const auto& s : j.shown) {
      const auto& f = s.finding;
      disagreements.push_back(disagreement_class(f.signature));
      if (s.root) {
        ++inherited;
        recorder_->record_inherited(*s.root, rec.round, f.message);
        continue;
      }
      auto g = f;
      if (f.signature.kind == oracle::finding_kind::performance && !recorder_->known(f.signature.id())) {
        // One slow run is not a finding: time it again, interleaved with the seed.
        const auto c = recorder_->confirm_performance(f, req);
        if (!c.stands) {
          notes_.push_back("performance anomaly not confirmed by interleaved timing: " + c.message);
          continue;
        }
        g.message = c.message;
      }
      ids.push_back(recorder_->record(g, origin(rec), req, req.model));
      if (g.where.localised && g.where.node != graph::no_node) shown.push_back(g);
    }
    rec.phase_ms["localise"] = ms_since(localise_start);
    status_.inherited += inherited;
    if (!ids.empty()) {
      rec.verdict = round_verdict::finding;
      for (const auto& id : ids) rec.reason += (rec.reason.empty() ? "" : ",") + id;
    } else if (inherited) {
      rec.reason = std::to_string(inherited) + " disagreement(s) inherited from the seed";
    }
    // Reward: novelty of the runtime trace (the reference ran, so the execution completed), and
    // under the behaviour reward what else the round showed the campaign for the first time.
    const auto nov = novelty_.observe_sets(reply.labels, reply.transition_labels());
    double reward = nov.reward;
    rec.new_labels = static_cast<std::int64_t>(nov.new_labels);
    rec.new_transitions = static_cast<std::int64_t>(nov.new_transitions);
    {  // kept under either reward: flowmut compare counts the behaviours every policy reached
      const auto r = behaviour_.observe(pick.c.op, pick.cls, op.preserves_values,
                                        behaviour_of<Backend>(mm, mp, std::move(disagreements)), nov.reward);
      if (opt_.reward != "paper") reward = r.reward;
      put_extra(rec, "behaviour", r.to_json());
    }
    // Metrics over legal test cases.
    tracker_->observe(b_.observe(mm, mp));
    // Accept: a healthy mutant becomes the next seed (its probe is its profile).
    if (const auto why_not = corpus_->why_not_healthy(mm, mp, !ids.empty(), gen_->current(), gen_->current_profile());
        why_not.empty())
      accept(mu, req, reply, rec, shown);
    else notes_.push_back("not accepted: " + why_not);
    if (status_.last.empty() || rec.verdict == round_verdict::legal) status_.last = "legal " + op.name;
    return reward;
  }

  /// Makes the mutant the current seed and a corpus member.
  void accept(mutant_type& mu, const worker_request& req, const worker_reply& reply, round_record& rec,
              const std::vector<observed_finding>& shown) {
    rec.accepted = true;
    // The mutant was exported for the worker already: publish that file, do not export again.
    corpus_->publish_current(req.model);
    perf_.seed_times = reply.config_times();
    // The new seed carries its parent's roots and whatever this mutant showed (--accept any):
    // the same node ids, since the mutant is a rewrite of its parent.
    auto roots = corpus_->empty() ? root_map{} : corpus_->current().roots;
    for (const auto& f : shown) roots.emplace(root_key(f), f.signature);
    // The new seed is the import of the published file, profiled here: what a resumed
    // campaign continues from (its roots move to the new node ids by position).
    const auto file = files_.corpus_member(round_);
    fs::copy_file(files_.current(), opt_.out_dir / file, fs::copy_options::overwrite_existing);
    auto model = b_.load(opt_.out_dir / file);
    roots = corpus_type::roots_from_json(corpus_type::roots_json(roots, Backend::mutant_model(mu)), model);
    gen_->profile_and_set_seed(std::move(model), *inputs_);
    const auto [setup_ms, influence_ms] = gen_->take_seed_times();  // this round pays for the new seed
    rec.phase_ms["reseed"] += setup_ms;
    rec.phase_ms["influence"] += influence_ms;
    accept_ms_ = setup_ms + influence_ms;
    corpus_->admit({file, gen_->current(), gen_->current_profile(), std::move(roots)});
  }

  void finish_round(round_record rec) {
    // A round whose every new finding proved flaky on its reruns (a hang of a busy machine, say)
    // made no claim about the framework: legal, not "finding" (the findings table keeps them,
    // status flaky).
    if (rec.verdict == round_verdict::finding && !rec.reason.empty()) {
      bool claim = false;
      std::istringstream ids(rec.reason);
      for (std::string id; std::getline(ids, id, ',');)
        if (const auto f = store_->finding(id); !f || f->status != "flaky") claim = true;
      if (!claim) {
        rec.verdict = round_verdict::legal;
        rec.reason = "flaky, not a finding: " + rec.reason;
      }
    }
    if (!switched_.empty()) notes_.insert(notes_.begin(), std::exchange(switched_, {}));
    if (!notes_.empty()) put_extra(rec, "notes", std::exchange(notes_, {}));
    status_.findings = recorder_->counts().findings;
    status_.instances = recorder_->counts().instances;
    store_->put_round(rec);
    record_metrics();
  }

  // ---- metrics, checkpoints ------------------------------------------------------------------

  /// Metric checkpoints: after round 0, every metrics_every rounds, and after the last round.
  void record_metrics() {
    if (round_ == 0 || round_ % opt_.metrics_every == 0 || round_ == opt_.rounds)
      store_->put_metrics(static_cast<std::int64_t>(round_), metrics_row());
  }

  /// The metrics row of a checkpoint: the tracker's snapshot and the findings so far.
  [[nodiscard]] std::map<std::string, double> metrics_row() const {
    status_.metrics = tracker_->current();
    auto row = metrics::to_map(status_.metrics);
    row["findings"] = static_cast<double>(status_.findings);
    return row;
  }

  /// state.json (checkpoint.hpp), written after the round's database commit.
  void write_state() {
    checkpoint c;
    std::ostringstream rng_state;
    rng_state << gen_->random();
    c.round = round_;
    c.seed = files_.current_name();
    c.rng = rng_state.str();
    c.novelty = novelty_.to_json();
    c.behaviour = behaviour_.to_json();
    c.metrics = tracker_->to_json();
    c.generator = gen_->state();
    corpus_->checkpoint(c.corpus);
    c.seed_times = perf_.seed_times;
    c.timeout_ms = workers_->timeout().count();
    c.legal = status_.legal;
    c.executed = status_.executed;
    c.rounds = opt_.rounds;
    c.findings = status_.findings;
    write_checkpoint(files_.state(), c);
  }

  void restore(const checkpoint& st) {
    round_ = st.round;
    // Rounds after the checkpoint (a kill between a round's database writes and its
    // checkpoint) are redone: forget what they wrote.
    store_->forget_from(static_cast<std::int64_t>(round_));
    std::istringstream rng_state(st.rng);
    rng_state >> gen_->random();
    novelty_ = trace_novelty::from_json(st.novelty);
    behaviour_ = behaviour_history::from_json(st.behaviour);
    tracker_.emplace(metrics::tracker::from_json(st.metrics, space_));
    perf_.seed_times = st.seed_times;
    status_.legal = st.legal;
    status_.executed = st.executed;
    // The corpus: members re-imported from their files (node ids are new: roots by position).
    corpus_->restore(
        st.corpus, [&](const fs::path& p) { return b_.load(p); },
        [&](const model_type& m) { return b_.profile(m, *inputs_); });
    // current.pt is always a member's copy: continue from it with that member's ids.
    if (!corpus_->empty()) gen_->set_seed(corpus_->current().model, corpus_->current().profile, *inputs_);
    gen_->restore_state(st.generator);
    // The policy and the coverage counts are replayed from the recorded rounds.
    for (const auto& r : store_->rounds()) {
      if (r.round >= static_cast<std::int64_t>(round_)) break;
      if (r.arm < 0 || r.verdict == round_verdict::no_candidate) continue;
      const auto extra = nlohmann::json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
      const std::uint64_t cls =
          !extra.is_discarded() && extra.contains("class") ? extra["class"].get<std::uint64_t>() : 0;
      if (r.verdict == round_verdict::rejected) {
        gen_->replay(select::context{r.context}, static_cast<std::uint32_t>(r.arm), cls, 0.0, {});
        continue;
      }
      std::vector<std::uint64_t> el;
      if (!extra.is_discarded() && extra.contains("elements")) el = extra["elements"].get<std::vector<std::uint64_t>>();
      gen_->replay(select::context{r.context}, static_cast<std::uint32_t>(r.arm), cls, r.reward, el);
    }
    recorder_->restore();
    status_.findings = recorder_->counts().findings;
  }

  Backend& b_;
  options opt_;
  layout files_;
  std::optional<Policy> policy_;  ///< moved into the generator by setup()
  std::optional<store> store_;
  std::optional<generator_type> gen_;
  std::vector<config_desc> configs_;
  std::optional<typename Backend::inputs_type> inputs_;
  std::optional<supervisor> workers_;
  std::optional<finding_recorder<Backend>> recorder_;
  std::optional<corpus_type> corpus_;
  std::optional<run_outcome> seed_outcome_;  ///< the seed's calibration run: round 0
  trace_novelty novelty_;
  behaviour_history behaviour_;
  std::vector<std::string> universe_;
  metrics::test_space space_;
  std::optional<metrics::tracker> tracker_;
  performance_rule perf_;
  oracle::nan_rules nan_rules_;
  std::string switched_;                  ///< the corpus switch of this round, for its notes
  std::vector<std::string> notes_;        ///< what the current round wants on record (extra_json "notes")
  double accept_ms_ = 0;                  ///< time the current round spent re-seeding (excluded from "judge")
  std::vector<fs::path> operators_from_;  ///< the operator folders the snapshot was taken from
  std::size_t round_ = 0;
  folder_lock lock_;  ///< held from setup to the loop's end: another loop of this process may then resume
  mutable status status_;
};

}  // namespace tfg::campaign
