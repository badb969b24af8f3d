#pragma once
/// \file
/// `tfg::campaign::mock::backend`: the smallest backend a campaign runs on, without LibTorch.
/// Copy it to plug in your own framework: every member below is one operation of the
/// `tfg::campaign::backend` concept (tfg/campaign/backend.hpp), implemented as simply as the
/// concept allows. The core suites run `tfg::campaign::loop<mock::backend>` with it
/// (tests/campaign/test_loop_mock.cpp), and tests/campaign/mock_worker/mock_worker.cpp is the
/// matching execution worker (the program `options::worker_exe` names).
///
/// The "framework" is a tiny arithmetic one: a model is a dataflow graph over float vectors of
/// one fixed `width`, evaluated in double. Node kinds (all elementwise, one output each):
///
///     mock::const(c)      the constant vector c (not executed: a constant, `executes` false)
///     mock::add(a, b)     a + b   (b an edge or a constant)
///     mock::mul(a, b)     a * b   (b an edge or a constant)
///     mock::neg(a)  mock::relu(a)  mock::tanh(a)  mock::identity(a)  mock::softsign(a)
///
/// A model file (the campaign's current.json, corpus/N.json: layout.hpp with this backend's
/// `model_extension`) is JSON:
///
///     {"mock": 1, "width": 4, "inputs": 1,
///      "nodes": [{"op": "mock::relu", "args": ["%0"]}, {"op": "mock::mul", "args": ["%1", 2.0]}],
///      "outputs": ["%2"]}
///
/// Values are numbered: %0 .. %(inputs-1) are the graph inputs, then node j defines
/// %(inputs+j); an argument is a value ("%k", defined earlier) or a number (a constant).
/// Profiling inputs (inputs.json) are JSON too: {"runs": [[[x0, x1, ...] per graph input] per run]}.
///
/// What each operation does, honestly: `profile` evaluates the graph on every profiling input
/// and records F(e) of every edge (state::tensor_state: f64, rank 1, the values' summary);
/// `instantiate` rewrites a copy of the graph as the compiled DSL operator's replacement says
/// (new nodes, rewires, deletes, one graph::rewrite_transaction); `check` profiles the mutant and
/// evaluates the deferred constraints and R(v) of every node that reads a new value;
/// `influence` is a finite-difference sensitivity of the outputs to each edge.
///
/// Limitations of `instantiate` (it fails with a `failure` naming them): shape-adaptation
/// helpers and activation forms (`tfg::...`), `prim::ListConstruct`, list and non-numeric
/// arguments (strings, dtype words, int lists), and op kinds outside the list above. Every
/// other replacement feature (parameters, op-typed parameters, expressions, `arg(%y, i)`,
/// `rewire consumers`, `rewire consumer(%x, i)`, `delete`) is supported.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/backend.hpp"
#include "tfg/graph/flow_graph.hpp"
#include "tfg/match/compile.hpp"
#include "tfg/match/evaluate.hpp"
#include "tfg/metrics/metrics.hpp"
#include "tfg/util/atomic_file.hpp"

