#pragma once
/// \file
/// The findings of a campaign as they are recorded (docs/campaign.md, "Findings"): a new
/// signature gets its folder first (findings/<id>/, published atomically: the mutant, the seed
/// it was made from, the inputs, meta.json, worker.log), then its database row (the commit is
/// the report), then its reliability reruns in fresh workers; a performance anomaly is first
/// confirmed by interleaved timings of the seed and the mutant.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/signature_json.hpp"
#include "tfg/campaign/attribute.hpp"
#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/campaign/round_judge.hpp"
#include "tfg/campaign/settings.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/campaign/supervisor.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/oracle/nan_propagation.hpp"
#include "tfg/util/atomic_file.hpp"

namespace tfg::campaign {

/// What a finding's folder says about where it came from (meta.json).
struct finding_origin {
  std::int64_t round = 0;
  std::string op;    ///< the mutation operator ("(seed)" for round 0)
  std::string site;  ///< where it applied
};

/// Counts of recorded findings (the campaign's status line).
struct finding_counts {
  std::size_t findings = 0;   ///< distinct
  std::size_t instances = 0;  ///< every occurrence, inherited ones included
};

template <class Backend>
class finding_recorder {
 public:
  /// How findings are confirmed.
  struct rules {
    int reruns = 2;                    ///< reliability reruns of each new finding, each in a fresh worker
    int perf_trials = 5;               ///< interleaved seed/mutant timings that confirm a performance anomaly
    bool localise = true;              ///< differential findings are localised again on each rerun
    std::vector<std::string> configs;  ///< the campaign's configurations (meta.json)

    /// The rules a campaign's options give (after its configurations are settled).
    [[nodiscard]] static rules of(const options& o) { return {o.reruns, o.perf_trials, o.localise, o.configs}; }
  };

  /// `db`, `workers`, `perf` and `nan` must outlive the recorder.
  finding_recorder(layout files, rules r, store& db, supervisor& workers, std::vector<config_desc> configs,
                   performance_rule& perf, const oracle::nan_rules& nan)
      : files_(std::move(files)),
        rules_(std::move(r)),
        db_(db),
        workers_(workers),
        configs_(std::move(configs)),
        perf_(perf),
        nan_(nan) {}

  /// Stores one instance of a finding shown by `model_file` (run as `req`), made from the
  /// current seed. Returns the signature id.
  std::string record(const observed_finding& f, const finding_origin& origin, const worker_request& req,
                     const std::filesystem::path& model_file) {
    const auto& sig = f.signature;
    const auto id = sig.id();
    const auto rel_dir = layout::finding_rel(id);
    if (!known_.count(id)) write_folder(f, origin, req, model_file, id);
    const bool fresh = db_.add_finding(sig, origin.round, first_line(f.message), rel_dir.string());
    ++counts_.instances;
    if (fresh || unjudged_.erase(id) > 0) {
      if (fresh) ++counts_.findings;
      known_.insert(id);
      const double reliability = rerun(f, req, files_.finding(id));
      // Timing is noisy on a shared machine: a performance anomaly must reproduce every time.
      const double needed = sig.kind == oracle::finding_kind::performance ? 1.0 : 0.15;
      db_.set_finding_status(id, reliability, reliability >= needed ? "reproduced" : "flaky");
    }
    return id;
  }

  /// One more instance of an inherited finding (the root's), shown in `round`.
  void record_inherited(const oracle::finding_signature& root, std::int64_t round, const std::string& message) {
    (void)db_.add_finding(root, round, first_line(message), layout::finding_rel(root.id()).string());
    ++counts_.instances;
  }

  /// True when the signature `id` was recorded before (this run or, resumed, an earlier one).
  [[nodiscard]] bool known(const std::string& id) const { return known_.count(id) > 0; }

  /// Times the seed (the current seed's file, the mutant's parent) and the mutant alternately,
  /// `perf_trials` times each, in one fresh worker running only the pair's two configurations,
  /// and judges the anomaly on those timings (confirm_slow): a one-off, a load spike or a seed
  /// that is as slow when timed the same way does not stand.
  performance_confirmation confirm_performance(const observed_finding& f, const worker_request& req) {
    const auto& sig = f.signature;
    auto m = req;
    m.configs = {sig.config_a, sig.config_b};
    m.labels = false;
    auto s = m;
    s.model = std::filesystem::absolute(files_.current()).string();
    std::vector<pair_timing> seed, mutant;
    workers_.spawn();
    for (int i = 0; i < std::max(rules_.perf_trials, 1); ++i)
      for (const auto* q : {&s, &m}) {
        const auto o = workers_.execute(*q);
        if (!o.reply || !o.reply->ok) continue;
        const auto t = o.reply->config_times();
        const auto ta = t.find(sig.config_a), tb = t.find(sig.config_b);
        if (ta == t.end() || tb == t.end()) continue;
        (q == &s ? seed : mutant).push_back({ta->second, tb->second});
      }
    workers_.spawn();
    return confirm_slow(sig.config_a, sig.config_b, seed, mutant, perf_);
  }

