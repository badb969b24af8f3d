// Context features: coverage d(B), hashing helpers, influence normalisation, ablations.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "tfg/select/features.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_select_features {

using namespace tfg::select;

TEST_CASE("select/features: d(B) of hand-made sets") {
  coverage_counter cov;
  const std::vector<std::uint64_t> empty;
  CHECK(cov.diversity(empty) == 1.0);  // empty set: nothing seen

  const std::vector<std::uint64_t> ab{1, 2};
  CHECK(cov.diversity(ab) == 1.0);  // unseen elements contribute 1 each
  cov.record(ab);
  CHECK(cov.executed() == 1);
  CHECK(cov.count(1) == 1);
  CHECK(cov.count(3) == 0);
  CHECK(cov.diversity(ab) == doctest::Approx(0.5));  // (1/2 + 1/2) / 2

  const std::vector<std::uint64_t> a{1};
  cov.record(a);  // n(1) = 2, n(2) = 1
  CHECK(cov.diversity(a) == doctest::Approx(1.0 / 3.0));
  const std::vector<std::uint64_t> abc{1, 2, 3};
  CHECK(cov.diversity(abc) == doctest::Approx((1.0 / 3.0 + 1.0 / 2.0 + 1.0) / 3.0));
  CHECK(cov.distinct() == 2);

  cov.clear();
  CHECK(cov.diversity(abc) == 1.0);
  CHECK(cov.executed() == 0);
}

TEST_CASE("select/features: feature_set tags elements by feature and drops duplicates") {
  feature_set l(feature::site_context), m(feature::mutation);
  l.add("aten::relu").add("aten::relu").add(std::uint64_t{7}).add_tuple(1u, 2u);
  m.add("aten::relu");
  CHECK(l.size() == 3);
  CHECK(m.size() == 1);
  CHECK(l.elements()[0] != m.elements()[0]);  // same key, different feature

  feature_set t(feature::tensor_state);
  t.add_tuple(1u, 2u).add_tuple(2u, 1u);  // ordered tuples differ
  CHECK(t.size() == 2);

  coverage_counter cov;
  cov.record(l, t, m);
  CHECK(cov.executed() == 1);
  CHECK(cov.diversity(l) == doctest::Approx(0.5));
  feature_set m2(feature::mutation);
  m2.add("aten::gelu");
  const context c = make_context(cov, l, t, m2, 0.25, 0.75);
  CHECK(c.site_context() == doctest::Approx(0.5));
  CHECK(c.tensor_state() == doctest::Approx(0.5));
  CHECK(c.mutation() == 1.0);
  CHECK(c.downstream_impact() == 0.25);
  CHECK(c.influence() == 0.75);
  CHECK(c[feature::influence] == 0.75);

  l.clear();
  CHECK(l.size() == 0);
  CHECK(hash_string("aten::relu") == hash_string("aten::relu"));
  CHECK(hash_string("aten::relu") != hash_string("aten::gelu"));
  CHECK(hash_combine(1, 2) != hash_combine(2, 1));
}

TEST_CASE("select/features: normalise_influence is min-max within the set") {
  std::vector<double> g{2.0, 4.0, 3.0};
  normalise_influence(g);
  CHECK(g == std::vector<double>{0.0, 1.0, 0.5});

  std::vector<double> flat{3.0, 3.0};
  normalise_influence(flat);
  CHECK(flat == std::vector<double>{0.5, 0.5});

  std::vector<double> one{42.0};
  normalise_influence(one);
  CHECK(one[0] == 0.5);

  std::vector<double> bad{1.0, NAN, 3.0, INFINITY};
  normalise_influence(bad);
  CHECK(bad == std::vector<double>{0.0, 0.0, 1.0, 0.0});

  std::vector<double> none;
  normalise_influence(none);  // no-op
  CHECK(none.empty());
}

TEST_CASE("select/features: ablation masks zero the right features") {
  const context c{{0.1, 0.2, 0.3, 0.4, 0.5}};
  CHECK(ablation::all().apply(c) == c);
  CHECK(ablation::all().uses_all());
  CHECK(ablation::coverage_only().apply(c) == context{{0.1, 0.2, 0.3, 0.0, 0.0}});
  CHECK(ablation::impact_only().apply(c) == context{{0.0, 0.0, 0.0, 0.4, 0.5}});
  CHECK(ablation::without(feature::downstream_impact).apply(c) == context{{0.1, 0.2, 0.3, 0.0, 0.5}});
  CHECK(ablation::without(feature::site_context).apply(c) == context{{0.0, 0.2, 0.3, 0.4, 0.5}});
  CHECK(ablation::all().minus(feature::tensor_state).minus(feature::influence).apply(c) ==
        context{{0.1, 0.0, 0.3, 0.4, 0.0}});
  CHECK_FALSE(ablation::coverage_only().uses(feature::influence));
  CHECK(ablation::impact_only().uses(feature::influence));
  CHECK_FALSE(ablation::impact_only().uses_all());

  std::vector<context> cs{c, c};
  ablation::impact_only().apply(cs);
  CHECK(cs[1] == context{{0.0, 0.0, 0.0, 0.4, 0.5}});
}

}  // namespace tfg_test_select_features