namespace tfg::campaign::mock {

// ---- the framework: node kinds, models, evaluation ------------------------------------------

/// One node kind: its name and how many arguments it takes.
struct op_info {
  std::string_view name;
  std::size_t arity;
};
inline constexpr op_info ops[] = {{"mock::const", 1}, {"mock::add", 2},  {"mock::mul", 2},      {"mock::neg", 1},
                                  {"mock::relu", 1},  {"mock::tanh", 1}, {"mock::identity", 1}, {"mock::softsign", 1}};

[[nodiscard]] inline const op_info* find_op(std::string_view name) noexcept {
  for (const auto& o : ops)
    if (o.name == name) return &o;
  return nullptr;
}

/// One argument of a node: input slot `input` of the node (>= 0), or the constant `value`.
struct arg {
  std::int32_t input = -1;
  double value = 0;
};
struct node_data {
  std::string op;
  std::vector<arg> args;
};
struct edge_data {};
using graph_type = graph::flow_graph<node_data, edge_data>;
using vec = std::vector<double>;

struct model {
  graph_type graph;
  std::size_t width = 4;
};

/// Profiling inputs: per run, one vector per graph input.
using inputs = std::vector<std::vector<vec>>;

/// The reference semantics of one node, elementwise on `width`-long vectors. Throws
/// std::invalid_argument for an unknown kind or a wrong arity.
[[nodiscard]] inline vec evaluate_node(std::string_view op, const std::vector<vec>& args, std::size_t width) {
  const auto* info = find_op(op);
  if (!info) throw std::invalid_argument("mock: unknown node kind " + std::string(op));
  if (args.size() != info->arity)
    throw std::invalid_argument("mock: " + std::string(op) + " takes " + std::to_string(info->arity) + " arguments");
  vec out(width);
  for (std::size_t i = 0; i < width; ++i) {
    const double a = args[0][i], b = args.size() > 1 ? args[1][i] : 0.0;
    if (op == "mock::const" || op == "mock::identity") out[i] = a;
    else if (op == "mock::add") out[i] = a + b;
    else if (op == "mock::mul") out[i] = a * b;
    else if (op == "mock::neg") out[i] = -a;
    else if (op == "mock::relu") out[i] = a > 0 ? a : 0.0;
    else if (op == "mock::tanh") out[i] = std::tanh(a);
    else if (op == "mock::softsign") out[i] = a / (1 + std::fabs(a));
  }
  return out;
}

/// The argument vectors of node `n` given the values of its input edges (by edge index).
[[nodiscard]] inline std::vector<vec> node_args(const model& m, graph::node_id n, const std::vector<vec>& values) {
  std::vector<vec> args;
  const auto ins = m.graph.inputs(n);
  for (const auto& a : m.graph.data(n).args)
    args.push_back(a.input >= 0 ? values[graph::index(ins[static_cast<std::size_t>(a.input)])] : vec(m.width, a.value));
  return args;
}

/// Evaluates `m` on one profiling input with `eval(node, args)` computing each node; returns
/// the value of every edge by edge index.
template <class Eval>
[[nodiscard]] std::vector<vec> run_graph(const model& m, const std::vector<vec>& in, Eval&& eval) {
  std::vector<vec> values(m.graph.edge_capacity());
  const auto gi = m.graph.graph_inputs();
  if (in.size() != gi.size())
    throw std::invalid_argument("mock: the model takes " + std::to_string(gi.size()) + " inputs, given " +
                                std::to_string(in.size()));
  for (std::size_t i = 0; i < gi.size(); ++i) {
    if (in[i].size() != m.width)
      throw std::invalid_argument("mock: an input is not " + std::to_string(m.width) + " wide");
    values[graph::index(gi[i])] = in[i];
  }
  for (auto n : m.graph.topological_order())
    values[graph::index(m.graph.outputs(n)[0])] = eval(n, node_args(m, n, values));
  return values;
}
[[nodiscard]] inline std::vector<vec> run_reference(const model& m, const std::vector<vec>& in) {
  return run_graph(m, in, [&](graph::node_id n, const std::vector<vec>& a) {
    return evaluate_node(m.graph.data(n).op, a, m.width);
  });
}

// ---- files --------------------------------------------------------------------------------

/// Reads a model file; throws std::runtime_error saying what is wrong.
[[nodiscard]] inline model load_model(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  auto bad = [&](const std::string& why) { return std::runtime_error(path.string() + ": not a mock model: " + why); };
  if (j.is_discarded() || !j.is_object() || j.value("mock", 0) != 1) throw bad("no {\"mock\": 1, ...} object");
  model m;
  m.width = j.value("width", std::size_t{4});
  if (m.width == 0) throw bad("width 0");
  std::vector<graph::edge_id> values;
  for (std::size_t i = 0; i < j.value("inputs", std::size_t{0}); ++i) values.push_back(m.graph.add_input({}));
  auto value_of = [&](const nlohmann::json& v) -> graph::edge_id {
    const auto s = v.get<std::string>();
    if (s.size() < 2 || s[0] != '%') throw bad("`" + s + "` is not a value");
    const auto k = std::stoul(s.substr(1));
    if (k >= values.size()) throw bad(s + " is used before it is defined");
    return values[k];
  };
  try {
    for (const auto& jn : j.at("nodes")) {
      node_data d{jn.at("op").get<std::string>(), {}};
      const auto* info = find_op(d.op);
      if (!info) throw bad("unknown node kind " + d.op);
      std::vector<graph::edge_id> ins;
      for (const auto& a : jn.at("args")) {
        if (a.is_number()) {
          d.args.push_back({-1, a.get<double>()});
        } else {
          d.args.push_back({static_cast<std::int32_t>(ins.size()), 0});
          ins.push_back(value_of(a));
        }
      }
      if (d.args.size() != info->arity) throw bad(d.op + " takes " + std::to_string(info->arity) + " arguments");
      const auto n = m.graph.add_node(std::move(d), std::span<const graph::edge_id>(ins), std::vector<edge_data>(1));
      values.push_back(m.graph.outputs(n)[0]);
    }
    for (const auto& o : j.at("outputs")) m.graph.add_output(value_of(o));
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  return m;
}

/// The model as a file's JSON (nodes in topological order, values renumbered).
[[nodiscard]] inline std::string model_json(const model& m) {
  std::vector<std::int64_t> number(m.graph.edge_capacity(), -1);
  std::int64_t next = 0;
  for (auto e : m.graph.graph_inputs()) number[graph::index(e)] = next++;
  nlohmann::json nodes = nlohmann::json::array();
  auto name = [&](graph::edge_id e) { return "%" + std::to_string(number[graph::index(e)]); };
  for (auto n : m.graph.topological_order()) {
    const auto& d = m.graph.data(n);
    nlohmann::json args = nlohmann::json::array();
    for (const auto& a : d.args)
      if (a.input >= 0) args.push_back(name(m.graph.inputs(n)[static_cast<std::size_t>(a.input)]));
      else args.push_back(a.value);
    nodes.push_back({{"op", d.op}, {"args", std::move(args)}});
    number[graph::index(m.graph.outputs(n)[0])] = next++;
  }
  nlohmann::json outs = nlohmann::json::array();
  for (auto e : m.graph.graph_outputs()) outs.push_back(name(e));
  return nlohmann::json{
      {"mock", 1}, {"width", m.width}, {"inputs", m.graph.graph_inputs().size()}, {"nodes", nodes}, {"outputs", outs}}
      .dump(1);
}

[[nodiscard]] inline inputs load_inputs_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("runs"))
    throw std::runtime_error(path.string() + ": not mock inputs ({\"runs\": ...})");
  return j.at("runs").get<inputs>();
}

