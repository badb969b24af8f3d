#pragma once
/// \file
/// Context features of a candidate mutation (method: "Candidate construction and selection"):
/// coverage features L (site context), T (tensor state), M (mutation) computed as
/// d(B) = mean over b in B of 1/(1+n(b)), and impact features P (downstream impact) and
/// I (normalised influence). Also feature ablations for the paper's ablation study.
///
/// Building the elements of B is the caller's job (the campaign hashes the site context,
/// tensor-state buckets, operator and parameters); this header gives it stable 64-bit hashing
/// helpers (`hash_combine`, `hash_string`) and a small `feature_set` builder.
/// Depends on the standard library only.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tfg::select {

/// Number of context features (L, T, M, P, I).
inline constexpr std::size_t feature_count = 5;

/// The five context features, in the order they appear in `context::x`.
enum class feature : std::uint8_t {
  site_context = 0,       ///< L: coverage of the site context (anchor, operators, edges)
  tensor_state = 1,       ///< T: coverage of the tensor state (rank, dtype, device, ...)
  mutation = 2,           ///< M: coverage of the mutation (operator and its parameters)
  downstream_impact = 3,  ///< P: fraction of executed operators downstream of the boundary
  influence = 4,          ///< I: anchor influence on the output, normalised within the set
};

/// A candidate's context vector x = (L, T, M, P, I); every entry is expected in [0, 1].
struct context {
  std::array<double, feature_count> x{};

  [[nodiscard]] constexpr double& operator[](feature f) noexcept { return x[static_cast<std::size_t>(f)]; }
  [[nodiscard]] constexpr double operator[](feature f) const noexcept { return x[static_cast<std::size_t>(f)]; }
  [[nodiscard]] constexpr double site_context() const noexcept { return x[0]; }
  [[nodiscard]] constexpr double tensor_state() const noexcept { return x[1]; }
  [[nodiscard]] constexpr double mutation() const noexcept { return x[2]; }
  [[nodiscard]] constexpr double downstream_impact() const noexcept { return x[3]; }
  [[nodiscard]] constexpr double influence() const noexcept { return x[4]; }

  friend constexpr bool operator==(const context&, const context&) = default;
};

// ---- hashing -----------------------------------------------------------------------------

/// SplitMix64 finaliser: a bijective 64-bit mix. Platform-independent (unlike std::hash), so
/// feature elements and therefore campaigns are reproducible across standard libraries.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Combines `value` into `seed`; order-sensitive (hash_combine(a, b) != hash_combine(b, a)).
[[nodiscard]] constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) noexcept {
  return mix64(seed + 0x9e3779b97f4a7c15ull + mix64(value) + (seed << 6) + (seed >> 2));
}

/// FNV-1a over the bytes of `s` (e.g. an operator or dtype name), then mixed. O(|s|).
[[nodiscard]] constexpr std::uint64_t hash_string(std::string_view s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return mix64(h);
}

/// Builds the element set B of one coverage feature of one candidate. Every element is tagged
/// with the feature, so the same raw key in L and in M gives different elements and one
/// coverage_counter can serve all three features. Duplicates are dropped (B is a set); adding
/// is O(|B|), which suits the handful of elements a candidate has.
class feature_set {
 public:
  explicit feature_set(feature f) noexcept : tag_(hash_combine(0x74666773656c6563ull, static_cast<std::uint64_t>(f))) {}

  /// Adds the element for the raw key `key` (already hashed or a small integer).
  feature_set& add(std::uint64_t key) {
    const std::uint64_t e = hash_combine(tag_, key);
    if (std::find(elements_.begin(), elements_.end(), e) == elements_.end()) elements_.push_back(e);
    return *this;
  }
  /// Adds the element for a name (e.g. "aten::relu").
  feature_set& add(std::string_view name) { return add(hash_string(name)); }
  /// Adds one element for the ordered tuple (k0, k1, ...), e.g. (producer op, consumer op).
  template <class... Keys>
  feature_set& add_tuple(Keys... keys) {
    std::uint64_t h = 0;
    ((h = hash_combine(h, static_cast<std::uint64_t>(keys))), ...);
    return add(h);
  }

  /// The distinct elements, in insertion order.
  [[nodiscard]] std::span<const std::uint64_t> elements() const noexcept { return elements_; }
  [[nodiscard]] std::size_t size() const noexcept { return elements_.size(); }
  /// Empties the set, keeping its feature tag and capacity (reuse across candidates).
  void clear() noexcept { elements_.clear(); }

 private:
  std::uint64_t tag_;
  std::vector<std::uint64_t> elements_;
};

// ---- coverage ----------------------------------------------------------------------------

