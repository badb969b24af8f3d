// Selection policies: the concept, LinUCB (Sherman-Morrison, convergence, greedy alpha = 0,
// ablation), UCB1, random search, fixed priority and one-shot.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "tfg/select/policies.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_select_policies {

using namespace tfg::select;

namespace {

struct missing_update {
  std::size_t select(std::span<const context>, std::span<const std::uint32_t>, rng&) { return 0; }
};
struct wrong_select {
  int select(std::span<const context>, std::span<const std::uint32_t>, rng&) { return 0; }
  void update(const context&, std::uint32_t, double) {}
};
static_assert(!selection_policy<missing_update>);
static_assert(!selection_policy<wrong_select>);
static_assert(selection_policy<linucb> && selection_policy<ucb1> && selection_policy<random_search> &&
              selection_policy<fixed_priority> && selection_policy<one_shot>);
static_assert(check_selection_policy<linucb>());

context random_context(rng& r) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  context c;
  for (double& v : c.x) v = u(r);
  return c;
}

// Inverse of a d x d row-major matrix by Gauss-Jordan with partial pivoting.
std::array<double, 25> invert(std::array<double, 25> a) {
  constexpr std::size_t d = 5;
  std::array<double, 25> inv{};
  for (std::size_t i = 0; i < d; ++i) inv[i * d + i] = 1.0;
  for (std::size_t col = 0; col < d; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < d; ++r)
      if (std::abs(a[r * d + col]) > std::abs(a[piv * d + col])) piv = r;
    for (std::size_t j = 0; j < d; ++j) {
      std::swap(a[col * d + j], a[piv * d + j]);
      std::swap(inv[col * d + j], inv[piv * d + j]);
    }
    const double p = a[col * d + col];
    for (std::size_t j = 0; j < d; ++j) {
      a[col * d + j] /= p;
      inv[col * d + j] /= p;
    }
    for (std::size_t r = 0; r < d; ++r) {
      if (r == col) continue;
      const double f = a[r * d + col];
      for (std::size_t j = 0; j < d; ++j) {
        a[r * d + j] -= f * a[col * d + j];
        inv[r * d + j] -= f * inv[col * d + j];
      }
    }
  }
  return inv;
}

// A synthetic linear bandit: fixed arm contexts, reward = theta^T x + N(0, sigma).
struct linear_bandit {
  std::vector<context> arms;
  std::array<double, 5> theta{0.2, -0.3, 0.1, 0.6, 0.4};
  double sigma = 0.1;

  explicit linear_bandit(std::uint64_t seed, std::size_t k = 20) {
    rng r(seed);
    for (std::size_t i = 0; i < k; ++i) arms.push_back(random_context(r));
  }
  double expected(std::size_t i) const {
    return std::inner_product(theta.begin(), theta.end(), arms[i].x.begin(), 0.0);
  }
  std::size_t best() const {
    std::size_t b = 0;
    for (std::size_t i = 1; i < arms.size(); ++i)
      if (expected(i) > expected(b)) b = i;
    return b;
  }
};

struct run_result {
  double total_reward = 0;
  double late_regret_per_round = 0;
  double late_best_fraction = 0;
};

template <class Policy>
run_result play(Policy& policy, const linear_bandit& env, std::uint64_t seed, std::size_t rounds = 2000,
                std::size_t late = 500) {
  rng r(seed), noise_rng(seed ^ 0x5eed);
  std::normal_distribution<double> noise(0.0, env.sigma);
  std::vector<std::uint32_t> arm_ids(env.arms.size());
  std::iota(arm_ids.begin(), arm_ids.end(), 0u);
  const std::size_t best = env.best();
  run_result out;
  std::size_t late_best = 0;
  double late_regret = 0;
  for (std::size_t t = 0; t < rounds; ++t) {
    const std::size_t i = policy.select(env.arms, arm_ids, r);
    const double reward = env.expected(i) + noise(noise_rng);
    policy.update(env.arms[i], arm_ids[i], reward);
    out.total_reward += reward;
    if (t >= rounds - late) {
      late_best += i == best;
      late_regret += env.expected(best) - env.expected(i);
    }
  }
  out.late_regret_per_round = late_regret / static_cast<double>(late);
  out.late_best_fraction = static_cast<double>(late_best) / static_cast<double>(late);
  return out;
}

}  // namespace

