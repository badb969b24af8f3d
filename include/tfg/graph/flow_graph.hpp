#pragma once
/// \file
/// flow_graph<NodeData, EdgeData>: the Tensor Flow Graph. Nodes are operators; edges are values
/// (tensors) with at most one producer (none: a graph input) and any number of consumers.
///
/// Ids are stable: removing a node (only a rewrite_transaction does) leaves tombstones for the
/// node and its output edges, and ids are never reused. Every structural change increments
/// version(); the cached topological order and reachability sets are recomputed lazily on the
/// first query after a change.
///
/// Thread safety: const queries that fill a cache (topological_order, topological_index,
/// downstream, reaches) must not run concurrently with each other unless the caches are warm
/// (call topological_order() and downstream() once first); everything else follows the usual
/// "const is safe to share" rule.

#include <algorithm>
#include <boost/dynamic_bitset.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <cmath>
#include <limits>
#include <queue>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tfg/graph/ids.hpp"
#include "tfg/util/assert.hpp"
#include "tfg/util/str_cat.hpp"

namespace tfg::graph {

template <class Graph>
class rewrite_transaction;

}  // namespace tfg::graph

namespace tfg::detail {

/// Forward range of the live ids of a record vector, in id order; records expose `alive`.
/// Cheap to copy; refers to the graph object (valid until it is destroyed or moved from), so
/// iteration sees nodes/edges added or removed meanwhile.
// view_base rather than view_interface: clang 14 rejects the latter with libstdc++ 12.
template <class Id, class Record>
class live_ids : public std::ranges::view_base {
 public:
  class iterator {
   public:
    using value_type = Id;
    using difference_type = std::ptrdiff_t;
    using iterator_concept = std::forward_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // reference is a prvalue

    iterator() = default;
    iterator(const std::vector<Record>* records, std::size_t at) : records_(records), at_(at) { skip_dead(); }
    Id operator*() const { return Id{static_cast<std::uint32_t>(at_)}; }
    iterator& operator++() {
      ++at_;
      skip_dead();
      return *this;
    }
    iterator operator++(int) {
      iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const iterator& a, const iterator& b) { return a.at_ == b.at_; }

   private:
    void skip_dead() {
      while (records_ != nullptr && at_ < records_->size() && !(*records_)[at_].alive) ++at_;
    }
    const std::vector<Record>* records_ = nullptr;
    std::size_t at_ = 0;
  };

  live_ids() = default;
  explicit live_ids(const std::vector<Record>& records) : records_(&records) {}
  iterator begin() const { return iterator(records_, 0); }
  iterator end() const { return iterator(records_, records_ ? records_->size() : 0); }
  bool empty() const { return begin() == end(); }

 private:
  const std::vector<Record>* records_ = nullptr;
};

/// A validated rewrite, ready to apply: built by rewrite_transaction::commit, consumed by
/// flow_graph. Ids of the added nodes and edges are predicted: added node k becomes node
/// `node_capacity() + k`, and the outputs of all added nodes take consecutive edge ids from
/// `edge_capacity()`, node by node.
template <class NodeData, class EdgeData>
struct rewrite_plan {
  struct added_node {
    NodeData data;
    std::vector<graph::edge_id> inputs;  // existing or predicted edge ids
    std::vector<EdgeData> outputs;
  };
  std::vector<added_node> added;
  std::vector<std::pair<graph::use, graph::edge_id>> rewired;   // surviving slot -> new edge
  std::vector<std::pair<std::size_t, graph::edge_id>> outputs;  // graph output position -> edge
  std::vector<graph::node_id> removed;                          // unique, alive
};

/// Makes room for `extra` more elements, growing geometrically: a plain reserve(size + extra)
/// would reallocate on every call and make repeated insertion quadratic.
template <class T>
void reserve_more(std::vector<T>& v, std::size_t extra) {
  if (v.size() + extra > v.capacity()) v.reserve(std::max(v.size() + extra, 2 * v.capacity()));
}

/// Left undefined: white-box tests define it to reach flow_graph internals (e.g. to corrupt a
/// graph and watch check() notice).
template <class Graph>
struct flow_graph_white_box;

}  // namespace tfg::detail

