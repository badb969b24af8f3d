// The backend-neutral metrics: value classes, test-space totals, tracker ratios, checkpoints.
#include "tfg/metrics/metrics.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_metrics_metrics {

namespace m = tfg::metrics;

namespace {

/// U = {a, b, c}: a has one tensor input and an int parameter; b two tensor inputs and an
/// optional bool; c produces a tensor from a parameter only (no tensor input).
m::test_space small_space() {
  m::test_space s;
  s.ops.push_back({"x::b", {"self", "other"}, {{"flag", m::param_kind::boolean, true}}, {"", "Tensor"}, true});
  s.ops.push_back({"x::a", {"self"}, {{"dim", m::param_kind::integer, false}}, {}, true});
  s.ops.push_back({"x::c", {}, {{"size", m::param_kind::int_list, false}}, {}, true});
  s.apis = {"x::c", "x::a", "x::b", "x::d"};
  return s;
}

tfg::state::tensor_state tensor(tfg::state::dtype t, std::vector<std::int64_t> shape) {
  tfg::state::tensor_state s;
  s.type = t;
  s.shape = std::move(shape);
  return s;
}

}  // namespace

TEST_CASE("metrics: value classes are in range and tell shapes apart") {
  using tfg::state::dtype;
  CHECK(m::rank_shape_class(std::vector<std::int64_t>{}) == 0);
  CHECK(m::rank_shape_class(std::vector<std::int64_t>{0, 3}) == 1 + 4 + 0);
  CHECK(m::rank_shape_class(std::vector<std::int64_t>{1, 1}) == 1 + 4 + 1);
  CHECK(m::rank_shape_class(std::vector<std::int64_t>{1, 3}) == 1 + 4 + 2);
  CHECK(m::rank_shape_class(std::vector<std::int64_t>{2, 3}) == 1 + 4 + 3);
  CHECK(m::rank_shape_class(std::vector<std::int64_t>(9, 2)) == m::rank_shape_classes - 1);  // rank 9 folds to 6
  CHECK(*m::input_class(tensor(dtype::boolean, std::vector<std::int64_t>(6, 5))) == m::input_classes - 1);
  CHECK_FALSE(m::input_class(tensor(dtype::other, {2})).has_value());

  tfg::state::numeric_summary n;
  CHECK(m::value_class(n) == 0);
  n.min = -2, n.max = 0.5;
  CHECK(m::value_class(n) == 3 + 3 * 2 + 1);
  n.nan_count = 1;
  CHECK(m::value_class(n) == 1);
  n = {};
  n.min = n.max = 0;
  CHECK(m::value_class(n) == 2);

  CHECK(m::bin_int(-3) == 0);
  CHECK(m::bin_int(1000) == 7);
  CHECK(m::bin_float(1.0) == 5);
  CHECK(m::bin_float(0.0 / 0.0) == 0);
  CHECK(m::bin_int_list(std::vector<std::int64_t>{}) == 0);
  CHECK(m::bin_int_list(std::vector<std::int64_t>{3, 3, 3, 3, 3}) == m::base_bins(m::param_kind::int_list) - 1 - 1);
  CHECK(m::bin_int_list(std::vector<std::int64_t>{9, 9, 9, 9}) == m::base_bins(m::param_kind::int_list) - 1);
}

TEST_CASE("metrics: the space's totals are fixed by its definition") {
  m::test_space s = small_space();
  s.finalize();
  REQUIRE(s.ops.size() == 3);
  CHECK(s.ops[0].name == "x::a");  // sorted
  CHECK(s.input_slots == 3);
  CHECK(s.input_values == 3 * m::input_classes);
  CHECK(s.param_slots == 3);
  CHECK(s.param_values == 8 + 3 + 17);
  CHECK(s.producers == 3);
  CHECK(s.consumers == 2);
  CHECK(s.valid_pairs == 6);
  CHECK(s.dfsd_space == doctest::Approx(3.0 * (1 + 2) * m::signature_tensor_space));
  CHECK(s.find("x::b") == 1);
  CHECK_FALSE(s.find("x::z").has_value());
}