TEST_CASE("select/linucb: Sherman-Morrison A^-1 equals the direct inverse") {
  for (double lambda : {1.0, 0.25}) {
    linucb p(linucb_options{.alpha = 1.0, .lambda = lambda});
    rng r(7);
    std::array<double, 25> a{};
    for (std::size_t i = 0; i < 5; ++i) a[i * 5 + i] = lambda;
    std::array<double, 5> b{};
    for (int step = 0; step < 2000; ++step) {
      const context x = random_context(r);
      const double reward = std::uniform_real_distribution<double>(0.0, 1.0)(r);
      p.update(x, 0, reward);
      for (std::size_t i = 0; i < 5; ++i) {
        b[i] += reward * x.x[i];
        for (std::size_t j = 0; j < 5; ++j) a[i * 5 + j] += x.x[i] * x.x[j];
      }
      if (step == 0 || step == 9 || step == 1999) {
        const auto direct = invert(a);
        for (std::size_t k = 0; k < 25; ++k) CHECK(std::abs(p.a_inverse()[k] - direct[k]) < 1e-9);
        for (std::size_t i = 0; i < 5; ++i) {
          double th = 0;
          for (std::size_t j = 0; j < 5; ++j) th += direct[i * 5 + j] * b[j];
          CHECK(std::abs(p.theta()[i] - th) < 1e-9);
        }
      }
    }
    CHECK(p.rounds() == 2000);
  }
}

TEST_CASE("select/linucb: converges to the best arm and beats random search") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    CAPTURE(seed);
    const linear_bandit env(100 + seed);
    linucb lin;
    const run_result l = play(lin, env, seed);
    random_search rnd;
    const run_result rs = play(rnd, env, seed);
    CHECK(l.late_best_fraction > 0.9);
    CHECK(l.late_regret_per_round < 0.01);
    CHECK(l.total_reward > rs.total_reward);
  }
}

TEST_CASE("select/linucb: alpha = 0 is greedy on theta^T x, ties to the lowest index") {
  linucb p(linucb_options{.alpha = 0.0});
  rng r(3);
  std::vector<context> cs;
  for (int i = 0; i < 50; ++i) cs.push_back(random_context(r));
  CHECK(p.select(cs, {}, r) == 0);  // theta = 0: every score ties
  for (int i = 0; i < 30; ++i) {
    const context x = random_context(r);
    p.update(x, 0, x.x[3] - x.x[0]);
  }
  std::size_t greedy = 0;
  auto mean = [&](const context& c) {
    return std::inner_product(p.theta().begin(), p.theta().end(), c.x.begin(), 0.0);
  };
  for (std::size_t i = 1; i < cs.size(); ++i)
    if (mean(cs[i]) > mean(cs[greedy])) greedy = i;
  CHECK(p.select(cs, {}, r) == greedy);
  // Duplicated best candidate: the first copy wins.
  cs.insert(cs.begin(), cs[greedy]);
  CHECK(p.select(cs, {}, r) == 0);
  CHECK(p.select(std::span<const context>{}, {}, r) == no_candidate);
}

TEST_CASE("select/linucb: exploration prefers the unexplored direction") {
  linucb p;  // alpha = 1
  const context seen{{1, 0, 0, 0, 0}}, unseen{{0, 1, 0, 0, 0}};
  for (int i = 0; i < 20; ++i) p.update(seen, 0, 0.1);
  const std::vector<context> cs{seen, unseen};
  rng r(1);
  CHECK(p.select(cs, {}, r) == 1);
  CHECK(p.score(unseen) > p.score(seen));
}

TEST_CASE("select/linucb: an ablated feature is ignored") {
  linucb p(linucb_options{.alpha = 0.0, .features = ablation::without(feature::downstream_impact)});
  // Reward depends only on P, which the policy cannot see: theta stays 0 on it.
  rng r(5);
  for (int i = 0; i < 100; ++i) {
    const context x = random_context(r);
    p.update(x, 0, x.downstream_impact());
  }
  CHECK(p.theta()[3] == 0.0);
  CHECK(p.a_inverse()[3 * 5 + 3] == 1.0);  // untouched ridge
  const context hi{{0, 0, 0, 1, 0}}, lo{{0, 0, 0, 0, 0}};
  CHECK(p.score(hi) == p.score(lo));
}

