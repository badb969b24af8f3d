#pragma once
/// \file
/// Candidate construction: every live edge as anchor, paired with every operator, checked
/// prefilter first, then pattern, input, and the probe-free parts of internal and output
/// (dsl/spec.md sections 10 and 15). Rejections are counted per operator and per stage.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tfg/match/adapter.hpp"
#include "tfg/match/compile.hpp"
#include "tfg/match/evaluate.hpp"

namespace tfg::match {

/// A retained candidate: legal as far as the seed's F shows (deferred conditions aside).
/// Its bindings live in the flat arrays of the `candidate_set` (see `candidate_set::bound`).
struct candidate {
  edge_id anchor = graph::no_edge;
  std::uint32_t op = 0;         ///< index into the operator span given to `construct`
  std::uint32_t values_at = 0;  ///< first entry in candidate_set::values (the pattern values' entries)
  std::uint32_t nodes_at = 0;   ///< first entry in candidate_set::nodes (op.pattern.size() entries)
  std::uint32_t params_at = 0;  ///< first entry in candidate_set::params (op.params.size() entries)
  std::uint16_t value_count = 0, node_count = 0, param_count = 0;
  /// op.values.size(): the pattern values (stored) and the replacement values, which have no
  /// edge before instantiation and are not stored (an operator that builds weights names a
  /// dozen of them; storing them doubled the memory of a million-edge candidate set).
  std::uint16_t value_slots = 0;
};

/// Pairs by the stage that rejected them first; `accepted` counts retained candidates.
/// `prefilter_as` splits the `prefilter` count by the stage of the failed necessary
/// condition (pattern or input), so `by_stage[s] + prefilter_as[s]` is the count the full
/// evaluation would have reported for stage s.
struct stage_counts {
  std::array<std::uint64_t, reject_stage_count> by_stage{};
  std::array<std::uint64_t, reject_stage_count> prefilter_as{};
  [[nodiscard]] std::uint64_t operator[](reject_stage s) const noexcept { return by_stage[static_cast<int>(s)]; }
  [[nodiscard]] std::uint64_t pairs() const noexcept {
    std::uint64_t n = 0;
    for (const auto x : by_stage) n += x;
    return n;
  }
};

/// One examined pair (only with `construct_options::record_pairs`).
struct pair_record {
  edge_id anchor;
  std::uint32_t op;
  reject_stage stage;
};

struct construct_options {
  std::uint64_t seed = 0;       ///< parameter sampling: rng seeded per pair from this
  bool record_pairs = false;    ///< fill `candidate_set::pairs` (allocates per pair)
  bool keep_candidates = true;  ///< false: count only (benchmarks of the scan)
  bool use_prefilter = true;    ///< false: every pair goes through the pattern
  /// Draws of the sampled parameters per pair before the constraints reject it
  /// (`evaluate_constraints`); 1: one draw, as before parameters were redrawn.
  unsigned param_draws = default_param_draws;
  /// When set (`params->size() == op.params.size()` for every operator): the values of the
  /// parameters not bound by matching, used instead of a sample (`seed` is then unused).
  /// Entries of parameters bound by matching are ignored.
  const std::vector<attr_value>* params = nullptr;
};

/// The parameter values of all candidates, flat: a kind byte and 8 payload bytes per value
/// (None, bool, int and float, which is nearly every parameter) instead of a 40-byte
/// `attr_value`; strings and lists go to a side table. A million-edge candidate set holds
/// millions of parameters, and writing them to fresh memory was a third of construction.
class packed_params {
  // The kind byte is the attr_value's index: these four alternatives are packed.
  static_assert(std::is_same_v<std::variant_alternative_t<0, attr_value>, std::monostate> &&
                std::is_same_v<std::variant_alternative_t<1, attr_value>, bool> &&
                std::is_same_v<std::variant_alternative_t<2, attr_value>, std::int64_t> &&
                std::is_same_v<std::variant_alternative_t<3, attr_value>, double>);

