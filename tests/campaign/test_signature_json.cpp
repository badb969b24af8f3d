// One JSON form of a finding's signature (tfg/campaign/signature_json.hpp): meta.json, the
// corpus's roots in state.json, the judge's re-reading of recorded findings.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tfg/campaign/signature_json.hpp"

namespace tfg_test_campaign_signature_json {

namespace {

tfg::oracle::finding_signature example() {
  tfg::oracle::finding_signature s;
  s.kind = tfg::oracle::finding_kind::numeric;
  s.config_a = "eager_op_by_op";
  s.config_b = "float64_reference";
  s.culprit_op = "aten::conv2d";
  s.dtype = "f32";
  s.device = "cpu";
  s.detail = "";
  s.symptom = "";
  s.inputs = "f32 r4 contiguous";
  return s;
}

}  // namespace

TEST_CASE("a signature written and read back has the same key") {
  const auto s = example();
  const nlohmann::json j = s;
  CHECK(j.at("config_a") == "eager_op_by_op");
  CHECK(j.at("culprit_op") == "aten::conv2d");
  CHECK(j.at("kind") == "numeric");
  const auto back = j.get<tfg::oracle::finding_signature>();
  CHECK(back.key() == s.key());
  CHECK(back.title() == s.title());
}

TEST_CASE("the corpus roots of an older state.json (short keys a, b, op) read as the same signature") {
  const auto s = example();
  const nlohmann::json older = {{"prefix", "numeric|"}, {"kind", "numeric"}, {"a", s.config_a},    {"b", s.config_b},
                                {"op", s.culprit_op},   {"dtype", s.dtype},  {"device", s.device}, {"detail", ""},
                                {"symptom", ""},        {"inputs", s.inputs}};
  CHECK(older.get<tfg::oracle::finding_signature>().key() == s.key());
}

TEST_CASE("a field the JSON lacks keeps the value set before reading; an unknown kind is an error") {
  tfg::oracle::finding_signature s;
  s.dtype = "f32";
  s.device = "cpu";
  from_json(nlohmann::json{{"kind", "exception"}, {"config_a", "eager_op_by_op"}}, s);
  CHECK(s.kind == tfg::oracle::finding_kind::exception);
  CHECK(s.dtype == "f32");
  CHECK(s.device == "cpu");
  CHECK_THROWS_AS(from_json(nlohmann::json{{"kind", "no_such_kind"}}, s), nlohmann::json::exception);
}

}  // namespace tfg_test_campaign_signature_json