TEST_CASE("select/ucb1: plays every arm once first, then exploits") {
  ucb1 p(0);
  rng r(11);
  // Three arms, two candidates each, interleaved.
  const std::vector<context> cs(6);
  const std::vector<std::uint32_t> arms{2, 0, 1, 2, 0, 1};
  std::vector<std::uint32_t> first;
  for (int t = 0; t < 3; ++t) {
    const std::size_t i = p.select(cs, arms, r);
    first.push_back(arms[i]);
    p.update(cs[i], arms[i], arms[i] == 1 ? 1.0 : 0.0);
  }
  std::sort(first.begin(), first.end());
  CHECK(first == std::vector<std::uint32_t>{0, 1, 2});  // every unplayed arm first
  for (int t = 0; t < 200; ++t) {
    const std::size_t i = p.select(cs, arms, r);
    p.update(cs[i], arms[i], arms[i] == 1 ? 1.0 : 0.0);
  }
  CHECK(p.plays(1) > 150);
  CHECK(p.mean_reward(1) == 1.0);
  CHECK(p.total_plays() == 203);

  // A random candidate of the best arm, reproducible from the seed; both copies are used.
  std::vector<std::size_t> picks_a, picks_b;
  {
    ucb1 q(3);
    rng ra(99);
    for (int t = 0; t < 50; ++t) picks_a.push_back(q.select(cs, arms, ra));
  }
  {
    ucb1 q(3);
    rng rb(99);
    for (int t = 0; t < 50; ++t) picks_b.push_back(q.select(cs, arms, rb));
  }
  CHECK(picks_a == picks_b);
  // Never updated, every arm ties: a random arm, then a random candidate of it (all six seen).
  for (std::size_t c = 0; c < cs.size(); ++c) CHECK(std::count(picks_a.begin(), picks_a.end(), c) > 0);
}

TEST_CASE("select/random_search: uniform and reproducible") {
  random_search p;
  const std::vector<context> cs(4);
  std::array<int, 4> hits{};
  rng r(1), r2(1);
  for (int t = 0; t < 4000; ++t) {
    const std::size_t i = p.select(cs, {}, r);
    CHECK(i == p.select(cs, {}, r2));
    ++hits[i];
  }
  for (int h : hits) CHECK(h > 850);
  CHECK(uniform_index(r, 1) == 0);
}

TEST_CASE("select/fixed_priority: the earliest candidate of the highest-priority arm") {
  fixed_priority p{5, 3, 9};
  rng r(1);
  const std::vector<context> cs(6);
  CHECK(p.select(cs, std::vector<std::uint32_t>{1, 9, 3, 3, 5, 5}, r) == 4);
  CHECK(p.select(cs, std::vector<std::uint32_t>{1, 9, 3, 3, 7, 2}, r) == 2);
  CHECK(p.select(cs, std::vector<std::uint32_t>{1, 9, 0, 0, 9, 2}, r) == 1);
  CHECK(p.select(cs, std::vector<std::uint32_t>{1, 4, 0, 0, 8, 2}, r) == 0);  // none listed
  p.update(cs[0], 5, 1.0);                                                    // learns nothing
  CHECK(p.select(cs, std::vector<std::uint32_t>{1, 9, 3, 3, 5, 5}, r) == 4);
}

TEST_CASE("select/one_shot: each arm once in round-robin order, then random") {
  one_shot p;
  rng r(4);
  const std::vector<context> cs(5);
  const std::vector<std::uint32_t> arms{3, 1, 3, 0, 1};
  CHECK(p.select(cs, arms, r) == 3);  // arm 0
  CHECK(p.select(cs, arms, r) == 1);  // arm 1, earliest candidate
  CHECK(p.select(cs, arms, r) == 0);  // arm 3
  CHECK(p.used(0));
  CHECK(p.used(3));
  CHECK_FALSE(p.used(2));
  // All present arms used: uniformly random, reproducible.
  rng r2 = r;
  std::vector<std::size_t> picks, again;
  for (int t = 0; t < 40; ++t) picks.push_back(p.select(cs, arms, r));
  one_shot q;
  for (int t = 0; t < 3; ++t) (void)q.select(cs, arms, r2);  // r2 was copied after the draws above
  for (int t = 0; t < 40; ++t) again.push_back(q.select(cs, arms, r2));
  CHECK(picks == again);
  CHECK(std::set<std::size_t>(picks.begin(), picks.end()).size() == 5);
  // A new arm appears later: used next.
  const std::vector<std::uint32_t> with_new{3, 1, 7, 0, 1};
  CHECK(p.select(cs, with_new, r) == 2);

  one_shot ordered{1, 3};  // listed order first, then unlisted by id
  CHECK(ordered.select(cs, arms, r) == 1);
  CHECK(ordered.select(cs, arms, r) == 0);
  CHECK(ordered.select(cs, arms, r) == 3);
}

