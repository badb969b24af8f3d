#pragma once
/// \file
/// Selection policies behind one concept, composed at compile time (DESIGN.md section 3):
/// LinUCB (the method's policy), the paper's baselines UCB1, random search, fixed priority and
/// one-shot, and an AFL-style queue scheduler over (operator, site class). A campaign holds a
/// policy P checked with `check_selection_policy<P>()`, which fails with one line naming the concept.
///
/// Every policy is deterministic given the state of the `std::mt19937_64` passed to select:
/// random draws use `uniform_index` (defined on the generator's output, which the standard
/// fixes) instead of std::uniform_int_distribution (whose algorithm it does not fix).
/// Depends on the standard library only.

#include <algorithm>
#include <array>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <vector>

#include "tfg/select/features.hpp"

namespace tfg::select {

/// The random generator every policy takes.
using rng = std::mt19937_64;

/// Returned by select for an empty candidate set.
inline constexpr std::size_t no_candidate = static_cast<std::size_t>(-1);

/// An unbiased index in [0, n) from `r` (rejection on the low remainder). Precondition:
/// n > 0. Same result on every platform for the same generator state.
[[nodiscard]] inline std::size_t uniform_index(rng& r, std::size_t n) noexcept {
  const std::uint64_t m = n;
  const std::uint64_t threshold = (0 - m) % m;  // 2^64 mod m: draws below it are biased
  for (;;) {
    const std::uint64_t v = r();
    if (v >= threshold) return static_cast<std::size_t>(v % m);
  }
}

/// What a campaign needs from a selection policy:
/// - `select(candidates, arm_of_candidate, rng)` returns the index of the chosen candidate
///   (or no_candidate when there are none); `arm_of_candidate[i]` is candidate i's operator
///   id, used by arm-based policies (context-only policies accept an empty span);
/// - `update(chosen_context, arm, reward)` feeds back the reward of the executed candidate.
template <class P>
concept selection_policy = requires(P& p, std::span<const context> candidates, std::span<const std::uint32_t> arms,
                                    rng& r, const context& chosen, std::uint32_t arm, double reward) {
  { p.select(candidates, arms, r) } -> std::same_as<std::size_t>;
  { p.update(chosen, arm, reward) } -> std::same_as<void>;
};

/// Compile-time check for template parameters: a type that is not a selection_policy fails
/// with one line. Use as `check_selection_policy<Policy>();` or in a static_assert.
template <class P>
consteval bool check_selection_policy() {
  static_assert(selection_policy<P>,
                "tfg: P is not a selection_policy (needs select(candidates, arms, rng) and "
                "update(context, arm, reward))");
  return true;
}

// ---- LinUCB ------------------------------------------------------------------------------

/// Options of linucb (outside the class so `= {}` default arguments work with GCC 12).
struct linucb_options {
  double alpha = 1.0;   ///< exploration weight; 0 is greedy on theta^T x
  double lambda = 1.0;  ///< ridge: A starts as lambda I; must be > 0
  ablation features = ablation::all();
};

/// LinUCB (Li et al. 2010) with a single shared linear model over the 5 context features:
/// A = lambda I + sum x x^T, b = sum r x, theta = A^-1 b,
/// score(x) = theta^T x + alpha sqrt(x^T A^-1 x); select picks the maximum score, ties to
/// the lowest index. A^-1 is kept up to date with Sherman-Morrison (O(d^2) per update, no
/// inversion). Masked features (options::features) are zeroed before scoring and updating.
class linucb {
 public:
  static constexpr std::size_t d = feature_count;

  using options = linucb_options;

  linucb() : linucb(options{}) {}
  explicit linucb(options opt) : opt_(opt) {
    for (std::size_t i = 0; i < d; ++i) mask_[i] = opt_.features.uses(static_cast<feature>(i)) ? 1.0 : 0.0;
    reset();
  }

  /// Forgets all updates: A^-1 = I / lambda, b = 0, theta = 0.
  void reset() noexcept {
    a_inv_.fill(0.0);
    for (std::size_t i = 0; i < d; ++i) a_inv_[i * d + i] = 1.0 / opt_.lambda;
    b_.fill(0.0);
    theta_.fill(0.0);
    rounds_ = 0;
  }