// ---- F(e) ---------------------------------------------------------------------------------

/// F(e) of one value: a contiguous f64 vector with private storage.
[[nodiscard]] inline state::tensor_state state_of(const vec& v, std::uint32_t group) {
  state::tensor_state s;
  s.type = state::dtype::f64;
  s.shape = {static_cast<std::int64_t>(v.size())};
  s.strides = {1};
  s.numel = static_cast<std::int64_t>(v.size());
  s.storage_nbytes = s.numel * 8;
  s.storage_group = group;
  auto& x = s.numbers;
  double sum = 0;
  std::size_t finite = 0;
  std::uint64_t h = 1469598103934665603ull;
  for (double d : v) {
    const auto* p = reinterpret_cast<const unsigned char*>(&d);
    for (std::size_t i = 0; i < sizeof d; ++i) h = (h ^ p[i]) * 1099511628211ull;
    if (std::isnan(d)) ++x.nan_count;
    else if (std::isinf(d)) ++x.inf_count;
    else {
      x.min = finite ? std::min(x.min, d) : d;
      x.max = finite ? std::max(x.max, d) : d;
      sum += d;
      ++finite;
    }
    x.zero_count += d == 0;
  }
  if (finite) x.mean = sum / static_cast<double>(finite);
  x.content_hash = h;
  return s;
}