 public:
  [[nodiscard]] std::size_t size() const noexcept { return kinds_.size(); }
  [[nodiscard]] std::size_t capacity() const noexcept { return kinds_.capacity(); }
  void reserve(std::size_t n) {
    kinds_.reserve(n);
    bits_.reserve(n);
  }
  /// Empties the table and keeps its memory.
  void clear() noexcept {
    kinds_.clear();
    bits_.clear();
    other_.clear();
  }
  void push_back(const attr_value& v) {
    std::uint64_t b = 0;
    switch (v.index()) {
      case 0: break;
      case 1: b = std::get<bool>(v) ? 1 : 0; break;
      case 2: b = static_cast<std::uint64_t>(std::get<std::int64_t>(v)); break;
      case 3: b = std::bit_cast<std::uint64_t>(std::get<double>(v)); break;
      default:
        b = other_.size();
        other_.push_back(v);
        kinds_.push_back(other_kind);
        bits_.push_back(b);
        return;
    }
    kinds_.push_back(static_cast<std::uint8_t>(v.index()));
    bits_.push_back(b);
  }
  [[nodiscard]] attr_value operator[](std::size_t i) const {
    const auto b = bits_[i];
    switch (kinds_[i]) {
      case 0: return std::monostate{};
      case 1: return b != 0;
      case 2: return static_cast<std::int64_t>(b);
      case 3: return std::bit_cast<double>(b);
      default: return other_[static_cast<std::size_t>(b)];
    }
  }

 private:
  static constexpr std::uint8_t other_kind = 255;
  std::vector<std::uint8_t> kinds_;
  std::vector<std::uint64_t> bits_;
  std::vector<attr_value> other_;
};

/// The parameters of one candidate: `size()` values, each read as an `attr_value`.
class param_view {
 public:
  class iterator {
   public:
    using value_type = attr_value;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    iterator(const packed_params* p, std::size_t i) : p_(p), i_(i) {}
    attr_value operator*() const { return (*p_)[i_]; }
    iterator& operator++() { return ++i_, *this; }
    iterator operator++(int) {
      auto t = *this;
      ++i_;
      return t;
    }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const packed_params* p_ = nullptr;
    std::size_t i_ = 0;
  };
  param_view(const packed_params& p, std::size_t at, std::size_t n) : p_(&p), at_(at), n_(n) {}
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
  [[nodiscard]] attr_value operator[](std::size_t i) const { return (*p_)[at_ + i]; }
  [[nodiscard]] iterator begin() const { return {p_, at_}; }
  [[nodiscard]] iterator end() const { return {p_, at_ + n_}; }

 private:
  const packed_params* p_;
  std::size_t at_, n_;
};

struct candidate_set {
  std::vector<candidate> candidates;
  std::vector<edge_id> values;  ///< bindings of all candidates, flat (no per-candidate allocation)
  std::vector<node_id> nodes;
  packed_params params;
  std::vector<stage_counts> per_operator;  ///< index = operator index
  stage_counts total;
  std::vector<pair_record> pairs;
  std::uint64_t type_faults = 0;  ///< run-time type mismatches in constraints

