// The behaviour reward (behaviour.hpp): new operator kinds, input classes and disagreements are
// paid, repetition of an (operator, site class) decays the pay, a value-preserving mutation
// that reaches nothing new earns 0 whatever its trace, and the history survives a checkpoint.
#include <doctest/doctest.h>

#include "tfg/campaign/behaviour.hpp"  // first: the header must compile on its own

#include <cmath>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_behaviour {

using namespace tfg::campaign;

behaviour_observation seen(std::vector<std::string> kinds, std::vector<std::string> dis = {}) {
  behaviour_observation o;
  o.kinds = kinds;
  for (const auto& k : kinds) o.input_classes.push_back(input_class_key(k, {"f32 r4 contiguous"}));
  o.disagreements = std::move(dis);
  return o;
}

TEST_CASE("behaviour: the seed is the baseline; a new operator kind and its inputs are paid") {
  behaviour_history h;
  h.seed(seen({"aten::conv2d", "aten::relu"}));
  // The seed's own behaviour again: nothing new, only the trace term.
  const auto same = h.observe(0, 1, false, seen({"aten::conv2d", "aten::relu"}), 0.5);
  CHECK(same.new_kinds == 0);
  CHECK(same.new_input_classes == 0);
  CHECK(same.reward == doctest::Approx(0.2 * 0.5));
  // A new kernel: the op term and one of three input classes.
  const auto fresh = h.observe(1, 1, false, seen({"aten::conv2d", "aten::gelu"}), 0.0);
  CHECK(fresh.new_kinds == 1);
  CHECK(fresh.new_input_classes == 1);
  CHECK(fresh.reward == doctest::Approx(0.3 + 0.3 / 3));
  CHECK(h.kinds() == 3);
  // The same kind with a new input state (channels_last) is a new input class, not a new kind.
  behaviour_observation cl;
  cl.kinds = {"aten::gelu"};
  cl.input_classes = {input_class_key("aten::gelu", {"f32 r4 channels_last"})};
  const auto layout = h.observe(2, 1, false, cl, 0.0);
  CHECK(layout.new_kinds == 0);
  CHECK(layout.new_input_classes == 1);
  CHECK(layout.reward > 0);
}

TEST_CASE("behaviour: repeating an operator at one site class decays; a new disagreement class pays once") {
  behaviour_history h;
  h.seed(seen({"aten::linear"}));
  std::vector<double> r;
  for (int i = 0; i < 4; ++i) r.push_back(h.observe(5, 42, false, seen({"aten::linear"}), 1.0).reward);
  CHECK(r[0] == doctest::Approx(0.2));
  CHECK(r[1] == doctest::Approx(0.2 / std::sqrt(2.0)));
  CHECK(r[3] == doctest::Approx(0.2 / 2.0));
  // Another site class of the same operator starts undecayed.
  CHECK(h.observe(5, 43, false, seen({"aten::linear"}), 1.0).reward == doctest::Approx(0.2));
  const auto d = h.observe(6, 1, false, seen({"aten::linear"}, {"numeric eager|float64 aten::linear"}), 0.0);
  CHECK(d.new_disagreements == 1);
  CHECK(d.reward == doctest::Approx(0.2));
  CHECK(h.observe(6, 2, false, seen({"aten::linear"}, {"numeric eager|float64 aten::linear"}), 0.0).reward == 0.0);
}

TEST_CASE("behaviour: a value-preserving mutation that changes no kernel earns nothing, whatever its trace") {
  behaviour_history h;
  h.seed(seen({"aten::relu", "aten::as_strided"}));
  // Every label of its trace is new (as an identity view inserted at a new place makes new
  // transitions): the paper's reward would pay 1.
  const auto view = h.observe(3, 9, true, seen({"aten::relu", "aten::as_strided"}), 1.0);
  CHECK(view.no_kernel);
  CHECK(view.reward == 0.0);
  // The same operator reaching a new input class (an aliased input) is paid.
  behaviour_observation aliased = seen({"aten::relu"});
  aliased.input_classes = {input_class_key("aten::relu", {"f32 r4 contiguous aliased"})};
  const auto alias = h.observe(3, 10, true, aliased, 1.0);
  CHECK(!alias.no_kernel);
  CHECK(alias.reward > 0.2);
}

TEST_CASE("behaviour: the history's JSON restores the same future rewards") {
  behaviour_history h;
  h.seed(seen({"aten::add"}));
  (void)h.observe(1, 2, false, seen({"aten::mul"}, {"crash eager|eager aten::mul"}), 0.3);
  (void)h.observe(1, 2, false, seen({"aten::mul"}), 0.3);
  auto back = behaviour_history::from_json(nlohmann::json::parse(h.to_json().dump()));
  CHECK(back.to_json() == h.to_json());
  const auto probe = seen({"aten::mul", "aten::sub"}, {"crash eager|eager aten::mul"});
  CHECK(back.observe(1, 2, false, probe, 0.1).reward == doctest::Approx(h.observe(1, 2, false, probe, 0.1).reward));
  CHECK(behaviour_history::from_json(nlohmann::json()).kinds() == 0);  // a checkpoint without it: empty
}

}  // namespace tfg_test_campaign_behaviour
