#pragma once
/// \file
/// The worker protocol: what a supervisor asks an execution worker to do and what the worker
/// answers, as plain structs, and their one JSON-line encoding (the only place that spells the
/// field names). Backend-neutral: a worker for any backend (LibTorch, an ONNX runtime, a
/// torch.compile worker in Python) speaks it.
///
/// Request (one line): {"id": N, "op": "run"|"ping"|"trace"|"cut"|"nan_check", "model": PATH,
///   "inputs": PATH, "configs": [NAME...], "threads": 1, "warmup": 2, "labels": true,
///   "seed": PATH, "meta_atol": X, "meta_rtol": X (run: the metamorphic check against a seed),
///   "input": I, "a": NAME, "b": NAME, "cut": [[position, output]...] (trace, cut),
///   "nan_rules": {"aten::relu": "elementwise", ...} (nan_check)}
/// Reply (one line): {"id": N, "ok": bool, "error": TEXT (the model does not load),
///   "results": [{"config","ok","error","wall_ms","prepare_ms","unsupported" (when true)}...],
///   "verdicts": [{"kind","a","b","input","path","max_abs","max_rel","message","tie","failed_at"}...],
///   "labels": [TEXT...], "transitions": [[i, j]...], "ms": total, "pid": N (ping),
///   "located": [{"position","op","inputs","states","divergence","kinds","diverges","runs",
///   "note"}...] (trace: one, the first diverging node; cut: one, the cut's outputs; nan_check:
///   one per operator a NaN vanished through)}
/// Positions are indices into the model's topological order (tfg::graph::flow_graph), which an
/// export and re-import keep. Non-finite numbers travel as +-1e300 (JSON has no infinity).
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
  run,        ///< run `model` under `configs` on `inputs`, judge, return verdicts and trace labels
  ping,       ///< answer with the worker's pid (liveness)
  trace,      ///< localise a disagreement of op-by-op configurations a, b edge by edge
  cut,        ///< run b on the model cut at `cut` (those edges its outputs) and compare with a
  nan_check,  ///< profile the model and report NaN that vanished through `nan_rules` operators
  describe,   ///< the model's structure as the worker imported it (a skeleton), for localisation
};

[[nodiscard]] constexpr std::string_view to_string(request_op op) noexcept {
  switch (op) {
    case request_op::run: return "run";
    case request_op::ping: return "ping";
    case request_op::trace: return "trace";
    case request_op::cut: return "cut";
    case request_op::nan_check: return "nan_check";
    case request_op::describe: return "describe";
  }
  return "?";
}

/// An edge of a cut: output `output` of the node at topological position `position`, or all
/// tensor outputs of that node when `output` is -1.
struct cut_edge {
  std::uint32_t position = 0;
  std::int32_t output = -1;
  friend bool operator==(const cut_edge&, const cut_edge&) = default;
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
  /// run: when set, also run this seed (op by op) and judge the mutant's claim to preserve its
  /// values with meta_atol / meta_rtol (a verdict seed vs mutant).
  std::string seed_model;
  double meta_atol = 0, meta_rtol = 0;
  /// trace / cut: the profiling input and the configurations that disagree on it.
  std::size_t input = 0;
  std::string config_a, config_b;
  std::vector<cut_edge> cut;  ///< cut: the edges that become the cut model's outputs
  bool only_b = false;        ///< cut: run b on the cut and nothing else (localising a crash of b)
  /// nan_check: op kind -> propagation rule ("elementwise", "any").
  std::map<std::string, std::string> nan_rules;

  friend bool operator==(const worker_request&, const worker_request&) = default;
};

/// What a trace, cut or nan_check request found.
struct located {
  std::int64_t position = -1;          ///< the node (topological position); -1: none found
  std::string op;                      ///< its kind
  std::string inputs;                  ///< the state class of its inputs (finding signatures)
  std::vector<std::string> states;     ///< F of each of its inputs, for humans
  oracle::verdict divergence;          ///< how its outputs (the cut's outputs) differ
  std::vector<std::string> kinds;      ///< cut: the kind of the node at each cut position
  std::vector<std::uint8_t> diverges;  ///< cut: per cut edge, 1 when it differs beyond tolerance
  int runs = 0;                        ///< configuration runs the request cost
  std::string note;
  /// trace: the node computes its outputs accurately from its inputs in both configurations
  /// (float64 on the same inputs): the numeric divergence is ill-conditioning, not a defect.
  bool conditioned = false;
};

/// How one configuration ran.
struct config_result {
  std::string config;
  bool ok = false;
  std::string error;  ///< empty when ok
  double wall_ms = 0, prepare_ms = 0;
  /// Not run: the configuration does not support this model (an operator an exporter cannot
  /// translate, a type a runtime lacks); `error` says why. Counted and listed, never a finding.
  bool unsupported = false;

