// The worker protocol: requests and replies survive their JSON line unchanged, and malformed
// lines are reported, not thrown.
#include <doctest/doctest.h>

#include "tfg/campaign/protocol.hpp"  // first: the header must compile on its own

#include <cmath>
#include <limits>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_protocol {

using namespace tfg::campaign;

TEST_CASE("protocol: a run request round-trips through its line") {
  worker_request r;
  r.id = 17;
  r.model = "/tmp/c/work/mutant.pt";
  r.inputs = "/tmp/c/inputs.pt";
  r.configs = {"eager_op_by_op", "graph_executor"};
  r.threads = 2;
  r.warmup = 3;
  r.labels = false;
  const auto back = parse_request(to_line(r));
  REQUIRE(back);
  CHECK(*back == r);
  CHECK(to_line(r).find('\n') == std::string::npos);
}

TEST_CASE("protocol: ping, unknown ops and garbage") {
  worker_request ping;
  ping.op = request_op::ping;
  ping.id = 4;
  const auto p = parse_request(to_line(ping));
  REQUIRE(p);
  CHECK(p->op == request_op::ping);
  CHECK(p->id == 4);
  const auto unknown = parse_request(R"({"id":1,"op":"fly"})");
  REQUIRE(!unknown);
  CHECK(unknown.error().find("unknown op `fly`") != std::string::npos);
  CHECK(!parse_request("not json"));
  CHECK(!parse_request("[1,2]"));
  const auto bad_type = parse_request(R"({"id":1,"configs":"eager"})");
  CHECK(!bad_type);
}

TEST_CASE("protocol: a reply with results, verdicts and labels round-trips; infinities travel as 1e300") {
  worker_reply r;
  r.id = 3;
  r.ok = true;
  r.results = {{"eager_op_by_op", true, "", 12.5, 1.0},
               {"frozen_optimized", false, "boom", 0, 3.0},
               {"onnxruntime", false, "skipped: unsupported: ONNX Runtime's CPU provider: no Tanh(14) for double", 0,
                9.0, true}};
  tfg::oracle::verdict v;
  v.kind = tfg::oracle::verdict_kind::nan_inf_mismatch;
  v.config_a = "eager_op_by_op";
  v.config_b = "frozen_optimized";
  v.input_index = 1;
  v.output_path = "0.1";
  v.max_abs = std::numeric_limits<double>::infinity();
  v.max_rel = 0.5;
  v.message = "2 of 8 elements are NaN on one side";
  v.tie_dependent = true;
  r.verdicts = {v};
  r.labels = {"a", "b", "c"};
  r.transitions = {{0, 1}, {1, 2}};
  r.ms = 99;
  const auto back = parse_reply(to_line(r));
  REQUIRE(back);
  CHECK(back->ok);
  CHECK(back->results == r.results);
  CHECK(back->results.at(2).unsupported);  // counted and listed by the campaign, never judged
  CHECK_FALSE(back->results.at(1).unsupported);
  REQUIRE(back->verdicts.size() == 1);
  const auto& w = back->verdicts[0];
  CHECK(w.kind == v.kind);
  CHECK(w.config_a == v.config_a);
  CHECK(w.config_b == v.config_b);
  CHECK(w.input_index == 1);
  CHECK(w.output_path == "0.1");
  CHECK(w.max_abs == 1e300);
  CHECK(w.max_rel == 0.5);
  CHECK(w.message == v.message);
  CHECK(w.tie_dependent);
  CHECK(back->labels == r.labels);
  CHECK(back->transitions == r.transitions);
  CHECK(back->config_times() == std::map<std::string, double>{{"eager_op_by_op", 12.5}});
  CHECK(back->transition_labels() == std::vector<std::pair<std::string, std::string>>{{"a", "b"}, {"b", "c"}});
  REQUIRE(back->result("frozen_optimized"));
  CHECK(back->result("frozen_optimized")->error == "boom");
  CHECK(back->result("autograd") == nullptr);
}

TEST_CASE("protocol: a failed load keeps its error; an unknown verdict kind is an unreadable reply") {
  worker_reply r;
  r.id = 8;
  r.error = "model.pt: not a TorchScript archive";
  const auto back = parse_reply(to_line(r));
  REQUIRE(back);
  CHECK(!back->ok);
  CHECK(back->error == r.error);
  const auto bad = parse_reply(R"({"id":1,"ok":true,"verdicts":[{"kind":"sideways"}]})");
  REQUIRE(!bad);
  CHECK(bad.error().find("sideways") != std::string::npos);
}

}  // namespace tfg_test_campaign_protocol
