// Findings grouped into defects by mechanism, flaky findings apart, and timeouts that follow
// the machine's load (issue 43: one finding per defect, no load-made hang among the defects).
#include <doctest/doctest.h>

#include <string>

#include "tfg/campaign/defects.hpp"  // first: the header must compile on its own
#include "tfg/campaign/machine_load.hpp"
#include "tfg/campaign/fuzz.hpp"
#include "tfg/oracle/finding.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_defects {

namespace tc = tfg::campaign;
namespace to = tfg::oracle;

// A finding row as the campaign stores it, its key the signature's.
tc::finding_row row(to::finding_kind kind, std::string a, std::string b, std::string op, std::string inputs,
                    std::string status = "reproduced") {
  to::finding_signature s;
  s.kind = kind;
  s.config_a = std::move(a);
  s.config_b = std::move(b);
  s.culprit_op = std::move(op);
  s.dtype = "f32";
  s.device = "cpu";
  s.inputs = std::move(inputs);
  tc::finding_row r;
  r.key = s.key();
  r.id = s.id();
  r.kind = std::string(to::to_string(kind));
  r.config_a = s.config_a;
  r.config_b = s.config_b;
  r.culprit_op = s.culprit_op;
  r.status = std::move(status);
  r.title = r.kind + " at " + r.culprit_op;
  return r;
}

tc::witness seen_by(const std::string& unit, const std::string& status) {
  tc::witness w;
  w.unit = unit;
  w.status = status;
  w.last_round = 3;
  w.instances = 1;
  return w;
}

TEST_CASE(
    "defects: two variants of one mechanism (F1's relu NaN on two input states) make one defect with two variants") {
  using K = to::finding_kind;
  tc::findings_index idx;
  // oneDNN's relu NaN as the 1-hour fuzz of issue 43 saw it: one mechanism, input states apart.
  const auto cl = row(K::nan_inf, "eager_op_by_op", "frozen_optimized", "aten::relu_", "f32 r4 channels_last nan");
  const auto ct = row(K::nan_inf, "eager_op_by_op", "frozen_optimized", "aten::relu_", "f32 r4 contiguous nan inf");
  // Another operator under the same pair is another defect; so is the same operator under another pair.
  const auto hs = row(K::numeric, "eager_op_by_op", "frozen_optimized", "aten::hardswish_", "f32 r4 channels_last");
  const auto other_pair = row(K::nan_inf, "eager_op_by_op", "graph_executor", "aten::relu_", "f32 r4 contiguous nan");
  idx.add(cl, seen_by("resnet18-c1", "reproduced"));
  idx.add(ct, seen_by("efficientad-c1", "reproduced"));
  idx.add(ct, seen_by("mobilenet_v3_small-c1", "reproduced"));
  idx.add(hs, seen_by("mobilenet_v3_small-c1", "reproduced"));
  idx.add(other_pair, seen_by("resnet18-c1", "reproduced"));
  REQUIRE(idx.size() == 4);  // four distinct findings (signature keys) ...

  const auto defects = idx.defects();
  REQUIRE(defects.size() == 3);  // ... three defects
  const tc::defect_group<const tc::indexed_finding*>* relu = nullptr;
  for (const auto& d : defects)
    if (d.variants.size() == 2) relu = &d;
  REQUIRE(relu != nullptr);
  CHECK(relu->variants[0]->row.culprit_op == "aten::relu_");
  CHECK(relu->variants[1]->row.culprit_op == "aten::relu_");
  CHECK(relu->variants[0]->row.config_b == "frozen_optimized");
  CHECK(relu->reproduced);
  CHECK(relu->id == tc::defect_id(tc::mechanism_of(cl.key)));
  CHECK(tc::mechanism_of(cl.key) == tc::mechanism_of(ct.key));
  CHECK(tc::mechanism_of(cl.key) != tc::mechanism_of(other_pair.key));

  const auto c = idx.counts();
  CHECK(c.defects == 3);
  CHECK(c.variants == 4);
  CHECK(c.flaky == 0);
  CHECK(tc::describe(c) == "3 defects (4 variants)");

  // findings.jsonl: each line names its defect; the two relu lines share it.
  const auto jsonl = idx.to_jsonl();
  std::size_t n = 0;
  for (std::size_t at = jsonl.find("\"defect\":\"" + relu->id + "\""); at != std::string::npos;
       at = jsonl.find("\"defect\":\"" + relu->id + "\"", at + 1))
    ++n;
  CHECK(n == 2);
}

