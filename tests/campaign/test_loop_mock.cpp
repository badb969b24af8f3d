// The campaign loop (tfg/campaign/loop.hpp) end to end on the mock backend
// (tfg/campaign/mock_backend.hpp) and its worker (tests/campaign/mock_worker, planted defects:
// opt's tanh beyond 3 is wrong, opt crashes on neg(neg(x)), opt's softsign is wrong from the
// second run a worker serves). Outcomes are read from campaign.db through tfg/campaign/store.hpp.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/loop.hpp"
#include "tfg/campaign/mock_backend.hpp"
#include "tfg/select/registry.hpp"

namespace {

namespace fs = std::filesystem;
namespace tc = tfg::campaign;
using mock_loop = tc::loop<tc::mock::backend>;

/// The campaign folder a mock test runs in (DIR/campaign), with the mock's `.json` model files.
tc::layout campaign_files(const fs::path& dir) { return tc::layout::of<tc::mock::backend>(dir / "campaign"); }

const fs::path mock_ops = fs::path(TFG_SOURCE_DIR) / "tests" / "data" / "mock_ops";

/// A fresh folder for one test, holding the seed model `json` (seed.json).
fs::path mock_case(const std::string& name, const std::string& json) {
  const auto dir = fs::temp_directory_path() / ("tfg_loop_mock_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "seed.json") << json;
  return dir;
}

tc::options mock_options(const fs::path& dir, std::vector<fs::path> ops, std::size_t rounds) {
  tc::options o;
  o.seed_model = dir / "seed.json";
  o.out_dir = dir / "campaign";
  o.op_dirs = std::move(ops);
  o.rounds = rounds;
  o.worker_exe = TFG_MOCK_WORKER;
  o.timeout_floor = std::chrono::milliseconds(5000);
  return o;
}

/// Runs (or resumes) a campaign to its end in this process; the loop (and its folder lock) is
/// kept alive as long as the returned database is read, so each test reads it right away.
struct mock_run {
  tc::mock::backend b;
  mock_loop l;
  explicit mock_run(tc::options o) : l(b, std::move(o), *tfg::select::make_policy("linucb")) { l.run(); }
  [[nodiscard]] std::vector<tc::round_record> rounds() { return l.database().rounds(); }
  [[nodiscard]] std::vector<tc::finding_row> findings() { return l.database().findings(); }
};

// clang-format off
const char* const clean_seed = R"({"mock": 1, "width": 4, "inputs": 1,
  "nodes": [{"op": "mock::relu", "args": ["%0"]}, {"op": "mock::tanh", "args": ["%1"]}], "outputs": ["%2"]})";
const char* const buggy_seed = R"({"mock": 1, "width": 4, "inputs": 1,
  "nodes": [{"op": "mock::mul", "args": ["%0", 4.0]}, {"op": "mock::tanh", "args": ["%1"]}], "outputs": ["%2"]})";
const char* const flaky_seed = R"({"mock": 1, "width": 4, "inputs": 1,
  "nodes": [{"op": "mock::softsign", "args": ["%0"]}], "outputs": ["%1"]})";
const char* const three_relus = R"({"mock": 1, "width": 4, "inputs": 1,
  "nodes": [{"op": "mock::relu", "args": ["%0"]}, {"op": "mock::relu", "args": ["%1"]},
            {"op": "mock::relu", "args": ["%2"]}, {"op": "mock::tanh", "args": ["%3"]}], "outputs": ["%4"]})";
const char* const mixed_seed = R"({"mock": 1, "width": 4, "inputs": 2,
  "nodes": [{"op": "mock::relu", "args": ["%0"]}, {"op": "mock::add", "args": ["%2", "%1"]},
            {"op": "mock::mul", "args": ["%3", 0.5]}, {"op": "mock::tanh", "args": ["%4"]},
            {"op": "mock::relu", "args": ["%5"]}], "outputs": ["%6", "%3"]})";
