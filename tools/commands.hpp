// Subcommands implemented outside flowmut.cpp (each file is one translation unit).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tfg/campaign/fuzz_job.hpp"
#include "tfg/campaign/known_issues.hpp"

struct run_args {
  std::string model;
  std::string out;
  std::string inputs;
  std::vector<std::string> op_dirs;
  std::vector<std::string> configs;
  std::string policy = "linucb-op";
  std::string ablation = "all";  // all | coverage-only | impact-only | no-L | no-T | no-M | no-P | no-I
  double alpha = 1.0;
  std::string reward = "behaviour";  // behaviour | paper
  std::size_t rounds = 250;
  std::uint64_t seed = 1;
  int timeout_s = 60;
  int reruns = 2;
  std::int64_t rss_limit_mb = 0;
  bool resume = false;
  bool force = false;
  bool quiet = false;
  std::string accept = "healthy";  // healthy | any
  std::size_t corpus = 8;
  std::size_t return_every = 25;
  bool no_localise = false;
  std::vector<std::string> shapes;  // --shape: random inputs of these shapes
  double reduce_budget_s = 0;       // --reduce-budget: reduce the campaign's findings after it, within S seconds
  double time_s = 0;                // --time: wall-clock budget of the rounds (0: none)
  std::set<std::string> given;      // long names of the options given on the command line
};

/// `flowmut fuzz`: the job's options (tfg/campaign/fuzz_job.hpp), parsed straight into them.
struct fuzz_args : tfg::campaign::fuzz_job_options {
  bool quiet = false;  // -q: no status screen
};

struct compare_args {
  std::vector<std::string> models;
  std::string out;
  std::vector<std::string> policies{"linucb-op", "linucb", "ucb1", "random", "queue", "linucb@paper"};
  std::vector<std::string> op_dirs;
  std::vector<std::string> configs;
  std::size_t rounds = 250;
  std::size_t campaign_seeds = 5;  // campaigns per (seed model, cell): campaign seeds seed .. seed+K-1
  std::uint64_t seed = 1;
  int timeout_s = 60;
  bool resume = false;
};

struct legality_args {
  std::vector<std::string> models;  // seed .pt files and folders of them
  std::vector<std::string> op_dirs;
  std::size_t sample = 1000;
  std::uint64_t seed = 1;
  int jobs = 1;
  int timeout_s = 60;
  unsigned param_draws = 4;  // --param-draws: as construct_options::param_draws
  std::string json;          // --json: every labelled candidate
  bool quiet = false;
};

int run_campaign_command(run_args a, const std::string& self_exe);
/// The per-mutant timeout cap a campaign runs with: `timeout_s` (--timeout), raised to 15 minutes
/// when it was not given and a configuration of `configs` compiles every mutant.
int campaign_timeout_cap_s(int timeout_s, bool given, const std::vector<std::string>& configs);
int run_compare_command(compare_args a, const std::string& self_exe);
int run_worker_command(const std::string& dir);
int run_summary_command(const std::string& dir);
int run_repro_command(const std::string& dir, const std::string& self_exe, int timeout_s, std::int64_t rss_limit_mb,
                      const std::vector<std::string>& op_dirs);
int run_reduce_command(const std::string& dir, const std::string& self_exe, int timeout_s, std::int64_t rss_limit_mb,
                       const std::string& python, bool run_repro, double budget_s = 0, bool build_cpp = true);
int run_report_command(const std::string& dir);
int run_fuzz_command(fuzz_args a, const std::string& self_exe);
int run_legality_command(const legality_args& a);
int run_merge_command(const std::vector<std::string>& dirs, const std::string& out);
/// The Python that runs repro.py: $TFG_PYTHON, else the Python whose torch this build uses (the
/// venv's for the PyPI wheel, Debian's for 1.13), else /usr/bin/python3, else python3.
std::string default_python();
/// The known upstream issues (known-issues/*.json; $TFG_KNOWN_ISSUES names another folder).
std::vector<tfg::campaign::known_issue> known_issues();
std::vector<std::string> default_operator_dirs(const std::vector<std::string>& given);
