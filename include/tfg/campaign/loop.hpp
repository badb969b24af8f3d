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
/// Output folder: campaign.db (SQLite: rounds, findings, metrics, meta), state.json
/// (checkpoint for --resume), current.pt (the current seed), corpus/ (accepted seeds),
/// inputs.pt, findings/<id>/ (mutant.pt, seed.pt, inputs.pt, meta.json, worker.log),
/// workers/<n>/ (log, current.json).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <ctime>
#include <utility>
#include <deque>
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
#include "tfg/campaign/localise.hpp"
#include "tfg/campaign/machine_load.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/behaviour.hpp"
#include "tfg/campaign/reward.hpp"
#include "tfg/campaign/skeleton.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/graph/align.hpp"
#include "tfg/metrics/metrics.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/oracle/nan_propagation.hpp"
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

/// The settings that make a campaign what it is, as stored at its start (meta "settings"):
/// everything a resumed campaign must reuse to make the same choices. Not in it: rounds, the
/// timeout cap, reruns, the memory limit and threads, which a resume may change.
[[nodiscard]] inline nlohmann::json settings_json(const options& o) {
  return {{"seed", o.seed},
          {"policy_name", o.policy_name},
          {"policy_spec", o.policy_spec},
          {"reward", o.reward},
          {"features", o.features.mask},
          {"configs", o.configs},
          {"accept_any", o.accept_any},
          {"corpus_size", o.corpus_size},
          {"return_every", o.return_every},
          {"min_legal_rate", o.min_legal_rate},
          {"legal_window", o.legal_window},
          {"magnitude_limit", o.magnitude_limit},
          {"max_seed_nodes", o.max_seed_nodes},
          {"localise", o.localise},
          {"metrics_every", o.metrics_every}};
}

/// Overwrites `o`'s campaign-defining settings with the stored ones (a missing key keeps o's).
inline void apply_settings(options& o, const nlohmann::json& s) {
  auto take = [&](const char* key, auto& field) {
    if (s.contains(key)) field = s.at(key).get<std::remove_reference_t<decltype(field)>>();
  };
  take("seed", o.seed);
  take("policy_name", o.policy_name);
  take("policy_spec", o.policy_spec);
  o.reward = s.value("reward", std::string("paper"));  // campaigns before the behaviour reward learnt from the trace
  take("features", o.features.mask);
  take("configs", o.configs);
  take("accept_any", o.accept_any);
  take("corpus_size", o.corpus_size);
  take("return_every", o.return_every);
  take("min_legal_rate", o.min_legal_rate);
  take("legal_window", o.legal_window);
  take("magnitude_limit", o.magnitude_limit);
  take("max_seed_nodes", o.max_seed_nodes);
  take("localise", o.localise);
  take("metrics_every", o.metrics_every);
}

/// The settings the campaign in `dir` started with (settings_json), or why there are none.
/// Reads only: a folder without a campaign is left as it is.
[[nodiscard]] inline tfg::expected<nlohmann::json, std::string> stored_settings(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / "state.json", ec) || !fs::exists(dir / "campaign.db", ec))
    return tfg::unexpected(dir.string() + ": no campaign there (no state.json / campaign.db)");
  auto st = store::open(dir / "campaign.db");
  if (!st) return tfg::unexpected(st.error());
  const auto text = st->meta("settings");
  if (!text) return tfg::unexpected(dir.string() + ": the campaign records no settings (started by an older flowmut)");
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return tfg::unexpected(dir.string() + ": unreadable settings in campaign.db");
  return j;
}

/// One line of progress, for the status display.
struct status {
  std::size_t round = 0, rounds = 0;
  double rounds_per_s = 0;
  std::size_t legal = 0, executed = 0, findings = 0, instances = 0, inherited = 0;
  metrics::snapshot metrics;
  std::string last;  ///< what the round did, one phrase
  bool out_of_time = false;  ///< run() stopped because options::time_budget was spent
};

