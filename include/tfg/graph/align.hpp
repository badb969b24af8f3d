#pragma once
/// \file
/// Node correspondence between two versions of one model — a graph and the graph re-imported
/// from its export, where the framework's import passes may have folded or pooled a few
/// constants — by the longest common subsequence of their node kinds in topological order.
#include <cstdint>
#include <string>
#include <vector>

#include "tfg/graph/concepts.hpp"
#include "tfg/graph/ids.hpp"

namespace tfg::graph {

/// For every node of `a` (by index), the node of `b` it corresponds to, or no_node. `kind_a(n)`
/// and `kind_b(n)` name node kinds. O(|a| x |b|) time and 4 (|a| + 1)(|b| + 1) bytes; graphs of
/// more than `max_nodes` nodes are aligned position by position where the kinds agree.
template <tensor_graph A, tensor_graph B, class KindA, class KindB>
[[nodiscard]] std::vector<node_id> align_by_kind(const A& a, KindA&& kind_a, const B& b, KindB&& kind_b,
                                                 std::size_t max_nodes = 6000) {
  std::vector<node_id> na(a.topological_order().begin(), a.topological_order().end());
  std::vector<node_id> nb(b.topological_order().begin(), b.topological_order().end());
  std::vector<std::string> ka, kb;
  ka.reserve(na.size());
  kb.reserve(nb.size());
  for (auto n : na) ka.emplace_back(kind_a(n));
  for (auto n : nb) kb.emplace_back(kind_b(n));
  std::vector<node_id> out(a.node_capacity(), no_node);
  if (na.size() > max_nodes || nb.size() > max_nodes) {
    for (std::size_t i = 0; i < na.size() && i < nb.size(); ++i)
      if (ka[i] == kb[i]) out[index(na[i])] = nb[i];
    return out;
  }
  const std::size_t n = na.size(), m = nb.size();
  // l[i][j]: LCS length of ka[i..] and kb[j..].
  std::vector<std::uint32_t> l((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return l[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = ka[i] == kb[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (std::size_t i = 0, j = 0; i < n && j < m;) {
    if (ka[i] == kb[j] && at(i, j) == at(i + 1, j + 1) + 1) {
      out[index(na[i])] = nb[j];
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

}  // namespace tfg::graph
