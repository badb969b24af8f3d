// The SQLite campaign store: round log, deduplicated findings, metrics, durability under kill -9.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tfg/campaign/store.hpp"  // first: the header must compile on its own

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_store {

namespace fs = std::filesystem;
using tfg::campaign::finding_row;
using tfg::campaign::round_record;
using tfg::campaign::store;
using tfg::oracle::finding_kind;
using tfg::oracle::finding_signature;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tfg-store-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

store open_or_fail(const fs::path& p) {
  auto s = store::open(p);
  if (!s) FAIL("open failed: " << s.error());
  return std::move(*s);
}

round_record sample_round(std::int64_t r) {
  round_record x;
  x.round = r;
  x.policy = "linucb";
  x.candidates = 7 + r;
  x.op = "swap_add_operands";
  x.site = "aten::add at node 12";
  x.arm = 3;
  x.context = {0.1, 0.2, 0.3, 0.4, 0.5 + static_cast<double>(r)};
  x.reward = 0.75;
  x.verdict = r % 2 == 0 ? tfg::campaign::round_verdict::legal : tfg::campaign::round_verdict::illegal;
  x.reason = r % 2 == 0 ? "" : "precondition broadcast";
  x.accepted = r % 2 == 0;
  x.new_labels = 2;
  x.new_transitions = 5;
  x.model_hash = "abcdef0123456789";
  x.phase_ms = {{"profile", 1.5}, {"execute", 20.25}};
  x.extra_json = R"({"note":"x"})";
  return x;
}

finding_signature sample_sig(const std::string& op) {
  finding_signature s;
  s.kind = finding_kind::numeric;
  s.config_a = "graph_executor";
  s.config_b = "eager_op_by_op";
  s.culprit_op = op;
  s.dtype = "f32";
  s.device = "cpu";
  return s;
}

}  // namespace

TEST_CASE("store: rounds, findings and metrics survive close and reopen") {
  const fs::path d = fresh_dir("roundtrip");
  const fs::path db = d / "campaign.sqlite";
  const finding_signature a = sample_sig("aten::conv2d"), b = sample_sig("aten::linear");
  {
    store s = open_or_fail(db);
    CHECK(s.next_round() == 0);
    CHECK(s.rounds().empty());
    s.set_meta("seed", "42");
    for (std::int64_t r = 0; r < 4; ++r) s.put_round(sample_round(r));
    CHECK(s.add_finding(a, 1, "max abs diff 0.5", "findings/a"));
    CHECK_FALSE(s.add_finding(a, 3, "max abs diff 0.7", "findings/a-2"));
    CHECK(s.add_finding(b, 2, "max abs diff 1e9", "findings/b"));
    s.set_finding_status(a.id(), 0.8, "reproduced");
    s.put_metrics(0, {{"lic", 0.1}, {"lsc", 0.2}});
    s.put_metrics(3, {{"lic", 0.3}});
  }
  store s = open_or_fail(db);
  CHECK(s.integrity_check() == "ok");
  CHECK(s.meta("seed") == std::optional<std::string>("42"));
  CHECK_FALSE(s.meta("absent").has_value());
  CHECK(s.meta("tfg.schema_version") == std::optional<std::string>("1"));

  const std::vector<round_record> rs = s.rounds();
  REQUIRE(rs.size() == 4);
  for (std::int64_t r = 0; r < 4; ++r) CHECK(rs[static_cast<std::size_t>(r)] == sample_round(r));
  CHECK(s.next_round() == 4);
  CHECK(s.verdict_counts() == std::map<std::string, std::int64_t>{{"illegal", 2}, {"legal", 2}});

  const std::vector<finding_row> fs_ = s.findings();
  REQUIRE(fs_.size() == 2);
  CHECK(fs_[0].id == a.id());  // ordered by first_round
  CHECK(fs_[0].kind == "numeric");
  CHECK(fs_[0].title == a.title());
  CHECK(fs_[0].key == a.key());
  CHECK(fs_[0].culprit_op == "aten::conv2d");
  CHECK(fs_[0].config_a == "graph_executor");
  CHECK(fs_[0].config_b == "eager_op_by_op");
  CHECK(fs_[0].dtype == "f32");
  CHECK(fs_[0].device == "cpu");
  CHECK(fs_[0].message == "max abs diff 0.5");  // the first instance's
  CHECK(fs_[0].dir == "findings/a");
  CHECK(fs_[0].first_round == 1);
  CHECK(fs_[0].last_round == 3);
  CHECK(fs_[0].instances == 2);
  CHECK(fs_[0].status == "reproduced");
  CHECK(fs_[0].reliability == doctest::Approx(0.8));
  CHECK(fs_[1].id == b.id());
  CHECK(fs_[1].status == "new");
  CHECK(fs_[1].reliability == -1);
  CHECK(fs_[1].instances == 1);

  const auto inst = s.instances(a.id());
  REQUIRE(inst.size() == 2);
  CHECK(inst[1].round == 3);
  CHECK(inst[1].dir == "findings/a-2");

  const auto ms = s.metrics();
  REQUIRE(ms.size() == 2);
  CHECK(ms[0].first == 0);
  CHECK(ms[0].second == std::map<std::string, double>{{"lic", 0.1}, {"lsc", 0.2}});
  CHECK(ms[1].first == 3);
  CHECK(ms[1].second.at("lic") == 0.3);

  REQUIRE(s.finding(b.id()).has_value());
  CHECK(s.finding(b.id())->title == b.title());
  CHECK_FALSE(s.finding("0000000000000000").has_value());
  CHECK_THROWS_AS(s.set_finding_status("0000000000000000", 1, "reproduced"), tfg::campaign::store_error);
  fs::remove_all(d);
}

