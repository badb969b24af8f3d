// flowmut compare's statistics and figures (compare.hpp): cell names, Student's t intervals,
// a campaign's figures read from its store, the table and the HTML plots.
#include <doctest/doctest.h>

#include "tfg/campaign/compare.hpp"  // first: the header must compile on its own

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_compare {

using namespace tfg::campaign;
namespace fs = std::filesystem;

TEST_CASE("compare: a cell names policy, ablation and reward") {
  const auto a = compare_cell::parse("linucb/no-P@paper");
  CHECK(a.policy == "linucb");
  CHECK(a.ablation == "no-P");
  CHECK(a.reward == "paper");
  const auto b = compare_cell::parse("queue");
  CHECK(b.policy == "queue");
  CHECK(b.ablation == "all");
  CHECK(b.reward.empty());
  CHECK(compare_cell::leaf("linucb/no-P") == "linucb_no-P");
}

TEST_CASE("compare: mean and 95% interval by Student's t; NaN left out") {
  // 2, 4, 6: mean 4, sd 2, t(2) = 4.303, half = 4.303 * 2 / sqrt 3.
  const auto i = mean_ci95({2, 4, 6});
  CHECK(i.n == 3);
  CHECK(i.mean == doctest::Approx(4));
  CHECK(i.half == doctest::Approx(4.303 * 2 / std::sqrt(3.0)));
  const auto j = mean_ci95({1, std::nan(""), 3});
  CHECK(j.n == 2);
  CHECK(j.mean == doctest::Approx(2));
  CHECK(mean_ci95({5}).half == 0);
  CHECK(mean_ci95({}).n == 0);
  CHECK(t975(4) == doctest::Approx(2.776));
  CHECK(t975(1000) == doctest::Approx(1.96));
}

TEST_CASE("compare: a campaign's figures: operators chosen, largest share, first finding, findings per hour") {
  const fs::path dir = fs::temp_directory_path() / ("tfg-compare-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    auto db = store::open(dir / "campaign.db");
    REQUIRE(db);
    auto put = [&](std::int64_t round, std::string op, round_verdict v, double ms) {
      round_record r;
      r.round = round;
      r.op = op;
      r.arm = round == 0 ? -1 : 1;
      r.verdict = v;
      r.phase_ms["execute"] = ms;
      db->put_round(r);
    };
    put(0, "(seed)", round_verdict::legal, 60000);
    put(1, "a", round_verdict::legal, 60000);
    put(2, "a", round_verdict::illegal, 60000);
    put(3, "b", round_verdict::finding, 60000);
    put(4, "a", round_verdict::legal, 60000);
    tfg::oracle::finding_signature sig, flaky;
    sig.kind = tfg::oracle::finding_kind::numeric;
    sig.config_a = "eager_op_by_op";
    sig.config_b = "float64_reference";
    sig.culprit_op = "b";
    flaky = sig;
    flaky.culprit_op = "a";
    REQUIRE(db->add_finding(sig, 3, "m", "findings/x"));
    REQUIRE(db->add_finding(flaky, 4, "m", "findings/y"));
    db->set_finding_status(flaky.id(), 0.0, "flaky");
  }
  tfg::write_file_atomic(dir / "state.json", R"({"behaviour":{"kinds":["x","y"],"input_classes":[1,2,3]}})");
  const auto f = figures_of(dir);
  CHECK(f.top_op == "a");
  CHECK(f.values.at("operators") == 2);
  CHECK(f.values.at("top_share") == doctest::Approx(75));
  CHECK(f.values.at("first_finding_min") == doctest::Approx(4));  // rounds 0-3 at one minute each
  CHECK(f.values.at("minutes") == doctest::Approx(5));
  CHECK(f.values.at("kinds") == 2);
  CHECK(f.values.at("input_classes") == 3);
  CHECK(f.values.at("legal") == doctest::Approx(100.0 * 4 / 5));
  CHECK(f.values.at("findings") == 1);  // the flaky one is not counted
  CHECK(f.values.at("findings_per_hour") == doctest::Approx(12));

  compare_row row{"queue", {f, f}};
  const auto table = compare_table({row});
  CHECK(table.find("top%") != std::string::npos);
  CHECK(table.find("75.0 ±0.0") != std::string::npos);
  write_compare_html(dir / "compare.html", {row}, "t");
  const auto html = tfg::read_text(dir / "compare.html");
  CHECK(html.find("compare-top_share") != std::string::npos);
  CHECK(html.find("class=\"ci\" data-cell=\"queue\"") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace tfg_test_campaign_compare