/// An attributor for findings of the model in `req.model`: differential verdicts are
/// localised (a trace for op-by-op pairs, a bisection of cuts otherwise), crashes are localised
/// by bisection, everything else (metamorphic, performance, hangs, out of memory) is attributed
/// as `fallback` (the mutation). Positions refer to the model as the worker imports the file:
/// its structure comes from the worker (a `describe` request, once, on the first
/// localisation), so this process never imports a file a worker may not survive. When `judged`
/// is given (the in-memory model the file was exported from, whose node ids the campaign
/// tracks), the culprit is mapped onto it by node-kind alignment (graph/align.hpp). `step`
/// sends one request to a worker and replaces it when it dies. `judged` must outlive the result.
template <class Backend>
[[nodiscard]] attributor localising_attributor(worker_request req, attribution fallback, std::vector<config_desc> configs,
                                               step_function step,
                                               const typename Backend::model_type* judged = nullptr) {
  struct lazy {
    bool asked = false;
    std::optional<skeleton> structure;
    std::optional<skeleton_graph> graph;
    std::string why_not;
    std::optional<std::vector<graph::node_id>> to_judged;
  };
  auto cache = std::make_shared<lazy>();
  return [cache, judged, req = std::move(req), fallback = std::move(fallback), configs = std::move(configs),
          step = std::move(step)](const run_outcome& o, const oracle::verdict* v, oracle::finding_kind k) {
    using K = oracle::finding_kind;
    const bool crash = o.process_failed() && o.exchange.kind == outcome::signaled;
    if (!v && !crash) return fallback;
    if (v && (k == K::metamorphic || k == K::performance)) return fallback;
    auto config = [&](std::string_view name) -> const config_desc* {
      for (const auto& c : configs)
        if (c.name == name) return &c;
      return nullptr;
    };
    attribution at = fallback;
    if (!cache->asked) {
      cache->asked = true;
      auto d = req;
      d.op = request_op::describe;
      const auto r = step(d);
      try {
        if (r.reply && r.reply->ok && r.reply->structure) {
          cache->structure = *r.reply->structure;
          cache->graph.emplace(build_graph(*cache->structure));
        } else {
          cache->why_not = "the worker could not describe the model: " +
                           (r.process_failed() ? std::string(to_string(r.exchange.kind))
                                               : r.reply ? r.reply->error : r.reply_error);
        }
      } catch (const std::exception& e) {
        cache->why_not = std::string("the worker's description of the model is malformed: ") + e.what();
      }
    }
    if (!cache->graph) {
      at.note = cache->why_not;
      return at;
    }
    // Random number consumption is compared over the whole run, and the draws need not change
    // any value: cutting the model moves what an optimiser does with its random operators, so a
    // bisection lands on unrelated nodes. The finding names the model's random operators
    // instead, which makes it the same finding on every mutant of the seed.
    if (v && v->kind == oracle::verdict_kind::state_mismatch &&
        v->message.rfind("random number generator consumption differs", 0) == 0) {
      std::set<std::string> random_ops;
      for (const auto& n : cache->structure->nodes)
        for (std::string_view r : {"dropout", "bernoulli", "rand", "normal", "multinomial", "uniform", "exponential",
                                   "cauchy", "geometric", "poisson", "rrelu"})
          if (n.kind.find(r) != std::string::npos) random_ops.insert(n.kind);
      std::string names;
      for (const auto& r : random_ops) names += (names.empty() ? "" : ",") + r;
      at.culprit_op = names.empty() ? "(no random operator)" : names;
      at.localised = false;
      at.whole_model = true;
      at.note = "random number consumption is compared over the whole run: attributed to the model's random "
                "operators, not localised";
      return at;
    }
    const auto& g = *cache->graph;
    localiser<skeleton_graph> loc(
        g, [&](graph::edge_id e) { return g.data(e); }, [&](graph::node_id n) { return g.data(n); });
    worker_request base = req;
    base.seed_model.clear();
    std::vector<graph::edge_id> outs;
    bool op_by_op = false;
    if (v) {
      base.config_a = v->config_a;
      base.config_b = v->config_b;
      base.input = v->input_index == oracle::no_index ? 0 : v->input_index;
      outs = output_edges(g, *cache->structure, v->output_path);
      const auto* ca = config(v->config_a);
      const auto* cb = config(v->config_b);
      op_by_op = ca && cb && ca->op_by_op && cb->op_by_op;
    } else {
      const auto* cb = config(o.running_config);
      if (!cb) return fallback;  // died while loading or comparing: nothing to bisect
      base.config_b = cb->name;
      base.config_a = cb->reference.empty() ? cb->name : cb->reference;
      base.input = 0;
      outs = output_edges(g, *cache->structure, "");
    }
    const auto named = v && v->kind == oracle::verdict_kind::error_in_one ? v->failed_at : std::int64_t{-1};
    const auto l = loc.run(base, outs, op_by_op, crash, step, named);
    at.note = l.note;
    at.runs = l.runs;
    at.conditioned = l.conditioned;
    if (!l.localised) return at;
    at.localised = true;
    at.culprit_op = l.op;
    at.position = l.position;
    at.inputs = l.inputs;
    at.states = l.states;
    at.divergence = l.divergence.message.empty() && v ? v->message : l.divergence.message;
    if (!l.inputs.empty()) at.dtype = l.inputs.substr(0, l.inputs.find(' '));
    at.node = graph::no_node;
    if (judged && l.node != graph::no_node) {
      if (!cache->to_judged)
        cache->to_judged = graph::align_by_kind(
            g, [&](graph::node_id n) { return g.data(n); }, Backend::graph(*judged),
            [&](graph::node_id n) { return std::string(Backend::kind(*judged, n)); });
      at.node = graph::index(l.node) < cache->to_judged->size() ? (*cache->to_judged)[graph::index(l.node)] : graph::no_node;
    }
    return at;
  };
}

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
      checkpoint();
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
      checkpoint();
      remove_evicted();
      report();
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
  /// One accepted seed the campaign can continue from, with the disagreements it carries
  /// (inherited roots: finding-key -> signature).
  struct member {
    fs::path file;  ///< relative to the campaign folder
    model_type model;
    profile_type profile;
    std::map<std::string, oracle::finding_signature> roots;
  };

  static volatile std::sig_atomic_t& stop_flag() {
    static volatile std::sig_atomic_t f = 0;
    return f;
  }

  // ---- setup ---------------------------------------------------------------------------------

  /// Everything that can be refused is refused here, before anything is written: a bad
  /// option, an unknown configuration, an operator pool with errors, a seed that does not load.
  void validate_options() {
    auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
    if (opt_.out_dir.empty()) bad("the campaign folder (--out) is empty");
    std::error_code ec;
    if (fs::exists(opt_.out_dir, ec) && !fs::is_directory(opt_.out_dir, ec))
      bad(opt_.out_dir.string() + " exists and is not a folder");
    if (opt_.resume && !fs::exists(opt_.out_dir / "state.json", ec))
      bad(opt_.out_dir.string() + ": nothing to resume (no campaign there: no state.json)");
    if (!opt_.resume && fs::exists(opt_.out_dir / "state.json", ec) && !opt_.force)
      bad(opt_.out_dir.string() + " already holds a campaign: pass --resume to continue it or --force to start over");
    if (!opt_.resume) {
      if (opt_.seed_model.empty()) bad("a seed model is required (or --resume)");
      if (!fs::is_regular_file(opt_.seed_model, ec)) bad(opt_.seed_model.string() + ": no such file");
    }
    if (opt_.timeout_cap.count() <= 0) bad("the timeout must be positive");
    if (opt_.reward != "behaviour" && opt_.reward != "paper") bad("unknown reward `" + opt_.reward + "` (behaviour, paper)");
    if (opt_.corpus_size == 0) bad("the corpus keeps at least the original seed (--corpus >= 1)");
    if (opt_.rss_limit_bytes < 0) bad("the memory limit must be positive");
    const auto known = b_.configs();
    for (const auto& name : opt_.configs) {
      const auto it = std::find_if(known.begin(), known.end(), [&](const auto& c) { return c.name == name; });
      if (it == known.end()) {
        std::string names;
        for (const auto& c : known) names += (names.empty() ? "" : ", ") + c.name;
        bad("unknown configuration '" + name + "' (known: " + names + ")");
      }
      if (!it->available) bad("configuration '" + name + "' is not available on this machine (flowmut configs)");
    }
  }

  void setup() {
    validate_options();
    if (opt_.resume) restore_settings();
    // The operator pool and the seed load before the folder is touched: a failure leaves nothing.
    if (opt_.resume) make_generator();
    else check_pool();
    std::optional<model_type> seed;
    if (!opt_.resume) {
      // A backend may need the inputs to read the seed (a scripted forward's control flow is
      // specialised on them).
      if constexpr (requires { b_.load_seed(opt_.seed_model, opt_.inputs_path); })
        seed.emplace(b_.load_seed(opt_.seed_model, opt_.inputs_path));
      else
        seed.emplace(b_.load(opt_.seed_model));
      inputs_.emplace(b_.seed_inputs(*seed, opt_.seed_model, opt_.inputs_path));
      // A seed whose own execution disagrees with its framework would make every finding ours.
      if constexpr (requires { b_.check_seed(*seed, opt_.seed_model, *inputs_); })
        if (const std::string why = b_.check_seed(*seed, opt_.seed_model, *inputs_); !why.empty())
          throw std::invalid_argument(opt_.seed_model.string() + ": the seed fails its own check: " + why);
    }
    fs::create_directories(opt_.out_dir / "workers");
    fs::create_directories(opt_.out_dir / "findings");
    fs::create_directories(opt_.out_dir / "work");
    fs::create_directories(opt_.out_dir / "corpus");
    lock_folder();
    const auto db_path = opt_.out_dir / "campaign.db";
    const bool had_state = fs::exists(opt_.out_dir / "state.json");
    if (had_state && !opt_.resume && !opt_.force)
      throw std::runtime_error(opt_.out_dir.string() +
                               " already holds a campaign: pass --resume to continue it or --force to start over");
    if (opt_.force && !opt_.resume) {
      for (const char* f : {"campaign.db", "campaign.db-wal", "campaign.db-shm", "state.json", "current.pt"})
        fs::remove(opt_.out_dir / f);
      for (const char* d : {"findings", "corpus"}) {
        fs::remove_all(opt_.out_dir / d);
        fs::create_directories(opt_.out_dir / d);
      }
    }
    if (!opt_.resume) {
      // The campaign keeps its own copy of the operator pool: a resume uses the same operators
      // whatever happened to the folders since.
      snapshot_operators();
      make_generator();
    }
    auto opened = store::open(db_path);
    if (!opened) throw std::runtime_error(db_path.string() + ": " + opened.error());
    store_.emplace(std::move(*opened));

    for (const auto& [op, rule] : gen_->pool().requirements.nan_rules)
      if (auto r = oracle::parse_nan_rule(rule)) nan_rules_.emplace(op, *r);

    nlohmann::json state;
    if (opt_.resume) {
      if (!had_state) throw std::runtime_error(opt_.out_dir.string() + ": nothing to resume (no state.json)");
      std::ifstream in(opt_.out_dir / "state.json");
      state = nlohmann::json::parse(in);
      seed.emplace(b_.load(opt_.out_dir / state.at("seed").get<std::string>()));
      inputs_.emplace(b_.load_inputs(opt_.out_dir / "inputs.pt"));
    } else {
      b_.save_inputs(*inputs_, opt_.out_dir / "inputs.pt");
      b_.save(*seed, opt_.out_dir / "current.pt");
      fs::copy_file(opt_.out_dir / "current.pt", opt_.out_dir / "corpus" / "0.pt", fs::copy_options::overwrite_existing);
      // Every model the campaign continues from is the import of its saved file and the inputs
      // are those of inputs.pt, exactly what a resumed campaign loads (node ids, hence candidate
      // order and keys, are the file's; the inputs' states are the saved ones).
      seed.emplace(b_.load(opt_.out_dir / "corpus" / "0.pt"));
      inputs_.emplace(b_.load_inputs(opt_.out_dir / "inputs.pt"));
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
    if (!opt_.resume) {
      auto settings = settings_json(opt_);
      nlohmann::json ops = nlohmann::json::array();
      for (const auto& d : opt_.op_dirs) ops.push_back(d.lexically_relative(opt_.out_dir).string());
      settings["operators"] = ops;
      nlohmann::json from = nlohmann::json::array();
      for (const auto& d : operators_from_) from.push_back(fs::absolute(d).lexically_normal().string());
      settings["operators_from"] = from;
      settings["inputs_from"] = opt_.inputs_path.empty() ? std::string() : fs::absolute(opt_.inputs_path).lexically_normal().string();
      store_->set_meta("settings", settings.dump());
    }
    for (const auto& c : configs_) perf_.reference[c.name] = c.reference;

    // Metrics: the test space is fixed by the requirement files and this build's registry.
    universe_ = requirement_universe();
    space_ = b_.metrics_space(universe_);
    tracker_.emplace(space_);

    spawn_worker();
    if (!(opt_.resume && resume_calibration(state))) calibrate();
    gen_->profile_and_set_seed(std::move(*seed), *inputs_);
    if (opt_.resume) restore(state);
    else corpus_.push_back({fs::path("corpus") / "0.pt", gen_->current(), gen_->current_profile(), {}});
  }

  /// Resume: the stored settings replace the given ones and the operator pool is the
  /// campaign's own copy (campaigns started before settings were stored keep the given ones).
  void restore_settings() {
    const auto st = stored_settings(opt_.out_dir);
    if (!st) return;
    const auto& stored = *st;
    const auto policy = stored.value("policy_name", opt_.policy_name);
    if (policy != opt_.policy_name)
      throw std::invalid_argument(opt_.out_dir.string() + " runs policy " + policy + ", not " + opt_.policy_name +
                                  ": a resumed campaign keeps its policy");
    apply_settings(opt_, stored);
    if (stored.contains("operators")) {
      opt_.op_dirs.clear();
      for (const auto& d : stored.at("operators")) opt_.op_dirs.push_back(opt_.out_dir / d.get<std::string>());
    }
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

  /// Copies the operator folders (or files) into DIR/operators/K and points op_dirs there.
  void snapshot_operators() {
    const auto root = opt_.out_dir / "operators";
    fs::remove_all(root);
    std::vector<fs::path> copies;
    operators_from_ = opt_.op_dirs;
    for (std::size_t k = 0; k < opt_.op_dirs.size(); ++k) {
      const auto& src = opt_.op_dirs[k];
      const auto dst = root / std::to_string(k);
      fs::create_directories(dst);
      if (fs::is_directory(src)) {
        fs::copy(src, dst, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
        copies.push_back(dst);
      } else {
        fs::copy_file(src, dst / src.filename(), fs::copy_options::overwrite_existing);
        copies.push_back(dst / src.filename());
      }
    }
    opt_.op_dirs = std::move(copies);
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
    if (worker_) worker_->shutdown();
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
  /// configuration a dead worker was running); a dead worker is replaced.
  /// The timeout follows the load: `timeout` times how much busier the machine is now than at
  /// calibration (tfg/campaign/machine_load.hpp), so other jobs starting later do not make hangs.
  run_outcome execute(const worker_request& req, std::chrono::milliseconds timeout) {
    used_timeout_ = std::chrono::milliseconds(static_cast<std::int64_t>(
        load_scaled(static_cast<double>(timeout.count()), calibration_load_, machine_load_factor())));
    auto ex = worker_->exchange(to_line(req), used_timeout_);
    const bool died = ex.kind != outcome::reply;
    auto o = make_outcome(std::move(ex), died ? running_config() : std::string());
    if (died) spawn_worker();
    return o;
  }

  /// Runs the seed `calibration_runs` times under every configuration: the last run's time sets
  /// the per-mutant timeout (max(floor, 10 x seed time), at most the cap); its outcome is round 0's.
  void calibrate() {
    double ms = 0;
    for (int i = 0; i < std::max(1, opt_.calibration_runs); ++i) {
      auto o = execute(request(opt_.out_dir / "current.pt"), opt_.timeout_cap);
      if (o.process_failed())
        throw std::runtime_error("the seed model fails in the worker (" + std::string(to_string(o.exchange.kind)) +
                                 "): " + o.exchange.log.substr(o.exchange.log.size() > 2000 ? o.exchange.log.size() - 2000 : 0));
      if (!o.reply) throw std::runtime_error("the worker's reply on the seed is unreadable: " + o.reply_error);
      if (!o.reply->ok) throw std::runtime_error("the seed model does not load in the worker: " + o.reply->error);
      ms = o.exchange.wall_ms;
      seed_outcome_ = std::move(o);
    }
    timeout_ = std::clamp(std::chrono::milliseconds(static_cast<std::int64_t>(10 * ms)),
                          std::min(opt_.timeout_floor, opt_.timeout_cap), opt_.timeout_cap);
    calibration_load_ = machine_load_factor();
    store_->set_meta("timeout_ms", std::to_string(timeout_.count()));
    store_->set_meta("calibration_load", std::to_string(calibration_load_));
    perf_.seed_times = seed_outcome_->reply->config_times();
  }

  /// A resumed campaign past round 0 keeps the timeout it calibrated (within this run's cap) and
  /// the load it was calibrated at, instead of running the seed again: with compiled
  /// configurations a calibration costs minutes, and a fuzz job resumes each campaign once per
  /// slice. False (calibrate) for a campaign stored before its calibration was.
  bool resume_calibration(const nlohmann::json& state) {
    const auto load = store_->meta("calibration_load");
    const auto ms = state.value("timeout_ms", std::int64_t{0});
    if (state.value("round", std::size_t{0}) == 0 || ms <= 0 || !load) return false;
    timeout_ = std::clamp(std::chrono::milliseconds(ms), std::min(opt_.timeout_floor, opt_.timeout_cap), opt_.timeout_cap);
    calibration_load_ = std::stod(*load);
    return true;
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

  [[nodiscard]] const config_desc* config(std::string_view name) const {
    for (const auto& c : configs_)
      if (c.name == name) return &c;
    return nullptr;
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
    const auto req = request(opt_.out_dir / "current.pt");
    attribution none;
    none.culprit_op = "(seed)";
    const auto& seed_model = gen_->current();
    std::vector<std::string> ids;
    if (const auto err = reference_error(*o.reply); !err.empty())
      throw std::runtime_error("the seed fails in its reference configuration: " + first_line(err));
    for (const auto& f : findings_of(o, attributor_for(seed_model, req, none), nullptr)) {
      ids.push_back(record_finding(f, rec, req, opt_.out_dir / "current.pt"));
      corpus_root(f);
      seed_disagreements_.push_back(disagreement_class(f.signature));
    }
    for (auto& f : nan_findings(seed_model, gen_->current_profile(), none)) {
      ids.push_back(record_finding(f, rec, req, opt_.out_dir / "current.pt"));
      corpus_root(f);
      seed_disagreements_.push_back(disagreement_class(f.signature));
    }
    if (!ids.empty()) {
      rec.verdict = round_verdict::finding;
      for (const auto& id : ids) rec.reason += (rec.reason.empty() ? "" : ",") + id;
    }
    const auto nov = novelty_.observe_sets(o.reply->labels, o.reply->transition_labels());
    rec.new_labels = static_cast<std::int64_t>(nov.new_labels);
    rec.new_transitions = static_cast<std::int64_t>(nov.new_transitions);
    behaviour_.seed(behaviour_of(seed_model, gen_->current_profile(), seed_disagreements_));
    seed_disagreements_.clear();
    rec.phase_ms["judge"] = ms_since(t);
    status_.last = ids.empty() ? "seed agrees in every configuration" : "seed: " + std::to_string(ids.size()) + " finding(s)";
    finish_round(rec);
    ++round_;
  }

  /// The seed's finding `f` becomes a root of the current corpus member (its mutants inherit
  /// a disagreement localised to the same node).
  void corpus_root(const observed_finding& f) {
    if ((f.where.node == graph::no_node && !f.where.whole_model) || corpus_.empty()) return;
    corpus_[current_].roots.emplace(root_key(f), f.signature);
  }

  [[nodiscard]] static std::string root_key(oracle::finding_kind k, const std::string& a, const std::string& b,
                                            graph::node_id n) {
    return std::string(oracle::to_string(k)) + "|" + a + "|" + b + "|" + std::to_string(graph::index(n));
  }
  /// A finding's root key: by its node, or "…|model" for a whole-model finding.
  [[nodiscard]] static std::string root_key(const observed_finding& f) {
    if (f.where.whole_model)
      return std::string(oracle::to_string(f.signature.kind)) + "|" + f.signature.config_a + "|" + f.signature.config_b +
             "|model";
    return root_key(f.signature.kind, f.signature.config_a, f.signature.config_b, f.where.node);
  }

  // ---- attribution and localisation ----------------------------------------------------------

  /// An attributor for findings of `m` (exported as `req.model`), localising in the worker;
  /// culprits are nodes of `m`.
  [[nodiscard]] attributor attributor_for(const model_type& m, const worker_request& req, attribution fallback) {
    if (!opt_.localise) return fixed_attribution(std::move(fallback));
    auto r = req;
    r.id = static_cast<std::int64_t>(round_);
    return localising_attributor<Backend>(std::move(r), std::move(fallback), configs_,
                                          [this](const worker_request& q) { return execute(q, timeout_); }, &m);
  }

  /// Findings of the NaN-propagation oracle on a profiled model (F(e) only, no execution).
  [[nodiscard]] std::vector<observed_finding> nan_findings(const model_type& m, const profile_type& p,
                                                           const attribution& fallback) const {
    std::vector<observed_finding> out;
    const auto& g = Backend::graph(m);
    const auto found = oracle::nan_vanished(
        g, [&](graph::node_id n) { return std::string(Backend::kind(m, n)); },
        [&](graph::edge_id e) { return Backend::edge_profile(p, e); }, nan_rules_);
    std::vector<std::size_t> pos(g.node_capacity(), 0);
    std::size_t i = 0;
    for (auto n : g.topological_order()) pos[graph::index(n)] = i++;
    for (const auto& v : found) {
      attribution at = fallback;
      at.localised = true;
      at.culprit_op = std::string(Backend::kind(m, v.node));
      at.node = v.node;
      at.position = static_cast<std::int64_t>(pos[graph::index(v.node)]);
      at.inputs.clear();
      for (auto e : g.inputs(v.node))
        if (const auto* ep = Backend::edge_profile(p, e); ep && v.run < ep->runs.size() && ep->runs[v.run].kind == state::value_kind::tensor)
          at.inputs += (at.inputs.empty() ? "" : "; ") + state::class_of(ep->runs[v.run]);
      if (!at.inputs.empty()) at.dtype = at.inputs.substr(0, at.inputs.find(' '));
      at.divergence = v.message;
      out.push_back({signature_of(oracle::finding_kind::nan_vanished, "", "", at), v.message, at});
    }
    return out;
  }

  // ---- one round -----------------------------------------------------------------------------

  void one_round() {
    using clk = std::chrono::steady_clock;
    maybe_switch_seed();
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
    if (auto* f = std::get_if<failure_type>(&gen.result)) {
      rec.verdict = round_verdict::rejected;
      rec.reason = f->message;
      status_.last = "rejected " + op.name;
      gen_->reject(pick);
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
      gen_->reject(pick);
      finish_round(rec);
      return;
    }
    rec.phase_ms["export"] = ms_since(t);

    // Execute in the worker (with the metamorphic check when the operator claims to preserve
    // values).
    t = clk::now();
    auto req = request(mutant_path);
    if (op.preserves_values) {
      req.seed_model = fs::absolute(opt_.out_dir / "current.pt").string();
      req.meta_atol = op.atol.value_or(0.0);
      req.meta_rtol = op.rtol.value_or(0.0);
    }
    auto out = execute(req, timeout_);
    rec.phase_ms["execute"] = ms_since(t);
    if (out.reply)  // where the worker spent it (execute.load, execute.configs, ...); the rest is IPC
      for (const auto& [k, v] : out.reply->phases) rec.phase_ms["execute." + k] = v;
    ++status_.executed;
    rec.extra_json = nlohmann::json{{"class", pick.cls}, {"elements", pick.elements()}}.dump();

    t = clk::now();
    const attribution at = mutation_attribution(mu, b, op);
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
        g.message = process_message(f.signature, out, used_timeout_.count()) + "\n" + out.exchange.log;
        rec.reason += (rec.reason.empty() ? "" : ",") + record_finding(g, rec, req, mutant_path);
      }
      status_.last = std::string(found.empty() ? "crash" : oracle::to_string(found[0].signature.kind)) + " in " + op.name;
      record_window(true);
    } else {
      reward = judge_reply(out, mu, op, pick, b, at, rec, req);
    }
    rec.phase_ms["judge"] = ms_since(t) - accept_ms_ - rec.phase_ms["localise"];
    accept_ms_ = 0;
    gen_->feedback(pick, reward);
    rec.reward = reward;
    finish_round(rec);
  }

  /// The configurations the backend did not run on this mutant because they do not support it
  /// (`config_result::unsupported`: an operator an exporter cannot translate, a type a runtime
  /// lacks), in the round's extra_json "unsupported" {configuration: why}: counted and listed by
  /// flowmut run, never findings.
  static void record_not_run(const worker_reply& reply, round_record& rec) {
    nlohmann::json why = nlohmann::json::object();
    for (const auto& r : reply.results)
      if (r.unsupported) {
        std::string_view e = r.error;
        for (std::string_view prefix : {"skipped: ", "unsupported: "})
          if (e.substr(0, prefix.size()) == prefix) e.remove_prefix(prefix.size());
        why[r.config] = first_line(std::string(e));
      }
    if (why.empty()) return;
    put_extra(rec, "unsupported", std::move(why));
  }

  /// Sets `key` in a round's extra_json object, keeping what it holds.
  static void put_extra(round_record& rec, const char* key, nlohmann::json value) {
    auto j = nlohmann::json::parse(rec.extra_json.empty() ? "{}" : rec.extra_json, nullptr, false);
    if (j.is_discarded()) j = nlohmann::json::object();
    j[key] = std::move(value);
    rec.extra_json = j.dump();
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
    store_->put_round(rec);
    record_metrics();
  }

  /// Metric checkpoints: after round 0, every metrics_every rounds, and after the last round.
  void record_metrics() {
    if (round_ == 0 || round_ % opt_.metrics_every == 0 || round_ == opt_.rounds)
      store_->put_metrics(static_cast<std::int64_t>(round_), metrics_map());
  }

  /// Records whether an executed round was legal, for the legal-rate rule of the corpus.
  void record_window(bool legal) {
    window_.push_back(legal);
    while (window_.size() > opt_.legal_window) window_.pop_front();
  }

  /// Judges a worker's reply to a mutant and returns the round's reward (0 unless it was legal).
  double judge_reply(const run_outcome& out, mutant_type& mu, const match::compiled_operator& op,
                     const chosen_candidate& pick, const match::bindings& b, const attribution& at, round_record& rec,
                     const worker_request& req) {
    if (!out.reply || !out.reply->ok) {
      rec.verdict = round_verdict::worker_failure;
      rec.reason = out.reply ? out.reply->error : out.reply_error;
      status_.last = "worker failure";
      return 0;
    }
    const auto& reply = *out.reply;
    const auto& mm = Backend::mutant_model(mu);
    record_not_run(reply, rec);
    // The reference configuration must run; its failure is a violated precondition (illegal)
    // unless the framework reports an internal assert (a finding).
    if (const auto ref_error = reference_error(reply); !ref_error.empty()) {
      if (is_internal_error(ref_error)) {
        const auto found = findings_of(out, attributor_for(mm, req, at), nullptr);
        rec.verdict = round_verdict::finding;
        for (const auto& f : found) rec.reason += (rec.reason.empty() ? "" : ",") + record_finding(f, rec, req, req.model);
      } else {
        rec.verdict = round_verdict::illegal;
        rec.reason = "reference fails: " + first_line(ref_error);
        status_.last = "illegal " + op.name;
      }
      record_window(false);
      return 0;
    }
    // Legality on the mutant's own state (safe now: the worker ran it op by op).
    if (auto f = gen_->check(mu, pick, b)) {
      rec.verdict = round_verdict::illegal;
      rec.reason = f->message;
      status_.last = "illegal " + op.name;
      record_window(false);
      return 0;
    }
    ++status_.legal;
    record_window(true);
    rec.verdict = round_verdict::legal;
    // Findings: new unless localised to a root the current seed carries.
    std::vector<std::string> ids;
    std::vector<observed_finding> shown;  // localised findings this mutant shows (roots if it is accepted)
    std::size_t inherited = 0;
    std::vector<std::string> disagreements;  // classes of what it showed, new or inherited (the reward's)
    const auto l0 = std::chrono::steady_clock::now();
    auto consider = [&](const observed_finding& f) {
      disagreements.push_back(disagreement_class(f.signature));
      if (auto root = inherited_root(f)) {
        ++inherited;
        (void)store_->add_finding(*root, rec.round, first_line(f.message), (fs::path("findings") / root->id()).string());
        ++status_.instances;
        return;
      }
      auto g = f;
      if (f.signature.kind == oracle::finding_kind::performance && !known_findings_.count(f.signature.id())) {
        // One slow run is not a finding: time it again, interleaved with the seed.
        const auto c = confirm_performance(f, req);
        if (!c.stands) {
          notes_.push_back("performance anomaly not confirmed by interleaved timing: " + c.message);
          return;
        }
        g.message = c.message;
      }
      ids.push_back(record_finding(g, rec, req, req.model));
      if (g.where.localised && g.where.node != graph::no_node) shown.push_back(g);
    };
    for (const auto& f : findings_of(out, attributor_for(mm, req, at), &perf_)) consider(f);
    for (const auto& f : nan_findings(mm, Backend::mutant_profile(mu), at)) consider(f);
    rec.phase_ms["localise"] = ms_since(l0);
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
                                        behaviour_of(mm, Backend::mutant_profile(mu), disagreements), nov.reward);
      if (opt_.reward != "paper") reward = r.reward;
      put_extra(rec, "behaviour", r.to_json());
    }
    // Metrics over legal test cases.
    tracker_->observe(b_.observe(mm, Backend::mutant_profile(mu)));
    // Accept: a healthy mutant becomes the next seed (its probe is its profile).
    std::string why_not;
    if (Backend::graph(mm).node_count() > opt_.max_seed_nodes) why_not = "too large";
    else if (!opt_.accept_any && !ids.empty()) why_not = "it produced a finding";
    else if (!opt_.accept_any && special_outputs(mm, Backend::mutant_profile(mu)) >
                                     special_outputs(gen_->current(), gen_->current_profile()))
      why_not = "its outputs carry NaN/Inf the seed's do not";
    else if (!opt_.accept_any && !corpus_.empty()) {
      // Values far beyond the original's make float32 ill-conditioned: later comparisons would
      // measure rounding, not the framework.
      const double mine = max_magnitude(mm, Backend::mutant_profile(mu));
      const double original = max_magnitude(corpus_[0].model, corpus_[0].profile);
      if (mine > opt_.magnitude_limit * std::max(original, 1.0))
        why_not = "its values reach " + std::to_string(mine) + ", beyond " + std::to_string(opt_.magnitude_limit) +
                  " x the original seed's largest";
    }
    if (why_not.empty()) {
      accept(mu, req, reply, rec, shown);
    } else {
      notes_.push_back("not accepted: " + why_not);
    }
    if (status_.last.empty() || rec.verdict == round_verdict::legal) status_.last = "legal " + op.name;
    return reward;
  }

  /// A disagreement's class for the reward: its kind, the configurations and the operator.
  [[nodiscard]] static std::string disagreement_class(const oracle::finding_signature& s) {
    return std::string(oracle::to_string(s.kind)) + " " + s.config_a + "|" + s.config_b + " " + s.culprit_op;
  }

  /// What a profiled model shows the behaviour reward: the operator kinds it runs and each
  /// node's kind with its tensor inputs' state classes (class_of, plus aliased storage).
  [[nodiscard]] static behaviour_observation behaviour_of(const model_type& m, const profile_type& p,
                                                          std::vector<std::string> disagreements) {
    behaviour_observation o;
    o.disagreements = std::move(disagreements);
    const auto& g = Backend::graph(m);
    std::vector<std::string> classes;
    for (auto n : g.nodes()) {
      const std::string kind(Backend::kind(m, n));
      o.kinds.push_back(kind);
      classes.clear();
      for (auto e : g.inputs(n))
        if (const auto* ep = Backend::edge_profile(p, e); ep && !ep->runs.empty() &&
                                                          ep->runs[0].kind == state::value_kind::tensor)
          classes.push_back(state::class_of(ep->runs[0]) + (ep->runs[0].aliased() ? " aliased" : ""));
      o.input_classes.push_back(input_class_key(kind, classes));
    }
    return o;
  }

  /// The largest finite |value| of any floating tensor edge of a profiled model.
  [[nodiscard]] static double max_magnitude(const model_type& m, const profile_type& p) {
    double x = 0;
    for (auto e : Backend::graph(m).edges())
      if (const auto* ep = Backend::edge_profile(p, e))
        for (const auto& s : ep->runs)
          if (s.kind == state::value_kind::tensor && state::is_floating(s.type) && s.numel > 0 && s.numbers.max == s.numbers.max)
            x = std::max(x, s.numbers.max_abs());
    return x;
  }

  /// NaN and Inf elements over the graph outputs of a profiled model.
  [[nodiscard]] static std::uint64_t special_outputs(const model_type& m, const profile_type& p) {
    std::uint64_t n = 0;
    for (auto e : Backend::graph(m).graph_outputs())
      if (const auto* ep = Backend::edge_profile(p, e))
        for (const auto& s : ep->runs) n += s.numbers.nan_count + s.numbers.inf_count;
    return n;
  }

  /// The root of the current seed a finding is inherited from: the same kind and pair,
  /// localised to the same original node.
  [[nodiscard]] std::optional<oracle::finding_signature> inherited_root(const observed_finding& f) const {
    if (f.where.whole_model && !corpus_.empty()) {  // the same whole-run property of the seed
      const auto& roots = corpus_[current_].roots;
      const auto it = roots.find(root_key(f));
      if (it == roots.end() || it->second.culprit_op != f.signature.culprit_op) return std::nullopt;
      return it->second;
    }
    if (!f.where.localised || f.where.node == graph::no_node || corpus_.empty()) return std::nullopt;
    const auto& roots = corpus_[current_].roots;
    const auto it = roots.find(root_key(f.signature.kind, f.signature.config_a, f.signature.config_b, f.where.node));
    if (it == roots.end()) return std::nullopt;
    // The node must be the seed's own (same kind): a node the mutation added has a new id.
    const auto& seed_graph = Backend::graph(gen_->current());
    if (graph::index(f.where.node) >= seed_graph.node_capacity() || !seed_graph.alive(f.where.node) ||
        std::string(Backend::kind(gen_->current(), f.where.node)) != f.where.culprit_op)
      return std::nullopt;
    return it->second;
  }

  /// Makes the mutant the current seed and a corpus member.
  void accept(mutant_type& mu, const worker_request& req, const worker_reply& reply, round_record& rec,
              const std::vector<observed_finding>& shown) {
    rec.accepted = true;
    // The mutant was exported for the worker already: publish that file, do not export again.
    fs::copy_file(req.model, opt_.out_dir / "current.pt.tmp", fs::copy_options::overwrite_existing);
    fs::rename(opt_.out_dir / "current.pt.tmp", opt_.out_dir / "current.pt");
    perf_.seed_times = reply.config_times();
    // The new seed carries its parent's roots and whatever this mutant showed (--accept any):
    // the same node ids, since the mutant is a rewrite of its parent.
    auto roots = corpus_.empty() ? std::map<std::string, oracle::finding_signature>{} : corpus_[current_].roots;
    for (const auto& f : shown) roots.emplace(root_key(f), f.signature);
    // The new seed is the import of the published file, profiled here: what a resumed
    // campaign continues from (its roots move to the new node ids by position).
    const auto file = fs::path("corpus") / (std::to_string(round_) + ".pt");
    fs::copy_file(opt_.out_dir / "current.pt", opt_.out_dir / file, fs::copy_options::overwrite_existing);
    auto model = b_.load(opt_.out_dir / file);
    roots = roots_from_json(roots_json(roots, Backend::mutant_model(mu)), model);
    gen_->profile_and_set_seed(std::move(model), *inputs_);
    const auto [setup_ms, influence_ms] = gen_->take_seed_times();  // this round pays for the new seed
    rec.phase_ms["reseed"] += setup_ms;
    rec.phase_ms["influence"] += influence_ms;
    accept_ms_ = setup_ms + influence_ms;
    // The corpus: replace the oldest member but the original when full (its file is removed
    // after the round's checkpoint, which no longer names it).
    member m{file, gen_->current(), gen_->current_profile(), std::move(roots)};
    if (corpus_.size() < std::max<std::size_t>(opt_.corpus_size, 2)) {
      corpus_.push_back(std::move(m));
      current_ = corpus_.size() - 1;
    } else {
      const std::size_t victim = corpus_.size() > 1 ? 1 : 0;
      if (victim != 0) {
        evicted_.push_back(corpus_[victim].file);
        corpus_.erase(corpus_.begin() + static_cast<std::ptrdiff_t>(victim));
      }
      corpus_.push_back(std::move(m));
      current_ = corpus_.size() - 1;
    }
  }

  /// The corpus schedule: every `return_every` rounds the next member (round robin), and back
  /// to the original when the legal rate of the last `legal_window` executed rounds drops
  /// below `min_legal_rate`.
  void maybe_switch_seed() {
    if (corpus_.size() < 2 && current_ == 0) return;
    std::optional<std::size_t> to;
    std::string why;
    if (window_.size() >= opt_.legal_window && opt_.legal_window > 0) {
      const auto legal = static_cast<double>(std::count(window_.begin(), window_.end(), true));
      if (legal / static_cast<double>(window_.size()) < opt_.min_legal_rate && current_ != 0) {
        to = 0;
        why = "legal rate " + std::to_string(static_cast<int>(100 * legal / static_cast<double>(window_.size()))) + "%";
      }
    }
    if (!to && opt_.return_every > 0 && round_ > 1 && (round_ - 1) % opt_.return_every == 0 && corpus_.size() > 1) {
      to = (current_ + 1) % corpus_.size();
      why = "schedule";
    }
    if (!to || *to == current_) return;
    current_ = *to;
    window_.clear();
    const auto& m = corpus_[current_];
    fs::copy_file(opt_.out_dir / m.file, opt_.out_dir / "current.pt.tmp", fs::copy_options::overwrite_existing);
    fs::rename(opt_.out_dir / "current.pt.tmp", opt_.out_dir / "current.pt");
    gen_->set_seed(m.model, m.profile, *inputs_);
    switched_ = "continued from corpus member " + m.file.string() + " (" + why + ")";
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

  /// The mutation's attribution (when a finding is not localised): the first non-prim kind the
  /// mutation added, else the kind that produces the anchor.
  [[nodiscard]] attribution mutation_attribution(mutant_type& mu, const match::bindings& b,
                                                 const match::compiled_operator& op) const {
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
  /// atomically), then its database row (the commit is the report), then reliability reruns
  /// in fresh workers. Returns the signature id.
  std::string record_finding(const observed_finding& f, const round_record& rec, const worker_request& req,
                             const fs::path& model_file) {
    const auto& sig = f.signature;
    const auto id = sig.id();
    const bool known = known_findings_.count(id) > 0;
    const auto rel_dir = fs::path("findings") / id;
    if (!known) {
      const auto staging = opt_.out_dir / "work" / ("staging-" + id);
      fs::remove_all(staging);
      fs::create_directories(staging);
      fs::copy_file(model_file, staging / "mutant.pt", fs::copy_options::overwrite_existing);
      fs::copy_file(opt_.out_dir / "inputs.pt", staging / "inputs.pt", fs::copy_options::overwrite_existing);
      // The seed the mutant was made from (the metamorphic oracle's reference; reduction's start).
      fs::copy_file(opt_.out_dir / "current.pt", staging / "seed.pt", fs::copy_options::overwrite_existing);
      const auto& w = f.where;
      nlohmann::json loc = {{"localised", w.localised},     {"operator", w.culprit_op}, {"position", w.position},
                            {"inputs", w.inputs},           {"input_states", w.states}, {"divergence", w.divergence},
                            {"configuration_runs", w.runs}, {"note", w.note}};
      nlohmann::json meta = {{"id", id},
                             {"title", sig.title()},
                             {"key", sig.key()},
                             {"kind", std::string(oracle::to_string(sig.kind))},
                             {"config_a", sig.config_a},
                             {"config_b", sig.config_b},
                             {"round", rec.round},
                             {"operator", rec.op},
                             {"site", rec.site},
                             {"configs", opt_.configs},
                             {"message", f.message},
                             {"culprit_op", sig.culprit_op},
                             {"inputs", sig.inputs},
                             {"dtype", sig.dtype},
                             {"device", sig.device},
                             {"localisation", loc},
                             {"timeout_ms", timeout_.count()},
                             {"seed_times", perf_.seed_times},
                             {"seed_model", store_->meta("seed_model").value_or("")},
                             {"metamorphic", {{"atol", req.meta_atol}, {"rtol", req.meta_rtol}}},
                             {"repro", "flowmut repro " + (opt_.out_dir / rel_dir).string()}};
      write_file_atomic(staging / "meta.json", meta.dump(2));
      std::ofstream(staging / "worker.log") << f.message;
      publish_directory_atomic(staging, opt_.out_dir / rel_dir);
    }
    const bool fresh = store_->add_finding(sig, rec.round, first_line(f.message), rel_dir.string());
    ++status_.instances;
    if (fresh || unjudged_.erase(id) > 0) {
      if (fresh) ++status_.findings;
      known_findings_.insert(id);
      const double reliability = rerun(f, req, rel_dir);
      // Timing is noisy on a shared machine: a performance anomaly must reproduce every time.
      const double needed = sig.kind == oracle::finding_kind::performance ? 1.0 : 0.15;
      store_->set_finding_status(id, reliability, reliability >= needed ? "reproduced" : "flaky");
    }
    return id;
  }

  /// Times the seed (current.pt, the mutant's parent) and the mutant alternately, `perf_trials`
  /// times each, in one fresh worker running only the pair's two configurations, and judges the
  /// anomaly on those timings (confirm_slow): a one-off, a load spike or a seed that is as slow
  /// when timed the same way does not stand.
  performance_confirmation confirm_performance(const observed_finding& f, const worker_request& req) {
    const auto& sig = f.signature;
    auto m = req;
    m.configs = {sig.config_a, sig.config_b};
    m.labels = false;
    auto s = m;
    s.model = fs::absolute(opt_.out_dir / "current.pt").string();
    std::vector<pair_timing> seed, mutant;
    spawn_worker();
    for (int i = 0; i < std::max(opt_.perf_trials, 1); ++i)
      for (const auto* q : {&s, &m}) {
        const auto o = execute(*q, timeout_);
        if (!o.reply || !o.reply->ok) continue;
        const auto t = o.reply->config_times();
        const auto ta = t.find(sig.config_a), tb = t.find(sig.config_b);
        if (ta == t.end() || tb == t.end()) continue;
        (q == &s ? seed : mutant).push_back({ta->second, tb->second});
      }
    spawn_worker();
    return confirm_slow(sig.config_a, sig.config_b, seed, mutant, perf_);
  }

  /// Reruns a new finding `reruns` times (hangs and out-of-memory once, at twice the timeout),
  /// each time in a fresh worker, on the copy in its finding folder, and returns the share of
  /// runs that show the same signature (differential findings localised again).
  double rerun(const observed_finding& f, const worker_request& req, const fs::path& rel_dir) {
    if (opt_.reruns <= 0) return 1.0;
    using K = oracle::finding_kind;
    const auto& sig = f.signature;
    auto r = req;
    r.model = fs::absolute(opt_.out_dir / rel_dir / "mutant.pt").string();
    if (!r.seed_model.empty()) r.seed_model = fs::absolute(opt_.out_dir / rel_dir / "seed.pt").string();
    // A performance finding was confirmed by perf_trials interleaved timings before it was recorded.
    if (sig.kind == K::performance) return 1.0;
    const int runs = (sig.kind == K::hang || sig.kind == K::out_of_memory) ? 1 : opt_.reruns;
    int same = 0;
    for (int i = 0; i < runs; ++i) {
      spawn_worker();  // a fresh process: no state of earlier requests
      const auto timeout = sig.kind == K::hang ? 2 * timeout_ : timeout_;
      if (sig.kind == K::nan_vanished) {
        auto q = r;
        q.op = request_op::nan_check;
        for (const auto& [op, rule] : nan_rules_) q.nan_rules.emplace(op, std::string(oracle::to_string(rule)));
        const auto o = execute(q, timeout);
        if (o.reply && o.reply->ok)
          for (const auto& l : o.reply->found)
            if (l.op == sig.culprit_op && l.inputs == sig.inputs) {
              ++same;
              break;
            }
        continue;
      }
      const auto o = execute(r, timeout);
      // Process-level findings keep their attribution (a crash is not bisected again);
      // differential ones are localised again on this run.
      const attributor at = o.process_failed() || !opt_.localise
                                ? fixed_attribution(f.where)
                                : localising_attributor<Backend>(r, f.where, configs_,
                                                                 [this](const worker_request& q) { return execute(q, timeout_); });
      if (reproduces(sig, o, at, &perf_)) ++same;
    }
    spawn_worker();
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

  /// Roots (keyed by node ids of `model`) as (kind, a, b, topological position, node kind)
  /// records, for state.json and for moving them to a re-import of the model.
  [[nodiscard]] static nlohmann::json roots_json(const std::map<std::string, oracle::finding_signature>& roots,
                                                 const model_type& model) {
    const auto& g = Backend::graph(model);
    std::vector<std::size_t> pos(g.node_capacity(), 0);
    std::vector<std::string> kinds(g.node_capacity());
    std::size_t i = 0;
    for (auto n : g.topological_order()) {
      pos[graph::index(n)] = i++;
      kinds[graph::index(n)] = std::string(Backend::kind(model, n));
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [key, sig] : roots) {
      const auto bar = key.rfind('|');
      nlohmann::json rec = {{"prefix", key.substr(0, bar + 1)},
                            {"kind", std::string(oracle::to_string(sig.kind))}, {"a", sig.config_a}, {"b", sig.config_b},
                            {"op", sig.culprit_op}, {"dtype", sig.dtype}, {"device", sig.device}, {"detail", sig.detail},
                            {"symptom", sig.symptom}, {"inputs", sig.inputs}};
      if (key.compare(bar + 1, std::string::npos, "model") == 0) {
        rec["whole_model"] = true;
      } else {
        const auto node = static_cast<std::size_t>(std::stoull(key.substr(bar + 1)));
        if (node >= pos.size()) continue;
        rec["position"] = pos[node];
        rec["node_kind"] = kinds[node];
      }
      out.push_back(std::move(rec));
    }
    return out;
  }

  /// Roots from roots_json() records, keyed by node ids of `model` (a record whose position
  /// holds another kind of node in `model` is dropped).
  [[nodiscard]] static std::map<std::string, oracle::finding_signature> roots_from_json(const nlohmann::json& records,
                                                                                     const model_type& model) {
    std::map<std::string, oracle::finding_signature> roots;
    const auto& g = Backend::graph(model);
    std::vector<graph::node_id> by_pos(g.topological_order().begin(), g.topological_order().end());
    for (const auto& r : records) {
      const bool whole = r.value("whole_model", false);
      const auto p = whole ? 0 : r.at("position").get<std::size_t>();
      if (!whole && p >= by_pos.size()) continue;
      if (!whole && r.contains("node_kind") && r.at("node_kind").get<std::string>() != Backend::kind(model, by_pos[p]))
        continue;
      oracle::finding_signature sig;
      sig.kind = oracle::parse_finding_kind(r.at("kind").get<std::string>()).value_or(oracle::finding_kind::numeric);
      sig.config_a = r.value("a", "");
      sig.config_b = r.value("b", "");
      sig.culprit_op = r.value("op", "");
      sig.dtype = r.value("dtype", "");
      sig.device = r.value("device", "");
      sig.detail = r.value("detail", "");
      sig.symptom = r.value("symptom", "");
      sig.inputs = r.value("inputs", "");
      roots.emplace(r.at("prefix").get<std::string>() + (whole ? std::string("model") : std::to_string(graph::index(by_pos[p]))),
                    sig);
    }
    return roots;
  }

  /// Removes the files of corpus members evicted this round (after the checkpoint that no
  /// longer names them: a kill in between leaves a stray file, never a missing one).
  void remove_evicted() {
    std::error_code ec;
    for (const auto& f : evicted_) fs::remove(opt_.out_dir / f, ec);
    evicted_.clear();
  }

  /// state.json: what a resumed campaign needs beyond the database (written after the round's
  /// database commit; a kill between the two redoes that round).
  void checkpoint() {
    std::ostringstream rng_state;
    rng_state << gen_->random();
    nlohmann::json corpus = nlohmann::json::array();
    for (const auto& m : corpus_) corpus.push_back({{"file", m.file.string()}, {"roots", roots_json(m.roots, m.model)}});
    nlohmann::json st = {{"round", round_},
                         {"seed", "current.pt"},
                         {"rng", rng_state.str()},
                         {"novelty", novelty_.to_json()},
                         {"behaviour", behaviour_.to_json()},
                         {"metrics", tracker_->to_json()},
                         {"seed_times", perf_.seed_times},
                         {"timeout_ms", timeout_.count()},
                         {"legal", status_.legal},
                         {"executed", status_.executed},
                         {"rounds", opt_.rounds},
                         {"findings", status_.findings},  // for watchers (flowmut fuzz); not restored
                         {"corpus", corpus},
                         {"current", current_},
                         {"generator", gen_->state()},
                         {"window", std::vector<bool>(window_.begin(), window_.end())}};
    write_file_atomic(opt_.out_dir / "state.json", st.dump());
  }

  void restore(const nlohmann::json& st) {
    round_ = st.at("round").get<std::size_t>();
    // Rounds after the checkpoint (a kill between a round's database writes and its
    // checkpoint) are redone: forget what they wrote.
    store_->forget_from(static_cast<std::int64_t>(round_));
    std::istringstream rng_state(st.at("rng").get<std::string>());
    rng_state >> gen_->random();
    novelty_ = trace_novelty::from_json(st.at("novelty"));
    behaviour_ = behaviour_history::from_json(st.value("behaviour", nlohmann::json::object()));
    tracker_.emplace(metrics::tracker::from_json(st.at("metrics"), space_));
    perf_.seed_times = st.value("seed_times", std::map<std::string, double>{});
    status_.legal = st.value("legal", std::size_t{0});
    status_.executed = st.value("executed", std::size_t{0});
    for (bool w : st.value("window", std::vector<bool>{})) window_.push_back(w);
    // The corpus: members re-imported from their files (node ids are new: roots by position).
    for (const auto& c : st.value("corpus", nlohmann::json::array())) {
      member m{c.at("file").get<std::string>(), {}, {}, {}};
      m.model = b_.load(opt_.out_dir / m.file);
      m.profile = b_.profile(m.model, *inputs_);
      m.roots = roots_from_json(c.value("roots", nlohmann::json::array()), m.model);
      corpus_.push_back(std::move(m));
    }
    current_ = std::min<std::size_t>(st.value("current", std::size_t{0}), corpus_.empty() ? 0 : corpus_.size() - 1);
    if (!corpus_.empty()) {
      // current.pt is the current member's file or an accepted mutant not yet... it is always a
      // member's copy: continue from it with that member's ids.
      gen_->set_seed(corpus_[current_].model, corpus_[current_].profile, *inputs_);
    }
    gen_->restore_state(st.value("generator", nlohmann::json::object()));
    // The policy and the coverage counts are replayed from the recorded rounds.
    for (const auto& r : store_->rounds()) {
      if (r.round >= static_cast<std::int64_t>(round_)) break;
      if (r.arm < 0 || r.verdict == round_verdict::no_candidate) continue;
      const auto extra = nlohmann::json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
      const std::uint64_t cls = !extra.is_discarded() && extra.contains("class") ? extra["class"].get<std::uint64_t>() : 0;
      if (r.verdict == round_verdict::rejected) {
        gen_->replay(select::context{r.context}, static_cast<std::uint32_t>(r.arm), cls, 0.0, {});
        continue;
      }
      std::vector<std::uint64_t> el;
      if (!extra.is_discarded() && extra.contains("elements")) el = extra["elements"].get<std::vector<std::uint64_t>>();
      gen_->replay(select::context{r.context}, static_cast<std::uint32_t>(r.arm), cls, r.reward, el);
    }
    for (const auto& f : store_->findings()) {
      known_findings_.insert(f.id);
      if (f.reliability < 0) unjudged_.insert(f.id);  // killed before its reruns: rerun when seen again
    }
    status_.findings = known_findings_.size();
  }

  Backend& b_;
  options opt_;
  std::optional<Policy> policy_;  ///< moved into the generator by setup()
  std::optional<store> store_;
  std::optional<generator_type> gen_;
  std::vector<config_desc> configs_;
  std::optional<typename Backend::inputs_type> inputs_;
  std::optional<run_outcome> seed_outcome_;  ///< the seed's calibration run: round 0
  trace_novelty novelty_;
  behaviour_history behaviour_;
  std::vector<std::string> seed_disagreements_;  ///< round 0's, for behaviour_.seed
  std::vector<std::string> universe_;
  metrics::test_space space_;
  std::optional<metrics::tracker> tracker_;
  std::optional<worker> worker_;
  fs::path worker_dir_;
  std::size_t worker_serial_ = 0;
  std::chrono::milliseconds timeout_{10000};
  double calibration_load_ = 1;                  ///< the machine's load factor when timeout_ was calibrated
  std::chrono::milliseconds used_timeout_{0};    ///< the last exchange's timeout, scaled by the load
  performance_rule perf_;
  oracle::nan_rules nan_rules_;
  std::vector<member> corpus_;
  std::size_t current_ = 0;
  std::deque<bool> window_;
  std::string switched_;             ///< the corpus switch of this round, for its notes
  std::vector<std::string> notes_;   ///< what the current round wants on record (extra_json "notes")
  double accept_ms_ = 0;  ///< time the current round spent re-seeding (excluded from "judge")
  std::set<std::string> known_findings_;
  std::vector<fs::path> operators_from_;  ///< the operator folders the snapshot was taken from
  std::vector<fs::path> evicted_;  ///< corpus files to remove after this round's checkpoint
  std::set<std::string> unjudged_;  ///< resumed: findings stored without reliability reruns
  std::size_t round_ = 0;
  int lock_fd_ = -1;
  mutable status status_;
};

}  // namespace tfg::campaign
