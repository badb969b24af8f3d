// The NaN-propagation oracle: judged from F(e) NaN counts per profiling run and each op's rule.
#include <doctest/doctest.h>

#include "tfg/oracle/nan_propagation.hpp"  // first: the header must compile on its own

#include "tfg/graph/flow_graph.hpp"

#include <map>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_oracle_nan_propagation {

using namespace tfg;

namespace {

state::tensor_state t(std::int64_t numel, std::uint64_t nan) {
  state::tensor_state s;
  s.type = state::dtype::f32;
  s.shape = {numel};
  s.numel = numel;
  s.numbers.nan_count = nan;
  return s;
}

struct fixture {
  graph::flow_graph<std::string, int> g;
  std::map<std::uint32_t, state::edge_profile> prof;
  graph::edge_id add(const std::string& kind, std::vector<graph::edge_id> ins, state::tensor_state out) {
    const auto n = g.add_node(kind, ins, std::vector<int>{0});
    const auto e = g.outputs(n)[0];
    prof[graph::index(e)].runs = {out};
    return e;
  }
  std::vector<oracle::nan_violation> check(const oracle::nan_rules& rules) {
    return oracle::nan_vanished(
        g, [&](graph::node_id n) { return g.data(n); },
        [&](graph::edge_id e) -> const state::edge_profile* {
          auto it = prof.find(graph::index(e));
          return it == prof.end() ? nullptr : &it->second;
        },
        rules);
  }
};

}  // namespace

TEST_CASE("nan propagation: elementwise, preserve and any rules over F(e) counts") {
  using oracle::nan_rule;
  const oracle::nan_rules rules{{"aten::relu", nan_rule::elementwise},
                                {"aten::add", nan_rule::elementwise},
                                {"aten::cat", nan_rule::preserve},
                                {"aten::sum", nan_rule::any}};
  fixture f;
  const auto x = f.g.add_input(0);
  f.prof[graph::index(x)].runs = {t(12, 2)};
  const auto bias = f.g.add_input(0);
  f.prof[graph::index(bias)].runs = {t(3, 1)};           // broadcast to 12: at least 4 NaN out
  f.add("aten::relu", {x}, t(12, 2));                    // kept: fine
  const auto lost = f.add("aten::relu", {x}, t(12, 1));  // one NaN lost
  f.add("aten::add", {x, bias}, t(12, 4));               // 4 >= 2 and 4 >= 1 x 12 / 3: fine
  f.add("aten::add", {x, bias}, t(12, 3));               // the bias NaN should cover 4 elements
  f.add("aten::cat", {x, bias}, t(15, 3));               // keeps both inputs' NaN: fine
  f.add("aten::sum", {x}, t(1, 0));                      // a reduction that swallowed NaN
  f.add("aten::where", {x}, t(12, 0));                   // no rule: never judged
  (void)lost;
  const auto v = f.check(rules);
  REQUIRE(v.size() == 3);
  CHECK(f.g.data(v[0].node) == "aten::relu");
  CHECK(v[0].expected == 2);
  CHECK(v[0].out_nan == 1);
  CHECK(f.g.data(v[1].node) == "aten::add");
  CHECK(v[1].expected == 4);
  CHECK(f.g.data(v[2].node) == "aten::sum");
  CHECK(v[2].message.find("propagates nan any") != std::string::npos);
  CHECK(f.check({}).empty());
}

TEST_CASE("nan propagation: 'from %self' judges only the operand whose values flow (reshape_as, expand_as)") {
  using oracle::nan_rule;
  const oracle::nan_rules rules{{"aten::reshape_as", {nan_rule::preserve, 0}}};
  fixture f;
  const auto x = f.g.add_input(0);
  f.prof[graph::index(x)].runs = {t(12, 0)};
  const auto shape_donor = f.g.add_input(0);
  f.prof[graph::index(shape_donor)].runs = {t(12, 5)};  // NaN in `other`: only its shape is read
  f.add("aten::reshape_as", {x, shape_donor}, t(12, 0));
  CHECK(f.check(rules).empty());
  // Without `from`, the same node was reported (the tool artefact this rule removes).
  CHECK(f.check({{"aten::reshape_as", nan_rule::preserve}}).size() == 1);
  // A NaN in `self` that vanishes is still a finding.
  const auto y = f.g.add_input(0);
  f.prof[graph::index(y)].runs = {t(12, 3)};
  f.add("aten::reshape_as", {y, shape_donor}, t(12, 1));
  const auto v = f.check(rules);
  REQUIRE(v.size() == 1);
  CHECK(v[0].expected == 3);
  CHECK(v[0].message.find("from operand 0") != std::string::npos);
  // The rule's text round trip.
  CHECK(oracle::to_string(oracle::nan_spec{nan_rule::preserve, 0}) == "preserve@0");
  CHECK(*oracle::parse_nan_rule("preserve@0") == oracle::nan_spec{nan_rule::preserve, 0});
  CHECK(*oracle::parse_nan_rule("any") == oracle::nan_spec{nan_rule::any});
  for (const char* bad : {"preserve@", "preserve@x", "@0", "keep@1", "preserve@12345"})
    CHECK_FALSE(oracle::parse_nan_rule(bad));
}

}  // namespace tfg_test_oracle_nan_propagation
