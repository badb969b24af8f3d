// flowmut fuzz / merge: the job and the merge are library code (tfg/campaign/fuzz_job.hpp); this
// file turns the arguments into options and prints what the job says.
// No LibTorch here: the campaigns run in child processes.
#include "commands.hpp"

#include "tfg/campaign/fuzz_job.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;
namespace tc = tfg::campaign;

namespace {

void on_fuzz_signal(int) { tc::fuzz_job::request_stop(); }

/// Prints a job's lines: the start, problems and the summary always; new findings unless
/// quiet; each slice's start and end only without the live status screen (a terminal), which
/// shows them. Without a terminal the totals line comes every 30 s.
class fuzz_printer final : public tc::fuzz_observer {
 public:
  fuzz_printer(bool quiet, std::string self_exe)
      : quiet_(quiet), tty_(::isatty(2) && !quiet && !std::getenv("NO_COLOR")), self_(std::move(self_exe)) {}
  ~fuzz_printer() override { clear(); }

  void line(tc::fuzz_line kind, const std::string& text) override {
    if (kind == tc::fuzz_line::slice && (tty_ || quiet_)) return;
    if (kind == tc::fuzz_line::finding && quiet_) return;
    clear();
    std::fprintf(kind == tc::fuzz_line::summary ? stdout : stderr, "%s\n", text.c_str());
  }

  void status(const std::vector<std::string>& lines) override {
    if (!tty_) {
      if (quiet_ || clock::now() - last_plain_ < std::chrono::seconds(30)) return;
      std::fprintf(stderr, "%s\n", lines.front().c_str());
      last_plain_ = clock::now();
      return;
    }
    clear();
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = lines.size();
  }

  void reduce(const fs::path& finding, double budget_s, int timeout_s) override {
    clear();
    std::fflush(stdout);
    (void)run_reduce_command(finding.string(), self_, timeout_s, 8192, default_python(), true, budget_s, false);
  }

 private:
  using clock = std::chrono::steady_clock;

  void clear() {
    if (!tty_ || drawn_ == 0) return;
    std::fprintf(stderr, "\x1b[%zuA\x1b[J", drawn_);
    drawn_ = 0;
  }

  bool quiet_, tty_;
  std::string self_;
  std::size_t drawn_ = 0;
  clock::time_point last_plain_ = clock::now();
};

}  // namespace

int run_fuzz_command(fuzz_args a, const std::string& self_exe) {
  fuzz_printer printer(a.quiet, self_exe);
  tc::fuzz_job_options o = std::move(a);  // the options without -q
  o.timeout_cap_s = [given = o.given.count("timeout") > 0](int timeout_s, const std::vector<std::string>& configs) {
    return campaign_timeout_cap_s(timeout_s, given, configs);
  };
  o.self_exe = self_exe;
  o.known = known_issues();
  std::signal(SIGINT, &on_fuzz_signal);
  std::signal(SIGTERM, &on_fuzz_signal);
  std::signal(SIGHUP, &on_fuzz_signal);
  return tc::fuzz_job(std::move(o)).run(printer);
}

int run_merge_command(const std::vector<std::string>& dirs, const std::string& out) {
  try {
    const auto r = tc::merge_fuzz_folders(dirs, out, known_issues());
    std::printf(
        "merged %zu folder(s): %zu campaigns, %zu distinct findings (%s), %zu witnesses\nreport: %s\nfindings: %s\n",
        r.folders, r.campaigns, r.findings, r.counts.c_str(), r.witnesses, r.report.c_str(), r.findings_jsonl.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "flowmut merge: " << e.what() << "\n";
    return 2;
  }
}