  /// Index of the highest-scoring candidate, ties to the lowest index; a candidate whose
  /// score is NaN never wins unless all are NaN (then 0). `arms` and `r` are unused.
  /// O(N d^2) time (15 multiply-adds per candidate for the symmetric form), no allocation.
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> /*arms*/,
                     rng& /*r*/) const noexcept {
    if (candidates.empty()) return no_candidate;
    // Fold the mask into theta and A^-1 once, so the per-candidate loop reads x unmasked.
    std::array<double, d> t{};
    std::array<double, d * d> m{};
    for (std::size_t i = 0; i < d; ++i) {
      t[i] = theta_[i] * mask_[i];
      for (std::size_t j = 0; j < d; ++j) m[i * d + j] = a_inv_[i * d + j] * mask_[i] * mask_[j];
    }
    const double alpha = opt_.alpha;
    std::size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    bool found = false;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      const auto& x = candidates[k].x;
      double mean = 0.0, var = 0.0;
      for (std::size_t i = 0; i < d; ++i) {
        mean += t[i] * x[i];
        double row = 0.5 * m[i * d + i] * x[i];
        for (std::size_t j = i + 1; j < d; ++j) row += m[i * d + j] * x[j];
        var += 2.0 * row * x[i];
      }
      const double score = alpha == 0.0 ? mean : mean + alpha * std::sqrt(var > 0.0 ? var : 0.0);
      if (score > best_score || (!found && score == best_score)) {
        best = k;
        best_score = score;
        found = true;
      }
    }
    return best;
  }

  /// Adds the observation (x, reward): A^-1 <- A^-1 - (A^-1 x)(A^-1 x)^T / (1 + x^T A^-1 x),
  /// b <- b + reward x, theta <- A^-1 b. `arm` is unused. O(d^2), no allocation.
  void update(const context& chosen, std::uint32_t /*arm*/, double reward) noexcept {
    std::array<double, d> x{}, u{};
    for (std::size_t i = 0; i < d; ++i) x[i] = chosen.x[i] * mask_[i];
    double denom = 1.0;
    for (std::size_t i = 0; i < d; ++i) {
      double s = 0.0;
      for (std::size_t j = 0; j < d; ++j) s += a_inv_[i * d + j] * x[j];
      u[i] = s;
      denom += x[i] * s;
    }
    // u_i u_j == u_j u_i exactly, so A^-1 stays exactly symmetric.
    for (std::size_t i = 0; i < d; ++i)
      for (std::size_t j = 0; j < d; ++j) a_inv_[i * d + j] -= u[i] * u[j] / denom;
    for (std::size_t i = 0; i < d; ++i) b_[i] += reward * x[i];
    for (std::size_t i = 0; i < d; ++i) {
      double s = 0.0;
      for (std::size_t j = 0; j < d; ++j) s += a_inv_[i * d + j] * b_[j];
      theta_[i] = s;
    }
    ++rounds_;
  }

  /// The score select maximises, for one context. O(d^2).
  [[nodiscard]] double score(const context& c) const noexcept {
    std::array<double, d> x{};
    for (std::size_t i = 0; i < d; ++i) x[i] = c.x[i] * mask_[i];
    double mean = 0.0, var = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      mean += theta_[i] * x[i];
      for (std::size_t j = 0; j < d; ++j) var += x[i] * a_inv_[i * d + j] * x[j];
    }
    return mean + opt_.alpha * std::sqrt(var > 0.0 ? var : 0.0);
  }

  /// A^-1, row-major d x d.
  [[nodiscard]] const std::array<double, d * d>& a_inverse() const noexcept { return a_inv_; }
  [[nodiscard]] const std::array<double, d>& theta() const noexcept { return theta_; }
  [[nodiscard]] const std::array<double, d>& b() const noexcept { return b_; }
  [[nodiscard]] std::size_t rounds() const noexcept { return rounds_; }
  [[nodiscard]] const options& opts() const noexcept { return opt_; }

 private:
  options opt_;
  std::array<double, d> mask_{};
  std::array<double, d * d> a_inv_{};
  std::array<double, d> b_{};
  std::array<double, d> theta_{};
  std::size_t rounds_ = 0;
};