  friend bool operator==(const config_result&, const config_result&) = default;
};

/// The structure of a model as a worker imported it: nodes in topological order with their
/// inputs (producer position and output slot; position -1: graph input `slot`) and which of
/// their outputs are tensors, and the graph outputs by output path. Enough to bisect and to
/// align with the supervisor's copy, without importing the file in the supervisor (an import
/// may execute operators: constant folding).
struct skeleton {
  struct node {
    std::string kind;
    std::vector<std::pair<std::int32_t, std::uint32_t>> inputs;
    std::vector<std::uint8_t> tensor_outputs;
    friend bool operator==(const node&, const node&) = default;
  };
  std::uint32_t graph_inputs = 0;
  std::vector<node> nodes;
  struct output {
    std::string path;
    std::int32_t position = -1;  ///< -1: a graph input
    std::uint32_t slot = 0;
    friend bool operator==(const output&, const output&) = default;
  };
  std::vector<output> outputs;
  friend bool operator==(const skeleton&, const skeleton&) = default;
};

/// A worker's answer to one request.
struct worker_reply {
  std::int64_t id = -1;
  bool ok = false;  ///< false: the model or its inputs did not load (`error` says why)
  std::string error;
  std::vector<config_result> results;
  std::vector<oracle::verdict> verdicts;  ///< per compared pair: the worst, if a finding or an error in both
  std::vector<std::string> labels;        ///< distinct trace labels of the successful configurations
  std::vector<std::pair<std::uint32_t, std::uint32_t>> transitions;  ///< indices into labels
  double ms = 0;
  /// run: where `ms` went — "load" (import of the model and its inputs), "configs" (the
  /// configurations' own preparation and runs, warm-ups included), "labels" (trace recording
  /// and its summary beyond the runs), "judge" (comparisons, the one-ulp noise rerun),
  /// "metamorphic" (the seed's runs); milliseconds.
  std::map<std::string, double> phases;
  std::int64_t pid = 0;               ///< ping only
  std::vector<located> found;         ///< trace / cut / nan_check
  std::optional<skeleton> structure;  ///< describe

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
          {"tie", v.tie_dependent},
          {"failed_at", v.failed_at}};
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
  v.failed_at = j.value("failed_at", std::int64_t{-1});
  return v;
}

[[nodiscard]] inline nlohmann::json located_json(const located& l) {
  return {{"position", l.position},
          {"op", l.op},
          {"inputs", l.inputs},
          {"states", l.states},
          {"divergence", verdict(l.divergence)},
          {"kinds", l.kinds},
          {"diverges", l.diverges},
          {"runs", l.runs},
          {"note", l.note},
          {"conditioned", l.conditioned}};
}

[[nodiscard]] inline located located_of(const nlohmann::json& j) {
  located l;
  l.position = j.value("position", std::int64_t{-1});
  l.op = j.value("op", "");
  l.inputs = j.value("inputs", "");
  l.states = j.value("states", std::vector<std::string>{});
  if (j.contains("divergence")) l.divergence = verdict(j.at("divergence"));
  l.kinds = j.value("kinds", std::vector<std::string>{});
  l.diverges = j.value("diverges", std::vector<std::uint8_t>{});
  l.runs = j.value("runs", 0);
  l.note = j.value("note", "");
  l.conditioned = j.value("conditioned", false);
  return l;
}

[[nodiscard]] inline nlohmann::json skeleton_json(const skeleton& k) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : k.nodes) {
    nlohmann::json ins = nlohmann::json::array();
    for (auto [p, s] : n.inputs) ins.push_back({p, s});
    nodes.push_back({{"kind", n.kind}, {"in", std::move(ins)}, {"out", n.tensor_outputs}});
  }
  nlohmann::json outs = nlohmann::json::array();
  for (const auto& o : k.outputs) outs.push_back({{"path", o.path}, {"position", o.position}, {"slot", o.slot}});
  return {{"graph_inputs", k.graph_inputs}, {"nodes", std::move(nodes)}, {"outputs", std::move(outs)}};
}

[[nodiscard]] inline skeleton skeleton_of(const nlohmann::json& j) {
  skeleton k;
  k.graph_inputs = j.value("graph_inputs", 0u);
  for (const auto& n : j.at("nodes")) {
    skeleton::node x;
    x.kind = n.at("kind").get<std::string>();
    for (const auto& i : n.at("in")) x.inputs.emplace_back(i.at(0).get<std::int32_t>(), i.at(1).get<std::uint32_t>());
    x.tensor_outputs = n.at("out").get<std::vector<std::uint8_t>>();
    k.nodes.push_back(std::move(x));
  }
  for (const auto& o : j.at("outputs"))
    k.outputs.push_back(
        {o.at("path").get<std::string>(), o.at("position").get<std::int32_t>(), o.at("slot").get<std::uint32_t>()});
  return k;
}

}  // namespace protocol_json