// clang-format on

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("mock backend: a model file round-trips and its profile evaluates the graph") {
  const auto dir = mock_case("roundtrip", buggy_seed);
  tc::mock::backend b;
  const auto m = b.load(dir / "seed.json");
  CHECK(m.graph.node_count() == 2);
  b.save(m, dir / "again.json");
  CHECK(tc::mock::model_json(b.load(dir / "again.json")) == tc::mock::model_json(m));
  const auto in = b.seed_inputs(m, dir / "seed.json", "");
  REQUIRE(in.size() == 2);
  const auto p = b.profile(m, in);
  const auto out = m.graph.graph_outputs()[0];
  const auto* ep = tc::mock::backend::edge_profile(p, out);
  REQUIRE(ep);
  REQUIRE(ep->runs.size() == 2);
  // tanh(4 * x) for the first input, whose first element is -1.5: tanh(-6)
  CHECK(p.outputs[0][0][0] == doctest::Approx(std::tanh(-6.0)));
  CHECK(ep->runs[0].numbers.min == doctest::Approx(std::tanh(-6.0)));
  CHECK(ep->runs[0].type == tfg::state::dtype::f64);
}

TEST_CASE("mock loop: round 0 judges the seed: a clean seed is legal, a seed with the planted bug is a finding") {
  SUBCASE("clean") {
    const auto dir = mock_case("round0_clean", clean_seed);
    mock_run c(mock_options(dir, {mock_ops / "relu_to_identity.tfg"}, 0));
    const auto rounds = c.rounds();
    REQUIRE(rounds.size() == 1);
    CHECK(rounds[0].round == 0);
    CHECK(rounds[0].op == "(seed)");
    CHECK(rounds[0].verdict == tc::round_verdict::legal);
    CHECK(c.findings().empty());
    CHECK(fs::exists(campaign_files(dir).root() / campaign_files(dir).corpus_member(0)));
  }
  SUBCASE("the seed already carries opt's tanh defect") {
    const auto dir = mock_case("round0_bug", buggy_seed);
    mock_run c(mock_options(dir, {mock_ops / "relu_to_identity.tfg"}, 0));
    const auto rounds = c.rounds();
    REQUIRE(rounds.size() == 1);
    CHECK(rounds[0].verdict == tc::round_verdict::finding);
    const auto f = c.findings();
    REQUIRE(f.size() == 1);
    CHECK(rounds[0].reason == f[0].id);
    CHECK(f[0].kind == "numeric");
    CHECK(f[0].config_a == "eager_op_by_op");
    CHECK(f[0].config_b == "opt");
    CHECK(f[0].culprit_op == "mock::tanh");  // localised by the worker's trace
    // Re-run twice in fresh workers: it reproduces every time.
    CHECK(f[0].status == "reproduced");
    CHECK(f[0].reliability == doctest::Approx(1.0));
    // Its folder: meta.json, the model that shows it, the inputs.
    const auto folder = campaign_files(dir).finding_at(f[0].dir);
    REQUIRE(fs::exists(folder.meta()));
    CHECK(fs::exists(folder.mutant()));
    CHECK(fs::exists(folder.inputs()));
    const auto meta = read_json(folder.meta());
    CHECK(meta.at("id") == f[0].id);
    CHECK(meta.at("round") == 0);
    CHECK(meta.at("localisation").at("localised") == true);
    CHECK(meta.at("localisation").at("operator") == "mock::tanh");
    CHECK(tc::mock::load_model(folder.mutant()).graph.node_count() == 2);
  }
}

TEST_CASE("mock loop: a finding that does not reproduce in a fresh worker is flaky, and its round makes no claim") {
  // opt's softsign is wrong from the second run a worker serves: the calibration's second run
  // (round 0's outcome) shows it, the reruns in fresh workers do not.
  const auto dir = mock_case("flaky", flaky_seed);
  mock_run c(mock_options(dir, {mock_ops / "relu_to_identity.tfg"}, 0));
  const auto f = c.findings();
  REQUIRE(f.size() == 1);
  CHECK(f[0].culprit_op == "mock::softsign");
  CHECK(f[0].status == "flaky");
  CHECK(f[0].reliability == doctest::Approx(0.0));
  const auto rounds = c.rounds();
  REQUIRE(rounds.size() == 1);
  CHECK(rounds[0].verdict == tc::round_verdict::legal);
  CHECK(rounds[0].reason.rfind("flaky, not a finding: ", 0) == 0);
}

