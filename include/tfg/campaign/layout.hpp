#pragma once
/// \file
/// Every path of a campaign folder and of a finding folder, in one place (docs/campaign.md,
/// "The campaign folder"). Nothing else in tfg spells these names: the loop, replay, the
/// report, SARIF, compare, fuzz and the tools ask a `layout` or a `finding_layout`.
///
///     campaign.db (+ -wal, -shm)   SQLite: rounds, findings, metrics, meta
///     state.json                   the checkpoint a resume continues from
///     lock                         flock()ed by the process running the campaign
///     current<M>                   the current seed (M: the backend's model extension, ".pt")
///     inputs<M>                    the profiling inputs
///     corpus/<round><M>            accepted seeds (corpus/0<M> is the original)
///     operators/<k>/               the campaign's copy of the k-th operator folder or file
///     work/                        scratch: the round's mutant, staging folders of findings
///     workers/<n>/                 one per worker process: log, current.json (write-ahead)
///     findings/<id>/               one per distinct finding (finding_layout)
///     report.html, findings.jsonl, findings.sarif   flowmut report
///
/// The model extension is the backend's (`Backend::model_extension` when it declares one,
/// else ".pt"); a layout made without a backend (the report, compare) reads what is there.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfg::campaign {

/// The model file extension of `Backend` (`Backend::model_extension` if it declares one).
template <class Backend>
[[nodiscard]] std::string model_extension_of() {
  if constexpr (requires { Backend::model_extension; }) return std::string(Backend::model_extension);
  else return ".pt";
}

/// The files of one finding folder (findings/<id>/ or its reduced/ sub-folder).
class finding_layout {
 public:
  explicit finding_layout(std::filesystem::path dir, std::string model_ext = ".pt")
      : dir_(std::move(dir)), ext_(std::move(model_ext)) {}
  /// The finding folder `dir` of a campaign run with `Backend`.
  template <class Backend>
  [[nodiscard]] static finding_layout of(std::filesystem::path dir) {
    return finding_layout(std::move(dir), model_extension_of<Backend>());
  }

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] const std::string& model_extension() const noexcept { return ext_; }
  /// The mutant that showed the finding (the model a rerun, replay and reduction load).
  [[nodiscard]] std::filesystem::path mutant() const { return dir_ / mutant_name(); }
  /// The seed the mutant was made from (the metamorphic reference; reduction's start).
  [[nodiscard]] std::filesystem::path seed() const { return dir_ / seed_name(); }
  [[nodiscard]] std::filesystem::path inputs() const { return dir_ / inputs_name(); }
  [[nodiscard]] std::filesystem::path meta() const { return dir_ / "meta.json"; }
  [[nodiscard]] std::filesystem::path worker_log() const { return dir_ / "worker.log"; }
  [[nodiscard]] std::filesystem::path reduced_dir() const { return dir_ / "reduced"; }
  [[nodiscard]] finding_layout reduced() const { return finding_layout(reduced_dir(), ext_); }
  [[nodiscard]] std::filesystem::path repro_py() const { return dir_ / "repro.py"; }
  [[nodiscard]] std::filesystem::path repro_cpp() const { return dir_ / "repro.cpp"; }
  [[nodiscard]] std::filesystem::path repro_data() const { return dir_ / ("repro_data" + ext_); }
  [[nodiscard]] std::filesystem::path repro_log() const { return dir_ / "repro.log"; }
  [[nodiscard]] std::filesystem::path repro_cpp_log() const { return dir_ / "repro_cpp.log"; }
  [[nodiscard]] std::filesystem::path issue() const { return dir_ / "issue.md"; }
  [[nodiscard]] std::filesystem::path index_html() const { return dir_ / "index.html"; }
  /// In a fuzzing job's merged findings: which unit's campaign the folder was copied from.
  [[nodiscard]] std::filesystem::path witness() const { return dir_ / "witness.json"; }

  /// File names relative to the folder (links in the report, SARIF artifacts).
  [[nodiscard]] std::string mutant_name() const { return "mutant" + ext_; }
  [[nodiscard]] std::string seed_name() const { return "seed" + ext_; }
  [[nodiscard]] std::string inputs_name() const { return "inputs" + ext_; }
  [[nodiscard]] static constexpr std::string_view repro_py_name() noexcept { return "repro.py"; }
  [[nodiscard]] static constexpr std::string_view repro_cpp_name() noexcept { return "repro.cpp"; }
  [[nodiscard]] static constexpr std::string_view repro_log_name() noexcept { return "repro.log"; }
  [[nodiscard]] static constexpr std::string_view repro_cpp_log_name() noexcept { return "repro_cpp.log"; }
  [[nodiscard]] static constexpr std::string_view issue_name() noexcept { return "issue.md"; }
  [[nodiscard]] static constexpr std::string_view index_name() noexcept { return "index.html"; }
  /// What a reduction writes into reduced/ (and each of its candidates): model, inputs, meta.
  [[nodiscard]] std::vector<std::string> reduction_files() const { return {mutant_name(), inputs_name(), "meta.json"}; }

 private:
  std::filesystem::path dir_;
  std::string ext_;
};

