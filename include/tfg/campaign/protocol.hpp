#pragma once
/// \file
/// The worker protocol: what a supervisor asks an execution worker to do and what the worker
/// answers, as plain structs, and their one JSON-line encoding (the only place that spells the
/// field names). Backend-neutral: a worker for any backend (LibTorch, an ONNX runtime, a
/// torch.compile worker in Python) speaks it.
///
/// Request (one line): {"id": N, "op": "run"|"ping", "model": PATH, "inputs": PATH,
///   "configs": [NAME...], "threads": 1, "warmup": 2, "labels": true}
/// Reply (one line): {"id": N, "ok": bool, "error": TEXT (the model does not load),
///   "results": [{"config","ok","error","wall_ms","prepare_ms"}...],
///   "verdicts": [{"kind","a","b","input","path","max_abs","max_rel","message","tie"}...],
///   "labels": [TEXT...], "transitions": [[i, j]...], "ms": total, "pid": N (ping)}
/// Non-finite numbers travel as +-1e300 (JSON has no infinity).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/oracle/verdict.hpp"
#include "tfg/util/expected.hpp"

namespace tfg::campaign {

/// What a worker is asked to do.
enum class request_op : std::uint8_t {
  run,   ///< run `model` under `configs` on `inputs`, judge, return verdicts and trace labels
  ping,  ///< answer with the worker's pid (liveness)
};

/// One request to an execution worker.
struct worker_request {
  std::int64_t id = -1;
  request_op op = request_op::run;
  std::string model;                 ///< absolute path of the model file
  std::string inputs;                ///< absolute path of the profiling inputs
  std::vector<std::string> configs;  ///< empty: the worker's default configurations
  int threads = 1;                   ///< intra-op threads of every configuration but threads_1_vs_n
  std::size_t warmup = 2;            ///< untimed runs before timing
  bool labels = true;                ///< record runtime-trace labels

  friend bool operator==(const worker_request&, const worker_request&) = default;
};

/// How one configuration ran.
struct config_result {
  std::string config;
  bool ok = false;
  std::string error;  ///< empty when ok
  double wall_ms = 0, prepare_ms = 0;

  friend bool operator==(const config_result&, const config_result&) = default;
};

/// A worker's answer to one request.
struct worker_reply {
  std::int64_t id = -1;
  bool ok = false;             ///< false: the model or its inputs did not load (`error` says why)
  std::string error;
  std::vector<config_result> results;
  std::vector<oracle::verdict> verdicts;  ///< per compared pair: the worst, if a finding or an error in both
  std::vector<std::string> labels;        ///< distinct trace labels of the successful configurations
  std::vector<std::pair<std::uint32_t, std::uint32_t>> transitions;  ///< indices into labels
  double ms = 0;
  std::int64_t pid = 0;  ///< ping only

