// Must-fail suite: every file in tests/dsl/must_fail/ holds small cases separated by
// `// -----`; `// expected-error@+N {{E012 optional message text}}` above an offending line
// pins the code (and part of the message) reported N lines below. Each case must produce
// exactly its expected diagnostics. Also: every error code has a case, and dsl/spec.md
// documents every code.

#include <doctest/doctest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dsl_test_util.hpp"
#include "tfg/dsl/error_codes.hpp"
#include "tfg/dsl/parse.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_dsl_must_fail {

namespace {

struct expectation {
  int line;             // 1-based, in the whole file
  std::string code;     // "E012"
  std::string message;  // substring the message must contain; may be empty
  int written_at;       // line of the directive
};

struct test_case {
  int first_line;  // 1-based line of the case's first line in the file
  std::string text;
  std::vector<expectation> expected;
};

bool is_separator(const std::string& line) {
  const auto b = line.find_first_not_of(" \t");
  return b != std::string::npos && line.compare(b, std::string::npos, "// -----") == 0;
}

/// Parses the `expected-error` directives of one line (there may be several).
void directives(const std::string& line, int line_no, std::vector<expectation>& out, std::string& problem) {
  static std::string const key = "expected-error";
  for (std::size_t at = line.find(key); at != std::string::npos; at = line.find(key, at + 1)) {
    std::size_t p = at + key.size();
    int offset = 0;
    if (p < line.size() && line[p] == '@') {
      ++p;
      int sign = 1;
      if (p < line.size() && (line[p] == '+' || line[p] == '-')) sign = line[p++] == '-' ? -1 : 1;
      std::size_t q = p;
      while (q < line.size() && std::isdigit(static_cast<unsigned char>(line[q]))) ++q;
      if (q == p) {
        problem = "line " + std::to_string(line_no) + ": bad '@' offset";
        return;
      }
      offset = sign * std::atoi(line.substr(p, q - p).c_str());
      p = q;
    }
    const auto open = line.find("{{", p);
    const auto close = line.find("}}", open == std::string::npos ? p : open);
    if (open == std::string::npos || close == std::string::npos) {
      problem = "line " + std::to_string(line_no) + ": expected-error without {{...}}";
      return;
    }
    std::string body = line.substr(open + 2, close - open - 2);
    const auto sp = body.find(' ');
    expectation e{line_no + offset, body.substr(0, sp), "", line_no};
    if (sp != std::string::npos) {
      e.message = body.substr(sp + 1);
      while (!e.message.empty() && e.message.back() == ' ') e.message.pop_back();
    }
    out.push_back(std::move(e));
  }
}

std::vector<test_case> split_cases(const std::string& text, std::string& problem) {
  std::vector<test_case> cases;
  const auto ls = tfg_test::lines_of(text);
  test_case cur{1, "", {}};
  for (std::size_t i = 0; i < ls.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    if (is_separator(ls[i])) {
      cases.push_back(std::move(cur));
      cur = test_case{line_no + 1, "", {}};
      continue;
    }
    cur.text += ls[i] + "\n";
    directives(ls[i], line_no, cur.expected, problem);
  }
  cases.push_back(std::move(cur));
  return cases;
}

std::string describe(const std::vector<tfg::dsl::diagnostic>& ds) {
  std::string s;
  for (const auto& d : ds) s += "  line " + std::to_string(d.loc.line) + ": " + d.code + " " + d.message + "\n";
  return s.empty() ? "  (none)\n" : s;
}

std::filesystem::path must_fail_dir() { return tfg_test::source_dir() / "tests" / "dsl" / "must_fail"; }

}  // namespace

TEST_CASE("must-fail cases report exactly their expected diagnostics") {
  const auto files = tfg_test::files_with_extension(must_fail_dir(), ".tfg");
  REQUIRE(!files.empty());
  int total_cases = 0;
  for (const auto& file : files) {
    std::string problem;
    const auto cases = split_cases(tfg_test::read_file(file), problem);
    INFO("file: " << file.filename().string());
    CHECK_MESSAGE(problem.empty(), problem);
    for (const auto& c : cases) {
      ++total_cases;
      INFO("case starting at line " << c.first_line);
      CHECK_MESSAGE(!c.expected.empty(), "a must-fail case without expected-error directives");
      // Pad with newlines so reported lines are lines of the whole file.
      std::string const text = std::string(static_cast<std::size_t>(c.first_line - 1), '\n') + c.text;
      const auto r = tfg::dsl::parse(text, file.filename().string());
      std::vector<bool> used(r.diagnostics.size(), false);
      for (const auto& e : c.expected) {
        bool found = false;
        for (std::size_t i = 0; i < r.diagnostics.size() && !found; ++i) {
          const auto& d = r.diagnostics[i];
          if (used[i] || d.code != e.code || static_cast<int>(d.loc.line) != e.line) continue;
          if (!e.message.empty() && d.message.find(e.message) == std::string::npos) continue;
          used[i] = found = true;
        }
        CHECK_MESSAGE(found, "expected " << e.code << (e.message.empty() ? "" : " '" + e.message + "'") << " at line "
                                         << e.line << " (directive at line " << e.written_at << "); got:\n"
                                         << describe(r.diagnostics));
      }
      for (std::size_t i = 0; i < r.diagnostics.size(); ++i)
        CHECK_MESSAGE(used[i], "unexpected " << r.diagnostics[i].code << " at line " << r.diagnostics[i].loc.line
                                             << ": " << r.diagnostics[i].message << "\n"
                                             << r.format_diagnostics());
    }
  }
  MESSAGE("must-fail cases: " << total_cases << " in " << files.size() << " files");
}

TEST_CASE("every testable error code has a must-fail case") {
  std::set<std::string> covered;
  for (const auto& file : tfg_test::files_with_extension(must_fail_dir(), ".tfg")) {
    std::string problem;
    for (const auto& c : split_cases(tfg_test::read_file(file), problem))
      for (const auto& e : c.expected) covered.insert(e.code);
  }
  for (const auto& info : tfg::dsl::error_codes) {
    if (!info.testable) continue;
    INFO("code " << info.code << ": " << info.title);
    CHECK(covered.count(std::string(info.code)) == 1);
  }
  // And no case expects a code that does not exist.
  for (const auto& code : covered) {
    bool known = false;
    for (const auto& info : tfg::dsl::error_codes) known |= info.code == code;
    CHECK_MESSAGE(known, "must-fail file expects unknown code " << code);
  }
}

TEST_CASE("dsl/spec.md documents every error code") {
  const auto spec = tfg_test::read_file(tfg_test::source_dir() / "dsl" / "spec.md");
  REQUIRE(!spec.empty());
  for (const auto& info : tfg::dsl::error_codes) {
    INFO("code " << info.code);
    CHECK(spec.find("| " + std::string(info.code) + " |") != std::string::npos);
  }
}

}  // namespace tfg_test_dsl_must_fail
