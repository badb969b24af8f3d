#pragma once
/// \file
/// `mock_adapter`: a `match_adapter` over a `flow_graph<mock_node, mock_edge>` with op names,
/// schema arguments and hand-set tensor states. Used by the tests and the benchmark; it also
/// documents, in the small, what a backend adapter provides.
///
///     tfg::match::symbol_table syms;
///     tfg::match::mock_adapter m(syms);
///     auto a = m.add_input(mock_adapter::tensor(state::dtype::f32, {2, 3}));
///     auto x = m.add_node("aten::view", {mock_adapter::edge(a), mock_adapter::constant(
///                            std::vector<std::int64_t>{3, 2})}, 1)[0];
///     m.alias(a, x);                      // x is a view of a: same storage group
///     m.add_output(x);

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tfg/graph/flow_graph.hpp"
#include "tfg/match/adapter.hpp"

namespace tfg::match {

struct mock_node {
  std::string op;
  std::uint32_t symbol = 0;
  std::vector<arg_view> args;
};

struct mock_edge {
  state::edge_profile profile;
};

/// See the file comment. Not copyable (list arguments point into the adapter's storage).
class mock_adapter {
 public:
  using graph_type = graph::flow_graph<mock_node, mock_edge>;

  explicit mock_adapter(symbol_table& symbols) : symbols_(&symbols) {}
  mock_adapter(const mock_adapter&) = delete;
  mock_adapter& operator=(const mock_adapter&) = delete;

  // ---- argument builders -------------------------------------------------------------------

  static arg_view edge(edge_id e) {
    arg_view a;
    a.how = arg_view::form::edge;
    a.edge = e;
    return a;
  }
  static arg_view constant(attr_value v) {
    arg_view a;
    a.how = arg_view::form::constant;
    a.value = std::move(v);
    return a;
  }
  static arg_view none() { return constant(std::monostate{}); }
  /// A list argument. The items live in process-wide storage (test and benchmark use only).
  static arg_view list(std::vector<arg_view> items) {
    static std::deque<std::vector<arg_view>> storage;
    arg_view a;
    a.how = arg_view::form::list;
    a.items = storage.emplace_back(std::move(items));
    return a;
  }

  // ---- states ------------------------------------------------------------------------------

  /// A contiguous tensor with private storage, values in [-1, 1], no NaN/Inf.
  static state::tensor_state tensor(state::dtype t, std::vector<std::int64_t> shape) {
    state::tensor_state s;
    s.kind = state::value_kind::tensor;
    s.type = t;
    s.shape = std::move(shape);
    s.strides.assign(s.shape.size(), 1);
    std::int64_t n = 1;
    for (std::size_t i = s.shape.size(); i-- > 0;) {
      s.strides[i] = n;
      n *= s.shape[i];
    }
    s.numel = n;
    s.numbers.min = -1;
    s.numbers.max = 1;
    s.numbers.mean = 0;
    s.numbers.content_hash = 0x9e3779b97f4a7c15ull ^ static_cast<std::uint64_t>(n);
    return s;
  }
  /// A scalar (int) edge state.
  static state::tensor_state scalar_int(std::int64_t v) {
    state::tensor_state s;
    s.kind = state::value_kind::integer;
    s.scalar = static_cast<double>(v);
    return s;
  }

  // ---- building ----------------------------------------------------------------------------

  /// A graph input with one state per profiling run; storage groups are assigned fresh.
  edge_id add_input(std::vector<state::tensor_state> runs) {
    const auto e = graph_.add_input(mock_edge{});
    set_runs(e, std::move(runs));
    return e;
  }
  edge_id add_input(state::tensor_state s) { return add_input(std::vector<state::tensor_state>{std::move(s)}); }

  /// A node of kind `op` with schema arguments `args`, producing `outputs` edges (without
  /// states: set them with `set_runs`). Returns the output edges.
  std::vector<edge_id> add_node(std::string_view op, std::vector<arg_view> args, std::size_t outputs = 1) {
    std::vector<edge_id> ins;
    for (auto& a : args) resolve(a, ins);
    mock_node d{std::string(op), symbols_->intern(op), std::move(args)};
    const auto n = graph_.add_node(std::move(d), std::span<const edge_id>(ins), std::vector<mock_edge>(outputs));
    const auto outs = graph_.outputs(n);
    return {outs.begin(), outs.end()};
  }
  /// A node with one output whose state (per run) is `runs`.
  edge_id add_node(std::string_view op, std::vector<arg_view> args, std::vector<state::tensor_state> runs) {
    const auto e = add_node(op, std::move(args), 1)[0];
    set_runs(e, std::move(runs));
    return e;
  }

  void add_output(edge_id e) { graph_.add_output(e); }

  /// Sets F(e); each run gets a fresh, private storage group.
  void set_runs(edge_id e, std::vector<state::tensor_state> runs) {
    for (auto& s : runs) s.storage_group = next_group_++;
    graph_.data(e).profile.runs = std::move(runs);
  }
  /// Makes `view` share `base`'s storage in every run (as a view does): same storage group,
  /// and `storage_sharers` of every edge of the group incremented.
  void alias(edge_id base, edge_id view) {
    auto& b = graph_.data(base).profile.runs;
    auto& v = graph_.data(view).profile.runs;
    for (std::size_t r = 0; r < b.size() && r < v.size(); ++r) {
      v[r].storage_group = b[r].storage_group;
      std::uint32_t const n = b[r].storage_sharers + 1;
      for (const auto e : graph_.edges()) {
        auto& rs = graph_.data(e).profile.runs;
        if (r < rs.size() && rs[r].storage_group == b[r].storage_group) rs[r].storage_sharers = n;
      }
    }
  }
  state::edge_profile& profile_mut(edge_id e) { return graph_.data(e).profile; }

  // ---- match_adapter -----------------------------------------------------------------------

  [[nodiscard]] const graph_type& graph() const noexcept { return graph_; }
  [[nodiscard]] std::string_view op_kind(node_id n) const { return graph_.data(n).op; }
  [[nodiscard]] std::uint32_t op_symbol(node_id n) const { return graph_.data(n).symbol; }
  [[nodiscard]] std::size_t arg_count(node_id n) const { return graph_.data(n).args.size(); }
  [[nodiscard]] const arg_view& arg(node_id n, std::size_t i) const { return graph_.data(n).args[i]; }
  [[nodiscard]] const state::edge_profile& profile(edge_id e) const { return graph_.data(e).profile; }

  [[nodiscard]] symbol_table& symbols() const noexcept { return *symbols_; }

 private:
  static void resolve(const arg_view& a, std::vector<edge_id>& ins) {
    if (a.how == arg_view::form::edge) ins.push_back(a.edge);
    if (a.how == arg_view::form::list)
      for (const auto& it : a.items) resolve(it, ins);
  }

  symbol_table* symbols_;
  graph_type graph_;
  std::uint32_t next_group_ = 0;
};

static_assert(match_adapter<mock_adapter>);

}  // namespace tfg::match
