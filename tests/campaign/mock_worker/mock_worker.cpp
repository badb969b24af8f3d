// tfg_mock_worker: the execution worker of the mock backend (tfg/campaign/mock_backend.hpp),
// serving `tfg_mock_worker worker --dir D` with the worker protocol (tfg/campaign/protocol.hpp)
// over the channel of tfg/campaign/process.hpp. It runs a mock model under two configurations:
//
//   eager_op_by_op  the reference: each node by mock::evaluate_node
//   opt             an "optimising" executor with three planted framework defects:
//     - a fast tanh used outside its range: tanh of an element > 3 returns x / 3 (numeric finding);
//     - a double-negation fusion that dereferences a null pointer: a mock::neg whose input a
//       mock::neg produces kills the process with SIGSEGV (crash finding);
//     - a stale kernel cache: mock::softsign returns its input unchanged from the second `run`
//       request a process serves on (a finding that does not reproduce in a fresh worker: flaky).
//
// Requests served: run (results, verdicts of opt against eager_op_by_op, trace labels), ping,
// describe (the skeleton), trace (op-by-op localisation: every node under both configurations
// on the reference's inputs), cut (the model cut at some nodes, run under a and b; only_b for
// crashes). Not served (an ok=false reply): nan_check (the mock declares no NaN-propagation
// rules) and the metamorphic check of `run` (`seed`: the mock operators claim no preserved values).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tfg/campaign/crash_handler.hpp"
#include "tfg/campaign/mock_backend.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"

namespace mock = tfg::campaign::mock;
namespace graph = tfg::graph;
namespace oracle = tfg::oracle;
using tfg::campaign::worker_reply;
using tfg::campaign::worker_request;

static int run_requests = 0;  // `run` requests this process served (the stale cache's trigger)

__attribute__((noinline)) void tfg_mock_fuse_double_negation() {
  int* volatile p = nullptr;  // the planted defect: the fused kernel's table was never allocated
  *p = 42;
  __asm__ volatile("" ::: "memory");
}

/// One node under configuration `config`.
static mock::vec eval_node(const mock::model& m, graph::node_id n, const std::vector<mock::vec>& args,
                           const std::string& config) {
  const auto& op = m.graph.data(n).op;
  auto out = mock::evaluate_node(op, args, m.width);
  if (config != "opt") return out;
  if (op == "mock::tanh")
    for (std::size_t i = 0; i < out.size(); ++i)
      if (args[0][i] > 3) out[i] = args[0][i] / 3;
  if (op == "mock::neg") {
    const auto p = m.graph.producer(m.graph.inputs(n)[0]);
    if (p != graph::no_node && m.graph.data(p).op == "mock::neg") tfg_mock_fuse_double_negation();
  }
  if (op == "mock::softsign" && run_requests >= 2) out = args[0];
  return out;
}

/// Values of every edge (by index) of the nodes in `only` (all when empty) under `config`.
static std::vector<mock::vec> eval(const mock::model& m, const std::vector<mock::vec>& in, const std::string& config,
                                   const std::vector<char>& only = {}) {
  return mock::run_graph(m, in, [&](graph::node_id n, const std::vector<mock::vec>& a) {
    if (!only.empty() && !only[graph::index(n)]) return mock::vec(m.width, 0.0);
    return eval_node(m, n, a, config);
  });
}

/// The write-ahead record: which configuration a dead worker was running.
static void write_current(const std::filesystem::path& dir, const worker_request& r, const std::string& config) {
  if (dir.empty()) return;
  {
    std::ofstream out(dir / "current.json.tmp", std::ios::trunc);
    out << nlohmann::json{{"id", r.id}, {"model", r.model}, {"config", config}, {"pid", ::getpid()}}.dump() << "\n";
  }
  std::error_code ec;
  std::filesystem::rename(dir / "current.json.tmp", dir / "current.json", ec);
}

