// The operator pool compiles, and every example of the five reference operators behaves as
// declared at the match level (mock graphs with states derived from the declared inputs).
// Full execution of the examples on LibTorch is the backend's suite.

#include <doctest/doctest.h>

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
  constexpr char const* n[] = {"pattern", "input", "internal", "output"};
  return n[static_cast<int>(s)];
}

}  // namespace

TEST_CASE("match: the operator pool loads and the reference operators' examples behave as declared") {
  match::symbol_table syms;
  auto const pool = match::load_pool({tfg_test::source_dir() / "operators", tfg_test::source_dir() / "operators" / "extra"},
                                     syms, externs());
  for (auto const& d : pool.diagnostics) MESSAGE(d);
  std::set<std::string> const reference = {"break_alias_with_clone", "swap_activation", "explicit_dtype_roundtrip",
                                           "insert_identity_residual", "insert_pool_with_shape_revert"};
  std::set<std::string> found;
  std::size_t agree = 0, examples = 0, skipped = 0;
  for (auto const& op : pool.operators) {
    bool const ref = reference.count(op.name) > 0;
    if (ref) found.insert(op.name);
    for (auto const& ex : op.ast->examples) {
      // Rejections by deferred (probe) conditions cannot show at the match level.
      bool deferred = false;
      for (auto const* block : {&op.internal, &op.output})
        for (auto const& c : *block) deferred = deferred || c.needs_probe;
      if (!ex.match && (ex.rejected_by == dsl::stage::internal || ex.rejected_by == dsl::stage::output) && deferred) {
        ++skipped;
        continue;
      }
      ++examples;
      auto const out = run_example(op, ex, syms);
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

}  // namespace tfg_test_match_examples
