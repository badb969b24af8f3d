// The operator pool compiles, and every example of the five reference operators behaves as
// declared at the match level (mock graphs with states derived from the declared inputs).
// Full execution of the examples on LibTorch is the backend's suite.

#include <doctest/doctest.h>

#include <random>
#include <set>
#include <string>

#include "../dsl/dsl_test_util.hpp"
#include "match_test_util.hpp"
#include "tfg/match/pool.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_match_examples {

using namespace tfg_match_test;

namespace {

std::string stage_name(dsl::stage s) {
  constexpr const char* n[] = {"pattern", "input", "internal", "output"};
  return n[static_cast<int>(s)];
}

}  // namespace

TEST_CASE("match: the operator pool loads and the reference operators' examples behave as declared") {
  match::symbol_table syms;
  const auto pool = match::load_pool(
      {tfg_test::source_dir() / "operators", tfg_test::source_dir() / "operators" / "extra"}, syms, externs());
  for (const auto& d : pool.diagnostics) MESSAGE(d);
  const std::set<std::string> reference = {"break_alias_with_clone", "swap_activation", "explicit_dtype_roundtrip",
                                           "insert_identity_residual", "insert_pool_with_shape_revert"};
  std::set<std::string> found;
  std::size_t agree = 0, examples = 0, skipped = 0;
  for (const auto& op : pool.operators) {
    const bool ref = reference.count(op.name) > 0;
    if (ref) found.insert(op.name);
    for (const auto& ex : op.ast->examples) {
      // Rejections by deferred (probe) conditions cannot show at the match level.
      bool deferred = false;
      for (const auto* block : {&op.internal, &op.output})
        for (const auto& c : *block) deferred = deferred || c.needs_probe;
      if (!ex.match && (ex.rejected_by == dsl::stage::internal || ex.rejected_by == dsl::stage::output) && deferred) {
        ++skipped;
        continue;
      }
      ++examples;
      const auto out = run_example(op, ex, syms);
      bool ok = false;
      if (ex.match) ok = out.matched;
      else ok = !out.matched && match::name(out.latest) == stage_name(ex.rejected_by);
      agree += ok;
      if (ref) {
        INFO("operator " << op.name << ", example at line " << ex.loc.line << " (" << (ex.match ? "match" : "no_match")
                         << "), latest stage " << match::name(out.latest));
        CHECK(ok);
      }
    }
  }
  CHECK(found == reference);
  MESSAGE("pool: " << pool.operators.size() << " operators from " << pool.files << " files; examples agreeing at the "
                   << "match level: " << agree << " / " << examples << " (" << skipped << " deferred to the probe)");
}

// evaluate_constraints evaluates the conditions that read no sampled parameter once per
// candidate and re-evaluates only the sampled ones per draw (include/tfg/match/pattern.hpp).
// Whatever it returns must be what the plain staged check gives on the parameters it left in
// the bindings: on every example graph of every bundled operator, every anchor, 16 seeds.
TEST_CASE("match: a redrawn candidate's stage is the staged check of its final draw, for every bundled operator") {
  match::symbol_table syms;
  const auto pool = match::load_pool(
      {tfg_test::source_dir() / "operators", tfg_test::source_dir() / "operators" / "extra"}, syms, externs());
  std::size_t checked = 0, accepted = 0, redrawn_ops = 0;
  for (const auto& op : pool.operators) {
    redrawn_ops += op.sampled_params;
    for (const auto& ex : op.ast->examples) {
      mock_adapter m(syms);
      (void)build_example(ex.graph, m);
      match::workspace ws;
      match::bindings b;
      for (const auto e : m.graph().edges())
        for (std::uint64_t seed = 0; seed < 16; ++seed) {
          std::mt19937_64 rng(seed);
          if (!match::match_pattern(op, m, e, b, ws)) continue;
          const auto st = match::evaluate_constraints(op, m, b, rng, ws, 4);
          const auto plain = match::check_constraints(op, m, b, ws);
          INFO("operator " << op.name << ", example at line " << ex.loc.line << ", seed " << seed);
          CHECK(match::name(st) == match::name(plain));
          ++checked;
          accepted += st == match::reject_stage::accepted;
        }
    }
  }
  MESSAGE(checked << " candidates (" << accepted << " accepted) of " << pool.operators.size() << " operators, "
                  << redrawn_ops << " with sampled parameters");
  CHECK(checked > 1000);
  CHECK(accepted > 0);
  CHECK(redrawn_ops > 20);
}

}  // namespace tfg_test_match_examples