namespace tfg::graph {

template <class NodeData, class EdgeData>
class flow_graph {
  struct node_record {
    NodeData data;
    std::vector<edge_id> inputs;
    std::vector<edge_id> outputs;
    bool alive = true;
    /// Execution-order key: ties between ready nodes in topological_order() go to the smaller
    /// key. Built nodes get their id; rewrite-added nodes get a key just before the earliest
    /// node that reads their results (see apply), so they run where the code they replace ran.
    double order = 0;
  };
  struct edge_record {
    EdgeData data;
    node_id producer = no_node;
    std::uint32_t slot = 0;
    std::vector<use> consumers;     // one entry per (node, slot)
    std::uint32_t output_refs = 0;  // occurrences in graph_outputs()
    bool alive = true;
  };

 public:
  using node_data_type = NodeData;
  using edge_data_type = EdgeData;
  using node_range = tfg::detail::live_ids<node_id, node_record>;
  using edge_range = tfg::detail::live_ids<edge_id, edge_record>;

  // ---- building ------------------------------------------------------------------------------

  /// Adds a graph input: an edge without producer, appended to graph_inputs(). O(1) amortised.
  edge_id add_input(EdgeData data) {
    check_id_space(0, 1);
    const edge_id e{static_cast<std::uint32_t>(edges_.size())};
    tfg::detail::reserve_more(inputs_, 1);  // so that the push_back below cannot throw
    edges_.push_back(edge_record{std::move(data), no_node, 0, {}, 0, true});
    inputs_.push_back(e);
    ++live_edges_;
    ++version_;
    return e;
  }

  /// Adds a node reading `inputs` (slot i reads inputs[i]; an edge may fill several slots) and
  /// producing one new edge per element of `outputs`, in order.
  /// Throws std::invalid_argument if an input is not a live edge, std::length_error when ids
  /// run out; the graph is then unchanged. O(|inputs| + |outputs|) amortised.
  node_id add_node(NodeData data, std::span<const edge_id> inputs, std::vector<EdgeData> outputs) {
    for (std::size_t slot = 0; slot < inputs.size(); ++slot) {
      if (!alive(inputs[slot])) {
        throw std::invalid_argument(
            tfg::detail::str_cat("flow_graph::add_node: input ", slot, " (", inputs[slot], ") is not a live edge"));
      }
    }
    check_id_space(1, outputs.size());
    const node_id n{static_cast<std::uint32_t>(nodes_.size())};
    const std::size_t edge_base = edges_.size();

    node_record record{std::move(data), {inputs.begin(), inputs.end()}, {}, true, static_cast<double>(nodes_.size())};
    record.outputs.reserve(outputs.size());
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      record.outputs.push_back(edge_id{static_cast<std::uint32_t>(edge_base + j)});
    }
    tfg::detail::reserve_more(nodes_, 1);
    tfg::detail::reserve_more(edges_, outputs.size());

    // Consumer lists grow one by one; undo them if an allocation fails half way.
    std::size_t added_uses = 0;
    try {
      for (; added_uses < inputs.size(); ++added_uses) {
        edges_[index(inputs[added_uses])].consumers.push_back(use{n, static_cast<std::uint32_t>(added_uses)});
      }
      nodes_.push_back(std::move(record));
      for (std::size_t j = 0; j < outputs.size(); ++j) {
        edges_.push_back(edge_record{std::move(outputs[j]), n, static_cast<std::uint32_t>(j), {}, 0, true});
      }
    } catch (...) {
      while (edges_.size() > edge_base) edges_.pop_back();
      if (nodes_.size() > index(n)) nodes_.pop_back();
      while (added_uses > 0) {
        --added_uses;
        edges_[index(inputs[added_uses])].consumers.pop_back();
      }
      throw;
    }
    ++live_nodes_;
    live_edges_ += outputs.size();
    ++version_;
    return n;
  }

  /// Braced-list convenience: `g.add_node(op, {a, b}, {t})`.
  node_id add_node(NodeData data, std::initializer_list<edge_id> inputs, std::vector<EdgeData> outputs) {
    return add_node(std::move(data), std::span<const edge_id>(inputs.begin(), inputs.size()), std::move(outputs));
  }

  /// Appends `e` to graph_outputs() (ordered; an edge may appear several times).
  /// Throws std::invalid_argument if `e` is not a live edge. O(1) amortised.
  void add_output(edge_id e) {
    if (!alive(e)) {
      throw std::invalid_argument(tfg::detail::str_cat("flow_graph::add_output: ", e, " is not a live edge"));
    }
    outputs_.push_back(e);
    ++edges_[index(e)].output_refs;
    ++version_;
  }

