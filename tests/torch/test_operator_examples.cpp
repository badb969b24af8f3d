// Every example graph of every operator file builds into a model that runs on LibTorch: the
// op names and argument lists written in the DSL are real TorchScript operators.
#include "tfg/dsl/parse.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/torch/oracle/ops_check.hpp"
#include "tfg/torch/import/example_graph.hpp"
#include "tfg/torch/torch.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_operator_examples {

namespace {
namespace fs = std::filesystem;
namespace tt = tfg::torch;

std::vector<fs::path> operator_files() {
  std::vector<fs::path> out;
  for (const auto& f : fs::recursive_directory_iterator(fs::path(TFG_SOURCE_DIR) / "operators"))
    if (f.path().extension() == ".tfg" && f.path().string().find("/requirements/") == std::string::npos)
      out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("operator examples: every example graph builds and runs op by op") {
  auto files = operator_files();
  REQUIRE(!files.empty());
  std::size_t examples = 0;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = tfg::dsl::parse(text.str(), path.string());
    CAPTURE(path.string());
    REQUIRE_MESSAGE(parsed.ok(), parsed.format_diagnostics());
    for (const auto& op : parsed.ast.operators) {
      for (const auto& ex : op.examples) {
        ++examples;
        const auto where = path.string() + ":" + std::to_string(ex.loc.line);
        try {
          auto m = tt::build_example(ex.graph, path.string());
          CHECK_MESSAGE(m.graph.check().empty(), where);
          auto inputs = tt::example_inputs(ex.graph, 2);
          tt::executor run(m);
          for (const auto& x : inputs) (void)run.run(x);
        } catch (const std::exception& e) {
          const std::string message = where + ": " + e.what();
          FAIL_CHECK(message);
        }
      }
    }
  }
  MESSAGE(examples << " example graphs in " << files.size() << " operator files");
}

// Examples that fail for a gap the backend knows about are listed, with the reason, in
// tests/torch/known_example_failures.txt (`file-name:line  reason`). The test fails on any
// other failure, and on a listed example that now passes (so the list only shrinks).
TEST_CASE("operator examples: every example matches or is rejected as declared") {
  tfg::match::symbol_table symbols;
  auto context = std::make_shared<tt::extern_context>();
  // The bundled pool and the opt-in operators of operators/extra.
  auto pool =
      tfg::match::load_pool({fs::path(TFG_SOURCE_DIR) / "operators", fs::path(TFG_SOURCE_DIR) / "operators" / "extra"},
                            symbols, tt::torch_externs(context));
  for (const auto& d : pool.diagnostics) MESSAGE(d);
  REQUIRE(pool.ok());
  std::set<std::string> known;
  {
    std::ifstream in(fs::path(TFG_SOURCE_DIR) / "tests/torch/known_example_failures.txt");
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') known.insert(line.substr(0, line.find_first_of(" \t")));
  }
  std::size_t passed = 0, total = 0, skipped = 0;
  std::set<std::string> failed_known;
  for (const auto& op : pool.operators) {
    for (const auto& ex : op.ast->examples) {
      ++total;
      auto r = tt::run_example(op, ex, symbols, pool.requirements, context.get());
      const auto key = fs::path(op.file).filename().string() + ":" + std::to_string(ex.loc.line);
      skipped += r.skipped;
      if (r.passed) {
        ++passed;
        const std::string message = key + " passes now: remove it from known_example_failures.txt";
        CHECK_MESSAGE(known.count(key) == 0, message);
      } else if (known.count(key)) {
        failed_known.insert(key);
      } else {
        const std::string message =
            r.where + ": " + (r.match ? "example match" : "example no_match") + " of " + r.op + ": " + r.message;
        FAIL_CHECK(message);
      }
    }
  }
  MESSAGE(passed << " of " << total << " examples behave as declared (" << skipped << " skipped for want of CUDA), "
                 << failed_known.size() << " known failures");
}

}  // namespace tfg_test_torch_operator_examples
