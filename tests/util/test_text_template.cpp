// Program text in template files: @NAME@ placeholders (tfg/util/text_template.hpp).
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "tfg/util/text_template.hpp"

namespace tfg_test_util_text_template {

TEST_CASE("render_template fills every placeholder and leaves other @ as text") {
  const std::string text =
      "@decorator\ndef f(x):  # mail a@b.c\n    return @VALUE@ + @VALUE@  # @lower@ @1X@\nTITLE = @TITLE_PY@\n";
  const auto out = tfg::render_template(text, {{"VALUE", "41"}, {"TITLE_PY", "'t'"}, {"UNUSED", "x"}}, "t.py.inc");
  CHECK(out == "@decorator\ndef f(x):  # mail a@b.c\n    return 41 + 41  # @lower@ @1X@\nTITLE = 't'\n");
}

TEST_CASE("render_template inserts values as they are, without rescanning them") {
  CHECK(tfg::render_template("[@A@]", {{"A", "@B@"}}, "t") == "[@B@]");
  CHECK(tfg::render_template("@A@@B@", {{"A", "1"}, {"B", "2"}}, "t") == "12");
  CHECK(tfg::render_template("ends with @", {}, "t") == "ends with @");
}

TEST_CASE("a placeholder without a value names the template, the line and the placeholder") {
  try {
    (void)tfg::render_template("line one\nline @TWO@\n", {{"ONE", "1"}}, "repro.py.inc");
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == "repro.py.inc:2: placeholder @TWO@ has no value");
  }
}

TEST_CASE("template_text drops the newline after the raw string's opening delimiter") {
  CHECK(tfg::template_text("\nfirst\n") == "first\n");
  CHECK(tfg::template_text("first\n") == "first\n");
}

}  // namespace tfg_test_util_text_template