/// F(e) of every edge (by edge index) and the outputs, per profiling input.
struct profile {
  std::vector<state::edge_profile> edges;
  std::vector<std::vector<vec>> outputs;  ///< [run][graph output]
};

[[nodiscard]] inline profile profile_model(const model& m, const inputs& in) {
  profile p;
  p.edges.resize(m.graph.edge_capacity());
  for (const auto& run : in) {
    const auto values = run_reference(m, run);
    std::uint32_t group = 0;
    for (auto e : m.graph.edges()) p.edges[graph::index(e)].runs.push_back(state_of(values[graph::index(e)], group++));
    auto& outs = p.outputs.emplace_back();
    for (auto e : m.graph.graph_outputs()) outs.push_back(values[graph::index(e)]);
  }
  return p;
}

// ---- the matcher's view -------------------------------------------------------------------

/// The `match::match_adapter` over a mock model and its profile (both must outlive it).
class adapter {
 public:
  adapter(const model& m, const profile& p, match::symbol_table& symbols) : m_(&m), p_(&p) {
    symbol_.resize(m.graph.node_capacity());
    args_.resize(m.graph.node_capacity());
    for (auto n : m.graph.nodes()) {
      const auto& d = m.graph.data(n);
      symbol_[graph::index(n)] = symbols.intern(d.op);
      for (const auto& a : d.args) {
        match::arg_view v;
        if (a.input >= 0) {
          v.how = match::arg_view::form::edge;
          v.edge = m.graph.inputs(n)[static_cast<std::size_t>(a.input)];
        } else {
          v.how = match::arg_view::form::constant;
          v.value = a.value;
        }
        args_[graph::index(n)].push_back(std::move(v));
      }
    }
  }
  [[nodiscard]] const graph_type& graph() const noexcept { return m_->graph; }
  [[nodiscard]] std::string_view op_kind(graph::node_id n) const { return m_->graph.data(n).op; }
  [[nodiscard]] std::uint32_t op_symbol(graph::node_id n) const { return symbol_[graph::index(n)]; }
  [[nodiscard]] std::size_t arg_count(graph::node_id n) const { return args_[graph::index(n)].size(); }
  [[nodiscard]] const match::arg_view& arg(graph::node_id n, std::size_t i) const { return args_[graph::index(n)][i]; }
  [[nodiscard]] const state::edge_profile& profile(graph::edge_id e) const {
    static const state::edge_profile none;
    return graph::index(e) < p_->edges.size() ? p_->edges[graph::index(e)] : none;
  }

 private:
  const model* m_;
  const mock::profile* p_;
  std::vector<std::uint32_t> symbol_;
  std::vector<std::vector<match::arg_view>> args_;
};
static_assert(match::match_adapter<adapter>);

// ---- mutants ------------------------------------------------------------------------------

struct failure {
  match::reject_stage stage = match::reject_stage::internal;
  std::string message;
};

struct mutant {
  model m;
  std::vector<graph::node_id> added;                              ///< nodes the replacement added
  std::unordered_map<std::uint32_t, graph::edge_id> value_edges;  ///< replacement slot -> edge
  profile probe;                                                  ///< filled by check
};

