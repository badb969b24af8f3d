#pragma once
/// \file
/// Strong ids for the nodes (operators) and edges (tensors) of a flow_graph, and `use`, one
/// input position of a consumer.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>

namespace tfg::graph {

/// Id of a node (an operator). Ids are dense indices, stable for the life of a graph: a removed
/// node leaves a tombstone and its id is never reused.
enum class node_id : std::uint32_t {};

/// Id of an edge (a value/tensor), with the same stability as node_id.
enum class edge_id : std::uint32_t {};

/// "No node": the producer of a graph input.
inline constexpr node_id no_node{UINT32_MAX};
/// "No edge": never the id of a real edge.
inline constexpr edge_id no_edge{UINT32_MAX};

/// The dense index behind an id, for indexing per-node/per-edge vectors and bitsets.
constexpr std::size_t index(node_id id) noexcept { return static_cast<std::uint32_t>(id); }
constexpr std::size_t index(edge_id id) noexcept { return static_cast<std::uint32_t>(id); }

/// One input position of a consumer: `node` reads the edge in its input slot `slot`. A node
/// that reads the same edge in two slots is two uses.
struct use {
  node_id node = no_node;
  std::uint32_t slot = 0;

  friend constexpr bool operator==(const use&, const use&) = default;
};

// Printed as n3 / e7 / n3:1, so that test failures and messages name ids readably.
inline std::ostream& operator<<(std::ostream& os, node_id id) {
  if (id == no_node) return os << "n-";
  return os << 'n' << index(id);
}
inline std::ostream& operator<<(std::ostream& os, edge_id id) {
  if (id == no_edge) return os << "e-";
  return os << 'e' << index(id);
}
inline std::ostream& operator<<(std::ostream& os, const use& u) { return os << u.node << ':' << u.slot; }

}  // namespace tfg::graph

template <>
struct std::hash<tfg::graph::node_id> {
  std::size_t operator()(tfg::graph::node_id id) const noexcept {
    return std::hash<std::uint32_t>{}(static_cast<std::uint32_t>(id));
  }
};

template <>
struct std::hash<tfg::graph::edge_id> {
  std::size_t operator()(tfg::graph::edge_id id) const noexcept {
    return std::hash<std::uint32_t>{}(static_cast<std::uint32_t>(id));
  }
};

template <>
struct std::hash<tfg::graph::use> {
  std::size_t operator()(const tfg::graph::use& u) const noexcept {
    // Both halves are 32-bit, so packing them is collision-free.
    const auto packed = (std::uint64_t{static_cast<std::uint32_t>(u.node)} << 32) | u.slot;
    return std::hash<std::uint64_t>{}(packed);
  }
};
