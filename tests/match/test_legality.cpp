// The pieces of `flowmut legality` that decide without executing: the stratified draw, the
// confusion counts of a constraint system, each constraint group judged on its own, and the
// rule that a replacement must not bake one profiling run's state into the mutant.

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "match_test_util.hpp"
#include "tfg/match/legality.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/match/prefilter.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_match_legality {

using namespace tfg_match_test;
using state::dtype;

TEST_CASE("legality: the stratified draw shares the sample equally and gives small strata all they have") {
  const std::vector<std::uint64_t> sizes{1000, 3, 0, 50, 1000};
  std::mt19937_64 rng(5);
  const auto s = match::stratified_sample(std::span<const std::uint64_t>(sizes), 100, rng);
  CHECK(s.size() == 100);
  std::vector<std::size_t> per(sizes.size(), 0);
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  for (const auto& x : s) {
    REQUIRE(x.stratum < sizes.size());
    CHECK(x.index < sizes[x.stratum]);
    ++per[x.stratum];
    CHECK(seen.insert({x.stratum, x.index}).second);  // without replacement
  }
  CHECK(per[1] == 3);  // all it has
  CHECK(per[2] == 0);
  // The remaining 97 over three strata: 32 or 33 each.
  for (std::size_t k : {0u, 3u, 4u}) CHECK((per[k] == 32 || per[k] == 33));
  // Deterministic for a seed, and a larger sample than there are items takes every item.
  std::mt19937_64 again(5);
  CHECK(match::stratified_sample(std::span<const std::uint64_t>(sizes), 100, again) == s);
  std::mt19937_64 r3(1);
  CHECK(match::stratified_sample(std::span<const std::uint64_t>(sizes), 1'000'000, r3).size() == 2053);
}

TEST_CASE("legality: the confusion counts and their rates, rejection being the positive class") {
  match::confusion c;
  for (int i = 0; i < 80; ++i) c.add(true, true);    // retained legal
  for (int i = 0; i < 5; ++i) c.add(true, false);    // leaked
  for (int i = 0; i < 10; ++i) c.add(false, false);  // rightly rejected
  for (int i = 0; i < 5; ++i) c.add(false, true);    // wrongly rejected
  CHECK(c.total() == 100);
  CHECK(c.retention() == doctest::Approx(0.85));
  CHECK(c.legal_rate() == doctest::Approx(80.0 / 85));
  CHECK(c.precision() == doctest::Approx(10.0 / 15));
  CHECK(c.recall() == doctest::Approx(10.0 / 15));
  CHECK(c.false_rejection() == doctest::Approx(5.0 / 85));
  CHECK(c.leakage() == doctest::Approx(5.0 / 85));
  match::confusion none;  // nothing rejected: precision is undefined, not 0 or 1
  none.add(true, true);
  CHECK(std::isnan(none.precision()));
  CHECK(none.recall() != none.recall());  // no illegal candidate: NaN too
}

TEST_CASE("legality: every constraint group is judged even when an earlier one fails") {
  match::symbol_table syms;
  mock_adapter m{syms};
  const auto a = m.add_input(T(dtype::i64, {2, 3}));
  const auto x = m.add_node("aten::neg", {mock_adapter::edge(a)}, std::vector{T(dtype::i64, {2, 3})});
  m.add_output(x);
  const auto r = compile_text(op_text("anchor %x",
                                      "require input { is_floating(%x) }\n"
                                      "require internal { rank(%x) == 3 }\n"
                                      "require output { numel(%x) == 6 }\n"
                                      "replace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }"),
                              syms);
  const auto& op = r.operators[0];
  match::bindings b;
  match::workspace ws;
  REQUIRE(match::match_pattern(op, m, x, b, ws));
  const auto v = match::judge_groups(op, m, b, ws);
  CHECK(!v.input);
  CHECK(!v.internal);
  CHECK(v.output);
  CHECK(!match::retains(match::ablations[0], v));  // full
  CHECK(!match::retains(match::ablations[1], v));  // without input: internal still rejects
  CHECK(!match::retains(match::ablations[2], v));  // without internal: input rejects
  CHECK(match::retains(match::ablations[4], v));   // no constraints
  CHECK(match::retains({false, false, true, "input and internal off"}, v));
}

TEST_CASE("legality: a replacement that bakes a size differing between profiling runs is rejected at internal") {
  match::symbol_table syms;
  mock_adapter m{syms};
  // Two profiling runs: a batch of one and a batch of two.
  const auto a = m.add_input(std::vector{T(dtype::f32, {1, 8}), T(dtype::f32, {2, 8})});
  const auto x =
      m.add_node("aten::relu", {mock_adapter::edge(a)}, std::vector{T(dtype::f32, {1, 8}), T(dtype::f32, {2, 8})});
  m.add_output(x);
  const auto r = compile_text(
      op_text("anchor %x",
              "param $d : int in [0, 1]\n"
              "require input { $d < rank(%x) }\n"
              "replace { %c = aten::narrow(%x, $d, 0, dim(%x, $d)) rewire consumers(%x) -> %c }") +
          op_text("anchor %x",
                  "replace { %n = aten::size(%x, 0) %c = aten::narrow(%x, 0, 0, %n) rewire consumers(%x) -> %c }",
                  "relative")
              .substr(6),
      syms);
  REQUIRE(r.operators.size() == 2);
  match::workspace ws;
  auto stage_with = [&](std::size_t op, std::int64_t d) {
    match::bindings b;
    REQUIRE(match::match_pattern(r.operators[op], m, x, b, ws));
    if (!b.params.empty()) b.params[0] = d;
    return match::check_constraints(r.operators[op], m, b, ws);
  };
  CHECK(stage_with(0, 0) == match::reject_stage::internal);  // dim 0 is 1 on one run, 2 on the other
  CHECK(stage_with(0, 1) == match::reject_stage::accepted);  // dim 1 is 8 on both
  CHECK(stage_with(1, 0) == match::reject_stage::accepted);  // the size is read when the mutant runs
}

