#pragma once
/// \file
/// Downstream impact P(c) (method: "Candidate construction and selection"): the mean over
/// profiling inputs x of |D(c,x)| / |V(x)|, where V(x) is the set of operators that input x
/// executed and D(c,x) those of them reachable from the replacement's output boundary.
/// Reachability is computed once per distinct boundary and cached, since many candidates
/// (one per operator applicable at a site) share a boundary.
/// Depends on the standard library and tfg/graph/concepts.hpp only.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "tfg/graph/concepts.hpp"
#include "tfg/graph/ids.hpp"

namespace tfg::select {

/// P for every candidate of one seed graph and its profiling run. Holds a pointer to the
/// graph, which must outlive the cache and not change structurally while it is used (build
/// a new cache for the next seed: every accepted mutant is re-profiled anyway).
template <graph::tensor_graph G>
class downstream_impact_cache {
 public:
  /// `executed[x]` lists the operators profiling input x executed (duplicates and dead ids
  /// are ignored). An input that executed nothing is left out of the mean.
  /// O(inputs * capacity + total listed).
  downstream_impact_cache(const G& g, std::span<const std::vector<graph::node_id>> executed)
      : g_(&g), node_cap_(g.node_capacity()) {
    executed_.reserve(executed.size());
    for (const auto& ops : executed) {
      std::vector<bool> bits(node_cap_, false);
      std::size_t count = 0;
      for (graph::node_id n : ops) {
        const std::size_t i = graph::index(n);
        if (i < node_cap_ && g.alive(n) && !bits[i]) {
          bits[i] = true;
          ++count;
        }
      }
      if (count > 0) {
        executed_.push_back(std::move(bits));
        executed_count_.push_back(count);
      }
    }
    seen_.assign(node_cap_, 0);
  }

  /// P for the output boundary `boundary` (the edges that leave the replacement, i.e. the
  /// site's outputs read outside it): the operators consuming those edges and everything
  /// downstream of them, as a fraction of each input's executed operators, averaged over the
  /// inputs. In [0, 1]; 0 without profiling inputs or with an empty boundary. Order and
  /// duplicates in `boundary` do not matter. First call for a boundary: O(V + E + |D| *
  /// inputs); later calls: O(|boundary| log + log cached).
  double operator()(std::span<const graph::edge_id> boundary) {
    key_.clear();
    for (graph::edge_id e : boundary) key_.push_back(static_cast<std::uint32_t>(graph::index(e)));
    std::sort(key_.begin(), key_.end());
    key_.erase(std::unique(key_.begin(), key_.end()), key_.end());
    if (const auto it = cache_.find(key_); it != cache_.end()) return it->second;
    const double p = compute();
    cache_.emplace(key_, p);
    return p;
  }

  /// Number of distinct boundaries computed so far.
  [[nodiscard]] std::size_t cached() const noexcept { return cache_.size(); }
  /// Number of profiling inputs that executed at least one operator.
  [[nodiscard]] std::size_t inputs() const noexcept { return executed_.size(); }

 private:
  double compute() {
    if (executed_.empty() || key_.empty()) return 0.0;
    // Forward search from the consumers of the boundary edges; `seen_` is an epoch-stamped
    // visited table so it needs no clearing between boundaries.
    if (++epoch_ == 0) {
      std::fill(seen_.begin(), seen_.end(), 0u);
      epoch_ = 1;
    }
    stack_.clear();
    reached_.clear();
    auto visit_consumers = [&](graph::edge_id e) {
      for (const auto& u : g_->consumers(e)) {
        const graph::node_id n = u.node;
        const std::size_t i = graph::index(n);
        if (i < node_cap_ && seen_[i] != epoch_) {
          seen_[i] = epoch_;
          stack_.push_back(n);
          reached_.push_back(i);
        }
      }
    };
    for (std::uint32_t e : key_) {
      const graph::edge_id edge{e};
      if (g_->alive(edge)) visit_consumers(edge);
    }
    while (!stack_.empty()) {
      const graph::node_id n = stack_.back();
      stack_.pop_back();
      for (graph::edge_id e : g_->outputs(n)) visit_consumers(e);
    }
    double sum = 0.0;
    for (std::size_t x = 0; x < executed_.size(); ++x) {
      std::size_t hit = 0;
      for (std::size_t i : reached_) hit += executed_[x][i];
      sum += static_cast<double>(hit) / static_cast<double>(executed_count_[x]);
    }
    return sum / static_cast<double>(executed_.size());
  }

  const G* g_;
  std::size_t node_cap_;
  std::vector<std::vector<bool>> executed_;
  std::vector<std::size_t> executed_count_;
  std::map<std::vector<std::uint32_t>, double> cache_;
  std::vector<std::uint32_t> key_, seen_;
  std::uint32_t epoch_ = 0;
  std::vector<graph::node_id> stack_;
  std::vector<std::size_t> reached_;
};

}  // namespace tfg::select
