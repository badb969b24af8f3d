// tfg::expected, the C++20 stand-in for std::expected used by rewrite_transaction::commit.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "tfg/util/expected.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_util_expected {

namespace {

tfg::expected<int, std::string> parse_digit(char c) {
  if (c < '0' || c > '9') return tfg::unexpected(std::string("not a digit: ") + c);
  return c - '0';
}

TEST_CASE("expected: value and error states") {
  const auto ok = parse_digit('7');
  REQUIRE(ok);
  CHECK(ok.has_value());
  CHECK(*ok == 7);
  CHECK(ok.value() == 7);
  CHECK(ok.value_or(-1) == 7);

  const auto bad = parse_digit('x');
  REQUIRE_FALSE(bad);
  CHECK(bad.error() == "not a digit: x");
  CHECK(bad.value_or(-1) == -1);
  CHECK_THROWS_AS((void)bad.value(), tfg::bad_expected_access<std::string>);
  try {
    (void)bad.value();
  } catch (const tfg::bad_expected_access<std::string>& e) {
    CHECK(e.error() == "not a digit: x");
  }
}

TEST_CASE("expected: same value and error type, move-only values, operator->") {
  tfg::expected<std::string, std::string> v = std::string("value");
  tfg::expected<std::string, std::string> e = tfg::unexpected(std::string("error"));
  CHECK(v.has_value());
  CHECK(v->size() == 5);
  CHECK_FALSE(e.has_value());
  CHECK(e.error() == "error");

  tfg::expected<std::unique_ptr<int>, int> p = std::make_unique<int>(3);
  REQUIRE(p);
  const std::unique_ptr<int> taken = std::move(p).value();
  CHECK(*taken == 3);
}

}  // namespace

}  // namespace tfg_test_util_expected
