#pragma once
/// \file
/// How well the constraint system separates legal from illegal candidates, measured the
/// paper's way (its Table 6): pre-filter candidates (operator-anchor pairs whose pattern
/// matched, parameters sampled, before any constraint) are drawn stratified by operator,
/// each is labelled by applying and running it (the caller's backend does that), and every
/// constraint group (input, internal, output) is judged on its own, so that the table can
/// switch each group off.
///
///     auto v = tfg::match::judge_groups(op, adapter, b, ws);   // on the seed's F(e)
///     for (auto const& m : tfg::match::ablations) table[i].add(retains(m, v), legal);
///
/// Rejection is the positive class: a true positive is a rejected illegal candidate, a false
/// positive a rejected legal one (a false rejection), a false negative an illegal candidate
/// the constraints let through (it leaks to execution), a true negative a retained legal one.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tfg/match/compile.hpp"
#include "tfg/match/pattern.hpp"

namespace tfg::match {

/// The constraint groups a candidate satisfies, each evaluated alone on the seed's F(e): the
/// `require input` conditions, the probe-free `require internal` conditions with the check
/// that the replacement bakes no run-dependent state (`same_on_every_run`), and the probe-free
/// `require output` conditions. Conditions that read replacement values are deferred to the mutant's probe
/// and belong to its label (they state the operator's declared effect), not to a group.
struct group_verdicts {
  bool input = true, internal = true, output = true;
  /// Where the input group failed (`failing_input`): the index of the first `require input`
  /// condition that does not hold, `op.input.size()` for a parameter outside its site range;
  /// nullopt when the group holds.
  std::optional<std::size_t> input_failed;
};

/// Judges each group of `op` on bindings `b` (pattern matched, parameters set). Unlike
/// `check_constraints`, a failing group does not stop the others: every group is decided.
template <match_adapter A>
[[nodiscard]] group_verdicts judge_groups(const compiled_operator& op, A const& a, const bindings& b, workspace& ws) {
  const auto E = make_env(op, a, b);
  const auto failed = failing_input(op, E, ws);
  return {!failed, internal_holds(op, a, b, E, ws), output_holds(op, E, ws), failed};
}

/// A constraint system with some groups switched off.
struct constraint_mask {
  bool input = true, internal = true, output = true;
  std::string_view name;
};

/// The rows of the ablation table: the full system, each group off, all off.
inline constexpr std::array<constraint_mask, 5> ablations{{{true, true, true, "full constraints"},
                                                           {false, true, true, "without input"},
                                                           {true, false, true, "without internal"},
                                                           {true, true, false, "without output"},
                                                           {false, false, false, "no constraints"}}};

/// Whether the system `m` retains a candidate with verdicts `v`.
[[nodiscard]] constexpr bool retains(const constraint_mask& m, const group_verdicts& v) noexcept {
  return (!m.input || v.input) && (!m.internal || v.internal) && (!m.output || v.output);
}

/// Counts of one constraint system over labelled candidates. The rates are NaN where their
/// denominator is 0.
struct confusion {
  std::uint64_t tp = 0;  ///< rejected, illegal
  std::uint64_t fp = 0;  ///< rejected, legal (false rejection)
  std::uint64_t fn = 0;  ///< retained, illegal (leaks to execution)
  std::uint64_t tn = 0;  ///< retained, legal

  void add(bool retained, bool legal) noexcept {
    if (retained) ++(legal ? tn : fn);
    else ++(legal ? fp : tp);
  }
  [[nodiscard]] std::uint64_t total() const noexcept { return tp + fp + fn + tn; }
  [[nodiscard]] std::uint64_t retained() const noexcept { return fn + tn; }
  /// Retained / all candidates.
  [[nodiscard]] double retention() const noexcept { return ratio(fn + tn, total()); }
  /// Legal-mutant rate LMR: legal retained / retained.
  [[nodiscard]] double legal_rate() const noexcept { return ratio(tn, fn + tn); }
  /// Rejection precision: illegal rejected / rejected.
  [[nodiscard]] double precision() const noexcept { return ratio(tp, tp + fp); }
  /// Rejection recall: illegal rejected / illegal.
  [[nodiscard]] double recall() const noexcept { return ratio(tp, tp + fn); }
  /// False-rejection rate: legal rejected / legal.
  [[nodiscard]] double false_rejection() const noexcept { return ratio(fp, fp + tn); }
  /// Leakage: illegal retained / retained (= 1 - LMR), the share of executions spent on
  /// mutants the constraints should have rejected.
  [[nodiscard]] double leakage() const noexcept { return ratio(fn, fn + tn); }

 private:
  [[nodiscard]] static double ratio(std::uint64_t a, std::uint64_t b) noexcept {
    return b ? static_cast<double>(a) / static_cast<double>(b) : std::numeric_limits<double>::quiet_NaN();
  }
};

/// One drawn item: stratum `stratum`, element `index` of it.
struct sample_item {
  std::uint32_t stratum = 0;
  std::uint64_t index = 0;
  bool operator==(const sample_item&) const = default;
};

/// Draws up to `n` items from strata of the given sizes, stratified: every non-empty stratum
/// gets an equal share, a stratum smaller than its share gives all it has and the rest is
/// shared among the others (water-filling), and the remainder of an uneven split goes to
/// strata chosen at random. Within a stratum, items are drawn without replacement (Floyd's
/// algorithm), so the draw costs O(n) whatever the strata's sizes. Deterministic for `seed`;
/// items come out by stratum, then by index.
template <class URBG>
[[nodiscard]] std::vector<sample_item> stratified_sample(std::span<const std::uint64_t> sizes, std::uint64_t n,
                                                         URBG& rng) {
  std::vector<std::uint64_t> quota(sizes.size(), 0);
  std::vector<std::uint32_t> open;
  for (std::uint32_t s = 0; s < sizes.size(); ++s)
    if (sizes[s]) open.push_back(s);
  std::uint64_t left = n;
  while (left > 0 && !open.empty()) {
    std::uint64_t const share = left / open.size();
    if (share == 0) {
      // Fewer items left than open strata: one more each for `left` strata chosen at random.
      std::shuffle(open.begin(), open.end(), rng);
      for (std::uint64_t k = 0; k < left; ++k) ++quota[open[k]];
      break;
    }
    std::vector<std::uint32_t> still;
    for (const auto s : open) {
      std::uint64_t const take = std::min(share, sizes[s] - quota[s]);
      quota[s] += take;
      left -= take;
      if (quota[s] < sizes[s]) still.push_back(s);
    }
    open = std::move(still);
  }
  std::vector<sample_item> out;
  for (std::uint32_t s = 0; s < sizes.size(); ++s) {
    if (!quota[s]) continue;
    std::unordered_set<std::uint64_t> chosen;
    std::uint64_t const N = sizes[s], k = quota[s];
    for (std::uint64_t j = N - k; j < N; ++j) {
      std::uniform_int_distribution<std::uint64_t> d(0, j);
      std::uint64_t const t = d(rng);
      chosen.insert(chosen.count(t) ? j : t);
    }
    std::vector<std::uint64_t> idx(chosen.begin(), chosen.end());
    std::sort(idx.begin(), idx.end());
    for (const auto i : idx) out.push_back({s, i});
  }
  return out;
}

}  // namespace tfg::match