  /// Resume: the findings stored so far are known; those stored without reliability reruns
  /// (killed before them) are rerun when seen again.
  void restore() {
    for (const auto& f : db_.findings()) {
      known_.insert(f.id);
      if (f.reliability < 0) unjudged_.insert(f.id);
    }
    counts_.findings = known_.size();
  }

  [[nodiscard]] const finding_counts& counts() const noexcept { return counts_; }

 private:
  void write_folder(const observed_finding& f, const finding_origin& origin, const worker_request& req,
                    const std::filesystem::path& model_file, const std::string& id) {
    namespace fs = std::filesystem;
    const auto& sig = f.signature;
    const auto staging_dir = files_.staging(id);
    const finding_layout staged(staging_dir, files_.model_extension());
    fs::remove_all(staging_dir);
    fs::create_directories(staging_dir);
    fs::copy_file(model_file, staged.mutant(), fs::copy_options::overwrite_existing);
    fs::copy_file(files_.inputs(), staged.inputs(), fs::copy_options::overwrite_existing);
    // The seed the mutant was made from (the metamorphic oracle's reference; reduction's start).
    fs::copy_file(files_.current(), staged.seed(), fs::copy_options::overwrite_existing);
    const auto& w = f.where;
    nlohmann::json loc = {
        {"localised", w.localised}, {"operator", w.culprit_op},   {"position", w.position},       {"inputs", w.inputs},
        {"input_states", w.states}, {"divergence", w.divergence}, {"configuration_runs", w.runs}, {"note", w.note}};
    nlohmann::json meta = sig;  // kind, configurations, culprit, dtype, device, inputs (signature_json.hpp)
    meta.update({{"id", id},
                 {"title", sig.title()},
                 {"key", sig.key()},
                 {"round", origin.round},
                 {"operator", origin.op},
                 {"site", origin.site},
                 {"configs", rules_.configs},
                 {"message", f.message},
                 {"localisation", loc},
                 {"timeout_ms", workers_.timeout().count()},
                 {"seed_times", perf_.seed_times},
                 {"seed_model", db_.meta("seed_model").value_or("")},
                 {"metamorphic", {{"atol", req.meta_atol}, {"rtol", req.meta_rtol}}},
                 {"repro", "flowmut repro " + files_.finding(id).dir().string()}});
    write_file_atomic(staged.meta(), meta.dump(2));
    std::ofstream(staged.worker_log()) << f.message;
    publish_directory_atomic(staging_dir, files_.finding(id).dir());
  }

  /// Reruns a new finding `reruns` times (hangs and out-of-memory once, at twice the timeout),
  /// each time in a fresh worker, on the copy in its finding folder, and returns the share of
  /// runs that show the same signature (differential findings localised again).
  double rerun(const observed_finding& f, const worker_request& req, const finding_layout& folder) {
    if (rules_.reruns <= 0) return 1.0;
    using K = oracle::finding_kind;
    const auto& sig = f.signature;
    auto r = req;
    r.model = std::filesystem::absolute(folder.mutant()).string();
    if (!r.seed_model.empty()) r.seed_model = std::filesystem::absolute(folder.seed()).string();
    // A performance finding was confirmed by perf_trials interleaved timings before it was recorded.
    if (sig.kind == K::performance) return 1.0;
    const int runs = (sig.kind == K::hang || sig.kind == K::out_of_memory) ? 1 : rules_.reruns;
    int same = 0;
    for (int i = 0; i < runs; ++i) {
      workers_.spawn();  // a fresh process: no state of earlier requests
      const auto timeout = sig.kind == K::hang ? 2 * workers_.timeout() : workers_.timeout();
      if (sig.kind == K::nan_vanished) {
        auto q = r;
        q.op = request_op::nan_check;
        for (const auto& [op, rule] : nan_) q.nan_rules.emplace(op, std::string(oracle::to_string(rule)));
        const auto o = workers_.execute(q, timeout);
        if (o.reply && o.reply->ok)
          for (const auto& l : o.reply->found)
            if (l.op == sig.culprit_op && l.inputs == sig.inputs) {
              ++same;
              break;
            }
        continue;
      }
      const auto o = workers_.execute(r, timeout);
      // Process-level findings keep their attribution (a crash is not bisected again);
      // differential ones are localised again on this run.
      const attributor at = o.process_failed() || !rules_.localise
                                ? fixed_attribution(f.where)
                                : localising_attributor<Backend>(r, f.where, configs_, [this](const worker_request& q) {
                                    return workers_.execute(q);
                                  });
      if (reproduces(sig, o, at, &perf_)) ++same;
    }
    workers_.spawn();
    return static_cast<double>(same) / runs;
  }

  layout files_;
  rules rules_;
  store& db_;
  supervisor& workers_;
  std::vector<config_desc> configs_;
  performance_rule& perf_;
  const oracle::nan_rules& nan_;
  std::set<std::string> known_;
  std::set<std::string> unjudged_;  ///< resumed: findings stored without reliability reruns
  finding_counts counts_;
};

}  // namespace tfg::campaign