  [[nodiscard]] std::span<const edge_id> values_of(const candidate& c) const {
    return {values.data() + c.values_at, c.value_count};
  }
  [[nodiscard]] std::span<const node_id> nodes_of(const candidate& c) const {
    return {nodes.data() + c.nodes_at, c.node_count};
  }
  [[nodiscard]] param_view params_of(const candidate& c) const { return {params, c.params_at, c.param_count}; }
  /// The bindings of `c` as a `bindings` object (for `evaluate_deferred` and friends): every
  /// value slot, the replacement values' as `no_edge`.
  [[nodiscard]] bindings bound(const candidate& c) const {
    const auto v = values_of(c);
    const auto n = nodes_of(c);
    const auto p = params_of(c);
    bindings b{{v.begin(), v.end()}, {n.begin(), n.end()}, {}};
    b.params.reserve(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) b.params.push_back(p[i]);
    if (b.values.size() < c.value_slots) b.values.resize(c.value_slots, graph::no_edge);
    return b;
  }
};

/// Visits every live edge of `a.graph()` as anchor with every operator of `ops`: the
/// prefilter is decided once per distinct edge summary (O(|E|) hashing plus O(classes x
/// |ops|) tests; per pair when `record_pairs` is set), then the pattern and constraint work
/// of the pairs that pass, edge by edge, operators in order. Allocation-free per rejected pair (after warm-up);
/// retained candidates append their bindings to the set's flat arrays (amortised O(1), no allocation per candidate).
/// The parameter sample of a pair is drawn from a `splitmix64` seeded with (options.seed, edge, operator), so results
/// do not depend on the visiting order.
///
/// `construct_into` fills `out` in place, keeping the memory of its arrays (a campaign
/// constructs once per round; fresh arrays cost a page fault per 4 KiB on first write).
template <match_adapter A>
void construct_into(candidate_set& out, A const& a, std::span<const compiled_operator> ops,
                    const construct_options& options = {}) {
  out.candidates.clear();
  out.values.clear();
  out.nodes.clear();
  out.params.clear();
  out.per_operator.assign(ops.size(), stage_counts{});
  out.total = stage_counts{};
  out.pairs.clear();
  out.type_faults = 0;
  const auto summaries = summarize(a);
  std::vector<prefilter> pres;  // contiguous: the hot loop reads only these
  pres.reserve(ops.size());
  for (const auto& op : ops) pres.push_back(op.pre);
  workspace ws;
  std::vector<bindings> per_op(ops.size());  // one per operator: parameter types stay put
  // Growth of the flat output arrays (retained candidates only): to the projected final size
  // (entries so far, scaled by the pairs still to examine; at least 1.5x), at most to the
  // bound (every examined pair accepted), so that the arrays are copied a few times at most
  // and end with little unused capacity. Set by the scan below before the first pair.
  std::uint64_t to_examine = 0, examined = 0;
  std::array<std::uint64_t, 4> bound{};  // candidates, values, nodes, params
  auto grow_to = [&](auto& v, std::uint64_t need, std::uint64_t cap_bound) {
    std::uint64_t want = std::max<std::uint64_t>(need, v.capacity() + v.capacity() / 2);
    if (examined >= 4096 && examined * 64 >= to_examine) {
      std::uint64_t const proj = v.size() * to_examine / examined;
      want = std::max(want, proj + proj / 16 + 1024);
    } else {
      want = std::max<std::uint64_t>(want, 1024);
    }
    if (cap_bound) want = std::min(want, std::max(cap_bound, need));
    v.reserve(static_cast<std::size_t>(want));
  };
  auto grow = [&](auto& v, std::size_t extra, std::uint64_t cap_bound) {
    if (v.size() + extra > v.capacity()) [[unlikely]]
      grow_to(v, v.size() + extra, cap_bound);
  };
  auto bound_add = [&](std::uint32_t oi, std::uint64_t n) {
    to_examine += n;
    bound[0] += n;
    bound[1] += n * ops[oi].pattern_value_count;
    bound[2] += n * ops[oi].pattern.size();
    bound[3] += n * ops[oi].params.size();
  };
  // The pattern and constraint stages of one pair that passed the prefilter (or skipped it).
  auto examine = [&](edge_id e, std::uint32_t oi) {
    auto const& op = ops[oi];
    auto& counts = out.per_operator[oi];
    auto& b = per_op[oi];
    ++examined;
    reject_stage st = reject_stage::accepted;
    if (!match_pattern(op, a, e, b, ws)) {
      st = reject_stage::pattern;
    } else {
      if (options.params) {
        for (std::size_t i = 0; i < op.params.size() && i < options.params->size(); ++i)
          if (!op.params[i].bound_by_match) b.params[i] = (*options.params)[i];
        st = check_constraints(op, a, b, ws);
      } else {
        splitmix64 rng(options.seed ^ (static_cast<std::uint64_t>(graph::index(e)) << 24) ^ (std::uint64_t{oi} << 1));
        st = evaluate_constraints(op, a, b, rng, ws, options.param_draws);
      }
    }
    ++counts.by_stage[static_cast<int>(st)];
    if (options.record_pairs) out.pairs.push_back({e, oi, st});
    if (st == reject_stage::accepted && options.keep_candidates) {
      // Only the pattern values: the replacement slots after them have no edge yet.
      auto const stored = std::min<std::size_t>(b.values.size(), ops[oi].pattern_value_count);
      candidate c{e,
                  oi,
                  static_cast<std::uint32_t>(out.values.size()),
                  static_cast<std::uint32_t>(out.nodes.size()),
                  static_cast<std::uint32_t>(out.params.size()),
                  static_cast<std::uint16_t>(stored),
                  static_cast<std::uint16_t>(b.nodes.size()),
                  static_cast<std::uint16_t>(b.params.size()),
                  static_cast<std::uint16_t>(b.values.size())};
      grow(out.values, stored, bound[1]);
      grow(out.nodes, b.nodes.size(), bound[2]);
      grow(out.params, b.params.size(), bound[3]);
      grow(out.candidates, 1, bound[0]);
      out.values.insert(out.values.end(), b.values.begin(), b.values.begin() + static_cast<std::ptrdiff_t>(stored));
      out.nodes.insert(out.nodes.end(), b.nodes.begin(), b.nodes.end());
      for (auto const& v : b.params) out.params.push_back(v);
      out.candidates.push_back(c);
    }
  };
  if (options.use_prefilter && !options.record_pairs) {
    // The prefilter reads only the edge's summary, so it is decided once per distinct
    // summary ("class"): each class keeps the operators that pass (ascending, so pairs are
    // examined in the same order as below) and the rejections are counted per class.
    struct summary_key {
      std::uint64_t hi, lo;
      bool operator==(const summary_key&) const = default;
    };
    struct summary_hash {
      std::size_t operator()(const summary_key& k) const noexcept {
        return static_cast<std::size_t>((k.hi * 0x9e3779b97f4a7c15ull) ^ (k.lo + 0x632be59bd9b4e019ull + (k.hi >> 7)));
      }
    };
    struct summary_class {
      std::uint64_t edges = 0;
      std::vector<std::uint32_t> pass;
    };
    std::unordered_map<summary_key, std::uint32_t, summary_hash> class_of;
    std::vector<summary_class> classes;
    std::vector<std::uint32_t> edge_class;
    edge_class.reserve(summaries.size());
    for (const auto e : a.graph().edges()) {
      const auto& s = summaries[graph::index(e)];
      const summary_key k{(std::uint64_t{s.producer_symbol} << 16) | s.uses,
                          (std::uint64_t{s.rank} << 16) | (std::uint64_t{s.dtype} << 8) | s.flags};
      const auto [it, fresh] = class_of.try_emplace(k, static_cast<std::uint32_t>(classes.size()));
      if (fresh) {
        auto& c = classes.emplace_back();
        for (std::uint32_t oi = 0; oi < ops.size(); ++oi)
          if (prefilter_check(pres[oi], s) == reject_stage::accepted) c.pass.push_back(oi);
      }
      ++classes[it->second].edges;
      edge_class.push_back(it->second);
    }
    for (const auto& c : classes)
      for (const auto oi : c.pass) bound_add(oi, c.edges);
    std::size_t i = 0;
    for (const auto e : a.graph().edges())
      for (const auto oi : classes[edge_class[i++]].pass) examine(e, oi);
    // Prefilter rejections, per class (the class's first edge stands for all of them).
    std::vector<char> seen(classes.size(), 0);
    i = 0;
    for (const auto e : a.graph().edges()) {
      const auto ci = edge_class[i++];
      if (seen[ci]) continue;
      seen[ci] = 1;
      const auto& s = summaries[graph::index(e)];
      const auto n = classes[ci].edges;
      for (std::uint32_t oi = 0; oi < ops.size(); ++oi) {
        const auto pf = prefilter_check(pres[oi], s);
        if (pf == reject_stage::accepted) continue;
        out.per_operator[oi].by_stage[static_cast<int>(reject_stage::prefilter)] += n;
        out.per_operator[oi].prefilter_as[static_cast<int>(pf)] += n;
      }
    }
  } else {
    {
      std::uint64_t live = 0;
      for ([[maybe_unused]] const auto e : a.graph().edges()) ++live;
      for (std::uint32_t oi = 0; oi < ops.size(); ++oi) bound_add(oi, live);
    }
    for (const auto e : a.graph().edges()) {
      const auto& s = summaries[graph::index(e)];
      for (std::uint32_t oi = 0; oi < ops.size(); ++oi) {
        if (options.use_prefilter) {
          const auto pf = prefilter_check(pres[oi], s);
          if (pf != reject_stage::accepted) {
            auto& counts = out.per_operator[oi];
            ++counts.by_stage[static_cast<int>(reject_stage::prefilter)];
            ++counts.prefilter_as[static_cast<int>(pf)];
            if (options.record_pairs) out.pairs.push_back({e, oi, reject_stage::prefilter});
            continue;
          }
        }
        examine(e, oi);
      }
    }
  }
  for (const auto& c : out.per_operator)
    for (std::size_t i = 0; i < reject_stage_count; ++i) {
      out.total.by_stage[i] += c.by_stage[i];
      out.total.prefilter_as[i] += c.prefilter_as[i];
    }
  out.type_faults = ws.type_faults;
}

template <match_adapter A>
[[nodiscard]] candidate_set construct(A const& a, std::span<const compiled_operator> ops,
                                      const construct_options& options = {}) {
  candidate_set out;
  construct_into(out, a, ops, options);
  return out;
}

}  // namespace tfg::match