TEST_CASE("mock loop: a healthy mutant is accepted into the corpus, a mutant with a finding is not") {
  SUBCASE("accepted") {
    const auto dir = mock_case("accept", clean_seed);
    mock_run c(mock_options(dir, {mock_ops / "relu_to_identity.tfg"}, 1));
    const auto rounds = c.rounds();
    REQUIRE(rounds.size() == 2);
    CHECK(rounds[1].op == "relu_to_identity");
    CHECK(rounds[1].verdict == tc::round_verdict::legal);
    CHECK(rounds[1].accepted);
    CHECK(c.findings().empty());
    CHECK(fs::exists(campaign_files(dir).root() / "corpus" / "1.json"));
    // The current seed is the mutant: the relu became an identity.
    const auto cur = tc::mock::load_model(campaign_files(dir).current());
    CHECK(cur.graph.node_count() == 2);
    CHECK(tc::mock::model_json(cur).find("mock::identity") != std::string::npos);
    CHECK(tc::mock::model_json(cur).find("mock::relu") == std::string::npos);
  }
  SUBCASE("not accepted: the mutant shows opt's tanh defect") {
    const auto dir = mock_case("reject_finding", clean_seed);
    mock_run c(mock_options(dir, {mock_ops / "scale_tanh_input.tfg"}, 1));
    const auto rounds = c.rounds();
    REQUIRE(rounds.size() == 2);
    CHECK(rounds[1].op == "scale_tanh_input");
    CHECK(rounds[1].verdict == tc::round_verdict::finding);
    CHECK_FALSE(rounds[1].accepted);
    CHECK(rounds[1].extra_json.find("not accepted: it produced a finding") != std::string::npos);
    const auto f = c.findings();
    REQUIRE(f.size() == 1);
    CHECK(f[0].culprit_op == "mock::tanh");
    CHECK(f[0].first_round == 1);
    CHECK(f[0].status == "reproduced");
    CHECK_FALSE(fs::exists(campaign_files(dir).root() / "corpus" / "1.json"));
    // The finding's folder keeps the mutant (with the inserted mul) and the seed it came from.
    const auto folder = campaign_files(dir).finding_at(f[0].dir);
    CHECK(tc::mock::load_model(folder.mutant()).graph.node_count() == 3);
    CHECK(tc::mock::load_model(folder.seed()).graph.node_count() == 2);
  }
}

TEST_CASE("mock loop: every return_every rounds the campaign continues from the next corpus member") {
  const auto dir = mock_case("corpus_switch", three_relus);
  auto o = mock_options(dir, {mock_ops / "relu_to_identity.tfg"}, 3);
  o.return_every = 2;
  mock_run c(std::move(o));
  const auto rounds = c.rounds();
  REQUIRE(rounds.size() == 4);
  CHECK(rounds[1].accepted);
  CHECK(rounds[2].accepted);
  // Round 3 starts with the schedule's switch: corpus = {0, 1, 2}, current 2 -> member 0.
  const auto extra = nlohmann::json::parse(rounds[3].extra_json);
  REQUIRE(extra.contains("notes"));
  CHECK(extra.at("notes").at(0) == "continued from corpus member corpus/0.json (schedule)");
  CHECK(rounds[3].model_hash == rounds[1].model_hash);  // mutating the original seed again
  for (int r : {1, 2})
    CHECK(nlohmann::json::parse(rounds[r].extra_json).value("notes", nlohmann::json::array()).empty());
}

TEST_CASE("mock loop: a crash of the worker is a crash finding, localised, and the campaign goes on") {
  const auto dir = mock_case("crash", clean_seed);
  mock_run c(mock_options(dir, {mock_ops / "double_negation.tfg"}, 2));
  const auto rounds = c.rounds();
  REQUIRE(rounds.size() == 3);  // round 0 and both mutation rounds ran
  CHECK(rounds[1].verdict == tc::round_verdict::finding);
  CHECK(rounds[2].verdict == tc::round_verdict::finding);
  const auto f = c.findings();
  REQUIRE(f.size() == 1);  // one defect, deduplicated: the second round is an instance of the first
  CHECK(f[0].kind == "crash");
  CHECK(f[0].config_a == "opt");  // the worker's write-ahead record
  CHECK(f[0].culprit_op == "mock::neg");
  CHECK(f[0].instances == 2);
  CHECK(f[0].status == "reproduced");
  CHECK(rounds[2].reason == f[0].id);
  const auto meta = read_json(campaign_files(dir).finding_at(f[0].dir).meta());
  CHECK(meta.at("message").get<std::string>().find("SIGSEGV") != std::string::npos);
  CHECK(meta.at("localisation").at("localised") == true);
}

