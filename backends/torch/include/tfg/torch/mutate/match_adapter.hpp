#pragma once
/// The LibTorch model as the matcher sees it (`tfg::match::match_adapter`): op kinds interned
/// into the operators' symbol table, schema arguments as backend-neutral views (dtype, memory
/// format and layout codes as the DSL's words), and F(e) from a profile. Built once per
/// profiled model, O(nodes + arguments).
#include "tfg/torch/linkage.hpp"
#include "tfg/match/adapter.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/torch/import/schema.hpp"

#include <deque>
#include <string>
#include <vector>

namespace tfg::torch {

/// Converts a constant argument; nullopt for values the DSL cannot express (they match `_`).
/// `kind` is the schema argument's real type: ints passed for a ScalarType, MemoryFormat or
/// Layout become the DSL's words.
[[nodiscard]] TFG_TORCH_DECL std::optional<match::attr_value> to_attr(const c10::IValue& v,
                                                                      c10::TypeKind kind = c10::TypeKind::AnyType);

class torch_match_adapter {
 public:
  /// `m`, `p` and `symbols` must outlive the adapter.
  torch_match_adapter(const model& m, const torch::profile& p, match::symbol_table& symbols) : m_(m), p_(p) {
    const auto& g = m.graph;
    kinds_.resize(g.node_capacity());
    symbols_.resize(g.node_capacity(), 0);
    args_.resize(g.node_capacity());
    for (auto n : g.nodes()) {
      const auto& d = g.data(n);
      const auto i = graph::index(n);
      kinds_[i] = d.name();
      symbols_[i] = symbols.intern(kinds_[i]);
      const auto inputs = g.inputs(n);
      auto& out = args_[i];
      out.reserve(d.args.size());
      const auto* schema = d.kind.is_prim() ? nullptr : schema_of(g, n);
      for (std::size_t k = 0; k < d.args.size(); ++k) {
        const auto kind =
            schema && k < schema->arguments().size() ? real_kind(schema->arguments()[k]) : c10::TypeKind::AnyType;
        out.push_back(view_of(d.args[k], inputs, kind));
      }
    }
  }

  [[nodiscard]] const graph_type& graph() const noexcept { return m_.graph; }
  [[nodiscard]] std::string_view op_kind(graph::node_id n) const { return kinds_[graph::index(n)]; }
  [[nodiscard]] std::uint32_t op_symbol(graph::node_id n) const { return symbols_[graph::index(n)]; }
  [[nodiscard]] std::size_t arg_count(graph::node_id n) const { return args_[graph::index(n)].size(); }
  [[nodiscard]] const match::arg_view& arg(graph::node_id n, std::size_t i) const { return args_[graph::index(n)][i]; }
  [[nodiscard]] const state::edge_profile& profile(graph::edge_id e) const {
    return graph::index(e) < p_.edges.size() ? p_.edges[graph::index(e)] : empty_;
  }

 private:
  match::arg_view view_of(const argument& a, std::span<const graph::edge_id> inputs, c10::TypeKind kind) {
    match::arg_view v;
    switch (a.how) {
      case argument::form::edge:
        v.how = match::arg_view::form::edge;
        v.edge = inputs[a.input];
        break;
      case argument::form::constant:
        if (auto attr = to_attr(a.constant, kind)) {
          v.how = match::arg_view::form::constant;
          v.value = std::move(*attr);
        }
        break;
      case argument::form::list: {
        auto& items = list_items_.emplace_back();
        items.reserve(a.items.size());
        for (const auto& it : a.items) {
          match::arg_view iv;
          if (it.is_edge) {
            iv.how = match::arg_view::form::edge;
            iv.edge = inputs[it.input];
          } else if (auto attr = to_attr(it.constant)) {
            iv.how = match::arg_view::form::constant;
            iv.value = std::move(*attr);
          }
          items.push_back(std::move(iv));
        }
        v.how = match::arg_view::form::list;
        v.items = items;
        break;
      }
      case argument::form::tuple: break;  // form::other
    }
    return v;
  }

  const model& m_;
  const torch::profile& p_;
  std::vector<std::string> kinds_;
  std::vector<std::uint32_t> symbols_;
  std::vector<std::vector<match::arg_view>> args_;
  std::deque<std::vector<match::arg_view>> list_items_;  // deque: stable storage for `items`
  state::edge_profile empty_;
};

static_assert(match::match_adapter<torch_match_adapter>, "torch_match_adapter must model match::match_adapter");

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/mutate/match_adapter.ipp"
#endif
