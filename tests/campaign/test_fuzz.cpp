// flowmut fuzz's decisions: durations, shards, the scheduler over campaigns, the findings index.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tfg/campaign/fuzz.hpp"  // first: the header must compile on its own

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_fuzz {

namespace tc = tfg::campaign;
namespace fs = std::filesystem;

TEST_CASE("fuzz: durations as users write them, and what is not one") {
  CHECK(*tc::parse_duration("90") == 90);
  CHECK(*tc::parse_duration("90s") == 90);
  CHECK(*tc::parse_duration("10m") == 600);
  CHECK(*tc::parse_duration("1h30m") == 5400);
  CHECK(*tc::parse_duration("1.5h") == 5400);
  CHECK(*tc::parse_duration("1d") == 86400);
  for (const char* bad : {"", "m", "10x", "1h30", "-5m", "0s", "1e3", "10 m", "h1"})
    CHECK_FALSE(tc::parse_duration(bad));
  CHECK(tc::format_duration(42) == "42s");
  CHECK(tc::format_duration(185) == "3m05s");
  CHECK(tc::format_duration(3720) == "1h02m");
}

TEST_CASE("fuzz: --shard i/N") {
  CHECK(*tc::parse_shard("0/1") == tc::shard_spec{0, 1});
  CHECK(*tc::parse_shard("3/4") == tc::shard_spec{3, 4});
  for (const char* bad : {"4/4", "1/0", "/4", "1/", "a/b", "1-4", "-1/4"}) CHECK_FALSE(tc::parse_shard(bad));
}

TEST_CASE("fuzz: N shards do the planned work exactly once between them") {
  const std::vector<fs::path> seeds = {"/z/a.pt", "/z/b.pt", "/y/a.pt", "/z/c.pt", "/z/d.pt"};
  const auto all = tc::plan_units(seeds, 3, 7);
  REQUIRE(all.size() == 15);
  std::set<std::string> names;
  for (const auto& u : all) names.insert(u.name);
  CHECK(names.size() == 15);  // two seeds share the stem "a": the folder tells them apart
  CHECK(names.count("z.a-c7"));
  CHECK(names.count("y.a-c9"));
  CHECK(names.count("b-c8"));
  for (std::size_t n : {1, 2, 4, 7, 15, 20}) {
    std::multiset<std::string> seen;
    std::size_t most = 0, least = all.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto part = tc::shard_units(all, {i, n});
      most = std::max(most, part.size());
      least = std::min(least, part.size());
      for (const auto& u : part) seen.insert(u.name);
    }
    CHECK(seen == std::multiset<std::string>(names.begin(), names.end()));
    CHECK(most - least <= 1);  // balanced
  }
  // The plan does not depend on the order the seeds were given in.
  auto shuffled = seeds;
  std::reverse(shuffled.begin(), shuffled.end());
  std::sort(shuffled.begin(), shuffled.end());
  auto sorted = seeds;
  std::sort(sorted.begin(), sorted.end());
  CHECK(tc::plan_units(shuffled, 3, 7).front().name == tc::plan_units(sorted, 3, 7).front().name);
}

TEST_CASE("fuzz: the scheduler favours campaigns that find things and starves none") {
  std::vector<tc::fuzz_unit> units(4);
  for (std::size_t i = 0; i < units.size(); ++i) units[i].name = "u" + std::to_string(i);
  std::vector<bool> running(units.size(), false);
  std::map<std::size_t, int> slices;
  std::map<std::size_t, std::int64_t> longest_wait;
  std::int64_t picks = 0;
  for (; picks < 400; ++picks) {
    const auto p = tc::pick_unit(units, running, picks);
    REQUIRE(p);
    auto& u = units[*p];
    if (u.last_pick >= 0) longest_wait[*p] = std::max(longest_wait[*p], picks - u.last_pick);
    u.last_pick = picks;
    ++u.slices;
    ++slices[*p];
    u.reward_sum += *p == 2 ? 0.9 : 0.02;  // only u2 keeps finding new behaviour
  }
  CHECK(slices[2] > 200);  // most of the time goes to the productive campaign
  for (std::size_t i = 0; i < units.size(); ++i) {
    CHECK(slices[i] >= 400 / (2 * 4 + 1) - 1);  // none starves: at least one slice in every 2U+1 picks
    CHECK(longest_wait[i] <= 2 * 4 + 1);
  }
  // Running and finished campaigns are not chosen; nothing left: nullopt.
  units[0].done = units[1].done = true;
  running[2] = true;
  CHECK(*tc::pick_unit(units, running, picks) == 3);
  running[3] = true;
  CHECK_FALSE(tc::pick_unit(units, running, picks));
  // A campaign never run goes first.
  std::vector<tc::fuzz_unit> fresh(3);
  fresh[0].slices = fresh[2].slices = 5;
  fresh[0].reward_sum = fresh[2].reward_sum = 5;
  CHECK(*tc::pick_unit(fresh, {}, 10) == 1);
  CHECK(tc::slice_reward(0, 0, 0) == 0);
  CHECK(tc::slice_reward(1, 0, 0) > tc::slice_reward(0, 1, 0));
  CHECK(tc::slice_reward(0, 1, 0) > tc::slice_reward(0, 0, 5));
  CHECK(tc::slice_reward(100, 100, 1e6) <= 1);
}