TEST_CASE("legality: any_record holds when its condition holds on some profiling record") {
  match::symbol_table syms;
  mock_adapter m{syms};
  // A detector's deepest map: 2x2 on one profiling input, 1x1 on the other.
  const auto a = m.add_input(std::vector{T(dtype::f32, {1, 4, 2, 2}), T(dtype::f32, {1, 4, 1, 1})});
  const auto x = m.add_node("aten::relu", {mock_adapter::edge(a)},
                            std::vector{T(dtype::f32, {1, 4, 2, 2}), T(dtype::f32, {1, 4, 1, 1})});
  m.add_output(x);
  const auto stage_of = [&](const std::string& cond) {
    auto const r =
        compile_text(op_text("anchor %x", "require input { " + cond +
                                              " }\n"
                                              "replace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }"),
                     syms);
    REQUIRE(r.operators.size() == 1);
    match::bindings b;
    match::workspace ws;
    REQUIRE(match::match_pattern(r.operators[0], m, x, b, ws));
    return match::check_constraints(r.operators[0], m, b, ws);
  };
  CHECK(stage_of("dim(%x, 2) * dim(%x, 3) > 1") == match::reject_stage::input);  // every record
  CHECK(stage_of("any_record(dim(%x, 2) * dim(%x, 3) > 1)") == match::reject_stage::accepted);
  CHECK(stage_of("any_record(dim(%x, 2) > 2)") == match::reject_stage::input);  // on no record
  // Beside a condition on every record: both must hold.
  CHECK(stage_of("rank(%x) == 4 && any_record(dim(%x, 3) == 1)") == match::reject_stage::accepted);
  CHECK(stage_of("rank(%x) == 3 && any_record(dim(%x, 3) == 1)") == match::reject_stage::input);
  CHECK(stage_of("!any_record(dim(%x, 3) == 3)") == match::reject_stage::accepted);
}

TEST_CASE("legality: an int edge is never an anchor, and state built-ins do not hold on one") {
  match::symbol_table syms;
  mock_adapter m{syms};
  const auto a = m.add_input(T(dtype::f32, {2, 3}));
  const auto n = m.add_node("aten::size", {mock_adapter::edge(a), mock_adapter::constant(std::int64_t{0})},
                            std::vector{mock_adapter::scalar_int(2)});
  m.add_output(n);
  const auto r = compile_text(op_text("anchor %x",
                                      "require input { layout(%x) == strided }\n"
                                      "replace { %c = aten::detach(%x) rewire consumers(%x) -> %c }") +
                                  op_text("anchor %x",
                                          "pattern { %s = aten::size(%x, _) }\n"
                                          "require input { layout(%s) == strided }\n"
                                          "replace { %c = aten::detach(%x) rewire consumers(%x) -> %c }",
                                          "of_size")
                                      .substr(6),
                              syms);
  REQUIRE(r.operators.size() == 2);
  match::bindings b;
  match::workspace ws;
  // The size is not an anchor (dsl/spec.md section 15, "Anchor kind"): the pattern stage, as
  // the summary prefilter decides.
  CHECK(!match::match_pattern(r.operators[0], m, n, b, ws));
  const auto summary = match::summarize(m);
  CHECK(match::prefilter_check(r.operators[0].pre, summary[tfg::graph::index(n)]) == match::reject_stage::pattern);
  REQUIRE(match::match_pattern(r.operators[0], m, a, b, ws));
  CHECK(match::check_constraints(r.operators[0], m, b, ws) == match::reject_stage::accepted);
  // Bound by a pattern node, the size is a value, and a tensor's state built-in fails on it.
  REQUIRE(match::match_pattern(r.operators[1], m, a, b, ws));
  CHECK(match::check_constraints(r.operators[1], m, b, ws) == match::reject_stage::input);
}

TEST_CASE("legality: an operator that requires an absent device is moved out of the pool") {
  match::symbol_table syms;
  auto r = compile_text(
      op_text("requires cuda anchor %x", "replace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }") +
          op_text("anchor %x", "replace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }", "u").substr(6),
      syms);
  REQUIRE(r.operators.size() == 2);
  CHECK(r.operators[0].requires_device == "cuda");
  CHECK(r.operators[1].requires_device.empty());
  match::pool p;
  p.operators = std::move(r.operators);
  CHECK(match::keep_available(p, [](std::string_view d) { return d != "cuda"; }) == 1);
  REQUIRE(p.operators.size() == 1);
  CHECK(p.operators[0].name == "u");
  REQUIRE(p.unavailable.size() == 1);
  CHECK(p.unavailable[0].name == "t");
}

}  // namespace tfg_test_match_legality