  /// Starts a rewrite of this graph; see rewrite_transaction (tfg/graph/rewrite.hpp). The
  /// graph must outlive the transaction.
  rewrite_transaction<flow_graph> begin_rewrite() { return rewrite_transaction<flow_graph>(*this); }

  // ---- queries (all O(1) unless stated) -------------------------------------------------------

  std::size_t node_count() const noexcept { return live_nodes_; }
  std::size_t edge_count() const noexcept { return live_edges_; }
  /// One past the largest node id ever issued: the size for per-node vectors and bitsets.
  std::size_t node_capacity() const noexcept { return nodes_.size(); }
  std::size_t edge_capacity() const noexcept { return edges_.size(); }

  /// False for tombstones and for ids this graph never issued (no_node/no_edge included).
  bool alive(node_id n) const noexcept { return index(n) < nodes_.size() && nodes_[index(n)].alive; }
  bool alive(edge_id e) const noexcept { return index(e) < edges_.size() && edges_[index(e)].alive; }

  /// Precondition for all per-id queries below: alive(id) (checked by TFG_ASSERT).
  const NodeData& data(node_id n) const { return node(n).data; }
  NodeData& data(node_id n) { return const_cast<node_record&>(std::as_const(*this).node(n)).data; }
  const EdgeData& data(edge_id e) const { return edge(e).data; }
  EdgeData& data(edge_id e) { return const_cast<edge_record&>(std::as_const(*this).edge(e)).data; }

  /// The edges read by `n`, slot by slot.
  std::span<const edge_id> inputs(node_id n) const { return node(n).inputs; }
  /// The edges produced by `n`, output index by output index.
  std::span<const edge_id> outputs(node_id n) const { return node(n).outputs; }
  /// The producer of `e`, or no_node if `e` is a graph input.
  node_id producer(edge_id e) const { return edge(e).producer; }
  /// The output index of `e` in outputs(producer(e)); 0 for graph inputs.
  std::uint32_t producer_slot(edge_id e) const { return edge(e).slot; }
  /// One entry per (node, slot) reading `e`, in no particular but deterministic order.
  std::span<const use> consumers(edge_id e) const { return edge(e).consumers; }
  /// consumers(e).size(): input slots reading `e` (graph-output occurrences not counted).
  std::size_t use_count(edge_id e) const { return edge(e).consumers.size(); }
  /// Execution-order key of a live node: topological_order() runs ready nodes by ascending
  /// (order_key, id). Built nodes have their id as key; see assign_order_keys for rewrites.
  double order_key(node_id n) const { return node(n).order; }
  bool is_graph_input(edge_id e) const { return edge(e).producer == no_node; }
  bool is_graph_output(edge_id e) const { return edge(e).output_refs > 0; }

  std::span<const edge_id> graph_inputs() const noexcept { return inputs_; }
  std::span<const edge_id> graph_outputs() const noexcept { return outputs_; }

  /// Live node ids in increasing order; O(capacity) to iterate in full.
  node_range nodes() const noexcept { return node_range(nodes_); }
  /// Live edge ids in increasing order; O(capacity) to iterate in full.
  edge_range edges() const noexcept { return edge_range(edges_); }

  /// Incremented by every structural change (add_*, committed rewrites); not by data() writes.
  std::uint64_t version() const noexcept { return version_; }

  // ---- cached analyses ------------------------------------------------------------------------

  /// All live nodes, every producer before its consumers; among the nodes ready at a step the
  /// smallest id comes first (Kahn's algorithm), so the order is a function of the structure
  /// alone. Cached: O(1) when warm, O((V + E) log V) after a structural change.
  /// Precondition: the graph is acyclic (always true for graphs built through this API).
  const std::vector<node_id>& topological_order() const {
    if (topo_version_ != version_) compute_topological_order();
    return topo_;
  }

  /// Position of `n` in topological_order(); same cost as topological_order().
  std::size_t topological_index(node_id n) const {
    TFG_ASSERT(alive(n), "topological_index of a dead node");
    if (topo_version_ != version_) compute_topological_order();
    return topo_index_[index(n)];
  }