/// The files of one worker's folder (workers/<n>/).
struct worker_layout {
  std::filesystem::path dir;
  [[nodiscard]] std::filesystem::path log() const { return dir / "log"; }
  /// The write-ahead record of what the worker is running (the configuration a dead worker was in).
  [[nodiscard]] std::filesystem::path current() const { return dir / "current.json"; }
};

/// Every path of a campaign folder (see the file comment).
class layout {
 public:
  explicit layout(std::filesystem::path root, std::string model_ext = ".pt")
      : root_(std::move(root)), ext_(std::move(model_ext)) {}

  /// The layout of `root` for backend `Backend` (its model_extension, else ".pt").
  template <class Backend>
  [[nodiscard]] static layout of(std::filesystem::path root) {
    return layout(std::move(root), model_extension_of<Backend>());
  }

  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }
  [[nodiscard]] const std::string& model_extension() const noexcept { return ext_; }

  [[nodiscard]] std::filesystem::path database() const { return root_ / "campaign.db"; }
  /// The database with SQLite's write-ahead log and shared-memory files (what --force removes).
  [[nodiscard]] std::vector<std::filesystem::path> database_files() const {
    return {database(), root_ / "campaign.db-wal", root_ / "campaign.db-shm"};
  }
  [[nodiscard]] std::filesystem::path state() const { return root_ / "state.json"; }
  [[nodiscard]] std::filesystem::path lock() const { return root_ / "lock"; }
  [[nodiscard]] std::filesystem::path report() const { return root_ / "report.html"; }
  [[nodiscard]] std::filesystem::path findings_jsonl() const { return root_ / "findings.jsonl"; }
  [[nodiscard]] std::filesystem::path findings_sarif() const { return root_ / "findings.sarif"; }

  /// The current seed's file name, as state.json records it ("seed").
  [[nodiscard]] std::string current_name() const { return "current" + ext_; }
  [[nodiscard]] std::filesystem::path current() const { return root_ / current_name(); }
  /// Where a new current seed is written before its rename over current().
  [[nodiscard]] std::filesystem::path current_staging() const { return root_ / (current_name() + ".tmp"); }
  [[nodiscard]] std::filesystem::path inputs() const { return root_ / ("inputs" + ext_); }

  [[nodiscard]] std::filesystem::path corpus_dir() const { return root_ / "corpus"; }
  /// A corpus member's file relative to the folder (state.json stores it so): corpus/<round><M>.
  [[nodiscard]] std::filesystem::path corpus_member(std::size_t round) const {
    return std::filesystem::path("corpus") / (std::to_string(round) + ext_);
  }

  [[nodiscard]] std::filesystem::path operators_dir() const { return root_ / "operators"; }
  [[nodiscard]] std::filesystem::path operators_copy(std::size_t k) const {
    return operators_dir() / std::to_string(k);
  }

  [[nodiscard]] std::filesystem::path work_dir() const { return root_ / "work"; }
  /// The round's mutant, exported for the worker.
  [[nodiscard]] std::filesystem::path work_mutant() const { return work_dir() / ("mutant" + ext_); }
  /// A finding folder being written, before its atomic publication.
  [[nodiscard]] std::filesystem::path staging(std::string_view id) const {
    return work_dir() / ("staging-" + std::string(id));
  }

  [[nodiscard]] std::filesystem::path workers_dir() const { return root_ / "workers"; }
  [[nodiscard]] worker_layout worker(std::size_t serial) const { return {workers_dir() / std::to_string(serial)}; }

  [[nodiscard]] std::filesystem::path findings_dir() const { return root_ / "findings"; }
  /// A finding's folder relative to the campaign folder (the findings table's `dir`).
  [[nodiscard]] static std::filesystem::path finding_rel(std::string_view id) {
    return std::filesystem::path("findings") / std::string(id);
  }
  [[nodiscard]] finding_layout finding(std::string_view id) const {
    return finding_layout(root_ / finding_rel(id), ext_);
  }
  /// The finding folder `rel` (a findings row's `dir`, relative to the campaign folder).
  [[nodiscard]] finding_layout finding_at(const std::filesystem::path& rel) const {
    return finding_layout(root_ / rel, ext_);
  }

  /// The folders a campaign creates before its first round.
  [[nodiscard]] std::vector<std::filesystem::path> folders() const {
    return {workers_dir(), findings_dir(), work_dir(), corpus_dir()};
  }

  /// True when `dir` holds a campaign (its checkpoint and database).
  [[nodiscard]] bool holds_campaign() const {
    std::error_code ec;
    return std::filesystem::exists(state(), ec) && std::filesystem::exists(database(), ec);
  }

 private:
  std::filesystem::path root_;
  std::string ext_;
};

