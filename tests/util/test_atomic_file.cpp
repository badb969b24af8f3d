// Atomic file writes and atomic folder publication.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tfg/util/atomic_file.hpp"  // first: the header must compile on its own

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_util_atomic_file {

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tfg-atomic-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t entries(const fs::path& d) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

}  // namespace

TEST_CASE("atomic: write_file_atomic creates and replaces, leaving no temp files") {
  const fs::path d = fresh_dir("write");
  const fs::path f = d / "summary.json";
  tfg::write_file_atomic(f, "first");
  CHECK(slurp(f) == "first");
  const std::string big(1 << 20, 'z');
  tfg::write_file_atomic(f, big);
  CHECK(slurp(f) == big);
  tfg::write_file_atomic(f, "");
  CHECK(slurp(f).empty());
  CHECK(entries(d) == 1);

  // A missing folder is an error, not a silent success.
  CHECK_THROWS_AS(tfg::write_file_atomic(d / "missing" / "x", "y"), std::system_error);
  CHECK(entries(d) == 1);
  fs::remove_all(d);
}

TEST_CASE("atomic: publish_directory_atomic moves staging into place, old results win") {
  const fs::path d = fresh_dir("publish");
  const fs::path staging = d / ".staging-1";
  fs::create_directories(staging / "sub");
  tfg::write_file_atomic(staging / "model.pt", "m1");
  tfg::write_file_atomic(staging / "sub" / "log.txt", "l1");
  const fs::path final_dir = d / "finding-abc";
  CHECK(tfg::publish_directory_atomic(staging, final_dir));
  CHECK_FALSE(fs::exists(staging));
  CHECK(slurp(final_dir / "model.pt") == "m1");
  CHECK(slurp(final_dir / "sub" / "log.txt") == "l1");

  // Second publication of the same folder: the existing one is kept, staging removed.
  const fs::path staging2 = d / ".staging-2";
  fs::create_directories(staging2);
  tfg::write_file_atomic(staging2 / "model.pt", "m2");
  CHECK_FALSE(tfg::publish_directory_atomic(staging2, final_dir));
  CHECK_FALSE(fs::exists(staging2));
  CHECK(slurp(final_dir / "model.pt") == "m1");
  CHECK(entries(d) == 1);
  fs::remove_all(d);
}

}  // namespace tfg_test_util_atomic_file