/// The request as one JSON line (no trailing newline).
[[nodiscard]] inline std::string to_line(const worker_request& r) {
  if (r.op == request_op::ping) return nlohmann::json{{"id", r.id}, {"op", "ping"}}.dump();
  nlohmann::json j = {{"id", r.id},           {"op", std::string(to_string(r.op))},
                      {"model", r.model},     {"inputs", r.inputs},
                      {"threads", r.threads}, {"warmup", r.warmup},
                      {"labels", r.labels}};
  if (!r.configs.empty()) j["configs"] = r.configs;
  if (!r.seed_model.empty()) {
    j["seed"] = r.seed_model;
    j["meta_atol"] = r.meta_atol;
    j["meta_rtol"] = r.meta_rtol;
  }
  if (r.op == request_op::trace || r.op == request_op::cut) {
    j["input"] = r.input;
    j["a"] = r.config_a;
    j["b"] = r.config_b;
    nlohmann::json cut = nlohmann::json::array();
    for (const auto& c : r.cut) cut.push_back({c.position, c.output});
    j["cut"] = std::move(cut);
    if (r.only_b) j["only_b"] = true;
  }
  if (!r.nan_rules.empty()) j["nan_rules"] = r.nan_rules;
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
    bool known = false;
    for (auto o : {request_op::run, request_op::ping, request_op::trace, request_op::cut, request_op::nan_check,
                   request_op::describe})
      if (to_string(o) == op) {
        r.op = o;
        known = true;
      }
    if (!known) return tfg::unexpected("bad request: unknown op `" + op + "`");
    if (r.op == request_op::ping) return r;
    r.model = j.value("model", "");
    r.inputs = j.value("inputs", "");
    if (j.contains("configs")) r.configs = j.at("configs").get<std::vector<std::string>>();
    r.threads = j.value("threads", 1);
    r.warmup = j.value("warmup", std::size_t{2});
    r.labels = j.value("labels", true);
    r.seed_model = j.value("seed", "");
    r.meta_atol = j.value("meta_atol", 0.0);
    r.meta_rtol = j.value("meta_rtol", 0.0);
    r.input = j.value("input", std::size_t{0});
    r.config_a = j.value("a", "");
    r.config_b = j.value("b", "");
    for (const auto& c : j.value("cut", nlohmann::json::array()))
      r.cut.push_back({c.at(0).get<std::uint32_t>(), c.at(1).get<std::int32_t>()});
    r.nan_rules = j.value("nan_rules", std::map<std::string, std::string>{});
    r.only_b = j.value("only_b", false);
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
  for (const auto& c : r.results) {
    rs.push_back(
        {{"config", c.config}, {"ok", c.ok}, {"error", c.error}, {"wall_ms", c.wall_ms}, {"prepare_ms", c.prepare_ms}});
    if (c.unsupported) rs.back()["unsupported"] = true;
  }
  nlohmann::json vs = nlohmann::json::array();
  for (const auto& v : r.verdicts) vs.push_back(protocol_json::verdict(v));
  nlohmann::json ts = nlohmann::json::array();
  for (auto [a, b] : r.transitions) ts.push_back({a, b});
  j["results"] = std::move(rs);
  j["verdicts"] = std::move(vs);
  j["labels"] = r.labels;
  j["transitions"] = std::move(ts);
  j["ms"] = r.ms;
  if (!r.phases.empty()) j["phases"] = r.phases;
  if (!r.found.empty()) {
    nlohmann::json fs = nlohmann::json::array();
    for (const auto& l : r.found) fs.push_back(protocol_json::located_json(l));
    j["located"] = std::move(fs);
  }
  if (r.structure) j["skeleton"] = protocol_json::skeleton_json(*r.structure);
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
                           c.value("prepare_ms", 0.0), c.value("unsupported", false)});
    for (const auto& v : j.value("verdicts", nlohmann::json::array())) r.verdicts.push_back(protocol_json::verdict(v));
    r.labels = j.value("labels", std::vector<std::string>{});
    for (const auto& t : j.value("transitions", nlohmann::json::array()))
      r.transitions.emplace_back(t.at(0).get<std::uint32_t>(), t.at(1).get<std::uint32_t>());
    r.ms = j.value("ms", 0.0);
    r.phases = j.value("phases", std::map<std::string, double>{});
    for (const auto& l : j.value("located", nlohmann::json::array())) r.found.push_back(protocol_json::located_of(l));
    if (j.contains("skeleton")) r.structure = protocol_json::skeleton_of(j.at("skeleton"));
    return r;
  } catch (const std::exception& e) {
    return tfg::unexpected(std::string("unreadable worker reply: ") + e.what());
  }
}

}  // namespace tfg::campaign