  /// The nodes reachable from `n` along edges (consumers of its outputs, their consumers, ...),
  /// `n` itself excluded, as a bitset of node_capacity() bits indexed by node id.
  /// All sets are computed together on the first call after a structural change, in reverse
  /// topological order: O(V * V / 64 + E * V / 64) time, V * V bits of memory. O(1) when warm.
  /// The reference is valid until the next structural change.
  const boost::dynamic_bitset<>& downstream(node_id n) const {
    TFG_ASSERT(alive(n), "downstream of a dead node");
    if (down_version_ != version_) compute_downstream();
    return down_[index(n)];
  }

  /// The consumers of `e` and everything downstream of them. O(uses * V / 64) plus the
  /// downstream(node_id) cache cost.
  boost::dynamic_bitset<> downstream(edge_id e) const {
    boost::dynamic_bitset<> result(nodes_.size());
    for (const use& u : consumers(e)) {
      result.set(index(u.node));
      result |= downstream(u.node);
    }
    return result;
  }

  /// True iff a non-empty path leads from `from` to `to` (so reaches(n, n) is false).
  /// Cost of downstream(from).
  bool reaches(node_id from, node_id to) const {
    TFG_ASSERT(alive(to), "reaches: target is dead");
    return downstream(from).test(index(to));
  }

  /// True when downstream() answers without recomputing; lets callers choose cheaper pruning.
  bool reachability_cached() const noexcept { return down_version_ == version_; }

  /// Checks every structural invariant and returns one readable line per violation; empty means
  /// valid. Independent of the caches. O(V + E + outputs).
  std::vector<std::string> check() const;

 private:
  template <class Graph>
  friend class rewrite_transaction;
  template <class Graph>
  friend struct tfg::detail::flow_graph_white_box;

  const node_record& node(node_id n) const {
    TFG_ASSERT(alive(n), "node id is not alive");
    return nodes_[index(n)];
  }
  const edge_record& edge(edge_id e) const {
    TFG_ASSERT(alive(e), "edge id is not alive");
    return edges_[index(e)];
  }

  // no_node/no_edge (UINT32_MAX) must stay unused.
  void check_id_space(std::size_t new_nodes, std::size_t new_edges) const {
    constexpr std::size_t limit = UINT32_MAX;
    if (nodes_.size() + new_nodes > limit || edges_.size() + new_edges > limit) {
      throw std::length_error("flow_graph: node or edge ids exhausted");
    }
  }

  static void erase_use(std::vector<use>& consumers, use u) {
    const auto it = std::find(consumers.begin(), consumers.end(), u);
    if (it != consumers.end()) consumers.erase(it);
  }

  void compute_topological_order() const;
  void compute_downstream() const;
  void apply(tfg::detail::rewrite_plan<NodeData, EdgeData>&& plan);
  void assign_order_keys(const tfg::detail::rewrite_plan<NodeData, EdgeData>& plan, std::vector<node_record>& added,
                         std::size_t node_base, std::size_t edge_base) const;

  std::vector<node_record> nodes_;
  std::vector<edge_record> edges_;
  std::vector<edge_id> inputs_;
  std::vector<edge_id> outputs_;
  std::size_t live_nodes_ = 0;
  std::size_t live_edges_ = 0;
  std::uint64_t version_ = 0;

  // Caches, valid while their version equals version_.
  static constexpr std::uint64_t stale = UINT64_MAX;
  mutable std::vector<node_id> topo_;
  mutable std::vector<std::uint32_t> topo_index_;
  mutable std::uint64_t topo_version_ = stale;
  mutable std::vector<boost::dynamic_bitset<>> down_;
  mutable std::uint64_t down_version_ = stale;
};

// ---- out-of-line definitions ------------------------------------------------------------------