// ---- LinUCB with one model per operator ----------------------------------------------------

/// LinUCB with disjoint models (Li et al. 2010, Algorithm 1): one ridge model (A_a, b_a) per
/// arm (operator) over the same context. An operator whose rounds earn nothing sees its
/// estimate fall and its exploration bonus shrink as its A_a grows, while an operator never
/// played keeps the full bonus alpha ||x|| / sqrt(lambda): the shared model of `linucb` cannot
/// tell operators apart, so one whose candidates have large features keeps winning whatever
/// it earns (the collapse onto always-applicable rewrites). Ties to the lowest index.
class linucb_per_arm {
 public:
  using options = linucb_options;

  linucb_per_arm() = default;
  explicit linucb_per_arm(options opt) : opt_(opt) {}

  /// O(N d^2). Precondition: arms.size() == candidates.size().
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms, rng& /*r*/) {
    if (candidates.empty()) return no_candidate;
    std::size_t best = 0;
    double best_score = -std::numeric_limits<double>::infinity();
    bool found = false;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      const double score = model(arms[k]).score(candidates[k]);
      if (score > best_score || (!found && score == best_score)) {
        best = k;
        best_score = score;
        found = true;
      }
    }
    return best;
  }

  void update(const context& chosen, std::uint32_t arm, double reward) { model(arm).update(chosen, arm, reward); }

  [[nodiscard]] std::size_t rounds(std::uint32_t arm) const {
    const auto it = models_.find(arm);
    return it == models_.end() ? 0 : it->second.rounds();
  }

 private:
  linucb& model(std::uint32_t arm) {
    auto it = models_.find(arm);
    if (it == models_.end()) it = models_.emplace(arm, linucb(opt_)).first;
    return it->second;
  }
  options opt_;
  std::map<std::uint32_t, linucb> models_;
};

// ---- UCB1 --------------------------------------------------------------------------------

/// Options of ucb1.
struct ucb1_options {
  double c = 1.0;  ///< exploration weight
};

/// UCB1 (Auer et al. 2002) over arms (operators), ignoring contexts. An arm's index is
/// mean reward + c sqrt(2 ln t / n_arm), t = total updates; an arm that has never been
/// updated ranks first. select picks the best arm present among the candidates (ties and
/// several unplayed arms: a uniformly random one of them), then a uniformly random candidate
/// of it.
class ucb1 {
 public:
  using options = ucb1_options;

  /// `arm_count_hint` pre-sizes the per-arm tables; higher arm ids grow them.
  explicit ucb1(std::size_t arm_count_hint = 0, options opt = {}) : opt_(opt) { grow(arm_count_hint); }

