// load_pool on the paths a user gives: a folder, a single .tfg file, a missing path, an empty
// folder and a file with only a header. Each failure has its stable code (E048, E049).

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include "../dsl/dsl_test_util.hpp"
#include "match_test_util.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/match/pool_info.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_match_pool {

using namespace tfg_match_test;
namespace fs = std::filesystem;

namespace {

struct scratch {
  fs::path dir = fs::temp_directory_path() / ("tfg_pool_test_" + std::to_string(::getpid()));
  scratch() {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~scratch() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& text) const {
    const auto p = dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p;
  }
};

bool mentions(const match::pool& p, const std::string& what) {
  for (const auto& d : p.diagnostics)
    if (d.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("pool: a single .tfg file is an operator path") {
  match::symbol_table syms;
  const auto file = tfg_test::source_dir() / "operators" / "operator" / "adaptive_avg_pool_to_mean.tfg";
  const auto p = match::load_pool({file}, syms, externs());
  CHECK(p.ok());
  CHECK(p.files == 1);
  REQUIRE(p.operators.size() == 1);
  CHECK(p.operators.front().name == "adaptive_avg_pool_to_mean");
}

TEST_CASE("pool: the bundled pool is the paper's Table 1; operators/extra is read only when given") {
  match::symbol_table syms;
  const auto root = tfg_test::source_dir() / "operators";
  const auto bundled = match::load_pool({root}, syms, externs());
  for (const auto& d : bundled.diagnostics) MESSAGE(d);
  REQUIRE(bundled.ok());
  CHECK(bundled.operators.size() == 147);
  CHECK(match::cell_counts(bundled.operators) == match::paper_cells);
  std::set<std::string> names;
  for (const auto& op : bundled.operators) names.insert(op.name);
  CHECK(names.count("delete_identity_op") == 0);  // in operators/extra/
  match::symbol_table syms2;
  const auto both = match::load_pool({root, root / "extra"}, syms2, externs());
  REQUIRE(both.ok());
  CHECK(both.operators.size() > bundled.operators.size());
  bool extra_seen = false;
  for (const auto& op : both.operators) extra_seen = extra_seen || op.name == "delete_identity_op";
  CHECK(extra_seen);
}

TEST_CASE("pool: a missing path or another kind of file is E048") {
  scratch s;
  match::symbol_table syms;
  const auto missing = match::load_pool({s.dir / "nope"}, syms, externs());
  CHECK(!missing.ok());
  CHECK(mentions(missing, "error[E048]: no such folder or file"));
  const auto other = match::load_pool({s.write("notes.txt", "tfg 1\n")}, syms, externs());
  CHECK(!other.ok());
  CHECK(mentions(other, "error[E048]: not a folder or a .tfg file"));
}

TEST_CASE("pool: an empty folder or a header-only file declares nothing: E049") {
  scratch s;
  match::symbol_table syms;
  const auto empty = match::load_pool({s.dir}, syms, externs());
  CHECK(!empty.ok());
  CHECK(mentions(empty, "error[E049]: no operator or requirement declaration in 0 .tfg file(s)"));
  s.write("only_header.tfg", "tfg 1\n// nothing here\n");
  const auto header = match::load_pool({s.dir}, syms, externs());
  CHECK(!header.ok());
  CHECK(header.files == 1);
  CHECK(mentions(header, "error[E049]"));
}

}  // namespace tfg_test_match_pool
