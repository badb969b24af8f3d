// From a worker's outcome to findings, and the one reproduction rule the campaign's re-runs
// and `flowmut repro` share.
#include <doctest/doctest.h>

#include "tfg/campaign/judge.hpp"  // first: the header must compile on its own

#include <csignal>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_judge {

using namespace tfg::campaign;
using tfg::oracle::finding_kind;
using tfg::oracle::verdict_kind;

namespace {

run_outcome reply_outcome(worker_reply r) {
  exchange_result ex;
  ex.kind = outcome::reply;
  ex.reply = to_line(r);
  return make_outcome(ex);
}

worker_reply ran(std::initializer_list<config_result> results) {
  worker_reply r;
  r.ok = true;
  r.results = results;
  return r;
}

tfg::oracle::verdict diff(verdict_kind k, std::string a, std::string b, std::string msg = "") {
  tfg::oracle::verdict v;
  v.kind = k;
  v.config_a = std::move(a);
  v.config_b = std::move(b);
  v.message = std::move(msg);
  return v;
}

attribution culprit(const std::string& op) {
  attribution a;
  a.culprit_op = op;
  return a;
}

const attributor at = fixed_attribution(culprit("aten::conv2d"));

}  // namespace

TEST_CASE("judge: differential verdicts become findings attributed to the culprit") {
  auto r = ran({{"eager_op_by_op", true, "", 1, 0}, {"frozen_optimized", true, "", 1, 0}});
  r.verdicts = {diff(verdict_kind::numeric_mismatch, "eager_op_by_op", "frozen_optimized"),
                diff(verdict_kind::error_in_both, "eager_op_by_op", "graph_executor")};
  const auto found = findings_of(reply_outcome(r), at);
  REQUIRE(found.size() == 1);  // error_in_both is not a finding
  CHECK(found[0].signature.kind == finding_kind::numeric);
  CHECK(found[0].signature.culprit_op == "aten::conv2d");
  CHECK(found[0].signature.config_b == "frozen_optimized");
  CHECK(reproduces(found[0].signature, reply_outcome(r), at));
  // The same verdict on another pair, or the same pair attributed elsewhere, is another finding.
  auto other = r;
  other.verdicts = {diff(verdict_kind::numeric_mismatch, "eager_op_by_op", "channels_last")};
  CHECK(!reproduces(found[0].signature, reply_outcome(other), at));
  CHECK(!reproduces(found[0].signature, reply_outcome(r), fixed_attribution(culprit("aten::relu"))));
}

TEST_CASE("judge: a failing reference is illegal unless the framework asserts internally") {
  auto illegal = ran({{"eager_op_by_op", false, "shape '[2, 3]' is invalid for input of size 5", 0, 0}});
  illegal.verdicts = {diff(verdict_kind::error_in_one, "eager_op_by_op", "graph_executor", "x")};
  CHECK(findings_of(reply_outcome(illegal), at).empty());
  auto assert_fail =
      ran({{"eager_op_by_op", false, "INTERNAL ASSERT FAILED at foo.cpp:31, please report a bug", 0, 0}});
  const auto found = findings_of(reply_outcome(assert_fail), at);
  REQUIRE(found.size() == 1);
  CHECK(found[0].signature.kind == finding_kind::exception);
  CHECK(found[0].signature.detail.find("INTERNAL ASSERT FAILED at foo.cpp:N") != std::string::npos);
}

TEST_CASE("judge: process-level outcomes; a crash reproduces only as the same crash") {
  exchange_result ex;
  ex.kind = outcome::signaled;
  ex.signal = SIGSEGV;
  const auto crash = make_outcome(ex, "frozen_optimized");
  const auto found = findings_of(crash, at);
  REQUIRE(found.size() == 1);
  CHECK(found[0].signature.kind == finding_kind::crash);
  CHECK(found[0].signature.config_a == "frozen_optimized");
  CHECK(found[0].message.find("SIGSEGV") != std::string::npos);
  CHECK(reproduces(found[0].signature, crash, at));
  ex.signal = SIGABRT;
  const auto abort = make_outcome(ex, "frozen_optimized");
  CHECK(findings_of(abort, at)[0].signature.kind == finding_kind::abort);
  CHECK(!reproduces(found[0].signature, abort, at));
  CHECK(!reproduces(found[0].signature, make_outcome(ex, "graph_executor"), at));
  // A reply never reproduces a crash.
  CHECK(!reproduces(found[0].signature, reply_outcome(ran({{"eager_op_by_op", true, "", 1, 0}})), at));
  exchange_result hang;
  hang.kind = outcome::timeout;
  CHECK(findings_of(make_outcome(hang, "graph_executor"), at)[0].signature.kind == finding_kind::hang);
}