template <class NodeData, class EdgeData>
void flow_graph<NodeData, EdgeData>::compute_topological_order() const {
  const std::size_t n_cap = nodes_.size();
  std::vector<std::uint32_t> pending(n_cap, 0);  // produced inputs not yet emitted, per slot
  // Smallest (order key, id) first: the seed's own order for built graphs (keys = ids), and
  // rewrite-added nodes where the code they replace ran.
  const auto later = [this](std::uint32_t a, std::uint32_t b) {
    return nodes_[a].order != nodes_[b].order ? nodes_[a].order > nodes_[b].order : a > b;
  };
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, decltype(later)> ready(later);
  for (std::uint32_t v = 0; v < n_cap; ++v) {
    if (!nodes_[v].alive) continue;
    for (const edge_id e : nodes_[v].inputs) {
      if (edges_[index(e)].producer != no_node) ++pending[v];
    }
    if (pending[v] == 0) ready.push(v);
  }
  topo_.clear();
  topo_.reserve(live_nodes_);
  while (!ready.empty()) {
    const std::uint32_t v = ready.top();
    ready.pop();
    topo_.push_back(node_id{v});
    for (const edge_id e : nodes_[v].outputs) {
      for (const use& u : edges_[index(e)].consumers) {
        if (--pending[index(u.node)] == 0) ready.push(static_cast<std::uint32_t>(index(u.node)));
      }
    }
  }
  TFG_ASSERT(topo_.size() == live_nodes_, "topological_order: the graph has a cycle");
  topo_index_.assign(n_cap, UINT32_MAX);
  for (std::size_t i = 0; i < topo_.size(); ++i) {
    topo_index_[index(topo_[i])] = static_cast<std::uint32_t>(i);
  }
  topo_version_ = version_;
}

template <class NodeData, class EdgeData>
void flow_graph<NodeData, EdgeData>::compute_downstream() const {
  const std::vector<node_id>& order = topological_order();
  const std::size_t n_cap = nodes_.size();
  down_.assign(n_cap, boost::dynamic_bitset<>(n_cap));
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    boost::dynamic_bitset<>& mine = down_[index(*it)];
    for (const edge_id e : nodes_[index(*it)].outputs) {
      for (const use& u : edges_[index(e)].consumers) {
        // Sets of later nodes are already transitively closed: if u.node is in `mine`, so is
        // everything below it, and the union can be skipped.
        if (mine.test(index(u.node))) continue;
        mine.set(index(u.node));
        mine |= down_[index(u.node)];
      }
    }
  }
  down_version_ = version_;
}