tc::finding_row fuzz_row(const std::string& key, const std::string& title) {
  tc::finding_row r;
  r.key = key;
  r.id = "id-" + key;
  r.kind = "crash";
  r.title = title;
  r.dir = "findings/id-" + key;
  return r;
}

tc::witness fuzz_witness(const std::string& unit, std::int64_t last_round, const std::string& status = "reproduced") {
  tc::witness w;
  w.unit = unit;
  w.seed = "/seeds/" + unit + ".pt";
  w.campaign_dir = "/job/campaigns/" + unit;
  w.status = status;
  w.last_round = last_round;
  w.instances = last_round;
  return w;
}

TEST_CASE("fuzz: the findings index has one entry per signature; merging is idempotent and order independent") {
  const fs::path dir = fs::temp_directory_path() / "tfg_test_fuzz_index";
  fs::remove_all(dir);
  fs::create_directories(dir);
  tc::findings_index a, b, c;
  a.add(fuzz_row("k1", "segv from a"), fuzz_witness("seed_a-c1", 3));
  a.add(fuzz_row("k2", "nan"), fuzz_witness("seed_a-c1", 5, "flaky"));
  b.add(fuzz_row("k1", "segv from b"), fuzz_witness("seed_b-c1", 4));
  b.add(fuzz_row("k3", "abort"), fuzz_witness("seed_b-c1", 2));
  c.add(fuzz_row("k2", "nan"), fuzz_witness("seed_c-c1", 1));
  CHECK(a.size() == 2);

  auto merged = [](std::vector<const tc::findings_index*> parts) {
    tc::findings_index m;
    for (const auto* p : parts) m.add_index(*p);
    return m.to_jsonl();
  };
  const std::string abc = merged({&a, &b, &c});
  CHECK(merged({&c, &a, &b}) == abc);
  CHECK(merged({&b, &c, &a, &b}) == abc);
  tc::findings_index m;
  m.add_index(a);
  m.add_index(b);
  m.add_index(c);
  CHECK(m.size() == 3);
  CHECK(m.witnesses() == 5);
  const auto entries = m.entries();
  REQUIRE(entries.size() == 3);
  // k1: two witnesses, the representative is the first by unit name.
  CHECK(entries[0]->witnesses.size() == 2);
  CHECK(entries[0]->row.title == "segv from a");
  // k2: flaky in one campaign, reproduced in another: a finding.
  CHECK(entries[1]->status() == "reproduced");
  // Written and read back: the same index.
  { std::ofstream(dir / "findings.jsonl") << abc; }
  const auto back = tc::findings_index::from_jsonl(dir / "findings.jsonl");
  CHECK(back.to_jsonl() == abc);
  tc::findings_index again;
  again.add_index(back);
  again.add_index(a);
  CHECK(again.to_jsonl() == abc);
  // A campaign seen again later (more rounds) replaces its witness instead of adding one.
  m.add(fuzz_row("k3", "abort"), fuzz_witness("seed_b-c1", 9));
  CHECK(m.witnesses() == 5);
  // Two jobs' campaigns of the same name (not shards of one job): the same index in either order.
  {
    auto w1 = fuzz_witness("seed_a-c1", 3), w2 = fuzz_witness("seed_a-c1", 3);
    w2.campaign_dir = "/other-job/campaigns/seed_a-c1";
    tc::findings_index x, y;
    x.add(fuzz_row("k1", "from one job"), w1);
    x.add(fuzz_row("k1", "from the other"), w2);
    y.add(fuzz_row("k1", "from the other"), w2);
    y.add(fuzz_row("k1", "from one job"), w1);
    CHECK(x.to_jsonl() == y.to_jsonl());
    CHECK(x.witnesses() == 1);
  }
  { std::ofstream(dir / "bad.jsonl") << abc << "{\"key\": 1\n"; }
  CHECK_THROWS_WITH_AS((void)tc::findings_index::from_jsonl(dir / "bad.jsonl"), doctest::Contains("bad.jsonl:4"),
                       std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace tfg_test_campaign_fuzz