  /// O(N + arms) time; allocates only when a candidate names an arm id never seen before.
  /// Precondition: arms.size() == candidates.size().
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms, rng& r) {
    if (candidates.empty()) return no_candidate;
    for (std::uint32_t a : arms)
      if (a >= plays_.size()) grow(std::size_t{a} + 1);
    const double log_t = total_ > 0 ? std::log(static_cast<double>(total_)) : 0.0;
    for (std::size_t a = 0; a < plays_.size(); ++a)
      index_[a] = plays_[a] == 0 ? std::numeric_limits<double>::infinity()
                                 : sum_[a] / static_cast<double>(plays_[a]) +
                                       opt_.c * std::sqrt(2.0 * log_t / static_cast<double>(plays_[a]));
    // The best index; ties (every unplayed arm, at first) to a uniformly random arm among the
    // tied, so that campaigns with other seeds do not start with the same operators.
    double top = -std::numeric_limits<double>::infinity();
    for (std::uint32_t a : arms) top = std::max(top, index_[a]);
    tied_.clear();
    for (std::uint32_t a : arms)
      if (index_[a] == top) tied_.push_back(a);
    std::sort(tied_.begin(), tied_.end());
    tied_.erase(std::unique(tied_.begin(), tied_.end()), tied_.end());
    const std::uint32_t best = tied_[uniform_index(r, tied_.size())];
    std::size_t n_best = 0;
    for (std::uint32_t a : arms) n_best += a == best;
    std::size_t pick = uniform_index(r, n_best);
    for (std::size_t i = 0; i < arms.size(); ++i)
      if (arms[i] == best && pick-- == 0) return i;
    return 0;  // unreachable
  }

  /// Adds `reward` to `arm`'s statistics. O(1) amortised.
  void update(const context& /*chosen*/, std::uint32_t arm, double reward) {
    if (arm >= plays_.size()) grow(std::size_t{arm} + 1);
    ++plays_[arm];
    sum_[arm] += reward;
    ++total_;
  }

  [[nodiscard]] std::uint64_t plays(std::uint32_t arm) const noexcept { return arm < plays_.size() ? plays_[arm] : 0; }
  [[nodiscard]] double mean_reward(std::uint32_t arm) const noexcept {
    return plays(arm) == 0 ? 0.0 : sum_[arm] / static_cast<double>(plays_[arm]);
  }
  [[nodiscard]] std::uint64_t total_plays() const noexcept { return total_; }

 private:
  void grow(std::size_t n) {
    if (n <= plays_.size()) return;
    plays_.resize(n, 0);
    sum_.resize(n, 0.0);
    index_.resize(n, 0.0);
  }

  options opt_;
  std::vector<std::uint64_t> plays_;
  std::vector<double> sum_;
  std::vector<double> index_;  // scratch for select, reused to avoid allocation
  std::vector<std::uint32_t> tied_;
  std::uint64_t total_ = 0;
};

// ---- random search -----------------------------------------------------------------------

/// A uniformly random candidate; learns nothing. O(1).
struct random_search {
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> /*arms*/,
                     rng& r) const noexcept {
    return candidates.empty() ? no_candidate : uniform_index(r, candidates.size());
  }
  void update(const context& /*chosen*/, std::uint32_t /*arm*/, double /*reward*/) noexcept {}
};

// ---- fixed priority ----------------------------------------------------------------------

namespace detail {
/// rank[arm] = position of arm in `order`; arms not listed rank after all listed ones.
inline std::vector<std::uint32_t> arm_ranks(std::span<const std::uint32_t> order) {
  std::uint32_t top = 0;
  for (std::uint32_t a : order) top = a + 1 > top ? a + 1 : top;
  std::vector<std::uint32_t> rank(top, std::numeric_limits<std::uint32_t>::max());
  for (std::size_t i = 0; i < order.size(); ++i)
    if (rank[order[i]] == std::numeric_limits<std::uint32_t>::max()) rank[order[i]] = static_cast<std::uint32_t>(i);
  return rank;
}
}  // namespace detail

/// A fixed operator order: the earliest candidate of the highest-priority arm present.
/// Arms missing from the priority list rank below every listed arm (among themselves, by
/// candidate order). Learns nothing; uses no randomness.
class fixed_priority {
 public:
  /// `priority[0]` is the most preferred arm. Duplicates keep their first position.
  explicit fixed_priority(std::span<const std::uint32_t> priority) : rank_(detail::arm_ranks(priority)) {}
  explicit fixed_priority(std::initializer_list<std::uint32_t> priority)
      : fixed_priority(std::span<const std::uint32_t>(priority.begin(), priority.size())) {}

  /// O(N), no allocation. Precondition: arms.size() == candidates.size().
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms,
                     rng& /*r*/) const noexcept {
    if (candidates.empty()) return no_candidate;
    std::size_t best = 0;
    std::uint32_t best_rank = rank_of(arms[0]);
    for (std::size_t i = 1; i < arms.size(); ++i)
      if (const std::uint32_t k = rank_of(arms[i]); k < best_rank) {
        best = i;
        best_rank = k;
      }
    return best;
  }
  void update(const context& /*chosen*/, std::uint32_t /*arm*/, double /*reward*/) noexcept {}

 private:
  [[nodiscard]] std::uint32_t rank_of(std::uint32_t arm) const noexcept {
    return arm < rank_.size() ? rank_[arm] : std::numeric_limits<std::uint32_t>::max();
  }
  std::vector<std::uint32_t> rank_;
};

