#pragma once
// The definitions of summary.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/summary.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL model_summary summarise(const model& m, const profile& p) {
  model_summary s;
  const auto& g = m.graph;
  const double runs = p.runs ? static_cast<double>(p.runs) : 1.0;
  for (auto n : g.nodes()) {
    ++s.nodes;
    auto& k = s.by_kind[g.data(n).name()];
    ++k.first;
    if (graph::index(n) < p.node_seconds.size()) k.second += p.node_seconds[graph::index(n)] / runs;
    if (g.data(n).kind == c10::prim::Constant) ++s.constant_nodes;
  }
  std::map<std::uint32_t, std::size_t> group_size;
  for (auto e : g.edges()) {
    ++s.edges;
    const auto kind = g.data(e).kind;
    if (kind == state::value_kind::tensor) ++s.tensor_edges;
    else if (kind == state::value_kind::tensor_list) ++s.list_edges;
    else ++s.scalar_edges;
    const auto uses = g.consumers(e).size();
    if (uses > 1) ++s.multi_consumer;
    s.max_consumers = std::max(s.max_consumers, uses);
    const auto& runs_of = p.edges[graph::index(e)].runs;
    if (runs_of.empty() || runs_of[0].kind != state::value_kind::tensor) continue;
    const auto& st = runs_of[0];
    if (st.aliased()) {
      ++s.aliased_edges;
      ++group_size[st.storage_group];
    }
    if (!st.contiguous) ++s.non_contiguous;
    if (st.format == state::memory_format::channels_last) ++s.channels_last;
    if (!st.numbers.finite()) ++s.non_finite;
  }
  s.alias_groups = group_size.size();
  return s;
}

TFG_TORCH_DECL void print_summary(std::ostream& os, const model& m, const profile& p, std::size_t top_kinds) {
  const auto s = summarise(m, p);
  char line[256];
  os << "graph    " << s.nodes << " nodes (" << s.constant_nodes << " tensor constants), " << s.edges << " edges ("
     << s.tensor_edges << " tensor, " << s.scalar_edges << " scalar, " << s.list_edges << " tensor-list), "
     << m.graph.graph_inputs().size() << " inputs, " << m.graph.graph_outputs().size() << " outputs\n";
  os << "edges    " << s.multi_consumer << " with several consumers (max " << s.max_consumers << "), "
     << s.aliased_edges << " sharing storage in " << s.alias_groups << " alias groups, " << s.non_contiguous
     << " non-contiguous, " << s.channels_last << " channels_last, " << s.non_finite << " with NaN/Inf\n";
  std::vector<std::pair<std::string, std::pair<std::size_t, double>>> kinds(s.by_kind.begin(), s.by_kind.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) {
    return a.second.second != b.second.second ? a.second.second > b.second.second : a.first < b.first;
  });
  double total = 0;
  for (const auto& k : kinds) total += k.second.second;
  std::snprintf(line, sizeof line, "%-34s %6s %10s %7s\n", "op kind", "nodes", "ms/input", "share");
  os << line;
  for (std::size_t i = 0; i < kinds.size() && i < top_kinds; ++i) {
    const auto& [name, cs] = kinds[i];
    std::snprintf(line, sizeof line, "  %-32s %6zu %10.3f %6.1f%%\n", name.c_str(), cs.first, cs.second * 1e3,
                  total > 0 ? 100.0 * cs.second / total : 0.0);
    os << line;
  }
  if (kinds.size() > top_kinds) os << "  ... " << kinds.size() - top_kinds << " more kinds\n";
  std::snprintf(line, sizeof line, "  %-32s %6zu %10.3f\n", "total", s.nodes, total * 1e3);
  os << line;
}

}  // namespace tfg::torch

namespace tfg::torch::detail {

TFG_TORCH_DECL void json_number(std::ostream& os, double v) {
  if (std::isfinite(v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    os << buf;
  } else {
    os << "null";
  }
}

TFG_TORCH_DECL std::string ivalue_text(const c10::IValue& v) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    std::ostringstream os;
    os << "tensor" << t.sizes();
    return os.str();
  }
  std::ostringstream os;
  os << v;
  return os.str();
}

