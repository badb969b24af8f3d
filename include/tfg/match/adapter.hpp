#pragma once
/// \file
/// The backend adapter: the only way the matcher sees a model. A backend (LibTorch, a mock)
/// provides a type modelling `match_adapter`; everything in `tfg::match` is generic over it.
///
/// Vocabulary:
///  * `attr_value` — a constant, non-tensor argument value, as TorchScript holds it
///    (None, bool, int, float, string, int list, float list);
///  * `arg_view` — one schema argument of a node: an edge, a constant, or a list assembled
///    from edges and/or constants (the tensors of `aten::cat`, the sizes of `aten::view`);
///  * `symbol_table` — interns op-kind names ("aten::relu") into dense ids, shared by the
///    adapter and the compiler so that op names in patterns compile to the ids the adapter
///    reports.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tfg/graph/concepts.hpp"
#include "tfg/graph/ids.hpp"
#include "tfg/state/tensor_state.hpp"

namespace tfg::match {

using graph::edge_id;
using graph::node_id;

/// A constant argument value. `std::monostate` is TorchScript's None. Dtypes, layouts,
/// memory formats and devices are the DSL's words (dsl/spec.md: "f32", "strided",
/// "channels_last_format", "cpu", "cuda:0"): the adapter normalises whatever codes its backend
/// uses, so nothing in the core knows them. Op names are strings too.
using attr_value = std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                                std::vector<double>>;

/// One schema argument of a node, in schema order.
struct arg_view {
  enum class form : std::uint8_t {
    edge,      ///< a value produced at run time (an edge of the graph): `edge`
    constant,  ///< a constant non-tensor attribute: `value` (None is a constant monostate)
    list,      ///< a list (prim::ListConstruct) of edges and/or constants: `items`
    other,     ///< anything the adapter cannot express (matches only `_` and `...`)
  };
  form how = form::other;
  edge_id edge = graph::no_edge;
  attr_value value;
  std::span<const arg_view> items;  ///< list items; storage owned by the adapter

  [[nodiscard]] bool is_none() const noexcept {
    return how == form::constant && std::holds_alternative<std::monostate>(value);
  }
};

/// Interns op-kind names. Symbol 0 is reserved for "no op" (the producer of a graph input,
/// an unknown name). Not thread-safe for `intern`; `find`/`name` are safe concurrently with
/// each other. Names are stable for the table's life.
class symbol_table {
 public:
  symbol_table() { names_.emplace_back(); }

  /// The id of `name`, adding it if new. Amortised O(|name|).
  std::uint32_t intern(std::string_view name) {
    if (const auto it = ids_.find(name); it != ids_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back(name);
    ids_.emplace(std::string_view(names_.back()), id);
    return id;
  }
  /// The id of `name`, or 0 when it was never interned.
  [[nodiscard]] std::uint32_t find(std::string_view name) const noexcept {
    const auto it = ids_.find(name);
    return it == ids_.end() ? 0 : it->second;
  }
  /// The name of `id` ("" for 0). Precondition: `id < size()`.
  [[nodiscard]] std::string_view name(std::uint32_t id) const noexcept { return names_[id]; }
  [[nodiscard]] std::size_t size() const noexcept { return names_.size(); }

 private:
  std::deque<std::string> names_;  // deque: stable addresses for the string_view keys
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

/// What the matcher needs from a backend. For an adapter `a`, a node `n` and an edge `e`
/// (live ids of `a.graph()`):
///
///  * `a.graph()` — the tensor flow graph (`tfg::graph::tensor_graph`). `consumers(e)` must
///    list uses in topological order of the consumer nodes (a pattern takes the first
///    embedding in that order); `inputs(n)` are the node's edge inputs in any order.
///  * `a.op_kind(n)` — the node's kind, "ns::name" ("aten::_convolution", "prim::Constant").
///  * `a.op_symbol(n)` — `symbols.intern(a.op_kind(n))` for the `symbol_table` the operators
///    were compiled with; O(1) (precompute it).
///  * `a.arg_count(n)`, `a.arg(n, i)` for `i < arg_count(n)` — the node's schema arguments
///    in order, including trailing defaults, as `arg_view`s. Constant arguments are folded
///    (a `prim::Constant` producer is not shown as an edge); lists built by
///    `prim::ListConstruct` are shown as `form::list`. `arg` should return a reference to a
///    precomputed `arg_view` (it is read for every pattern probe; returning by value works
///    but costs a copy). Every `form::edge` argument is one of `inputs(n)`.
///  * `a.profile(e)` — F(e): one `tensor_state` per profiling input, in input order. `runs`
///    is empty for an edge that was not profiled. The reference stays valid as long as `a`.
///
/// All members are const, non-throwing in practice, and O(1) apart from the graph's ranges.
template <class A>
concept match_adapter = requires(const A& a, node_id n, edge_id e, std::size_t i) {
  requires graph::tensor_graph<std::remove_cvref_t<decltype(a.graph())>>;
  { a.op_kind(n) } -> std::convertible_to<std::string_view>;
  { a.op_symbol(n) } -> std::convertible_to<std::uint32_t>;
  { a.arg_count(n) } -> std::convertible_to<std::size_t>;
  { a.arg(n, i) } -> std::convertible_to<const arg_view&>;
  { a.profile(e) } -> std::convertible_to<const state::edge_profile&>;
};

}  // namespace tfg::match
