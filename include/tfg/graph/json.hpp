#pragma once
/// \file
/// write_json: JSON rendering of any tensor_graph, without a JSON library.
///
/// Layout (one node or edge per line):
///   {"nodes":[{"id":0,"inputs":[0],"outputs":[1],<node members>},...],
///    "edges":[{"id":1,"producer":0,"consumers":[[2,0]],<edge members>},...],
///    "inputs":[0],"outputs":[1]}
/// Ids are the numeric node/edge ids; "producer" is null for graph inputs; "consumers" lists
/// [node, slot] pairs.

#include <concepts>
#include <functional>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>

#include "tfg/graph/concepts.hpp"
#include "tfg/graph/ids.hpp"
#include "tfg/util/json_escape.hpp"

namespace tfg::detail {

template <class Range>
void write_json_ids(std::ostream& os, const Range& ids) {
  os << '[';
  bool first = true;
  for (const auto id : ids) {
    if (!first) os << ',';
    first = false;
    os << graph::index(id);
  }
  os << ']';
}

/// Runs a member writer into a buffer, so that a "," is emitted only if it wrote something.
template <class F, class Id>
void write_json_members(std::ostream& os, F& members, Id id) {
  std::ostringstream extra;
  std::invoke(members, static_cast<std::ostream&>(extra), id);
  if (const std::string text = std::move(extra).str(); !text.empty()) os << ',' << text;
}

}  // namespace tfg::detail

namespace tfg::graph {

/// Writes `g` as JSON (layout in the file comment). `node_json(os, node_id)` and
/// `edge_json(os, edge_id)` append the members of that object after the structural ones:
/// zero or more `"key":value` pairs separated by commas, no braces, no leading comma; they
/// must write valid JSON (tfg::json::write_string quotes strings). Live nodes and edges
/// in id order. O(V + E + uses + outputs) plus the callables.
template <tensor_graph G, class NodeJson, class EdgeJson>
requires std::invocable<NodeJson&, std::ostream&, node_id> && std::invocable<EdgeJson&, std::ostream&, edge_id>
void write_json(std::ostream& os, const G& g, NodeJson node_json, EdgeJson edge_json) {
  using tfg::detail::write_json_ids;
  os << "{\"nodes\":[";
  bool first = true;
  for (const node_id n : g.nodes()) {
    os << (first ? "\n" : ",\n") << "{\"id\":" << index(n) << ",\"inputs\":";
    first = false;
    write_json_ids(os, g.inputs(n));
    os << ",\"outputs\":";
    write_json_ids(os, g.outputs(n));
    tfg::detail::write_json_members(os, node_json, n);
    os << '}';
  }
  os << "\n],\"edges\":[";
  first = true;
  for (const edge_id e : g.edges()) {
    os << (first ? "\n" : ",\n") << "{\"id\":" << index(e) << ",\"producer\":";
    first = false;
    if (const node_id p = g.producer(e); p == no_node) {
      os << "null";
    } else {
      os << index(p);
    }
    os << ",\"consumers\":[";
    bool first_use = true;
    for (const use& u : g.consumers(e)) {
      os << (first_use ? "" : ",") << '[' << index(u.node) << ',' << u.slot << ']';
      first_use = false;
    }
    os << ']';
    tfg::detail::write_json_members(os, edge_json, e);
    os << '}';
  }
  os << "\n],\"inputs\":";
  write_json_ids(os, g.graph_inputs());
  os << ",\"outputs\":";
  write_json_ids(os, g.graph_outputs());
  os << "}\n";
}

/// write_json with structure only.
template <tensor_graph G>
void write_json(std::ostream& os, const G& g) {
  write_json(
      os, g, [](std::ostream&, node_id) {}, [](std::ostream&, edge_id) {});
}

}  // namespace tfg::graph