  /// The result of `config`, or nullptr when it did not run.
  [[nodiscard]] const config_result* result(std::string_view config) const noexcept {
    for (const auto& r : results)
      if (r.config == config) return &r;
    return nullptr;
  }
  /// Wall time of every configuration that ran successfully.
  [[nodiscard]] std::map<std::string, double> config_times() const {
    std::map<std::string, double> t;
    for (const auto& r : results)
      if (r.ok) t[r.config] = r.wall_ms;
    return t;
  }
  /// The transitions as label pairs.
  [[nodiscard]] std::vector<std::pair<std::string, std::string>> transition_labels() const {
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(transitions.size());
    for (auto [i, j] : transitions)
      if (i < labels.size() && j < labels.size()) out.emplace_back(labels[i], labels[j]);
    return out;
  }
};

namespace protocol_json {

[[nodiscard]] inline double finite_or_big(double x) noexcept {
  if (std::isnan(x)) return 1e300;
  if (std::isinf(x)) return x > 0 ? 1e300 : -1e300;
  return x;
}

[[nodiscard]] inline nlohmann::json verdict(const oracle::verdict& v) {
  return {{"kind", std::string(oracle::to_string(v.kind))},
          {"a", v.config_a},
          {"b", v.config_b},
          {"input", v.input_index == oracle::no_index ? -1 : static_cast<std::int64_t>(v.input_index)},
          {"path", v.output_path},
          {"max_abs", finite_or_big(v.max_abs)},
          {"max_rel", finite_or_big(v.max_rel)},
          {"message", v.message},
          {"tie", v.tie_dependent}};
}

[[nodiscard]] inline oracle::verdict verdict(const nlohmann::json& j) {
  oracle::verdict v;
  const auto kind = oracle::parse_verdict_kind(j.value("kind", ""));
  if (!kind) throw std::invalid_argument("unknown verdict kind `" + j.value("kind", "") + "`");
  v.kind = *kind;
  v.config_a = j.value("a", "");
  v.config_b = j.value("b", "");
  const auto input = j.value("input", std::int64_t{-1});
  v.input_index = input < 0 ? oracle::no_index : static_cast<std::size_t>(input);
  v.output_path = j.value("path", "");
  v.max_abs = j.value("max_abs", 0.0);
  v.max_rel = j.value("max_rel", 0.0);
  v.message = j.value("message", "");
  v.tie_dependent = j.value("tie", false);
  return v;
}

}  // namespace protocol_json

/// The request as one JSON line (no trailing newline).
[[nodiscard]] inline std::string to_line(const worker_request& r) {
  if (r.op == request_op::ping) return nlohmann::json{{"id", r.id}, {"op", "ping"}}.dump();
  nlohmann::json j = {{"id", r.id},       {"model", r.model},     {"inputs", r.inputs},
                      {"threads", r.threads}, {"warmup", r.warmup}, {"labels", r.labels}};
  if (!r.configs.empty()) j["configs"] = r.configs;
  return j.dump();
}

/// Parses a request line; an error names what is wrong.
[[nodiscard]] inline tfg::expected<worker_request, std::string> parse_request(std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return tfg::unexpected(std::string("bad request: not a JSON object"));
  try {
    worker_request r;
    r.id = j.value("id", std::int64_t{-1});
    const std::string op = j.value("op", "run");
    if (op == "ping") {
      r.op = request_op::ping;
      return r;
    }
    if (op != "run") return tfg::unexpected("bad request: unknown op `" + op + "`");
    r.model = j.value("model", "");
    r.inputs = j.value("inputs", "");
    if (j.contains("configs")) r.configs = j.at("configs").get<std::vector<std::string>>();
    r.threads = j.value("threads", 1);
    r.warmup = j.value("warmup", std::size_t{2});
    r.labels = j.value("labels", true);
    return r;
  } catch (const std::exception& e) {
    return tfg::unexpected(std::string("bad request: ") + e.what());
  }
}

/// The reply as one JSON line (no trailing newline).
[[nodiscard]] inline std::string to_line(const worker_reply& r) {
  nlohmann::json j = {{"id", r.id}, {"ok", r.ok}};
  if (!r.error.empty()) j["error"] = r.error;
  if (r.pid) j["pid"] = r.pid;
  if (!r.ok) return j.dump();
  nlohmann::json rs = nlohmann::json::array();
  for (const auto& c : r.results)
    rs.push_back({{"config", c.config}, {"ok", c.ok}, {"error", c.error}, {"wall_ms", c.wall_ms}, {"prepare_ms", c.prepare_ms}});
  nlohmann::json vs = nlohmann::json::array();
  for (const auto& v : r.verdicts) vs.push_back(protocol_json::verdict(v));
  nlohmann::json ts = nlohmann::json::array();
  for (auto [a, b] : r.transitions) ts.push_back({a, b});
  j["results"] = std::move(rs);
  j["verdicts"] = std::move(vs);
  j["labels"] = r.labels;
  j["transitions"] = std::move(ts);
  j["ms"] = r.ms;
  return j.dump();
}

/// Parses a reply line; an error names what is wrong (an unreadable reply is a tool defect).
[[nodiscard]] inline tfg::expected<worker_reply, std::string> parse_reply(std::string_view line) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return tfg::unexpected(std::string("unreadable worker reply"));
  try {
    worker_reply r;
    r.id = j.value("id", std::int64_t{-1});
    r.ok = j.value("ok", false);
    r.error = j.value("error", "");
    r.pid = j.value("pid", std::int64_t{0});
    for (const auto& c : j.value("results", nlohmann::json::array()))
      r.results.push_back({c.value("config", ""), c.value("ok", false), c.value("error", ""), c.value("wall_ms", 0.0),
                           c.value("prepare_ms", 0.0)});
    for (const auto& v : j.value("verdicts", nlohmann::json::array())) r.verdicts.push_back(protocol_json::verdict(v));
    r.labels = j.value("labels", std::vector<std::string>{});
    for (const auto& t : j.value("transitions", nlohmann::json::array()))
      r.transitions.emplace_back(t.at(0).get<std::uint32_t>(), t.at(1).get<std::uint32_t>());
    r.ms = j.value("ms", 0.0);
    return r;
  } catch (const std::exception& e) {
    return tfg::unexpected(std::string("unreadable worker reply: ") + e.what());
  }
}

}  // namespace tfg::campaign