TEST_CASE("store: redoing a round replaces it, metrics of a round are replaced") {
  const fs::path d = fresh_dir("redo");
  store s = open_or_fail(d / "c.sqlite");
  s.put_round(sample_round(5));
  round_record again = sample_round(5);
  again.verdict = tfg::campaign::round_verdict::finding;
  again.reason = "0123456789abcdef";
  s.put_round(again);
  const auto rs = s.rounds();
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].verdict == tfg::campaign::round_verdict::finding);
  CHECK(s.next_round() == 6);
  s.put_metrics(5, {{"a", 1}, {"b", 2}});
  s.put_metrics(5, {{"a", 3}});
  REQUIRE(s.metrics().size() == 1);
  CHECK(s.metrics()[0].second == std::map<std::string, double>{{"a", 3}});
  fs::remove_all(d);
}

TEST_CASE("store: forget_from drops what the rounds after a checkpoint wrote, never a finding") {
  const fs::path d = fresh_dir("forget");
  store s = open_or_fail(d / "c.sqlite");
  const finding_signature a = sample_sig("aten::relu"), b = sample_sig("aten::gelu");
  for (std::int64_t r = 0; r < 6; ++r) {
    s.put_round(sample_round(r));
    s.put_metrics(r, {{"lic", static_cast<double>(r)}});
  }
  (void)s.add_finding(a, 1, "a1", "findings/a");
  (void)s.add_finding(a, 3, "a3", "findings/a");
  (void)s.add_finding(a, 4, "a4", "findings/a");
  (void)s.add_finding(b, 4, "b4", "findings/b");  // first seen in a round that is redone
  s.forget_from(3);
  CHECK(s.next_round() == 3);
  REQUIRE(s.metrics().size() == 3);
  CHECK(s.metrics().back().first == 2);
  const auto fa = s.finding(a.id());
  REQUIRE(fa);
  CHECK(fa->instances == 1);
  CHECK(fa->last_round == 1);
  CHECK(s.instances(a.id()).size() == 1);
  const auto fb = s.finding(b.id());
  REQUIRE(fb);  // kept: the redo may not show it again
  CHECK(fb->instances == 0);
  CHECK(fb->dir == "findings/b");
  // The redo adds its instances again: counts as if no round had been lost.
  CHECK_FALSE(s.add_finding(a, 3, "a3", "findings/a"));
  CHECK(s.finding(a.id())->instances == 2);
  CHECK(s.finding(a.id())->last_round == 3);
  CHECK(s.instances(a.id()).back().message == "a3");
  fs::remove_all(d);
}

TEST_CASE("store: NaN values read back as NaN") {
  const fs::path d = fresh_dir("nan");
  store s = open_or_fail(d / "c.sqlite");
  round_record r = sample_round(0);
  r.reward = std::numeric_limits<double>::quiet_NaN();
  r.context[2] = std::numeric_limits<double>::infinity();
  s.put_round(r);
  s.put_metrics(0, {{"x", std::numeric_limits<double>::quiet_NaN()}});
  const auto rs = s.rounds();
  REQUIRE(rs.size() == 1);
  CHECK(std::isnan(rs[0].reward));
  CHECK(rs[0].context[2] == std::numeric_limits<double>::infinity());
  CHECK(std::isnan(s.metrics().at(0).second.at("x")));
  fs::remove_all(d);
}

