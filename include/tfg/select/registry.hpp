#pragma once
/// \file
/// Selection policies by name, for tools and configuration files: `any_policy` holds any
/// `selection_policy` behind one type (so a campaign loop is compiled once, not once per
/// policy), `make_policy` builds one from its name, and `parse_ablation` reads the names of
/// the feature ablations.
///
///     auto p = tfg::select::make_policy("linucb", {.alpha = 0.5});   // expected<any_policy>
///     auto a = tfg::select::parse_ablation("no-P");                 // expected<ablation>
///
/// Names: linucb, linucb-op, ucb1, random, queue, fixed, one-shot. Ablations: all, coverage-only, impact-only,
/// no-L, no-T, no-M, no-P, no-I (the context features of features.hpp).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tfg/select/features.hpp"
#include "tfg/select/policies.hpp"
#include "tfg/util/expected.hpp"

namespace tfg::select {

/// A selection policy of any type, chosen at run time. Move-only; the call costs one indirect
/// call per select/update (once per campaign round).
class any_policy {
 public:
  template <class P>
  requires(selection_policy<P> && !std::is_same_v<std::remove_cvref_t<P>, any_policy>) any_policy(P policy)
      : impl_(std::make_unique<holder<P>>(std::move(policy))) {}  // NOLINT: implicit by design

  any_policy(any_policy&&) noexcept = default;
  any_policy& operator=(any_policy&&) noexcept = default;

  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms, rng& r) {
    return impl_->select(candidates, arms, r);
  }
  void update(const context& chosen, std::uint32_t arm, double reward) { impl_->update(chosen, arm, reward); }
  /// With site classes: forwarded to a class_aware_policy, dropped for the others.
  std::size_t select(std::span<const context> candidates, std::span<const std::uint32_t> arms,
                     std::span<const std::uint64_t> classes, rng& r) {
    return impl_->select(candidates, arms, classes, r);
  }
  void update(const context& chosen, std::uint32_t arm, std::uint64_t cls, double reward) {
    impl_->update(chosen, arm, cls, reward);
  }

 private:
  struct base {
    virtual ~base() = default;
    virtual std::size_t select(std::span<const context>, std::span<const std::uint32_t>, rng&) = 0;
    virtual void update(const context&, std::uint32_t, double) = 0;
    virtual std::size_t select(std::span<const context>, std::span<const std::uint32_t>, std::span<const std::uint64_t>,
                               rng&) = 0;
    virtual void update(const context&, std::uint32_t, std::uint64_t, double) = 0;
  };
  template <class P>
  struct holder final : base {
    explicit holder(P q) : p(std::move(q)) {}
    std::size_t select(std::span<const context> c, std::span<const std::uint32_t> a, rng& r) override {
      return p.select(c, a, r);
    }
    void update(const context& x, std::uint32_t arm, double reward) override { p.update(x, arm, reward); }
    std::size_t select(std::span<const context> c, std::span<const std::uint32_t> a, std::span<const std::uint64_t> k,
                       rng& r) override {
      if constexpr (class_aware_policy<P>) return p.select(c, a, k, r);
      else return p.select(c, a, r);
    }
    void update(const context& x, std::uint32_t arm, std::uint64_t cls, double reward) override {
      if constexpr (class_aware_policy<P>) p.update(x, arm, cls, reward);
      else p.update(x, arm, reward);
    }
    P p;
  };
  std::unique_ptr<base> impl_;
};

static_assert(selection_policy<any_policy> && class_aware_policy<any_policy>);

/// Everything a named policy may be configured with.
struct policy_options {
  double alpha = 1.0;                   ///< LinUCB exploration weight
  ablation features = ablation::all();  ///< LinUCB: masked context features
  std::size_t arms = 1000;              ///< fixed priority: arms 0..arms-1 in id order
};

/// The policy names make_policy knows, in the order tools list them.
inline constexpr std::string_view policy_names[] = {"linucb", "linucb-op", "ucb1",    "random",
                                                    "queue",  "fixed",     "one-shot"};

/// The policy called `name`, or an error that lists the known names.
[[nodiscard]] inline tfg::expected<any_policy, std::string> make_policy(std::string_view name,
                                                                        const policy_options& o = {}) {
  if (name == "linucb") {
    linucb_options lo;
    lo.alpha = o.alpha;
    lo.features = o.features;
    return any_policy(linucb(lo));
  }
  if (name == "linucb-op") {
    linucb_options lo;
    lo.alpha = o.alpha;
    lo.features = o.features;
    return any_policy(linucb_per_arm(lo));
  }
  if (name == "ucb1") return any_policy(ucb1());
  if (name == "random") return any_policy(random_search());
  if (name == "fixed") {
    std::vector<std::uint32_t> order(o.arms);
    std::iota(order.begin(), order.end(), 0u);
    return any_policy(fixed_priority(std::span<const std::uint32_t>(order)));
  }
  if (name == "one-shot") return any_policy(one_shot());
  if (name == "queue") return any_policy(queue_scheduler());
  return tfg::unexpected("unknown policy `" + std::string(name) +
                         "` (linucb, linucb-op, ucb1, random, queue, fixed, one-shot)");
}

/// The ablation called `name`, or an error that lists the known names.
[[nodiscard]] inline tfg::expected<ablation, std::string> parse_ablation(std::string_view name) {
  if (name == "all") return ablation::all();
  if (name == "coverage-only") return ablation::coverage_only();
  if (name == "impact-only") return ablation::impact_only();
  constexpr std::pair<std::string_view, feature> without[] = {{"no-L", feature::site_context},
                                                              {"no-T", feature::tensor_state},
                                                              {"no-M", feature::mutation},
                                                              {"no-P", feature::downstream_impact},
                                                              {"no-I", feature::influence}};
  for (const auto& [n, f] : without)
    if (n == name) return ablation::without(f);
  return tfg::unexpected("unknown --features `" + std::string(name) +
                         "` (all, coverage-only, impact-only, no-L, no-T, no-M, no-P, no-I)");
}

}  // namespace tfg::select