template <class NodeData, class EdgeData>
std::vector<std::string> flow_graph<NodeData, EdgeData>::check() const {
  using tfg::detail::str_cat;
  std::vector<std::string> problems;
  const std::size_t n_cap = nodes_.size();
  const std::size_t e_cap = edges_.size();
  const auto edge_in_range = [&](edge_id e) { return index(e) < e_cap; };

  std::size_t live_nodes = 0;
  for (std::uint32_t v = 0; v < n_cap; ++v) {
    const node_record& rec = nodes_[v];
    const node_id n{v};
    if (!rec.alive) {
      if (!rec.inputs.empty() || !rec.outputs.empty()) {
        problems.push_back(str_cat("dead node ", n, " still lists inputs or outputs"));
      }
      continue;
    }
    ++live_nodes;
    for (std::uint32_t slot = 0; slot < rec.inputs.size(); ++slot) {
      const edge_id e = rec.inputs[slot];
      if (!edge_in_range(e) || !edges_[index(e)].alive) {
        problems.push_back(str_cat("node ", n, " slot ", slot, " reads dead edge ", e));
        continue;
      }
      const auto& cons = edges_[index(e)].consumers;
      const auto hits = std::count(cons.begin(), cons.end(), use{n, slot});
      if (hits != 1) {
        problems.push_back(str_cat("edge ", e, " lists consumer ", use{n, slot}, " ", hits, " times, expected once"));
      }
    }
    for (std::uint32_t j = 0; j < rec.outputs.size(); ++j) {
      const edge_id e = rec.outputs[j];
      if (!edge_in_range(e) || !edges_[index(e)].alive) {
        problems.push_back(str_cat("node ", n, " output ", j, " is dead edge ", e));
      } else if (edges_[index(e)].producer != n || edges_[index(e)].slot != j) {
        problems.push_back(str_cat("edge ", e, " is output ", j, " of ", n, " but records producer ",
                                   edges_[index(e)].producer, " slot ", edges_[index(e)].slot));
      }
    }
  }
  if (live_nodes != live_nodes_) {
    problems.push_back(str_cat("node_count() is ", live_nodes_, " but ", live_nodes, " are live"));
  }

  std::vector<std::uint32_t> output_refs(e_cap, 0);
  for (std::size_t pos = 0; pos < outputs_.size(); ++pos) {
    const edge_id e = outputs_[pos];
    if (!edge_in_range(e) || !edges_[index(e)].alive) {
      problems.push_back(str_cat("graph output #", pos, " is dead edge ", e));
    } else {
      ++output_refs[index(e)];
    }
  }
  std::vector<bool> is_input(e_cap, false);
  for (std::size_t pos = 0; pos < inputs_.size(); ++pos) {
    const edge_id e = inputs_[pos];
    if (!edge_in_range(e) || !edges_[index(e)].alive) {
      problems.push_back(str_cat("graph input #", pos, " is dead edge ", e));
    } else if (edges_[index(e)].producer != no_node) {
      problems.push_back(str_cat("graph input #", pos, " (", e, ") has producer ", edges_[index(e)].producer));
    } else if (is_input[index(e)]) {
      problems.push_back(str_cat("edge ", e, " is listed twice in graph_inputs()"));
    } else {
      is_input[index(e)] = true;
    }
  }

  std::size_t live_edges = 0;
  for (std::uint32_t i = 0; i < e_cap; ++i) {
    const edge_record& rec = edges_[i];
    const edge_id e{i};
    if (!rec.alive) {
      if (!rec.consumers.empty()) {
        problems.push_back(str_cat("dead edge ", e, " still lists consumers"));
      }
      continue;
    }
    ++live_edges;
    if (rec.output_refs != output_refs[i]) {
      problems.push_back(str_cat("edge ", e, " counts ", rec.output_refs,
                                 " graph-output occurrences, graph_outputs() has ", output_refs[i]));
    }
    if (rec.producer == no_node) {
      if (!is_input[i]) {
        problems.push_back(str_cat("edge ", e, " has no producer and is not a graph input"));
      }
    } else if (index(rec.producer) >= n_cap || !nodes_[index(rec.producer)].alive) {
      problems.push_back(str_cat("edge ", e, " has dead producer ", rec.producer));
    } else {
      const auto& outs = nodes_[index(rec.producer)].outputs;
      if (rec.slot >= outs.size() || outs[rec.slot] != e) {
        problems.push_back(str_cat("edge ", e, " claims to be output ", rec.slot, " of ", rec.producer,
                                   ", which does not list it there"));
      }
    }
    for (const use& u : rec.consumers) {
      if (index(u.node) >= n_cap || !nodes_[index(u.node)].alive) {
        problems.push_back(str_cat("edge ", e, " lists consumer ", u, " of a dead node"));
      } else if (u.slot >= nodes_[index(u.node)].inputs.size() || nodes_[index(u.node)].inputs[u.slot] != e) {
        problems.push_back(str_cat("edge ", e, " lists consumer ", u, ", which reads another edge"));
      }
    }
  }
  if (live_edges != live_edges_) {
    problems.push_back(str_cat("edge_count() is ", live_edges_, " but ", live_edges, " are live"));
  }

  // Acyclicity from the input side only (producers of input edges), so that it does not depend
  // on the consumer lists checked above. Iterative three-colour DFS over predecessors.
  enum : std::uint8_t { white, grey, black };
  std::vector<std::uint8_t> colour(n_cap, white);
  const auto predecessor = [&](std::uint32_t v, std::size_t slot) -> std::uint32_t {
    const edge_id e = nodes_[v].inputs[slot];
    if (!edge_in_range(e)) return UINT32_MAX;
    const node_id p = edges_[index(e)].producer;
    return p == no_node || index(p) >= n_cap || !nodes_[index(p)].alive ? UINT32_MAX
                                                                        : static_cast<std::uint32_t>(index(p));
  };
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;  // node, next slot to follow
  for (std::uint32_t root = 0; root < n_cap; ++root) {
    if (!nodes_[root].alive || colour[root] != white) continue;
    stack.emplace_back(root, 0);
    colour[root] = grey;
    while (!stack.empty()) {
      auto& [v, slot] = stack.back();
      if (slot == nodes_[v].inputs.size()) {
        colour[v] = black;
        stack.pop_back();
        continue;
      }
      const std::uint32_t p = predecessor(v, slot++);
      if (p == UINT32_MAX || colour[p] == black) continue;
      if (colour[p] == grey) {
        // The stack holds p, a predecessor of p, ..., v, and p feeds v: data flows from p to v
        // and then back down the stack to p.
        std::string cycle = str_cat("cycle: ", node_id{p});
        for (auto it = stack.rbegin(); it != stack.rend() && it->first != p; ++it) {
          cycle += str_cat(" -> ", node_id{it->first});
        }
        problems.push_back(str_cat(cycle, " -> ", node_id{p}));
        return problems;  // one cycle is enough; the DFS state is not reusable past it
      }
      colour[p] = grey;
      stack.emplace_back(p, 0);
    }
  }
  return problems;
}

