// Policies by name: make_policy knows the five policies and refuses others with the list;
// any_policy behaves exactly like the policy it holds.
#include <doctest/doctest.h>

#include "tfg/select/registry.hpp"  // first: the header must compile on its own

#include <vector>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_select_registry {

using namespace tfg::select;

TEST_CASE("registry: every listed name makes a policy; others are refused with the list") {
  for (auto name : policy_names) CHECK(make_policy(name).has_value());
  const auto bad = make_policy("greedy");
  REQUIRE(!bad);
  CHECK(bad.error().find("linucb, ucb1, random, fixed, one-shot") != std::string::npos);
  CHECK(parse_ablation("no-P")->uses(feature::site_context));
  CHECK(!parse_ablation("no-P")->uses(feature::downstream_impact));
  CHECK(!parse_ablation("no-Q"));
}

TEST_CASE("registry: any_policy chooses what the policy it holds chooses") {
  std::vector<context> xs(40);
  std::vector<std::uint32_t> arms(40);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    for (std::size_t f = 0; f < feature_count; ++f) xs[i].x[f] = static_cast<double>((i * 7 + f * 3) % 11) / 11.0;
    arms[i] = static_cast<std::uint32_t>(i % 5);
  }
  linucb direct;
  auto made = make_policy("linucb");
  REQUIRE(made);
  any_policy erased = std::move(*made);
  rng r1(7), r2(7);
  for (int round = 0; round < 30; ++round) {
    const auto a = direct.select(xs, arms, r1);
    const auto b = erased.select(xs, arms, r2);
    REQUIRE(a == b);
    const double reward = static_cast<double>((a * 13) % 7) / 7.0;
    direct.update(xs[a], arms[a], reward);
    erased.update(xs[b], arms[b], reward);
  }
}

}  // namespace tfg_test_select_registry