/// Every path of a fuzzing job's folder (flowmut fuzz): one campaign folder per unit, their
/// logs, the job's state, and the merged findings (one folder per distinct finding).
class fuzz_layout {
 public:
  explicit fuzz_layout(std::filesystem::path root) : root_(std::move(root)) {}

  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }
  /// The job's state (settings, units, time used): what --resume continues from.
  [[nodiscard]] std::filesystem::path state() const { return root_ / "fuzz.json"; }
  [[nodiscard]] std::filesystem::path campaigns_dir() const { return root_ / "campaigns"; }
  [[nodiscard]] layout campaign(std::string_view unit) const { return layout(campaigns_dir() / std::string(unit)); }
  [[nodiscard]] std::filesystem::path logs_dir() const { return root_ / "logs"; }
  /// A unit's log relative to the folder, as messages name it.
  [[nodiscard]] static std::filesystem::path log_rel(std::string_view unit) {
    return std::filesystem::path("logs") / (std::string(unit) + ".log");
  }
  [[nodiscard]] std::filesystem::path log(std::string_view unit) const { return root_ / log_rel(unit); }
  [[nodiscard]] std::filesystem::path findings_dir() const { return root_ / "findings"; }
  [[nodiscard]] std::filesystem::path findings_jsonl() const { return root_ / "findings.jsonl"; }
  [[nodiscard]] std::filesystem::path findings_sarif() const { return root_ / "findings.sarif"; }
  [[nodiscard]] std::filesystem::path report() const { return root_ / "report.html"; }
  [[nodiscard]] finding_layout finding_at(const std::filesystem::path& rel) const {
    return finding_layout(root_ / rel);
  }
  /// The folders --force empties.
  [[nodiscard]] std::vector<std::filesystem::path> folders() const {
    return {campaigns_dir(), findings_dir(), logs_dir()};
  }

 private:
  std::filesystem::path root_;
};

}  // namespace tfg::campaign
