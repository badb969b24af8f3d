#pragma once
/// \file
/// Edge summaries and the prefilter: the necessary conditions of an operator decided once
/// per edge summary, before the pattern matcher runs.
#include <cstdint>
#include <vector>

#include "tfg/match/interpret.hpp"

namespace tfg::match {

/// One `edge_summary` per edge id (index = edge index). O(|E|); allocates the table.
template <match_adapter A>
[[nodiscard]] std::vector<edge_summary> summarize(A const& a) {
  const auto& g = a.graph();
  std::vector<edge_summary> out(g.edge_capacity());
  for (const auto e : g.edges()) {
    auto& s = out[graph::index(e)];
    s.flags = edge_summary::live;
    const auto p = g.producer(e);
    s.producer_symbol = p == graph::no_node ? 0 : a.op_symbol(p);
    const auto n = std::ranges::distance(g.consumers(e));
    s.uses = static_cast<std::uint16_t>(std::min<std::ptrdiff_t>(n, 65535));
    const auto& prof = a.profile(e);
    if (!prof.runs.empty()) {
      const auto& r0 = prof.runs.front();
      s.flags |= edge_summary::has_runs;
      if (r0.kind != state::value_kind::tensor) s.flags |= edge_summary::non_tensor;
      s.rank = static_cast<std::uint8_t>(std::min(r0.rank(), 63));
      s.dtype = static_cast<std::uint8_t>(r0.type);
      if (r0.aliased()) s.flags |= edge_summary::aliased;
    }
  }
  return out;
}

/// The prefilter: `accepted` when the pair may match, else the stage (pattern or input) of
/// the failed necessary condition. A few instructions, no memory beyond `s`.
[[nodiscard]] inline reject_stage prefilter_check(const prefilter& p, const edge_summary& s) noexcept {
  if (!(s.flags & edge_summary::live) || (s.flags & edge_summary::non_tensor)) return reject_stage::pattern;
  if (p.need_producer) {
    if (s.producer_symbol == 0) return reject_stage::pattern;
    if (!p.any_producer && !((p.producer_mask[(s.producer_symbol & 255) >> 6] >> (s.producer_symbol & 63)) & 1))
      return reject_stage::pattern;
  }
  if (s.uses < p.min_uses) return reject_stage::pattern;
  if (p.need_state) {
    if (!(s.flags & edge_summary::has_runs)) return reject_stage::input;
    if (!((p.rank_mask >> s.rank) & 1)) return reject_stage::input;
    if (!((p.dtype_mask >> s.dtype) & 1)) return reject_stage::input;
    if (p.need_aliased && !(s.flags & edge_summary::aliased)) return reject_stage::input;
  }
  return reject_stage::accepted;
}

}  // namespace tfg::match