namespace {

/// Runs the campaign of `o` in a child process killed by SIGKILL right after round k's checkpoint.
int run_child_killed_after(tc::options o, std::size_t k) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 0;
    try {
      tc::mock::backend b;
      mock_loop l(b, std::move(o), *tfg::select::make_policy("linucb"));
      l.run([&](const tc::status& s) {
        if (s.round > k) ::raise(SIGKILL);  // s.round: the next round to run
      });
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

/// Runs the campaign of `o` in this process and stops it with request_stop() after k rounds
/// (as flowmut's SIGINT handler does); the loop releases its folder when it goes.
void run_stopped_after(tc::options o, std::size_t k) {
  tc::mock::backend b;
  mock_loop l(b, std::move(o), *tfg::select::make_policy("linucb"));
  l.run([&](const tc::status& s) {
    if (s.round > k) mock_loop::request_stop();
  });
}

struct round_key {
  std::string op, site, reason;
  std::int64_t arm;
  double reward;
  tc::round_verdict verdict;
  bool accepted;
  bool operator==(const round_key&) const = default;
};
std::vector<round_key> keys(const std::vector<tc::round_record>& rs) {
  std::vector<round_key> out;
  for (const auto& r : rs) out.push_back({r.op, r.site, r.reason, r.arm, r.reward, r.verdict, r.accepted});
  return out;
}

}  // namespace

TEST_CASE("mock loop: a campaign stopped or killed after k rounds and resumed equals the uninterrupted one") {
  constexpr std::size_t n = 8, k = 3;
  const auto dir = mock_case("resume", mixed_seed);
  auto at = [&](const char* sub) {
    auto o = mock_options(dir, {mock_ops}, n);
    o.out_dir = dir / sub;
    return o;
  };
  // Stopped in this process (the same process then resumes it: the stop ended that run only, and
  // the loop released the folder's lock); killed in a child process (what --resume is for).
  run_stopped_after(at("stopped"), k);
  const int killed = run_child_killed_after(at("killed"), k);
  CHECK((WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL));

  mock_run whole(at("whole"));
  const auto expected = keys(whole.rounds());
  REQUIRE(expected.size() == n + 1);
  std::size_t executed = 0;
  for (const auto& r : expected) executed += tc::is_executed(r.verdict) ? 1 : 0;
  CHECK(executed >= 4);  // the comparison is about real rounds, not a run of no-candidate rounds
  const auto expected_findings = whole.findings();

  for (const char* sub : {"stopped", "killed"}) {
    CAPTURE(sub);
    {  // what the interrupted run left: round 0 and k rounds
      auto st = tc::store::open(dir / sub / "campaign.db");
      REQUIRE(st);
      CHECK(st->rounds().size() == k + 1);
    }
    auto o = at(sub);
    o.resume = true;
    o.seed_model.clear();
    mock_run resumed(std::move(o));
    const auto got = keys(resumed.rounds());
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i].op == expected[i].op);
      CHECK(got[i].site == expected[i].site);
      CHECK(got[i].arm == expected[i].arm);
      CHECK(got[i].reward == expected[i].reward);
      CHECK(got[i].verdict == expected[i].verdict);
      CHECK(got[i].accepted == expected[i].accepted);
      CHECK(got[i].reason == expected[i].reason);
    }
    const auto f = resumed.findings();
    REQUIRE(f.size() == expected_findings.size());
    for (std::size_t i = 0; i < f.size(); ++i) {
      CHECK(f[i].id == expected_findings[i].id);
      CHECK(f[i].status == expected_findings[i].status);
      CHECK(f[i].instances == expected_findings[i].instances);
    }
  }
}
