#pragma once
/// The execution worker: runs one mutant under the requested execution configurations, judges
/// every configuration against its reference and returns the verdicts and the runtime-trace
/// labels as one JSON line. It runs inside a process started by exec (`flowmut worker`,
/// supervised by tfg::campaign::worker) so that a crash, an abort, a hang or unbounded memory
/// of the framework under test kills only the worker; `serve_requests` is the process's loop,
/// `handle_request` the in-process core (tests call it directly).
///
/// Requests and replies are tfg::campaign::worker_request / worker_reply, one JSON line each
/// (tfg/campaign/protocol.hpp). A reply carries, per compared pair, the worst verdict when it is
/// a finding or an error in both configurations.
/// Before each configuration the worker writes `current.json` ({"id","model","config","pid"})
/// into its folder: a write-ahead record that names the mutant and configuration a crash or
/// hang belongs to even when the reply never comes.
#include <tfg/campaign/crash_handler.hpp>
#include <tfg/campaign/process.hpp>
#include <tfg/campaign/protocol.hpp>
#include <tfg/torch/compare.hpp>
#include <tfg/torch/configs.hpp>
#include <tfg/torch/import.hpp>
#include <tfg/torch/inputs.hpp>
#include <tfg/torch/profile.hpp>
#include <tfg/torch/trace_labels.hpp>

#include <nlohmann/json.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <unistd.h>

namespace tfg::torch {

/// State a worker keeps across requests: loaded input sets by path.
struct worker_state {
  std::filesystem::path dir;  ///< where current.json goes; empty: none (in-process use)
  std::map<std::string, input_set> inputs;
};

namespace worker_detail {

inline void write_current(const worker_state& st, const nlohmann::json& rec) {
  if (st.dir.empty()) return;
  // Not fsync'ed: the reader is the supervisor on this machine, after the worker died.
  const auto tmp = st.dir / "current.json.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << rec.dump() << "\n";
  }
  std::error_code ec;
  std::filesystem::rename(tmp, st.dir / "current.json", ec);
}

[[nodiscard]] inline bool is_gradient_config(std::string_view c) { return c.rfind("autograd", 0) == 0; }

/// Reseeds the default CPU generator, so that random operators of a mutant draw the same
/// numbers in every configuration (and a difference in how many they draw becomes visible).
inline void reseed_cpu_generator() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(0x7466676d75746174ull);
}

/// A hash of the default CPU generator's state (its consumption since the last reseed).
[[nodiscard]] inline std::uint64_t cpu_generator_state_hash() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  const auto st = gen.get_state();
  const auto* p = st.data_ptr<std::uint8_t>();
  std::uint64_t h = 1469598103934665603ull;
  for (std::int64_t i = 0; i < st.numel(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace worker_detail

/// Runs one request (see tfg/campaign/protocol.hpp). Never throws: failures become fields of
/// the reply.
[[nodiscard]] inline campaign::worker_reply handle_request(const campaign::worker_request& req, worker_state& st) {
  using nlohmann::json;
  const auto t0 = std::chrono::steady_clock::now();
  campaign::worker_reply reply;
  reply.id = req.id;
  model m;
  const input_set* inputs = nullptr;
  worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", "load"}, {"pid", ::getpid()}});
  try {
    m = torchscript_importer().load(req.model);
    auto it = st.inputs.find(req.inputs);
    if (it == st.inputs.end()) it = st.inputs.emplace(req.inputs, load_inputs(req.inputs)).first;
    inputs = &it->second;
  } catch (const std::exception& e) {
    reply.error = clean_error(e.what());
    return reply;
  }
  const std::vector<std::string> configs = req.configs.empty() ? default_campaign_configs() : req.configs;
  run_options ro;
  ro.threads = req.threads;
  ro.warmup = req.warmup;
  std::map<std::string, run_result> results;
  std::map<std::string, std::uint64_t> rng_after;
  std::vector<std::string> sequence;
  event_labels names;
  for (const auto& c : configs) {
    worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", c}, {"pid", ::getpid()}});
    event_trace trace;
    run_result r;
    {
      std::optional<event_recorder> rec;
      if (req.labels) rec.emplace(names, trace);
      worker_detail::reseed_cpu_generator();
      r = run_config(c, m, *inputs, ro);
      rng_after[c] = worker_detail::cpu_generator_state_hash();
    }
    if (r.ok() && req.labels) append_labels(trace, names, c, sequence);  // failures add no labels
    reply.results.push_back({c, r.ok(), r.error, r.wall_ms, r.prepare_ms});
    results.emplace(c, std::move(r));
  }
  worker_detail::write_current(st, {{"id", req.id}, {"model", req.model}, {"config", "compare"}, {"pid", ::getpid()}});

  for (const auto& c : configs) {
    const auto info = find_config(c);
    if (!info || info->reference.empty()) continue;
    const auto a = results.find(info->reference), b = results.find(c);
    if (a == results.end() || b == results.end()) continue;
    const char* ref64_name = worker_detail::is_gradient_config(c) ? "autograd_float64" : "float64_reference";
    const run_result* ref64 = nullptr;
    if (auto r64 = results.find(ref64_name); r64 != results.end() && c != ref64_name && r64->second.ok())
      ref64 = &r64->second;
    oracle::verdict v;
    try {
      v = judge(a->second, b->second, {}, &m, ref64);
    } catch (const std::exception& e) {
      v.kind = oracle::verdict_kind::state_mismatch;
      v.config_a = a->first;
      v.config_b = c;
      v.message = "cannot compare: " + clean_error(e.what());
    }
    // RNG consumption is state: equivalent configurations draw the same random numbers. Widened
    // (float64) runs may legitimately sample differently and are not compared.
    if (!v.finding() && a->second.ok() && b->second.ok() && !a->second.widened && !b->second.widened &&
        rng_after[a->first] != rng_after[c]) {
      v.kind = oracle::verdict_kind::state_mismatch;
      v.config_a = a->first;
      v.config_b = c;
      v.message = "random number generator consumption differs between " + a->first + " and " + c;
    }
    if (v.finding() || v.kind == oracle::verdict_kind::error_in_both) reply.verdicts.push_back(std::move(v));
  }
  const auto summary = summarise_labels(sequence);
  reply.labels = summary.labels;
  for (auto [i, j] : summary.transitions)
    reply.transitions.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
  reply.ok = true;
  reply.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return reply;
}

/// The worker process's main loop: crash handler installed, one reply per request line, until
/// the supervisor closes the request pipe. Returns the process exit status.
inline int serve_requests(const std::filesystem::path& dir) {
  campaign::install_crash_handler();
  campaign::worker_channel ch;
  if (!ch.valid()) {
    std::fprintf(stderr, "flowmut worker: not started by a supervisor (fds 3 and 4 are not open)\n");
    return 2;
  }
  worker_state st;
  st.dir = dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  while (auto line = ch.next_request()) {
    campaign::worker_reply reply;
    const auto req = campaign::parse_request(*line);
    if (!req) {
      reply.error = req.error();
    } else if (req->op == campaign::request_op::ping) {
      reply.id = req->id;
      reply.ok = true;
      reply.pid = ::getpid();
    } else {
      reply = handle_request(*req, st);
    }
    ch.reply(campaign::to_line(reply));
  }
  return 0;
}

}  // namespace tfg::torch
