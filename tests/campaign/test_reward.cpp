// The runtime-trace novelty reward r = 1/2 (new labels / labels + new transitions / transitions).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tfg/campaign/reward.hpp"  // first: the header must compile on its own

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_reward {

using tfg::campaign::novelty;
using tfg::campaign::trace_novelty;
using trace = std::vector<std::string>;

TEST_CASE("reward: first trace is fully new, an identical repeat gives 0") {
  trace_novelty h;
  const trace t{"dispatch:cpu", "autograd:off", "dispatch:cpu", "alias:view"};
  const novelty first = h.observe(t);
  CHECK(first.reward == doctest::Approx(1.0));
  CHECK(first.labels == 3);       // distinct labels
  CHECK(first.transitions == 3);  // (d,a) (a,d) (d,v)
  CHECK(first.new_labels == 3);
  CHECK(first.new_transitions == 3);
  CHECK(h.known_labels() == 3);
  CHECK(h.known_transitions() == 3);

  const novelty again = h.observe(t);
  CHECK(again.reward == 0.0);
  CHECK(again.new_labels == 0);
  CHECK(again.new_transitions == 0);
}

TEST_CASE("reward: worked example with half-new labels") {
  trace_novelty h;
  h.observe(trace{"a", "b", "c"});  // E = {a,b,c}, Q = {ab, bc}
  // t = a b d d: E_t = {a,b,d} (1 new of 3); Q_t = {ab, bd, dd} (2 new of 3).
  const trace t{"a", "b", "d", "d"};
  const novelty p = h.peek(t);
  CHECK(p.labels == 3);
  CHECK(p.new_labels == 1);
  CHECK(p.transitions == 3);
  CHECK(p.new_transitions == 2);
  CHECK(p.reward == doctest::Approx(0.5 * (1.0 / 3 + 2.0 / 3)));
  // peek records nothing
  CHECK(h.known_labels() == 3);
  CHECK(h.known_transitions() == 2);
  CHECK(h.peek(t).reward == doctest::Approx(p.reward));

  // Old labels in a new order: no new labels, but c->a and a->c are new transitions.
  const novelty q = h.peek(trace{"c", "a", "c"});
  CHECK(q.new_labels == 0);
  CHECK(q.transitions == 2);
  CHECK(q.new_transitions == 2);
  CHECK(q.reward == doctest::Approx(0.5));
}

TEST_CASE("reward: empty and single-label traces") {
  trace_novelty h;
  const novelty e = h.observe(trace{});
  CHECK(e.reward == 0.0);
  CHECK(h.known_labels() == 0);

  const novelty one = h.observe(trace{"x"});  // no transitions: the label term only
  CHECK(one.transitions == 0);
  CHECK(one.reward == doctest::Approx(1.0));
  CHECK(h.observe(trace{"x"}).reward == 0.0);
  CHECK(h.known_transitions() == 0);
  // A repeated label makes a self transition.
  const novelty xx = h.observe(trace{"x", "x"});
  CHECK(xx.transitions == 1);
  CHECK(xx.reward == doctest::Approx(0.5));
}

TEST_CASE("reward: json round trip gives the same history") {
  trace_novelty h;
  h.observe(trace{"a", "b", "c", "a"});
  h.observe(trace{"z", "b", "q"});
  const nlohmann::json j = h.to_json();
  const trace_novelty back = trace_novelty::from_json(nlohmann::json::parse(j.dump()));
  CHECK(back == h);
  CHECK(back.to_json() == j);
  CHECK(back.known_labels() == 5);
  CHECK(back.known_transitions() == h.known_transitions());
  const trace probe{"q", "a", "b", "y"};
  CHECK(back.peek(probe).reward == doctest::Approx(h.peek(probe).reward));

  CHECK_THROWS_AS(trace_novelty::from_json(nlohmann::json{{"version", 2}}), std::invalid_argument);
  nlohmann::json bad = j;
  bad["transitions"].push_back({0, 99});
  CHECK_THROWS_AS(trace_novelty::from_json(bad), std::invalid_argument);
}

}  // namespace tfg_test_campaign_reward
