#pragma once
/// \file
/// write_dot: Graphviz DOT rendering of any tensor_graph, for debugging and reports.

#include <concepts>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/graph/concepts.hpp"
#include "tfg/graph/ids.hpp"
#include "tfg/util/str_cat.hpp"

namespace tfg::detail {

/// `text` as a DOT double-quoted string: `"` and `\` escaped, newlines as \n (centred lines).
inline std::string dot_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

/// A label callable's result as text: string-like results as they are, anything else through
/// its operator<<.
template <class T>
std::string label_text(const T& value) {
  if constexpr (std::convertible_to<const T&, std::string_view>) {
    return std::string(std::string_view(value));
  } else {
    return str_cat(value);
  }
}

}  // namespace tfg::detail

namespace tfg::graph {

/// Writes `g` as a DOT digraph: one box per live node labelled `node_label(node_id)`, one
/// arrow per use labelled `edge_label(edge_id)` of the edge it reads, and small ellipses
/// `in<k>` / `out<k>` for graph_inputs()[k] / graph_outputs()[k]. Labels may be anything
/// string-like or streamable; they are escaped. Edges nobody reads draw nothing.
/// Node statements come in id order, arrows in edge-id then use order, so the output is
/// deterministic. O(V + E + uses + outputs) plus the labels.
template <tensor_graph G, class NodeLabel, class EdgeLabel>
requires std::invocable<NodeLabel&, node_id> && std::invocable<EdgeLabel&, edge_id>
void write_dot(std::ostream& os, const G& g, NodeLabel node_label, EdgeLabel edge_label) {
  using tfg::detail::dot_quote;
  using tfg::detail::label_text;
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  os << "digraph tfg {\n  node [shape=box];\n";
  for (const node_id n : g.nodes()) {
    os << "  n" << index(n) << " [label=" << dot_quote(label_text(std::invoke(node_label, n))) << "];\n";
  }
  // Graph inputs and outputs are edges, drawn as terminals of their own.
  std::vector<std::size_t> input_at(g.edge_capacity(), none);
  std::vector<std::vector<std::size_t>> output_at(g.edge_capacity());
  std::size_t k = 0;
  for (const edge_id e : g.graph_inputs()) {
    input_at[index(e)] = k;
    os << "  in" << k << " [shape=ellipse, fontsize=10, height=0.3, label=\"in" << k << "\"];\n";
    ++k;
  }
  k = 0;
  for (const edge_id e : g.graph_outputs()) {
    output_at[index(e)].push_back(k);
    os << "  out" << k << " [shape=ellipse, fontsize=10, height=0.3, label=\"out" << k << "\"];\n";
    ++k;
  }
  for (const edge_id e : g.edges()) {
    const node_id p = g.producer(e);
    std::string source;
    if (p != no_node) {
      source = tfg::detail::str_cat('n', index(p));
    } else if (input_at[index(e)] != none) {
      source = tfg::detail::str_cat("in", input_at[index(e)]);
    } else {
      continue;  // a producerless non-input edge only exists in a broken graph
    }
    const std::string label = dot_quote(label_text(std::invoke(edge_label, e)));
    for (const use& u : g.consumers(e)) {
      os << "  " << source << " -> n" << index(u.node) << " [label=" << label << "];\n";
    }
    for (const std::size_t pos : output_at[index(e)]) {
      os << "  " << source << " -> out" << pos << " [label=" << label << "];\n";
    }
  }
  os << "}\n";
}

/// write_dot with node ids (n3) and edge ids (e7) as labels.
template <tensor_graph G>
void write_dot(std::ostream& os, const G& g) {
  write_dot(
      os, g, [](node_id n) { return tfg::detail::str_cat(n); }, [](edge_id e) { return tfg::detail::str_cat(e); });
}

}  // namespace tfg::graph