/// b against a on one value: a verdict (equal, numeric or NaN/Inf mismatch) with f64 tolerances.
static oracle::verdict compare(const mock::vec& a, const mock::vec& b) {
  const auto tol = oracle::tolerance_table{}.f64;
  oracle::verdict v;
  v.kind = oracle::verdict_kind::equal;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::isfinite(a[i]) != std::isfinite(b[i])) {
      v.kind = oracle::verdict_kind::nan_inf_mismatch;
      v.message = "NaN/Inf at element " + std::to_string(i) + " in one configuration only";
      return v;
    }
    const double d = std::fabs(a[i] - b[i]);
    v.max_abs = std::max(v.max_abs, d);
    v.max_rel = std::max(v.max_rel, d / std::max(std::fabs(a[i]), 1e-12));
    if (d > tol.atol + tol.rtol * std::fabs(a[i])) v.kind = oracle::verdict_kind::numeric_mismatch;
    else if (d > 0 && v.kind == oracle::verdict_kind::equal) v.kind = oracle::verdict_kind::within_tolerance;
  }
  if (v.kind == oracle::verdict_kind::numeric_mismatch) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "values differ: max abs %.6g, max rel %.6g", v.max_abs, v.max_rel);
    v.message = buf;
  }
  return v;
}

static std::vector<graph::node_id> order_of(const mock::model& m) {
  const auto& o = m.graph.topological_order();
  return {o.begin(), o.end()};
}

static std::string input_classes(const mock::model& m, graph::node_id n, const std::vector<mock::vec>& values,
                                 std::vector<std::string>* states) {
  std::string s;
  for (auto e : m.graph.inputs(n)) {
    const auto st = mock::state_of(values[graph::index(e)], 0);
    s += (s.empty() ? "" : "; ") + tfg::state::class_of(st);
    if (states) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "f64[%lld] min %.4g max %.4g", static_cast<long long>(st.numel), st.numbers.min,
                    st.numbers.max);
      states->push_back(buf);
    }
  }
  return s;
}

