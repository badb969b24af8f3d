#pragma once
/// \file
/// The campaign's side of worker processes (DESIGN.md section 5): `supervisor` owns the
/// current worker (`worker_exe worker --dir WORKERS/<n>`, speaking protocol.hpp),
/// sends it one request at a time under a timeout that follows the machine's load, reads the
/// write-ahead record of a worker that died and replaces it, and holds the per-mutant timeout
/// the seed's calibration set.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/machine_load.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"

namespace tfg::campaign {

/// What `Backend` adds to a worker's environment (`Backend::worker_environment()`, if it says).
template <class Backend>
[[nodiscard]] std::vector<std::string> worker_environment() {
  if constexpr (requires { Backend::worker_environment(); }) return Backend::worker_environment();
  else return {};
}

class supervisor {
 public:
  /// Workers get folders `workers_dir`/0, /1, ... in the order they start; `env` is added to
  /// each worker's environment (worker_environment<Backend>()); `rss_limit_bytes` 0: min(8 GiB,
  /// physical RAM / 2).
  supervisor(std::filesystem::path workers_dir, std::filesystem::path worker_exe, std::vector<std::string> env,
             std::int64_t rss_limit_bytes)
      : dir_(std::move(workers_dir)), exe_(std::move(worker_exe)), env_(std::move(env)), rss_limit_(rss_limit_bytes) {}

  /// Starts a fresh worker (the current one, if any, is shut down first): workers/<n>/ with a
  /// new n each time. Throws when the process cannot start.
  void spawn() {
    if (worker_) worker_->shutdown();
    spawn_options so;
    const worker_layout w{dir_ / std::to_string(serial_)};
    std::filesystem::create_directories(w.dir);
    so.argv = {exe_.string(), "worker", "--dir", w.dir.string()};
    so.env_extra = env_;
    so.log_path = w.log();
    so.rss_limit_bytes = rss_limit();
    auto p = worker::spawn(std::move(so));
    if (!p) throw std::runtime_error("cannot start a worker: " + p.error());
    worker_.emplace(std::move(*p));
    current_ = w;
    ++serial_;
  }

  void shutdown() {
    if (worker_) worker_->shutdown();
  }

  /// Runs the request in the worker and reads the outcome (the write-ahead record names the
  /// configuration a dead worker was running); a dead worker is replaced. The timeout follows
  /// the load: `timeout` times how much busier the machine is now than at calibration
  /// (machine_load.hpp), so other jobs starting later do not make hangs.
  run_outcome execute(const worker_request& req, std::chrono::milliseconds timeout) {
    used_timeout_ = std::chrono::milliseconds(static_cast<std::int64_t>(
        load_scaled(static_cast<double>(timeout.count()), calibration_load_, machine_load_factor())));
    auto ex = worker_->exchange(to_line(req), used_timeout_);
    const bool died = ex.kind != outcome::reply;
    auto o = make_outcome(std::move(ex), died ? running_config() : std::string());
    if (died) spawn();
    return o;
  }
  /// execute() under the calibrated per-mutant timeout.
  run_outcome execute(const worker_request& req) { return execute(req, timeout_); }

  /// Runs the seed (`seed`) `runs` times (at least once) under `cap`: the last run's time sets
  /// the per-mutant timeout (calibrate); returns that run's outcome. Throws std::runtime_error
  /// when the seed kills the worker, its reply is unreadable or it does not load.
  run_outcome calibrate_on(const worker_request& seed, int runs, std::chrono::milliseconds floor,
                           std::chrono::milliseconds cap) {
    std::optional<run_outcome> last;
    for (int i = 0; i < std::max(1, runs); ++i) {
      auto o = execute(seed, cap);
      if (o.process_failed())
        throw std::runtime_error(
            "the seed model fails in the worker (" + std::string(to_string(o.exchange.kind)) +
            "): " + o.exchange.log.substr(o.exchange.log.size() > 2000 ? o.exchange.log.size() - 2000 : 0));
      if (!o.reply) throw std::runtime_error("the worker's reply on the seed is unreadable: " + o.reply_error);
      if (!o.reply->ok) throw std::runtime_error("the seed model does not load in the worker: " + o.reply->error);
      last = std::move(o);
    }
    calibrate(last->exchange.wall_ms, floor, cap);
    return std::move(*last);
  }

  /// The per-mutant timeout: max(floor, 10 x the seed's time), at most the cap.
  void calibrate(double seed_ms, std::chrono::milliseconds floor, std::chrono::milliseconds cap) {
    timeout_ =
        std::clamp(std::chrono::milliseconds(static_cast<std::int64_t>(10 * seed_ms)), std::min(floor, cap), cap);
    calibration_load_ = machine_load_factor();
  }
  /// A resumed campaign's stored calibration (within this run's floor and cap).
  void restore_calibration(std::chrono::milliseconds timeout, double load, std::chrono::milliseconds floor,
                           std::chrono::milliseconds cap) {
    timeout_ = std::clamp(timeout, std::min(floor, cap), cap);
    calibration_load_ = load;
  }

  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }
  [[nodiscard]] double calibration_load() const noexcept { return calibration_load_; }
  /// The last exchange's timeout, scaled by the load (for the message of a hang).
  [[nodiscard]] std::chrono::milliseconds used_timeout() const noexcept { return used_timeout_; }

 private:
  [[nodiscard]] std::int64_t rss_limit() const {
    if (rss_limit_ > 0) return rss_limit_;
    const std::int64_t ram = static_cast<std::int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGE_SIZE);
    return std::min<std::int64_t>(std::int64_t{8} << 30, ram / 2);
  }

  /// The configuration the worker was running when it died (its write-ahead record).
  [[nodiscard]] std::string running_config() const {
    std::ifstream in(current_.current());
    const auto j = nlohmann::json::parse(in, nullptr, false);
    return j.is_discarded() ? std::string("?") : j.value("config", "?");
  }

  std::filesystem::path dir_;
  std::filesystem::path exe_;
  std::vector<std::string> env_;
  std::int64_t rss_limit_ = 0;
  std::optional<worker> worker_;
  worker_layout current_;
  std::size_t serial_ = 0;
  std::chrono::milliseconds timeout_{10000};
  double calibration_load_ = 1;  ///< the machine's load factor when timeout_ was calibrated
  std::chrono::milliseconds used_timeout_{0};
};

}  // namespace tfg::campaign