TEST_CASE("select/queue: every operator present gets a turn before any gets a second") {
  // Operator 0 has 50 candidates (an always-applicable rewrite), operators 1-4 one each.
  std::vector<std::uint32_t> arms(50, 0);
  for (std::uint32_t a = 1; a <= 4; ++a) arms.push_back(a);
  std::vector<std::uint64_t> classes;
  for (std::size_t i = 0; i < arms.size(); ++i) classes.push_back(arms[i] == 0 ? i % 10 : 100 + arms[i]);
  const std::vector<context> cs(arms.size());
  queue_scheduler q;
  rng r(3);
  std::map<std::uint32_t, int> turns;
  for (int t = 0; t < 100; ++t) {
    const auto i = q.select(cs, arms, classes, r);
    REQUIRE(i < arms.size());
    ++turns[arms[i]];
    q.update(cs[i], arms[i], classes[i], 0.0);
    if (t == 4) {
      CHECK(turns.size() == 5);  // one turn each after five rounds
    }
  }
  for (const auto& [a, n] : turns) CHECK(n == 20);  // barren operators share evenly: 20% each
  // Random search on the same candidates gives operator 0 about 50/54 of the rounds.
  random_search rs;
  rng r2(3);
  int zero = 0;
  for (int t = 0; t < 100; ++t) zero += arms[rs.select(cs, arms, r2)] == 0;
  CHECK(zero > 80);
}

TEST_CASE("select/queue: within an operator the least played site class; rewarded operators get more turns") {
  const std::vector<std::uint32_t> arms{0, 0, 0, 1, 2};
  const std::vector<std::uint64_t> classes{7, 7, 8, 1, 2};
  const std::vector<context> cs(arms.size());
  queue_scheduler q;
  rng r(1);
  std::map<std::uint64_t, int> zero_classes;
  std::map<std::uint32_t, int> turns;
  for (int t = 0; t < 300; ++t) {
    const auto i = q.select(cs, arms, classes, r);
    ++turns[arms[i]];
    if (arms[i] == 0) ++zero_classes[classes[i]];
    q.update(cs[i], arms[i], classes[i], arms[i] == 2 ? 1.0 : 0.0);  // only operator 2 teaches something
  }
  // Operator 0's two classes alternate whatever their candidate counts (2 vs 1).
  CHECK(std::abs(zero_classes[7] - zero_classes[8]) <= 1);
  // Operator 2 (mean reward 1, bonus 1) gets twice the turns of each barren one: 150/75/75.
  CHECK(turns[2] == doctest::Approx(2 * turns[0]).epsilon(0.05));
  CHECK(turns[0] == doctest::Approx(turns[1]).epsilon(0.05));
  // Deterministic for a generator state; without classes each operator is one class.
  queue_scheduler a, b;
  rng ra(9), rb(9);
  for (int t = 0; t < 20; ++t) {
    const auto x = a.select(cs, arms, ra), y = b.select(cs, arms, rb);
    REQUIRE(x == y);
    a.update(cs[x], arms[x], 0.5);
    b.update(cs[y], arms[y], 0.5);
  }
  CHECK(a.plays(0) + a.plays(1) + a.plays(2) == 20);
  CHECK(q.select({}, {}, {}, r) == no_candidate);
}

TEST_CASE("select/linucb_per_arm: an operator that earns nothing loses its turns, however many sites it has") {
  // Operator 0: 50 candidates with large features, reward 0; operators 1-4: one small candidate
  // each, reward 0.5.
  rng g(17);
  std::uniform_real_distribution<double> hi(0.5, 1.0), lo(0.0, 0.5);
  std::vector<context> cs;
  std::vector<std::uint32_t> arms;
  for (int i = 0; i < 50; ++i) {
    context c;
    for (double& v : c.x) v = hi(g);
    cs.push_back(c);
    arms.push_back(0);
  }
  for (std::uint32_t a = 1; a <= 4; ++a) {
    context c;
    for (double& v : c.x) v = lo(g);
    cs.push_back(c);
    arms.push_back(a);
  }
  linucb_per_arm p;
  rng r(1);
  std::map<std::uint32_t, int> turns;
  for (int t = 0; t < 200; ++t) {
    const auto i = p.select(cs, arms, r);
    ++turns[arms[i]];
    p.update(cs[i], arms[i], arms[i] == 0 ? 0.0 : 0.5);
  }
  // Operator 0 is tried and dropped; the earning operators get the rounds (LinUCB exploits:
  // one whose first context is small may never be tried while others earn).
  CHECK(turns[0] >= 1);
  CHECK(turns[0] < 20);  // < 10% of the rounds, from 50 of the 54 candidates
  CHECK(turns[1] + turns[2] + turns[3] + turns[4] > 180);
  CHECK(p.rounds(0) == static_cast<std::size_t>(turns[0]));
}

}  // namespace tfg_test_select_policies