TEST_CASE("judge: performance is judged against the seed's own ratio, never for threads_1_vs_n") {
  performance_rule rule;
  rule.reference = {{"graph_executor", "eager_op_by_op"}, {"threads_1_vs_n", "eager_op_by_op"}};
  rule.seed_times = {{"eager_op_by_op", 10}, {"graph_executor", 20}, {"threads_1_vs_n", 10}};
  // 2x on the seed; 30x on the mutant and 290 ms slower: anomalous.
  auto slow = ran({{"eager_op_by_op", true, "", 10, 0},
                   {"graph_executor", true, "", 300, 0},
                   {"threads_1_vs_n", true, "", 900, 0}});
  const auto found = findings_of(reply_outcome(slow), at, &rule);
  REQUIRE(found.size() == 1);
  CHECK(found[0].signature.kind == finding_kind::performance);
  CHECK(found[0].signature.config_b == "graph_executor");
  // 10x the reference is only 5x the ratio the seed already shows: not anomalous.
  auto mild = ran({{"eager_op_by_op", true, "", 10, 0}, {"graph_executor", true, "", 100, 0}});
  CHECK(findings_of(reply_outcome(mild), at, &rule).empty());
  CHECK(!reproduces(found[0].signature, reply_outcome(mild), at, &rule));
  CHECK(reproduces(found[0].signature, reply_outcome(slow), at, &rule));
}

TEST_CASE(
    "judge: a performance anomaly stands only when interleaved timings keep the mutant's ratio apart from the seed's") {
  performance_rule rule;  // factor 10, 100 ms
  const std::vector<pair_timing> seed{{17, 18}, {17, 19}, {18, 17}, {16, 18}, {17, 17}};
  // The modernbert case of issue 43: one 238 ms run of float64_reference against 17 ms, then the
  // same ~18 ms as the seed when timed again. The one slow run does not carry it.
  const std::vector<pair_timing> one_off{{17, 238}, {17, 18}, {17, 19}, {18, 18}, {17, 18}};
  const auto c = confirm_slow("eager_op_by_op", "float64_reference", seed, one_off, rule);
  CHECK(!c.stands);
  CHECK(c.message.find("median of 5") != std::string::npos);
  // Slow every time, far beyond the seed's ratio: it stands, and the message gives the spread.
  const std::vector<pair_timing> slow{{17, 240}, {18, 251}, {17, 236}, {16, 244}, {17, 239}};
  const auto d = confirm_slow("eager_op_by_op", "float64_reference", seed, slow, rule);
  CHECK(d.stands);
  CHECK(d.message.find("float64_reference takes 240.0 ms (median of 5, 236.0-251.0)") == 0);
  CHECK(d.message.find("on the seed, timed alternately with it: 1.1x") != std::string::npos);
  // A seed that is as slow when timed the same way (its recorded ratio was a fast outlier).
  const std::vector<pair_timing> slow_seed{{17, 120}, {17, 130}, {18, 125}, {16, 128}, {17, 122}};
  CHECK(!confirm_slow("eager_op_by_op", "float64_reference", slow_seed, slow, rule).stands);
  // Ten times slower but by less than 100 ms is not worth a report.
  CHECK(!confirm_slow("a", "b", {{1, 1}}, {{1, 30}, {1, 31}, {1, 29}}, rule).stands);
  CHECK(!confirm_slow("a", "b", {}, slow, rule).stands);
}

TEST_CASE("judge: reproducing a finding attributes only the candidates of its kind and pair") {
  auto r = ran({{"eager_op_by_op", true, "", 1, 0}});
  r.verdicts = {diff(verdict_kind::numeric_mismatch, "eager_op_by_op", "frozen_optimized"),
                diff(verdict_kind::nan_inf_mismatch, "eager_op_by_op", "channels_last"),
                diff(verdict_kind::numeric_mismatch, "eager_op_by_op", "graph_executor")};
  int calls = 0;
  attributor counting = [&](const run_outcome&, const tfg::oracle::verdict* v, finding_kind) {
    ++calls;
    attribution a = culprit("aten::relu");
    a.inputs = v ? v->config_b : "";
    return a;
  };
  const auto all = findings_of(reply_outcome(r), counting);
  CHECK(all.size() == 3);
  CHECK(calls == 3);
  CHECK(all[1].signature.inputs == "channels_last");
  calls = 0;
  CHECK(reproduces(all[2].signature, reply_outcome(r), counting));
  CHECK(calls == 1);  // only the verdict of the finding's own kind and pair was attributed
}

