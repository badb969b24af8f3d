#pragma once
/// \file
/// Concepts naming what generic algorithms (matchers, selectors, writers) need from a graph.
/// flow_graph models all of them; an adaptor over another IR only has to provide these.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <ranges>

#include "tfg/graph/ids.hpp"

namespace tfg::graph {

/// A range whose elements convert to T.
template <class R, class T>
concept range_of = std::ranges::input_range<R> && std::convertible_to<std::ranges::range_reference_t<R>, T>;

/// The read-only structure of a tensor graph: node and edge ids (live ids, capacities for
/// id-indexed tables, liveness), node inputs/outputs by slot, edge producer and uses, graph
/// inputs/outputs, and a topological order. Semantics as documented on flow_graph.
template <class G>
concept tensor_graph = requires(const G& g, node_id n, edge_id e) {
  { g.nodes() } -> range_of<node_id>;
  { g.edges() } -> range_of<edge_id>;
  { g.node_capacity() } -> std::convertible_to<std::size_t>;
  { g.edge_capacity() } -> std::convertible_to<std::size_t>;
  { g.alive(n) } -> std::convertible_to<bool>;
  { g.alive(e) } -> std::convertible_to<bool>;
  { g.topological_order() } -> range_of<node_id>;
  { g.inputs(n) } -> range_of<edge_id>;
  { g.outputs(n) } -> range_of<edge_id>;
  { g.producer(e) } -> std::same_as<node_id>;
  { g.producer_slot(e) } -> std::convertible_to<std::uint32_t>;
  { g.consumers(e) } -> range_of<use>;
  { g.graph_inputs() } -> range_of<edge_id>;
  { g.graph_outputs() } -> range_of<edge_id>;
};

/// A tensor_graph that also answers reachability (for convexity and cycle checks) and exposes
/// a structural version (to key caches of derived analyses).
template <class G>
concept reachability_graph = tensor_graph<G> && requires(const G& g, node_id a, node_id b) {
  { g.reaches(a, b) } -> std::convertible_to<bool>;
  { g.version() } -> std::convertible_to<std::uint64_t>;
};

}  // namespace tfg::graph