static worker_reply run(const worker_request& r, const std::filesystem::path& dir) {
  worker_reply rep;
  rep.id = r.id;
  if (!r.seed_model.empty()) {
    rep.error = "the mock worker has no metamorphic check (a `seed` with the request)";
    return rep;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto m = mock::load_model(r.model);
  const auto in = mock::load_inputs_file(r.inputs);
  ++run_requests;
  std::vector<std::string> configs = r.configs.empty() ? std::vector<std::string>{"eager_op_by_op", "opt"} : r.configs;
  std::map<std::string, std::vector<std::vector<mock::vec>>> outs;  // config -> run -> output values
  for (const auto& c : configs) {
    tfg::campaign::config_result res;
    res.config = c;
    write_current(dir, r, c);
    const auto t = std::chrono::steady_clock::now();
    try {
      if (c != "eager_op_by_op" && c != "opt") throw std::invalid_argument("unknown configuration " + c);
      for (const auto& x : in) {
        const auto values = eval(m, x, c);
        auto& o = outs[c].emplace_back();
        for (auto e : m.graph.graph_outputs()) o.push_back(values[graph::index(e)]);
      }
      res.ok = true;
    } catch (const std::exception& e) {
      res.error = e.what();
      outs.erase(c);
    }
    res.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
    rep.results.push_back(res);
  }
  // opt against its reference: the worst verdict, when it is a finding or both failed.
  if (const auto* a = rep.result("eager_op_by_op"), *b = rep.result("opt"); a && b) {
    oracle::verdict worst;
    worst.kind = oracle::verdict_kind::equal;
    if (!a->ok || !b->ok) {
      worst.kind = a->ok || b->ok ? oracle::verdict_kind::error_in_one : oracle::verdict_kind::error_in_both;
      worst.message = b->ok ? a->error : b->error;
    } else {
      for (std::size_t run = 0; run < in.size(); ++run)
        for (std::size_t k = 0; k < outs["eager_op_by_op"][run].size(); ++k) {
          auto v = compare(outs["eager_op_by_op"][run][k], outs["opt"][run][k]);
          if (v.kind > worst.kind || (v.kind == worst.kind && v.max_abs > worst.max_abs)) {
            worst = v;
            worst.input_index = run;
            worst.output_path = std::to_string(k);
          }
        }
    }
    worst.config_a = "eager_op_by_op";
    worst.config_b = "opt";
    if (worst.finding() || worst.kind == oracle::verdict_kind::error_in_both) rep.verdicts.push_back(worst);
  }
  // Trace labels: each node's kind and the sign class of its output on the first input.
  if (r.labels && !in.empty() && rep.result("eager_op_by_op") && rep.result("eager_op_by_op")->ok) {
    const auto values = eval(m, in[0], "eager_op_by_op");
    std::map<std::string, std::uint32_t> index;
    std::int64_t last = -1;
    for (auto n : order_of(m)) {
      const auto st = mock::state_of(values[graph::index(m.graph.outputs(n)[0])], 0);
      const std::string label = m.graph.data(n).op + (st.numbers.min >= 0 ? "+" : st.numbers.max <= 0 ? "-" : "+-");
      auto [it, fresh] = index.emplace(label, static_cast<std::uint32_t>(rep.labels.size()));
      if (fresh) rep.labels.push_back(label);
      if (last >= 0) rep.transitions.emplace_back(static_cast<std::uint32_t>(last), it->second);
      last = it->second;
    }
    std::sort(rep.transitions.begin(), rep.transitions.end());
    rep.transitions.erase(std::unique(rep.transitions.begin(), rep.transitions.end()), rep.transitions.end());
  }
  rep.ok = true;
  rep.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

static worker_reply describe(const worker_request& r) {
  worker_reply rep;
  rep.id = r.id;
  const auto m = mock::load_model(r.model);
  tfg::campaign::skeleton k;
  k.graph_inputs = static_cast<std::uint32_t>(m.graph.graph_inputs().size());
  std::map<std::uint32_t, std::pair<std::int32_t, std::uint32_t>> where;  // edge -> (position, slot)
  for (std::uint32_t i = 0; i < k.graph_inputs; ++i) where[graph::index(m.graph.graph_inputs()[i])] = {-1, i};
  std::int32_t pos = 0;
  for (auto n : order_of(m)) {
    tfg::campaign::skeleton::node x;
    x.kind = m.graph.data(n).op;
    for (auto e : m.graph.inputs(n)) x.inputs.push_back(where.at(graph::index(e)));
    x.tensor_outputs = {1};
    where[graph::index(m.graph.outputs(n)[0])] = {pos++, 0};
    k.nodes.push_back(std::move(x));
  }
  std::size_t i = 0;
  for (auto e : m.graph.graph_outputs()) {
    const auto [p, s] = where.at(graph::index(e));
    k.outputs.push_back({std::to_string(i++), p, s});
  }
  rep.structure = std::move(k);
  rep.ok = true;
  return rep;
}

/// trace: each node under a and b on a's values of its inputs; the first whose outputs differ.
static worker_reply trace(const worker_request& r, const std::filesystem::path& dir) {
  worker_reply rep;
  rep.id = r.id;
  const auto m = mock::load_model(r.model);
  const auto in = mock::load_inputs_file(r.inputs);
  if (r.input >= in.size()) throw std::invalid_argument("no profiling input " + std::to_string(r.input));
  write_current(dir, r, r.config_b);
  const auto values = eval(m, in[r.input], r.config_a);
  tfg::campaign::located l;
  l.runs = 3;
  l.note = "no edge differs";
  std::int64_t pos = 0;
  for (auto n : order_of(m)) {
    const auto args = mock::node_args(m, n, values);
    oracle::verdict v;
    try {
      v = compare(eval_node(m, n, args, r.config_a), eval_node(m, n, args, r.config_b));
    } catch (const std::exception& e) {
      v.kind = oracle::verdict_kind::error_in_one;
      v.message = e.what();
    }
    if (v.finding()) {
      v.config_a = r.config_a;
      v.config_b = r.config_b;
      l.position = pos;
      l.op = m.graph.data(n).op;
      l.inputs = input_classes(m, n, values, &l.states);
      l.divergence = v;
      l.note.clear();
      break;
    }
    ++pos;
  }
  rep.found.push_back(std::move(l));
  rep.ok = true;
  return rep;
}

/// cut: the model cut at the given nodes (their outputs become its outputs), under b (and a
/// unless only_b); per cut edge whether b's value differs from a's.
static worker_reply cut(const worker_request& r, const std::filesystem::path& dir) {
  worker_reply rep;
  rep.id = r.id;
  const auto m = mock::load_model(r.model);
  const auto in = mock::load_inputs_file(r.inputs);
  if (r.input >= in.size() || r.cut.empty()) throw std::invalid_argument("a cut needs an input and edges");
  const auto order = order_of(m);
  std::vector<char> cone(m.graph.node_capacity(), 0);
  std::vector<graph::node_id> stack;
  for (const auto& c : r.cut) {
    if (c.position >= order.size()) throw std::invalid_argument("cut position out of range");
    stack.push_back(order[c.position]);
  }
  while (!stack.empty()) {
    const auto n = stack.back();
    stack.pop_back();
    if (cone[graph::index(n)]) continue;
    cone[graph::index(n)] = 1;
    for (auto e : m.graph.inputs(n))
      if (auto p = m.graph.producer(e); p != graph::no_node) stack.push_back(p);
  }
  tfg::campaign::located l;
  const auto first = order[r.cut.front().position];
  l.position = r.cut.front().position;
  l.op = m.graph.data(first).op;
  for (const auto& c : r.cut) l.kinds.push_back(m.graph.data(order[c.position]).op);
  std::vector<mock::vec> a;
  if (!r.only_b) {
    write_current(dir, r, r.config_a);
    a = eval(m, in[r.input], r.config_a, cone);
    l.inputs = input_classes(m, first, a, &l.states);
    ++l.runs;
  }
  write_current(dir, r, r.config_b);
  ++l.runs;
  std::vector<mock::vec> b;
  std::string error;
  try {
    b = eval(m, in[r.input], r.config_b, cone);
  } catch (const std::exception& e) {
    error = e.what();
  }
  l.divergence.kind = oracle::verdict_kind::equal;
  for (const auto& c : r.cut) {
    const auto e = m.graph.outputs(order[c.position])[0];
    oracle::verdict v;
    if (!error.empty()) {
      v.kind = oracle::verdict_kind::error_in_one;
      v.message = error;
    } else if (!r.only_b) {
      v = compare(a[graph::index(e)], b[graph::index(e)]);
    }
    l.diverges.push_back(v.finding() ? 1 : 0);
    if (v.finding() && !l.divergence.finding()) {
      l.divergence = v;
      l.divergence.config_a = r.config_a;
      l.divergence.config_b = r.config_b;
    }
  }
  rep.found.push_back(std::move(l));
  rep.ok = true;
  return rep;
}

int main(int argc, char** argv) {
  std::filesystem::path dir;
  if (argc < 2 || std::string(argv[1]) != "worker") {
    std::fprintf(stderr, "usage: tfg_mock_worker worker --dir DIR\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--dir") dir = argv[i + 1];
  tfg::campaign::install_crash_handler();
  tfg::campaign::worker_channel ch;
  if (!ch.valid()) {
    std::fprintf(stderr, "tfg_mock_worker: not started by tfg::campaign::worker::spawn\n");
    return 2;
  }
  using tfg::campaign::request_op;
  while (auto line = ch.next_request()) {
    worker_reply rep;
    const auto req = tfg::campaign::parse_request(*line);
    if (!req) {
      rep.error = req.error();
      ch.reply(tfg::campaign::to_line(rep));
      continue;
    }
    rep.id = req->id;
    try {
      switch (req->op) {
        case request_op::ping:
          rep.ok = true;
          rep.pid = ::getpid();
          break;
        case request_op::run: rep = run(*req, dir); break;
        case request_op::describe: rep = describe(*req); break;
        case request_op::trace: rep = trace(*req, dir); break;
        case request_op::cut: rep = cut(*req, dir); break;
        case request_op::nan_check: rep.error = "the mock worker serves no nan_check (no NaN-propagation rules)"; break;
      }
    } catch (const std::exception& e) {
      rep.ok = false;
      rep.error = e.what();
    }
    ch.reply(tfg::campaign::to_line(rep));
  }
  return 0;
}