TEST_CASE("metrics: known fractions and macro-averaging over operators") {
  m::tracker t(small_space());
  CHECK(t.current().lic == 0);

  m::observation o;
  o.inputs.push_back({"x::a", "self", 7});
  o.inputs.push_back({"x::a", "self", 8});
  o.inputs.push_back({"x::b", "other", 7});
  o.inputs.push_back({"x::z", "self", 7});       // outside U: ignored
  o.inputs.push_back({"x::a", "weight", 7});     // not a slot: ignored
  o.inputs.push_back({"x::a", "self", 100000});  // out of range: ignored
  o.params.push_back({"x::a", "dim:int", 2});
  o.params.push_back({"x::b", "flag:bool?", 2});  // the None bin
  o.params.push_back({"x::b", "flag:bool", 0});   // wrong type: another slot, ignored
  o.params.push_back({"x::c", "size:int[]", 0});
  o.pairs.push_back({"x::a", "x::b"});
  o.pairs.push_back({"x::a", "x::c"});  // c has no tensor input: not valid
  o.pairs.push_back({"x::z", "x::b"});  // z outside U
  o.signatures.push_back({"x::a", "x::b", "Tensor", 1});
  o.signatures.push_back({"x::a", "x::b", "nope", 2});  // overload outside the space: raw only
  o.signatures.push_back({"x::a", "x::a", "", 3});
  o.signatures.push_back({"x::z", "x::a", "", 4});  // raw only
  o.apis = {"x::a", "x::b", "prim::Constant"};
  t.observe(o);

  const auto s = t.current();
  // LIC: a covers 2/300, b 1/600; c has no input slot and is not averaged.
  CHECK(s.lic == doctest::Approx((2.0 / 300 + 1.0 / 600) / 2));
  // LPC: a 1/8, b 1/3, c 1/17.
  CHECK(s.lpc == doctest::Approx((1.0 / 8 + 1.0 / 3 + 1.0 / 17) / 3));
  CHECK(s.lsc == doctest::Approx(1.0 / 6));
  CHECK(s.dfsd == doctest::Approx(2.0 / (9 * m::signature_tensor_space)));
  CHECK(s.signatures == 4);
  CHECK(s.apis == 2);
  CHECK(s.api_coverage == doctest::Approx(0.5));
  CHECK(s.test_cases == 1);
  for (double r : {s.lic, s.lpc, s.lsc, s.dfsd, s.api_coverage}) {
    CHECK(r > 0);
    CHECK(r < 1);
  }
}

TEST_CASE("metrics: re-observing the same test case changes nothing but the count") {
  m::tracker t(small_space());
  m::observation o;
  o.inputs.push_back({"x::a", "self", 1});
  o.params.push_back({"x::a", "dim:int", 3});
  o.pairs.push_back({"x::b", "x::a"});
  o.signatures.push_back({"x::b", "x::a", "", 42});
  o.apis = {"x::c"};
  t.observe(o);
  const auto a = t.current();
  t.observe(o);
  t.observe(o);
  const auto b = t.current();
  CHECK(a.lic == b.lic);
  CHECK(a.lpc == b.lpc);
  CHECK(a.lsc == b.lsc);
  CHECK(a.dfsd == b.dfsd);
  CHECK(a.signatures == b.signatures);
  CHECK(a.apis == b.apis);
  CHECK(b.test_cases == 3);

  // Full coverage of one slot reaches 1 for that operator.
  m::observation all;
  for (std::uint32_t c = 0; c < m::input_classes; ++c) all.inputs.push_back({"x::a", "self", c});
  t.observe(all);
  CHECK(t.current().lic == doctest::Approx(0.5));  // a: 1, b: 0
}

TEST_CASE("metrics: signature hashes are stable and separate their parts") {
  auto s = tensor(tfg::state::dtype::f32, {2, 3});
  const auto h = m::signature_hash("aten::relu", "aten::add", "Tensor", s);
  CHECK(h == m::signature_hash("aten::relu", "aten::add", "Tensor", s));
  CHECK(h != m::signature_hash("aten::relu", "aten::add", "Scalar", s));
  CHECK(m::signature_hash("ab", "c", "", s) != m::signature_hash("a", "bc", "", s));
  auto g = s;
  g.requires_grad = true;
  CHECK(h != m::signature_hash("aten::relu", "aten::add", "Tensor", g));
  auto al = s;
  al.storage_sharers = 2;
  CHECK(h != m::signature_hash("aten::relu", "aten::add", "Tensor", al));
  CHECK(static_cast<double>(m::signature_tensor_class(g)) < m::signature_tensor_space);
}

TEST_CASE("metrics: json round trip restores every metric") {
  m::tracker t(small_space());
  m::observation o;
  o.inputs.push_back({"x::b", "self", 299});
  o.params.push_back({"x::b", "flag:bool?", 1});
  o.params.push_back({"x::c", "size:int[]", 16});
  o.pairs.push_back({"x::b", "x::b"});
  o.signatures.push_back({"x::b", "x::b", "", 0xfedcba9876543210ULL});
  o.signatures.push_back({"x::q", "x::b", "", 7});
  o.apis = {"x::d", "x::unknown"};
  t.observe(o);
  t.observe(o);

  const auto j = t.to_json();
  const auto text = j.dump();
  const auto u = m::tracker::from_json(nlohmann::json::parse(text), small_space());
  const auto a = t.current(), b = u.current();
  CHECK(a.lic == b.lic);
  CHECK(a.lpc == b.lpc);
  CHECK(a.lsc == b.lsc);
  CHECK(a.dfsd == b.dfsd);
  CHECK(a.signatures == b.signatures);
  CHECK(a.apis == b.apis);
  CHECK(b.test_cases == 2);
  CHECK(u.to_json() == j);

  // A restored tracker keeps counting from where it was.
  auto v = m::tracker::from_json(j, small_space());
  v.observe(o);
  CHECK(v.current().signatures == a.signatures);
  CHECK(v.current().test_cases == 3);

  CHECK_THROWS_AS((void)m::tracker::from_json(nlohmann::json::parse(R"({"version":2})"), small_space()),
                  std::invalid_argument);
  CHECK_THROWS_AS((void)m::tracker::from_json(nlohmann::json::parse(R"({"version":1})"), small_space()),
                  std::invalid_argument);
  const auto snap = m::to_json(a);
  CHECK(snap.at("signatures") == a.signatures);
}

}  // namespace tfg_test_metrics_metrics
