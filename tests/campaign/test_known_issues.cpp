// Known upstream issues (known-issues/*.json): which findings they claim, and bad files.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "tfg/campaign/known_issues.hpp"  // first: the header must compile on its own
#include "tfg/campaign/fuzz.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_known {

namespace fs = std::filesystem;
namespace tc = tfg::campaign;

fs::path scratch(const std::string& name) {
  const auto d = fs::temp_directory_path() / ("tfg-known-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

tc::finding_row row(std::string kind, std::string b, std::string op, std::string message) {
  tc::finding_row f;
  f.id = "f1";
  f.key = kind + "|eager_op_by_op|" + b + "|" + op;
  f.kind = std::move(kind);
  f.config_a = "eager_op_by_op";
  f.config_b = std::move(b);
  f.culprit_op = std::move(op);
  f.message = std::move(message);
  f.title = f.kind + " at " + f.culprit_op;
  return f;
}

TEST_CASE("known issues: a finding matching every given field is known, any other is new") {
  const auto d = scratch("match");
  std::ofstream(d / "a.json") << R"([
    {"issue": "pytorch/pytorch#1", "status": "open",
     "match": {"kind": "exception", "config_b": "frozen_optimized", "message": "not divisible by the output size"}},
    {"issue": "pytorch/pytorch#2", "status": "closed", "match": {"kind": "nan_inf", "op": "aten::relu_"}}
  ])";
  const auto known = tc::read_known_issue_dir(d);
  REQUIRE(known.size() == 2);
  const auto pool = row("exception", "frozen_optimized", "aten::adaptive_avg_pool2d",
                        "frozen_optimized: input size is not divisible by the output size is not supported yet");
  const auto* k = tc::known_issue_of(known, pool);
  REQUIRE(k != nullptr);
  CHECK(k->issue == "pytorch/pytorch#1");
  CHECK(tc::known_json(*k).at("status") == "open");
  // Same kind and pair, another message: new.
  CHECK(tc::known_issue_of(known, row("exception", "frozen_optimized", "aten::conv2d", "some other error")) == nullptr);
  // The message matches, the pair does not: new.
  CHECK(tc::known_issue_of(known, row("exception", "inductor", "aten::adaptive_avg_pool2d", pool.message)) == nullptr);
  CHECK(tc::known_issue_of(known, row("nan_inf", "inductor", "aten::relu_", ""))->issue == "pytorch/pytorch#2");
  CHECK(tc::known_issue_of(known, row("numeric", "inductor", "aten::relu_", "")) == nullptr);

  // The fuzz index's findings.jsonl says which are known.
  tc::findings_index idx;
  tc::witness w;
  w.unit = "u";
  idx.add(pool, w);
  const auto jsonl = idx.to_jsonl(known);
  CHECK(jsonl.find("\"known\":{\"issue\":\"pytorch/pytorch#1\"") != std::string::npos);
  CHECK(idx.to_jsonl().find("\"known\"") == std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("known issues: bad files are refused naming the file and the entry") {
  const auto d = scratch("bad");
  std::ofstream(d / "empty.json") << R"([{"issue": "x#1", "match": {}}])";
  CHECK_THROWS_WITH_AS((void)tc::read_known_issues(d / "empty.json"),
                       doctest::Contains("empty.json: entry 1 (x#1): an empty \"match\" would match every finding"),
                       std::runtime_error);
  std::ofstream(d / "regex.json")
      << R"([{"issue": "x#1", "match": {"kind": "numeric"}}, {"issue": "x#2", "match": {"message": "(unclosed"}}])";
  CHECK_THROWS_WITH_AS((void)tc::read_known_issues(d / "regex.json"),
                       doctest::Contains("regex.json: entry 2 (x#2): bad pattern"), std::runtime_error);
  std::ofstream(d / "object.json") << R"({"issue": "x#1"})";
  CHECK_THROWS_WITH_AS((void)tc::read_known_issues(d / "object.json"),
                       doctest::Contains("object.json: not a JSON array"), std::runtime_error);
  CHECK(tc::read_known_issue_dir(d / "missing").empty());
  fs::remove_all(d);
}

TEST_CASE("known issues: the bundled known-issues/*.json parse and each entry names an issue and a status") {
  const auto known = tc::read_known_issue_dir(fs::path(TFG_SOURCE_DIR) / "known-issues");
  REQUIRE_FALSE(known.empty());
  for (const auto& k : known) {
    CAPTURE(k.issue);
    CHECK(k.issue.find('#') != std::string::npos);
    CHECK_FALSE(k.status.empty());
    CHECK_FALSE(k.title.empty());
  }
}

}  // namespace tfg_test_campaign_known