template <class NodeData, class EdgeData>
void flow_graph<NodeData, EdgeData>::apply(tfg::detail::rewrite_plan<NodeData, EdgeData>&& plan) {
  const std::size_t node_base = nodes_.size();
  const std::size_t edge_base = edges_.size();
  std::size_t added_edges = 0;
  for (const auto& a : plan.added) added_edges += a.outputs.size();
  check_id_space(plan.added.size(), added_edges);

  // Phase 1: every allocation and every move of user data goes into fresh records, so a throw
  // leaves the graph untouched.
  std::vector<node_record> new_nodes;
  std::vector<edge_record> new_edges;
  new_nodes.reserve(plan.added.size());
  new_edges.reserve(added_edges);
  for (std::size_t k = 0; k < plan.added.size(); ++k) {
    auto& a = plan.added[k];
    const node_id n{static_cast<std::uint32_t>(node_base + k)};
    node_record rec{std::move(a.data), std::move(a.inputs), {}, true, 0.0};
    rec.outputs.reserve(a.outputs.size());
    for (std::size_t j = 0; j < a.outputs.size(); ++j) {
      rec.outputs.push_back(edge_id{static_cast<std::uint32_t>(edge_base + new_edges.size())});
      new_edges.push_back(edge_record{std::move(a.outputs[j]), n, static_cast<std::uint32_t>(j), {}, 0, true});
    }
    new_nodes.push_back(std::move(rec));
  }
  // Uses landing on new edges are recorded now; existing edges only get the capacity.
  std::vector<std::pair<edge_id, std::size_t>> growth;  // existing edge, uses it gains
  const auto add_use = [&](edge_id e, use u) {
    if (index(e) >= edge_base) {
      new_edges[index(e) - edge_base].consumers.push_back(u);
    } else {
      growth.emplace_back(e, 1);
    }
  };
  for (std::size_t k = 0; k < new_nodes.size(); ++k) {
    const auto& ins = new_nodes[k].inputs;
    for (std::uint32_t s = 0; s < ins.size(); ++s) {
      add_use(ins[s], use{node_id{static_cast<std::uint32_t>(node_base + k)}, s});
    }
  }
  for (const auto& [u, e] : plan.rewired) add_use(e, u);
  assign_order_keys(plan, new_nodes, node_base, edge_base);
  std::sort(growth.begin(), growth.end());
  for (std::size_t i = 0; i < growth.size();) {
    std::size_t j = i;
    while (j < growth.size() && growth[j].first == growth[i].first) ++j;
    tfg::detail::reserve_more(edges_[index(growth[i].first)].consumers, j - i);
    i = j;
  }
  tfg::detail::reserve_more(nodes_, new_nodes.size());
  tfg::detail::reserve_more(edges_, new_edges.size());

  // Phase 2: no allocation below; record moves are nothrow when NodeData/EdgeData moves are.
  for (auto& rec : new_nodes) nodes_.push_back(std::move(rec));
  for (auto& rec : new_edges) edges_.push_back(std::move(rec));
  for (std::size_t k = node_base; k < nodes_.size(); ++k) {
    const auto& ins = nodes_[k].inputs;
    for (std::uint32_t s = 0; s < ins.size(); ++s) {
      if (index(ins[s]) < edge_base) {
        edges_[index(ins[s])].consumers.push_back(use{node_id{static_cast<std::uint32_t>(k)}, s});
      }
    }
  }
  for (const auto& [u, e] : plan.rewired) {
    edge_id& slot = nodes_[index(u.node)].inputs[u.slot];
    erase_use(edges_[index(slot)].consumers, u);
    slot = e;
    if (index(e) < edge_base) edges_[index(e)].consumers.push_back(u);
  }
  for (const auto& [pos, e] : plan.outputs) {
    --edges_[index(outputs_[pos])].output_refs;
    outputs_[pos] = e;
    ++edges_[index(e)].output_refs;
  }
  for (const node_id r : plan.removed) {
    node_record& rec = nodes_[index(r)];
    for (std::uint32_t s = 0; s < rec.inputs.size(); ++s) {
      erase_use(edges_[index(rec.inputs[s])].consumers, use{r, s});
    }
    for (const edge_id e : rec.outputs) {
      edge_record& out = edges_[index(e)];
      TFG_ASSERT(out.output_refs == 0, "rewrite removed an edge that is still a graph output");
      out.alive = false;
      out.consumers.clear();  // only removed nodes may still be listed
      --live_edges_;
    }
    rec.alive = false;
    rec.inputs.clear();
    rec.outputs.clear();
    --live_nodes_;
  }
  live_nodes_ += plan.added.size();
  live_edges_ += added_edges;
  ++version_;
}