TEST_CASE("defects: a hang that no rerun showed again is flaky, listed apart and not counted as a defect") {
  using K = to::finding_kind;
  tc::findings_index idx;
  const auto hang = row(K::hang, "threads_1_vs_n", "", "aten::flatten", "", "flaky");
  const auto real = row(K::numeric, "eager_op_by_op", "frozen_optimized", "aten::hardswish_", "f32 r4 channels_last");
  idx.add(hang, seen_by("resnet18-c1", "flaky"));
  idx.add(real, seen_by("mobilenet_v3_small-c1", "reproduced"));
  const auto c = idx.counts();
  CHECK(c.defects == 1);
  CHECK(c.variants == 1);
  CHECK(c.flaky == 1);
  CHECK(tc::describe(c) == "1 defect, 1 not reproduced (flaky)");
  for (const auto& d : idx.defects())
    if (d.variants.front()->row.kind == "hang") CHECK_FALSE(d.reproduced);

  // The same hang reproduced by another campaign's reruns is a defect after all.
  idx.add(hang, seen_by("swinir-c1", "reproduced"));
  CHECK(idx.counts().defects == 2);
  CHECK(idx.counts().flaky == 0);
}

TEST_CASE("defects: a mechanism key keeps escaped bars inside its fields") {
  using K = to::finding_kind;
  auto a = row(K::exception, "eager_op_by_op", "frozen_optimized", "aten::max_pool2d", "f32 r4 contiguous");
  auto b = row(K::exception, "eager_op_by_op", "frozen_optimized", "aten::max_pool2d", "f32 r4 channels_last");
  to::finding_signature s;
  s.kind = K::exception;
  s.config_a = "eager_op_by_op";
  s.config_b = "frozen_optimized";
  s.culprit_op = "aten::max_pool2d";
  s.detail = "a|b message";  // escaped in the key
  s.inputs = "f32 r4 contiguous";
  const auto k1 = s.key();
  s.inputs = "f32 r4 channels_last";
  const auto k2 = s.key();
  CHECK(tc::mechanism_of(k1) == tc::mechanism_of(k2));
  CHECK(tc::mechanism_of(k1).find("a\\|b message") != std::string::npos);
  s.detail = "another message";
  CHECK(tc::mechanism_of(s.key()) != tc::mechanism_of(k2));
  CHECK(tc::mechanism_of(a.key) == tc::mechanism_of(b.key));
  // A key without an input class is its own mechanism.
  s.inputs.clear();
  CHECK(tc::mechanism_of(s.key()) == s.key());
}

TEST_CASE("machine load: a timeout calibrated on an idle machine grows with the load that came after") {
  CHECK(tc::parse_loadavg("3.90 2.10 1.00 3/467 12345").value() == doctest::Approx(3.9));
  CHECK_FALSE(tc::parse_loadavg("").has_value());
  CHECK_FALSE(tc::parse_loadavg("busy").has_value());
  CHECK(tc::load_factor(3.9, 2) == doctest::Approx(1.95));
  CHECK(tc::load_factor(0.5, 2) == 1.0);  // an idle machine runs at full speed, not faster
  // Calibrated at load 1 (one campaign on two cores), run at 4 on 2 cores: twice the time.
  CHECK(tc::load_scaled(10000, tc::load_factor(1, 2), tc::load_factor(4, 2)) == doctest::Approx(20000));
  // Calibrated while busy, run when idle: never below the calibrated timeout.
  CHECK(tc::load_scaled(10000, tc::load_factor(6, 2), tc::load_factor(0, 2)) == doctest::Approx(10000));
  CHECK(tc::machine_load_factor() >= 1.0);
}

}  // namespace tfg_test_campaign_defects