// ---- one-shot ----------------------------------------------------------------------------

/// Each operator is used at most once, in round-robin order (ascending arm id, or the order
/// given at construction; unlisted arms follow by id): select returns the earliest candidate
/// of the first unused arm present, and marks that arm used. Once every arm present has been
/// used, it falls back to a uniformly random candidate. Marking happens in select, so a
/// candidate that is selected but never executed still consumes its arm.
class one_shot {
 public:
  one_shot() = default;
  explicit one_shot(std::span<const std::uint32_t> order) : rank_(detail::arm_ranks(order)), listed_(order.size()) {}
  explicit one_shot(std::initializer_list<std::uint32_t> order)
      : one_shot(std::span<const std::uint32_t>(order.begin(), order.size())) {}

  /// O(N); allocates only when an arm id beyond those seen so far appears.
  /// Precondition: arms.size() == candidates.size().
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms, rng& r) {
    if (candidates.empty()) return no_candidate;
    std::size_t best = no_candidate;
    std::uint64_t best_key = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t i = 0; i < arms.size(); ++i) {
      const std::uint32_t a = arms[i];
      if (a < used_.size() && used_[a]) continue;
      if (const std::uint64_t k = key_of(a); k < best_key) {
        best = i;
        best_key = k;
      }
    }
    if (best == no_candidate) return uniform_index(r, candidates.size());
    if (arms[best] >= used_.size()) used_.resize(std::size_t{arms[best]} + 1, false);
    used_[arms[best]] = true;
    return best;
  }
  void update(const context& /*chosen*/, std::uint32_t /*arm*/, double /*reward*/) noexcept {}

  [[nodiscard]] bool used(std::uint32_t arm) const noexcept { return arm < used_.size() && used_[arm]; }

 private:
  // Listed arms: their position; unlisted: after every listed arm, by id.
  [[nodiscard]] std::uint64_t key_of(std::uint32_t arm) const noexcept {
    if (arm < rank_.size() && rank_[arm] != std::numeric_limits<std::uint32_t>::max()) return rank_[arm];
    return std::uint64_t{listed_} + arm;
  }
  std::vector<std::uint32_t> rank_;
  std::size_t listed_ = 0;
  std::vector<bool> used_;
};

// ---- queue scheduler (AFL-style) -----------------------------------------------------------

/// A policy that also sees each candidate's site class (a 64-bit key: operator, producer kind
/// of the anchor, its dtype and rank; campaign/generator.hpp) and learns per class. The
/// generator calls these overloads when the policy has them (any_policy forwards them to the
/// policies that have them, and drops the classes for the others).
template <class P>
concept class_aware_policy = selection_policy<P> &&
    requires(P& p, std::span<const context> candidates, std::span<const std::uint32_t> arms,
             std::span<const std::uint64_t> classes, rng& r, const context& chosen, std::uint32_t arm,
             std::uint64_t cls, double reward) {
  { p.select(candidates, arms, classes, r) } -> std::same_as<std::size_t>;
  { p.update(chosen, arm, cls, reward) } -> std::same_as<void>;
};

/// Options of queue_scheduler.
struct queue_options {
  /// An operator whose rounds earned the full reward on average is scheduled as if it had been
  /// played 1 + bonus times less often: at most (1 + bonus) times the share of a barren one.
  double bonus = 1.0;
};

/// An AFL-style queue over (operator, site class), favouring rarely exercised arms: select
/// takes the operator present with the lowest energy-weighted play count
/// plays(op) / (1 + bonus * mean reward(op)) (ties: a uniformly random one), then, among that
/// operator's candidates, the site class played least (ties: a uniformly random candidate). Every
/// applicable operator therefore gets its turn before any gets a second, an operator whose
/// rounds keep teaching something new gets up to (1 + bonus) turns per cycle, and an operator
/// with a thousand sites gets no more turns than one with a single site (the collapse of
/// LinUCB and random onto always-applicable rewrites). Deterministic given the generator.
class queue_scheduler {
 public:
  using options = queue_options;