/// Execution order of rewrite-added nodes. Side effects (in-place operators, views of a
/// written storage) make the order of independent nodes observable, so an added node must
/// run where the code it stands for ran: just before the earliest removed node or the earliest
/// surviving node that reads its results (directly, or through other added nodes), whichever
/// ran first; failing both, after every existing node. Added nodes that land before
/// the same node keep their staging order. O(V) per distinct target, O(added · uses) else.
template <class NodeData, class EdgeData>
void flow_graph<NodeData, EdgeData>::assign_order_keys(const tfg::detail::rewrite_plan<NodeData, EdgeData>& plan,
                                                       std::vector<node_record>& added, std::size_t node_base,
                                                       std::size_t edge_base) const {
  constexpr double none = std::numeric_limits<double>::infinity();
  const std::size_t m = added.size();
  if (m == 0) return;
  std::vector<double> target(m, none);                // key of the node each added node must precede
  const auto owner = [&](edge_id e) -> std::size_t {  // added node producing e, or m
    if (index(e) < edge_base) return m;
    for (std::size_t k = 0; k < m; ++k)
      for (const edge_id o : added[k].outputs)
        if (o == e) return k;
    return m;
  };
  for (const auto& [u, e] : plan.rewired)
    if (const auto k = owner(e); k < m && index(u.node) < node_base)
      target[k] = std::min(target[k], nodes_[index(u.node)].order);
  // Added consumers pass their target back to their added producers (the staging order is
  // usually producer first, so walk backwards; repeat in case it is not).
  for (std::size_t pass = 0; pass < m; ++pass) {
    bool changed = false;
    for (std::size_t k = m; k-- > 0;)
      for (const edge_id in : added[k].inputs)
        if (const auto p = owner(in); p < m && target[k] < target[p]) {
          target[p] = target[k];
          changed = true;
        }
    if (!changed) break;
  }
  double removed_min = none, max_key = -none;
  for (const node_id r : plan.removed) removed_min = std::min(removed_min, nodes_[index(r)].order);
  for (const auto& rec : nodes_)
    if (rec.alive) max_key = std::max(max_key, rec.order);
  for (std::size_t k = 0; k < m; ++k)
    target[k] = std::min(target[k], removed_min);  // a replacement runs where the removed code ran
  // Spread the nodes that share a target evenly between that target and the key before it.
  std::vector<bool> done(m, false);
  double append = (max_key == -none ? 0.0 : std::floor(max_key)) + 1.0;
  for (std::size_t k = 0; k < m; ++k) {
    if (done[k]) continue;
    std::vector<std::size_t> group;
    for (std::size_t j = k; j < m; ++j)
      if (!done[j] && target[j] == target[k]) group.push_back(j), done[j] = true;
    if (target[k] == none) {
      for (const auto j : group) added[j].order = append++;
      continue;
    }
    double before = -1.0;  // greatest existing key below the target (keys of built nodes are >= 0)
    for (const auto& rec : nodes_)
      if (rec.alive && rec.order < target[k]) before = std::max(before, rec.order);
    const double step = (target[k] - before) / static_cast<double>(group.size() + 1);
    for (std::size_t i = 0; i < group.size(); ++i) added[group[i]].order = before + step * static_cast<double>(i + 1);
  }
}

}  // namespace tfg::graph

// The transaction is part of the graph's interface (begin_rewrite); it includes this header
// back, which #pragma once turns into a no-op.
#include "tfg/graph/rewrite.hpp"