/// Counts n(b): for each element b, the number of executed candidates whose feature sets
/// contained b. Not thread-safe for concurrent record/diversity.
class coverage_counter {
 public:
  /// d(B) = (1/|B|) * sum over b in B of 1/(1+n(b)); an unseen element contributes 1 and an
  /// empty B gives 1 (nothing seen before). In (0, 1]. Precondition: the elements of B are
  /// distinct (feature_set guarantees it). O(|B|) expected, no allocation.
  [[nodiscard]] double diversity(std::span<const std::uint64_t> elements) const {
    if (elements.empty()) return 1.0;
    double sum = 0.0;
    for (std::uint64_t b : elements) sum += 1.0 / (1.0 + static_cast<double>(count(b)));
    return sum / static_cast<double>(elements.size());
  }
  [[nodiscard]] double diversity(const feature_set& set) const { return diversity(set.elements()); }

  /// Records that a candidate containing `elements` was executed: n(b) += 1 for each b.
  /// Precondition: distinct elements. O(|B|) expected.
  void record(std::span<const std::uint64_t> elements) {
    for (std::uint64_t b : elements) ++counts_[b];
    ++executed_;
  }
  /// Records the L, T and M sets of one executed candidate (counts one execution).
  void record(const feature_set& l, const feature_set& t, const feature_set& m) {
    for (const feature_set* s : {&l, &t, &m})
      for (std::uint64_t b : s->elements()) ++counts_[b];
    ++executed_;
  }

  /// n(b); 0 for an unseen element.
  [[nodiscard]] std::uint32_t count(std::uint64_t b) const {
    const auto it = counts_.find(b);
    return it == counts_.end() ? 0u : it->second;
  }
  /// Number of record calls so far.
  [[nodiscard]] std::size_t executed() const noexcept { return executed_; }
  /// Number of distinct elements seen.
  [[nodiscard]] std::size_t distinct() const noexcept { return counts_.size(); }
  void clear() noexcept {
    counts_.clear();
    executed_ = 0;
  }

 private:
  std::unordered_map<std::uint64_t, std::uint32_t> counts_;
  std::size_t executed_ = 0;
};

// ---- impact ------------------------------------------------------------------------------

/// Min-max normalises raw influence values g(c) in place to I(c) in [0, 1] within the
/// current candidate set. Non-finite values (NaN, inf: a failed estimate) are ignored for
/// the range and become 0. If fewer than two distinct finite values remain (including a
/// single candidate), every finite value becomes 0.5: no candidate is more influential than
/// another, so all sit at the neutral midpoint rather than looking uniformly "low". O(n).
inline void normalise_influence(std::span<double> g) noexcept {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : g)
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  const double range = hi - lo;
  const bool flat = !(range > 0.0) || !std::isfinite(range);
  for (double& v : g) {
    if (!std::isfinite(v)) v = 0.0;
    else v = flat ? 0.5 : std::clamp((v - lo) / range, 0.0, 1.0);
  }
}

/// Assembles a context from the coverage sets (scored against `counter`), the downstream
/// impact P in [0, 1] and the normalised influence I in [0, 1]. O(|L| + |T| + |M|).
[[nodiscard]] inline context make_context(const coverage_counter& counter, const feature_set& l, const feature_set& t,
                                          const feature_set& m, double downstream_impact, double influence) {
  return context{{counter.diversity(l), counter.diversity(t), counter.diversity(m), downstream_impact, influence}};
}

// ---- ablation ----------------------------------------------------------------------------

/// Which of the five features a policy sees (bit i = feature i). Applying an ablation sets
/// the masked-off features to 0; LinUCB keeps its 5-dimensional model, in which a feature
/// that is always 0 never moves theta or the confidence width, so this is equivalent to
/// running in the reduced dimension.
struct ablation {
  std::uint8_t mask = 0x1f;

  [[nodiscard]] static constexpr ablation all() noexcept { return {0x1f}; }
  /// L, T, M only.
  [[nodiscard]] static constexpr ablation coverage_only() noexcept { return {0x07}; }
  /// P, I only.
  [[nodiscard]] static constexpr ablation impact_only() noexcept { return {0x18}; }
  /// Every feature except `f`.
  [[nodiscard]] static constexpr ablation without(feature f) noexcept {
    return {static_cast<std::uint8_t>(0x1f & ~(1u << static_cast<unsigned>(f)))};
  }
  /// This ablation with `f` also removed (ablation::all().minus(a).minus(b)).
  [[nodiscard]] constexpr ablation minus(feature f) const noexcept {
    return {static_cast<std::uint8_t>(mask & ~(1u << static_cast<unsigned>(f)))};
  }

  [[nodiscard]] constexpr bool uses(feature f) const noexcept { return (mask >> static_cast<unsigned>(f)) & 1u; }
  [[nodiscard]] constexpr bool uses_all() const noexcept { return (mask & 0x1f) == 0x1f; }

  /// `c` with the masked-off features set to 0. O(d).
  [[nodiscard]] constexpr context apply(context c) const noexcept {
    for (std::size_t i = 0; i < feature_count; ++i)
      if (!((mask >> i) & 1u)) c.x[i] = 0.0;
    return c;
  }
  /// Applies the ablation to every candidate in place. O(n d).
  constexpr void apply(std::span<context> cs) const noexcept {
    for (context& c : cs) c = apply(c);
  }

  friend constexpr bool operator==(ablation, ablation) = default;
};

}  // namespace tfg::select