  queue_scheduler() = default;
  explicit queue_scheduler(options opt) : opt_(opt) {}

  /// Without site classes (the 3-argument form every policy has): each operator is one class.
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms, rng& r) {
    scratch_.assign(arms.begin(), arms.end());
    return select(candidates, arms, std::span<const std::uint64_t>(scratch_), r);
  }

  /// O(N log classes) time. Precondition: arms.size() == classes.size() == candidates.size().
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms,
                     std::span<const std::uint64_t> classes, rng& r) {
    if (candidates.empty()) return no_candidate;
    // The operator: lowest weighted plays, ties to a uniformly random one of the tied (so that
    // short campaigns with other seeds start elsewhere).
    double best_w = std::numeric_limits<double>::infinity();
    for (std::uint32_t a : arms) best_w = std::min(best_w, weight(a));
    tied_.clear();
    for (std::uint32_t a : arms)
      if (weight(a) == best_w) tied_.push_back(a);
    std::sort(tied_.begin(), tied_.end());
    tied_.erase(std::unique(tied_.begin(), tied_.end()), tied_.end());
    const std::uint32_t best = tied_[uniform_index(r, tied_.size())];
    // Its least played class.
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t i = 0; i < arms.size(); ++i)
      if (arms[i] == best) least = std::min(least, class_plays(best, classes[i]));
    std::size_t n = 0;
    for (std::size_t i = 0; i < arms.size(); ++i) n += arms[i] == best && class_plays(best, classes[i]) == least;
    std::size_t pick = uniform_index(r, n);
    for (std::size_t i = 0; i < arms.size(); ++i)
      if (arms[i] == best && class_plays(best, classes[i]) == least && pick-- == 0) return i;
    return 0;  // unreachable
  }

  void update(const context& chosen, std::uint32_t arm, double reward) { update(chosen, arm, arm, reward); }
  void update(const context& /*chosen*/, std::uint32_t arm, std::uint64_t cls, double reward) {
    auto& s = ops_[arm];
    ++s.plays;
    s.reward += reward;
    ++classes_[key(arm, cls)];
  }

  [[nodiscard]] std::uint64_t plays(std::uint32_t arm) const noexcept {
    const auto it = ops_.find(arm);
    return it == ops_.end() ? 0 : it->second.plays;
  }
  [[nodiscard]] std::uint64_t class_plays(std::uint32_t arm, std::uint64_t cls) const noexcept {
    const auto it = classes_.find(key(arm, cls));
    return it == classes_.end() ? 0 : it->second;
  }

 private:
  struct op_stats {
    std::uint64_t plays = 0;
    double reward = 0;
  };
  [[nodiscard]] double weight(std::uint32_t arm) const noexcept {
    const auto it = ops_.find(arm);
    if (it == ops_.end() || it->second.plays == 0) return 0.0;
    const double n = static_cast<double>(it->second.plays);
    const double mean = std::clamp(it->second.reward / n, 0.0, 1.0);
    return n / (1.0 + opt_.bonus * mean);
  }
  [[nodiscard]] static std::uint64_t key(std::uint32_t arm, std::uint64_t cls) noexcept {
    return hash_combine(0x7175657565ull + arm, cls);
  }
  options opt_;
  std::map<std::uint32_t, op_stats> ops_;
  std::map<std::uint64_t, std::uint64_t> classes_;
  std::vector<std::uint64_t> scratch_;
  std::vector<std::uint32_t> tied_;
};

static_assert(selection_policy<linucb> && selection_policy<ucb1> && selection_policy<random_search> &&
              selection_policy<fixed_priority> && selection_policy<one_shot> && class_aware_policy<queue_scheduler> &&
              !class_aware_policy<linucb> && selection_policy<linucb_per_arm>);

}  // namespace tfg::select
