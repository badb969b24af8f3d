// Policies by name: make_policy knows the five policies and refuses others with the list;
// any_policy behaves exactly like the policy it holds.
#include <doctest/doctest.h>

#include "tfg/select/registry.hpp"  // first: the header must compile on its own

#include <algorithm>
#include <vector>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_select_registry {

using namespace tfg::select;

TEST_CASE("registry: every listed name makes a policy; others are refused with the list") {
  for (auto name : policy_names) CHECK(make_policy(name).has_value());
  const auto bad = make_policy("greedy");
  REQUIRE(!bad);
  CHECK(bad.error().find("linucb, linucb-op, ucb1, random, queue, fixed, one-shot") != std::string::npos);
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

TEST_CASE("registry: any_policy hands site classes to a class-aware policy and drops them for others") {
  // Two operators; operator 0 has candidates in two classes. The queue, erased or not, takes
  // operator 0's unplayed class after playing the other: the classes reached it.
  const std::vector<context> xs(3);
  const std::vector<std::uint32_t> arms{0, 0, 1};
  const std::vector<std::uint64_t> classes{10, 11, 20};
  auto made = make_policy("queue");
  REQUIRE(made);
  any_policy erased = std::move(*made);
  queue_scheduler direct;
  rng r1(5), r2(5);
  std::vector<std::size_t> a, b;
  for (int t = 0; t < 6; ++t) {
    a.push_back(direct.select(xs, arms, classes, r1));
    b.push_back(erased.select(xs, arms, classes, r2));
    direct.update(xs[a.back()], arms[a.back()], classes[a.back()], 0.0);
    erased.update(xs[b.back()], arms[b.back()], classes[b.back()], 0.0);
  }
  CHECK(a == b);
  // The two operators alternate (3 turns each); operator 0's turns go to its classes in turn.
  const auto c0 = std::count(a.begin(), a.end(), 0u), c1 = std::count(a.begin(), a.end(), 1u);
  CHECK(std::count(a.begin(), a.end(), 2u) == 3);
  CHECK(c0 + c1 == 3);
  CHECK((c0 == 1 || c1 == 1));
  // A policy that is not class-aware chooses as without classes.
  auto lin = make_policy("linucb");
  REQUIRE(lin);
  any_policy l = std::move(*lin);
  rng r3(5);
  CHECK(l.select(xs, arms, classes, r3) == linucb().select(xs, arms, r3));
}

}  // namespace tfg_test_select_registry