TEST_CASE("store: add_finding counts instances and keeps at most 100") {
  const fs::path d = fresh_dir("instances");
  store s = open_or_fail(d / "c.sqlite");
  const finding_signature a = sample_sig("aten::relu");
  int fresh = 0;
  for (int i = 0; i < 130; ++i) fresh += s.add_finding(a, i, "m" + std::to_string(i), "dir") ? 1 : 0;
  CHECK(fresh == 1);
  REQUIRE(s.findings().size() == 1);
  CHECK(s.findings()[0].instances == 130);
  CHECK(s.findings()[0].message == "m0");
  CHECK(s.findings()[0].last_round == 129);
  const auto inst = s.instances(a.id());
  REQUIRE(inst.size() == 100);
  CHECK(inst.front().message == "m30");  // the oldest 30 were overwritten
  CHECK(inst.back().message == "m129");
  fs::remove_all(d);
}

TEST_CASE("store: open reports errors instead of throwing") {
  const fs::path d = fresh_dir("errors");
  const auto missing = store::open(d / "no" / "such" / "dir" / "c.sqlite");
  CHECK_FALSE(missing.has_value());
  CHECK_FALSE(missing.error().empty());

  {
    std::ofstream junk(d / "junk.sqlite");
    junk << "this is not a database, just some text that is long enough to fill a header page";
  }
  CHECK_FALSE(store::open(d / "junk.sqlite").has_value());

  {
    store s = open_or_fail(d / "old.sqlite");
    s.set_meta("tfg.schema_version", "999");
  }
  const auto old = store::open(d / "old.sqlite");
  REQUIRE_FALSE(old.has_value());
  CHECK(old.error().find("999") != std::string::npos);

  // Moving keeps the connection usable.
  store m = open_or_fail(d / "m.sqlite");
  store moved = std::move(m);
  moved.set_meta("k", "v");
  CHECK(moved.meta("k") == std::optional<std::string>("v"));
  fs::remove_all(d);
}

TEST_CASE("store: findings committed before a SIGKILL are all present after reopen") {
  const fs::path d = fresh_dir("kill");
  const fs::path db = d / "campaign.sqlite";
  { store init = open_or_fail(db); }  // schema created before the child starts

  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[0]);
    try {
      auto s = store::open(db);
      if (!s) ::_exit(2);
      for (int i = 0; i < 1000000; ++i) {
        // Every third call repeats an earlier signature (the update path).
        const int n = i % 3 == 2 ? i - 1 : i;
        const finding_signature sig = sample_sig("aten::op" + std::to_string(n));
        s->add_finding(sig, i, std::string(200, 'm'), "findings/" + std::to_string(i));
        s->put_round(sample_round(i));
        const std::string line = sig.id() + "\n";  // reported only after the commit returned
        if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(3);
      }
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(0);
  }
  ::close(fds[1]);

  // Wait for a few commits, then kill the writer mid-loop.
  std::string got;
  char buf[4096];
  while (std::count(got.begin(), got.end(), '\n') < 40) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    REQUIRE(n > 0);
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  for (;;) {  // lines written before the kill are still in the pipe
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);

  std::map<std::string, std::int64_t> reported;
  std::size_t lines = 0;
  for (std::size_t pos = 0; pos < got.size();) {
    const auto nl = got.find('\n', pos);
    if (nl == std::string::npos) break;
    ++reported[got.substr(pos, nl - pos)];
    ++lines;
    pos = nl + 1;
  }
  REQUIRE(lines >= 40);

  store s = open_or_fail(db);
  CHECK(s.integrity_check() == "ok");
  std::map<std::string, std::int64_t> stored;
  for (const finding_row& f : s.findings()) stored[f.id] = f.instances;
  for (const auto& [id, count] : reported) {
    CAPTURE(id);
    REQUIRE(stored.count(id) == 1);
    CHECK(stored[id] >= count);
  }
  // The round of every reported call was committed too.
  CHECK(s.next_round() >= static_cast<std::int64_t>(lines));
  // The reopened store is writable.
  CHECK(s.add_finding(sample_sig("aten::after_kill"), 0, "x", "y"));
  fs::remove_all(d);
}

}  // namespace tfg_test_campaign_store