TEST_CASE("judge: round verdict names round-trip") {
  for (auto v : all_round_verdicts) CHECK(parse_round_verdict(to_string(v)) == v);
  CHECK(!parse_round_verdict("maybe"));
  CHECK(is_executed(round_verdict::illegal));
  CHECK(!is_executed(round_verdict::rejected));
}

}  // namespace tfg_test_campaign_judge

namespace tfg_test_campaign_judge {

TEST_CASE(
    "judge: the float64 autograd pair's NaN/Inf at a node the op-by-op pair found correctly rounded is not a finding") {
  // swin_v2_t, 250 rounds: float32 underflow made 0/0 at a div in eager and autograd_eager
  // alike; the op-by-op pair's trace found the div correctly rounded on each side's inputs,
  // the autograd pair (bisection) cannot check that and named the same div.
  auto r = ran({{"eager_op_by_op", true, "", 1, 0},
                {"float64_reference", true, "", 1, 0},
                {"autograd_eager", true, "", 1, 0},
                {"autograd_float64", true, "", 1, 0}});
  r.verdicts = {diff(verdict_kind::nan_inf_mismatch, "eager_op_by_op", "float64_reference"),
                diff(verdict_kind::nan_inf_mismatch, "autograd_eager", "autograd_float64")};
  auto attribute_at = [](std::int64_t op_by_op_pos, bool conditioned) -> attributor {
    return [=](const run_outcome&, const tfg::oracle::verdict* v, finding_kind) {
      attribution a = culprit("aten::div");
      a.localised = true;
      const bool op_by_op = v && v->config_a == "eager_op_by_op";
      a.position = op_by_op ? op_by_op_pos : 172;
      a.conditioned = op_by_op && conditioned;
      return a;
    };
  };
  CHECK(findings_of(reply_outcome(r), attribute_at(172, true)).empty());
  // Another node, or a divergence the trace did not excuse: the autograd pair is a finding.
  const auto other = findings_of(reply_outcome(r), attribute_at(171, true));
  REQUIRE(other.size() == 1);
  CHECK(other[0].signature.config_b == "autograd_float64");
  CHECK(findings_of(reply_outcome(r), attribute_at(172, false)).size() == 2);
}

TEST_CASE("a finding recorded before a normaliser rule still has its key: recorded_key_today") {
  // meta.json of F13 on EfficientNet as the 30-minute ONNX fuzz recorded it, when the
  // normaliser kept ONNX node names: `flowmut reduce` said "does not reproduce now" under the
  // flowmut that masks them.
  const std::string message =
      "onnxruntime: export: the exporter wrote an invalid ONNX model: InferenceError: [ShapeInferenceError] "
      "Inference error(s): (op_type:MaxPool, node name: node_max_pool2d): [ShapeInferenceError] Attribute dilations "
      "has incorrect size";
  nlohmann::json meta = {{"kind", "export_failure"},
                         {"config_a", "eager_op_by_op"},
                         {"config_b", "onnxruntime"},
                         {"culprit_op", "aten::max_pool2d"},
                         {"dtype", "f32"},
                         {"device", "cpu"},
                         {"inputs", "f32 r4 contiguous"},
                         {"message", message}};
  meta["key"] =
      "export_failure|eager_op_by_op|onnxruntime|aten::max_pool2d|f32|cpu|onnxruntime: export: the exporter wrote an "
      "invalid ONNX model: InferenceError: [ShapeInferenceError] Inference error(s): (op_type:MaxPool, node name: "
      "node_max_pool2d): [ShapeInferenceError] Attribute|f32 r4 contiguous";
  tfg::oracle::finding_signature today;
  today.kind = finding_kind::export_failure;
  today.config_a = "eager_op_by_op";
  today.config_b = "onnxruntime";
  today.culprit_op = "aten::max_pool2d";
  today.dtype = "f32";
  today.device = "cpu";
  today.inputs = "f32 r4 contiguous";
  today.detail = tfg::oracle::normalise_message(message);
  CHECK(today.key() != meta["key"].get<std::string>());  // the rule changed the key
  CHECK(recorded_key_today(meta) == today.key());
  // Another culprit is another finding, whatever the message.
  meta["culprit_op"] = "aten::linear";
  CHECK(recorded_key_today(meta) != today.key());
  // A key with a symptom (not a message) comes back as recorded.
  const nlohmann::json crash = {
      {"kind", "crash"}, {"key", "crash:SIGSEGV|a|b|op|f32|cpu|SIGSEGV f < g"}, {"message", "x"}};
  CHECK(recorded_key_today(crash) == "crash:SIGSEGV|a|b|op|f32|cpu|SIGSEGV f < g");
}

}  // namespace tfg_test_campaign_judge
