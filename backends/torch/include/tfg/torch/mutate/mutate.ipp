#pragma once
// The definitions of mutate.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/mutate/mutate.hpp"

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL graph::node_id constant_writer(const graph_type& g) {
  std::vector<char> constant(g.edge_capacity(), 0);
  for (auto n : g.topological_order()) {
    const auto& d = g.data(n);
    const auto ins = g.inputs(n), outs = g.outputs(n);
    if (d.kind == c10::prim::Constant) {
      if (!outs.empty() && d.constant.isTensor()) constant[graph::index(outs[0])] = 1;
      continue;
    }
    const auto* schema = schema_of(g, n);
    if (!schema) continue;
    const auto& args = schema->arguments();
    for (std::size_t i = 0; i < d.args.size() && i < args.size(); ++i) {
      const auto& a = d.args[i];
      if (a.how != argument::form::edge || !constant[graph::index(ins[a.input])]) continue;
      const auto* alias = args[i].alias_info();
      if (!alias) continue;
      if (alias->isWrite()) return n;
      // A view of the constant: every output whose alias set is the argument's.
      const auto& rets = schema->returns();
      for (std::size_t k = 0; k < rets.size() && k < outs.size(); ++k) {
        const auto* r = rets[k].alias_info();
        if (!r) continue;
        for (const auto& set : r->beforeSets())
          if (alias->beforeSets().count(set)) constant[graph::index(outs[k])] = 1;
      }
    }
  }
  return graph::no_node;
}

}  // namespace tfg::torch::detail