/// Rewrites a copy of `source` as `op`'s replacement says for bindings `b` (see the file
/// comment for what is supported).
[[nodiscard]] inline std::variant<mutant, failure> instantiate(const model& source, const adapter& ad,
                                                               const match::compiled_operator& op,
                                                               const match::bindings& b,
                                                               const match::symbol_table& symbols,
                                                               match::workspace& ws) {
  using match::template_arg;
  auto fail = [&](const std::string& why) { return failure{match::reject_stage::internal, op.name + ": " + why}; };
  mutant out;
  out.m = source;
  auto& g = out.m.graph;
  auto tx = g.begin_rewrite();
  std::unordered_map<std::uint32_t, graph::value_ref> staged;  // replacement slot -> value
  auto number = [](const match::attr_value& v) -> std::optional<double> {
    if (const auto* d = std::get_if<double>(&v)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    if (const auto* x = std::get_if<bool>(&v)) return *x ? 1.0 : 0.0;
    return std::nullopt;
  };
  for (const auto& rn : op.replacement.nodes) {
    std::string kind = rn.op;
    if (rn.op_param) {
      const auto& p = b.params.at(*rn.op_param);
      if (const auto* id = std::get_if<std::int64_t>(&p))
        kind = std::string(symbols.name(static_cast<std::uint32_t>(*id)));
      else if (const auto* s = std::get_if<std::string>(&p)) kind = *s;
    }
    const auto* info = find_op(kind);
    if (!info || kind == "mock::const")
      return fail("the mock backend cannot build `" + kind + "` (helpers, lists and unknown kinds are not supported)");
    if (rn.args.size() != info->arity || rn.outputs.size() != 1)
      return fail(kind + " takes " + std::to_string(info->arity) + " arguments and defines one value");
    node_data d{kind, {}};
    std::vector<graph::value_ref> ins;
    auto add_edge = [&](graph::value_ref v) {
      d.args.push_back({static_cast<std::int32_t>(ins.size()), 0});
      ins.push_back(v);
    };
    for (const auto& t : rn.args) {
      std::optional<match::attr_value> constant;
      switch (t.k) {
        case template_arg::kind::value:
          if (t.slot < op.pattern_value_count) {
            if (b.values.at(t.slot) == graph::no_edge) return fail("an argument of " + kind + " is unbound");
            add_edge(b.values[t.slot]);
          } else if (auto it = staged.find(t.slot); it != staged.end()) {
            add_edge(it->second);
          } else {
            return fail("an argument of " + kind + " is not defined yet");
          }
          continue;
        case template_arg::kind::param: constant = b.params.at(t.slot); break;
        case template_arg::kind::constant: constant = t.constant; break;
        case template_arg::kind::expr:
          if (t.expr) constant = match::evaluate_value(*t.expr, op, ad, b, 0, ws);
          break;
        case template_arg::kind::forward: {
          const auto y = t.slot < op.pattern_value_count ? b.values.at(t.slot) : graph::no_edge;
          const auto n = y == graph::no_edge ? graph::no_node : ad.graph().producer(y);
          if (n == graph::no_node || t.index >= ad.arg_count(n)) return fail("arg(%, i) names no argument");
          const auto& av = ad.arg(n, t.index);
          if (av.how == match::arg_view::form::edge) {
            add_edge(av.edge);
            continue;
          }
          if (av.how == match::arg_view::form::constant) constant = av.value;
          break;
        }
      }
      const auto x = constant ? number(*constant) : std::nullopt;
      if (!x)
        return fail("an argument of " + kind + " is not a number or a value (the mock backend has no other kind)");
      d.args.push_back({-1, *x});
    }
    if (d.args.empty() || d.args[0].input < 0) return fail("the first argument of " + kind + " must be a value");
    staged.insert_or_assign(rn.outputs[0],
                            tx.output(tx.new_node(std::move(d), std::move(ins), std::vector<edge_data>(1)), 0));
  }
  auto target_of = [&](std::uint32_t slot) -> std::optional<graph::value_ref> {
    if (slot < op.pattern_value_count)
      return b.values.at(slot) == graph::no_edge ? std::nullopt : std::optional<graph::value_ref>(b.values[slot]);
    const auto it = staged.find(slot);
    return it == staged.end() ? std::nullopt : std::optional<graph::value_ref>(it->second);
  };
  for (const auto& rw : op.replacement.rewires) {
    const auto src = b.values.at(rw.source);
    const auto dst = target_of(rw.target);
    if (src == graph::no_edge || !dst) return fail("rewire of an unbound value");
    if (rw.all) {
      tx.replace_uses(src, *dst);
      continue;
    }
    if (!rw.which) return fail("rewire without a consumer");
    const auto uses = g.consumers(src);
    if (rw.which->k == template_arg::kind::value) {
      const auto e = b.values.at(rw.which->slot);
      const auto producer = e == graph::no_edge ? graph::no_node : g.producer(e);
      bool done = false;
      for (const auto& u : uses)
        if (u.node == producer) tx.rewire(u, *dst), done = true;
      if (!done) return fail("the named consumer does not read the rewired value");
      continue;
    }
    std::optional<match::attr_value> idx;
    if (rw.which->k == template_arg::kind::constant) idx = rw.which->constant;
    else if (rw.which->k == template_arg::kind::param) idx = b.params.at(rw.which->slot);
    else if (rw.which->expr) idx = match::evaluate_value(*rw.which->expr, op, ad, b, 0, ws);
    const auto* i = idx ? std::get_if<std::int64_t>(&*idx) : nullptr;
    if (!i || *i < 0 || static_cast<std::size_t>(*i) >= uses.size()) return fail("consumer index out of range");
    tx.rewire(uses[static_cast<std::size_t>(*i)], *dst);
  }
  for (auto slot : op.replacement.deletes) {
    const auto e = b.values.at(slot);
    if (e == graph::no_edge || g.producer(e) == graph::no_node) return fail("delete of a value no node produces");
    tx.remove_node(g.producer(e));
  }
  auto applied = tx.commit();
  if (!applied) return fail("rewrite rejected: " + applied.error().message);
  for (const auto& [slot, ref] : staged) out.value_edges[slot] = applied->edge(ref);
  out.added = applied->new_nodes;
  return out;
}

// ---- the backend --------------------------------------------------------------------------

/// See the file comment. Stateless but for the externs' binding (none are registered).
class backend {
 public:
  using model_type = model;
  using profile_type = mock::profile;
  using inputs_type = inputs;
  using mutant_type = mutant;
  using failure_type = failure;
  using adapter_type = mock::adapter;

  /// The campaign folder's model files are current.json, corpus/N.json, findings/ID/mutant.json.
  static constexpr std::string_view model_extension = ".json";

  /// Makes `mock::` an op namespace of the DSL in this process (as LibTorch's custom operator
  /// libraries are registered), so that operator files can name the mock's node kinds.
  backend() {
    auto& ns = dsl::extra_op_namespaces();
    if (std::find(ns.begin(), ns.end(), "mock") == ns.end()) ns.emplace_back("mock");
  }

  // models and inputs
  [[nodiscard]] model load(const std::filesystem::path& p) const { return load_model(p); }
  void save(const model& m, const std::filesystem::path& p) const { write_file_atomic(p, model_json(m)); }
  /// The inputs file when given, else two deterministic runs with values in [-1.5, 1.5].
  [[nodiscard]] inputs seed_inputs(const model& m, const std::filesystem::path&,
                                   const std::filesystem::path& in) const {
    if (!in.empty()) return load_inputs_file(in);
    inputs out(2);
    for (std::size_t r = 0; r < out.size(); ++r)
      for (std::size_t i = 0; i < m.graph.graph_inputs().size(); ++i) {
        vec v(m.width);
        for (std::size_t k = 0; k < m.width; ++k)
          v[k] = static_cast<double>(static_cast<int>((k + 2 * r + i) % 7) - 3) * 0.5;
        out[r].push_back(std::move(v));
      }
    return out;
  }
  [[nodiscard]] inputs load_inputs(const std::filesystem::path& p) const { return load_inputs_file(p); }
  void save_inputs(const inputs& in, const std::filesystem::path& p) const {
    write_file_atomic(p, nlohmann::json{{"runs", in}}.dump());
  }

  // the graph
  [[nodiscard]] static const graph_type& graph(const model& m) noexcept { return m.graph; }
  [[nodiscard]] static std::string_view kind(const model& m, graph::node_id n) { return m.graph.data(n).op; }
  [[nodiscard]] static bool executes(const model& m, graph::node_id n) { return m.graph.data(n).op != "mock::const"; }
  [[nodiscard]] static bool is_tensor_edge(const model&, graph::edge_id) noexcept { return true; }
  /// Output path "K" is the K-th graph output; "" all of them.
  [[nodiscard]] static std::vector<graph::edge_id> output_edges(const model& m, const std::string& path) {
    const auto outs = m.graph.graph_outputs();
    if (path.empty()) return {outs.begin(), outs.end()};
    const auto k = std::stoul(path);
    return k < outs.size() ? std::vector<graph::edge_id>{outs[k]} : std::vector<graph::edge_id>{};
  }

  // F(e) and influence
  [[nodiscard]] mock::profile profile(const model& m, const inputs& in) const { return profile_model(m, in); }
  [[nodiscard]] static const state::edge_profile* edge_profile(const mock::profile& p, graph::edge_id e) {
    return graph::index(e) < p.edges.size() && !p.edges[graph::index(e)].runs.empty() ? &p.edges[graph::index(e)]
                                                                                      : nullptr;
  }
  [[nodiscard]] static bool outputs_finite(const mock::profile& p) {
    for (const auto& run : p.outputs)
      for (const auto& v : run)
        for (double x : v)
          if (!std::isfinite(x)) return false;
    return true;
  }
  [[nodiscard]] static double output_excess(const mock::profile& a, const mock::profile& b, double atol, double rtol) {
    double worst = -1;
    for (std::size_t r = 0; r < a.outputs.size() && r < b.outputs.size(); ++r)
      for (std::size_t o = 0; o < a.outputs[r].size() && o < b.outputs[r].size(); ++o)
        for (std::size_t i = 0; i < a.outputs[r][o].size() && i < b.outputs[r][o].size(); ++i) {
          const double x = a.outputs[r][o][i], y = b.outputs[r][o][i];
          worst = std::max(worst, std::fabs(x - y) - (atol + rtol * std::fabs(x)));
        }
    return worst;
  }
  /// g(e): how much the outputs move per unit moved at e (finite difference on run 0).
  [[nodiscard]] std::vector<double> influence(const model& m, const inputs& in) const {
    std::vector<double> g(m.graph.edge_capacity(), std::numeric_limits<double>::quiet_NaN());
    if (in.empty()) return g;
    const auto base = run_reference(m, in[0]);
    constexpr double h = 1e-4;
    for (auto e : m.graph.edges()) {
      auto nudged = run_graph(m, in[0], [&](graph::node_id n, std::vector<vec> a) {
        for (std::size_t k = 0; k < a.size(); ++k)
          if (const auto& d = m.graph.data(n).args[k];
              d.input >= 0 && m.graph.inputs(n)[static_cast<std::size_t>(d.input)] == e)
            for (auto& x : a[k]) x = base[graph::index(e)][&x - a[k].data()] + h;
        return evaluate_node(m.graph.data(n).op, a, m.width);
      });
      double moved = 0;
      for (auto o : m.graph.graph_outputs())
        for (std::size_t i = 0; i < m.width; ++i)
          moved += std::fabs(nudged[graph::index(o)][i] - base[graph::index(o)][i]);
      g[graph::index(e)] = m.graph.is_graph_output(e) ? 1.0 : moved / (h * static_cast<double>(m.width));
    }
    return g;
  }

  // mutation through the match adapter
  [[nodiscard]] match::extern_registry externs() const { return {}; }
  void bind_externs(const model&, const mock::profile&) {}
  [[nodiscard]] mock::adapter adapter(const model& m, const mock::profile& p, match::symbol_table& s) const {
    return {m, p, s};
  }
  [[nodiscard]] std::variant<mutant, failure> instantiate(const model& m, const mock::adapter& a,
                                                          const match::compiled_operator& op, const match::bindings& b,
                                                          match::symbol_table& s, match::workspace& ws,
                                                          const inputs&) const {
    return mock::instantiate(m, a, op, b, s, ws);
  }
  /// Profiles the mutant (the probe), then the deferred constraints and R(v) of every node that
  /// reads a value the mutation added.
  [[nodiscard]] std::optional<failure> check(mutant& mu, const mock::adapter& a, const match::compiled_operator& op,
                                             const match::bindings& b, match::symbol_table& s,
                                             const match::requirement_table& req, const inputs& in,
                                             match::workspace& ws) const {
    try {
      mu.probe = profile_model(mu.m, in);
    } catch (const std::exception& e) {
      return failure{match::reject_stage::output, op.name + ": the mutant does not run: " + e.what()};
    }
    struct probe_of final : match::probe_source {
      const mutant& mu;
      explicit probe_of(const mutant& m) : mu(m) {}
      [[nodiscard]] const state::edge_profile* profile(std::uint32_t slot) const override {
        const auto it = mu.value_edges.find(slot);
        return it == mu.value_edges.end() ? nullptr : edge_profile(mu.probe, it->second);
      }
    } probe(mu);
    if (const auto st = match::evaluate_deferred(op, a, b, probe, ws); st != match::reject_stage::accepted)
      return failure{st, op.name + ": a constraint on the replacement's values does not hold"};
    const mock::adapter after(mu.m, mu.probe, s);
    std::unordered_set<std::uint32_t> readers;
    for (auto n : mu.added)
      for (auto e : mu.m.graph.outputs(n))
        for (const auto& u : mu.m.graph.consumers(e)) readers.insert(graph::index(u.node));
    for (auto r : readers)
      if (match::evaluate_requirement(req, after, graph::node_id{r}, ws) == match::requirement_outcome::fails)
        return failure{match::reject_stage::output,
                       op.name + ": " + mu.m.graph.data(graph::node_id{r}).op + " rejects its new input"};
    return std::nullopt;
  }
  [[nodiscard]] static model& mutant_model(mutant& mu) noexcept { return mu.m; }
  [[nodiscard]] static mock::profile& mutant_profile(mutant& mu) noexcept { return mu.probe; }
  [[nodiscard]] static std::span<const graph::node_id> added_nodes(const mutant& mu) noexcept { return mu.added; }

  // metrics and execution configurations
  /// Every executed kind, each tensor input's class and each (producer, consumer) pair.
  [[nodiscard]] metrics::observation observe(const model& m, const mock::profile& p) const {
    metrics::observation o;
    for (auto n : m.graph.nodes()) {
      const auto& d = m.graph.data(n);
      o.apis.push_back(d.op);
      for (const auto& a : d.args) {
        if (a.input < 0) continue;
        const auto e = m.graph.inputs(n)[static_cast<std::size_t>(a.input)];
        if (const auto* ep = edge_profile(p, e))
          if (auto c = metrics::input_class(ep->runs[0]))
            o.inputs.push_back({d.op, "arg" + std::to_string(a.input), *c});
        if (const auto q = m.graph.producer(e); q != graph::no_node) o.pairs.push_back({m.graph.data(q).op, d.op});
      }
    }
    return o;
  }
  [[nodiscard]] metrics::test_space metrics_space(std::span<const std::string>) const {
    metrics::test_space s;
    for (const auto& op : ops) {
      metrics::op_space o;
      o.name = std::string(op.name);
      o.produces_tensor = true;
      for (std::size_t i = 0; i < op.arity && op.name != "mock::const"; ++i)
        o.inputs.push_back("arg" + std::to_string(i));
      s.ops.push_back(std::move(o));
      s.apis.push_back(std::string(op.name));
    }
    s.finalize();
    return s;
  }
  [[nodiscard]] std::vector<std::string> requirement_universe(const std::filesystem::path&) const {
    std::vector<std::string> u;
    for (const auto& op : ops) u.emplace_back(op.name);
    return u;
  }
  /// The reference runs op by op with evaluate_node; `opt` is the worker's optimising executor.
  /// (The reference is called eager_op_by_op: the oracle's name for a campaign's reference.)
  [[nodiscard]] std::vector<config_desc> configs() const {
    return {{"eager_op_by_op", "", true, true, true}, {"opt", "eager_op_by_op", true, true, true}};
  }
  [[nodiscard]] bool device_available(std::string_view d) const { return d == "cpu"; }
};
static_assert(check_backend<backend>());

}  // namespace tfg::campaign::mock