TFG_TORCH_DECL void json_state(std::ostream& os, const state::tensor_state& s) {
  os << "{\"kind\":\"" << state::name(s.kind) << '"';
  if (s.kind == state::value_kind::tensor) {
    os << ",\"shape\":";
    json_ints(os, s.shape);
    os << ",\"strides\":";
    json_ints(os, s.strides);
    os << ",\"dtype\":\"" << state::name(s.type) << "\",\"device\":\"" << state::name(s.device.kind)
       << "\",\"layout\":\"" << state::name(s.tensor_layout)
       << "\",\"contiguous\":" << (s.contiguous ? "true" : "false") << ",\"memory_format\":\"" << state::name(s.format)
       << "\",\"storage_offset\":" << s.storage_offset << ",\"storage_group\":" << s.storage_group
       << ",\"storage_sharers\":" << s.storage_sharers << ",\"requires_grad\":" << (s.requires_grad ? "true" : "false")
       << ",\"min\":";
    json_number(os, s.numbers.min);
    os << ",\"max\":";
    json_number(os, s.numbers.max);
    os << ",\"mean\":";
    json_number(os, s.numbers.mean);
    os << ",\"nan\":" << s.numbers.nan_count << ",\"inf\":" << s.numbers.inf_count
       << ",\"zeros\":" << s.numbers.zero_count << ",\"hash\":\"" << std::hex << s.numbers.content_hash << std::dec
       << '"';
  } else {
    os << ",\"value\":";
    json_number(os, s.scalar);
  }
  os << '}';
}

}  // namespace tfg::torch::detail

namespace tfg::torch {

TFG_TORCH_DECL void write_json(std::ostream& os, const model& m, const profile* p) {
  graph::write_json(
      os, m.graph,
      [&](std::ostream& o, graph::node_id n) {
        const auto& d = m.graph.data(n);
        o << "\"kind\":";
        tfg::json::write_string(o, d.name());
        o << ",\"scope\":";
        tfg::json::write_string(o, d.scope);
        o << ",\"where\":";
        tfg::json::write_string(o, d.where);
        o << ",\"attributes\":[";
        bool first = true;
        for (std::size_t i = 0; i < d.args.size(); ++i) {
          if (d.args[i].how != argument::form::constant) continue;
          if (!first) o << ',';
          first = false;
          o << "{\"arg\":" << i << ",\"value\":";
          tfg::json::write_string(o, detail::ivalue_text(d.args[i].constant));
          o << '}';
        }
        o << ']';
      },
      [&](std::ostream& o, graph::edge_id e) {
        const auto& d = m.graph.data(e);
        o << "\"name\":";
        tfg::json::write_string(o, d.name);
        o << ",\"type\":";
        tfg::json::write_string(o, d.type ? d.type->annotation_str() : "");
        o << ",\"kind\":\"" << state::name(d.kind) << '"';
        if (p && graph::index(e) < p->edges.size()) {
          o << ",\"runs\":[";
          const auto& runs = p->edges[graph::index(e)].runs;
          for (std::size_t i = 0; i < runs.size(); ++i) {
            if (i) o << ',';
            detail::json_state(o, runs[i]);
          }
          o << ']';
        }
      });
}

TFG_TORCH_DECL void write_dot(std::ostream& os, const model& m, const profile* p) {
  graph::write_dot(
      os, m.graph, [&](graph::node_id n) { return m.graph.data(n).name(); },
      [&](graph::edge_id e) {
        std::string label;
        if (p && graph::index(e) < p->edges.size() && !p->edges[graph::index(e)].runs.empty()) {
          const auto& s = p->edges[graph::index(e)].runs[0];
          if (s.kind == state::value_kind::tensor) {
            label = std::string(state::name(s.type)) + "[";
            for (std::size_t i = 0; i < s.shape.size(); ++i) label += (i ? "," : "") + std::to_string(s.shape[i]);
            label += "]";
            if (s.aliased()) label += " alias" + std::to_string(s.storage_group);
            if (!s.contiguous) label += " nc";
          } else {
            label = std::string(state::name(s.kind));
          }
        }
        return label;
      });
}

}  // namespace tfg::torch
