// The LibTorch side of the diversity metrics (observe.hpp): the test space from the registered
// schemas, the universe from operators/requirements, and observations of the tiny_mix seed.
// "observe: denominators" prints the measured totals quoted in docs/metrics.md (run with -s).
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/mutate/instantiate.hpp"
#include "tfg/torch/execute/observe.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_observe {

namespace {

namespace tt = tfg::torch;
namespace tm = tfg::metrics;

const std::string seed = std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt";
const std::string seed_inputs = std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.inputs.pt";
const std::string requirements = std::string(TFG_SOURCE_DIR) + "/operators/requirements";

tt::profile profile_of(const tt::model& m) {
  return tt::profiler({c10::Device(c10::kCPU), true, false, false}).run(m, tt::load_inputs(seed_inputs));
}

const tm::test_space& default_space() {
  static const tm::test_space s = [] {
    const auto u = tt::universe_from_requirements(requirements);
    return tt::metrics_space(u);
  }();
  return s;
}

}  // namespace

TEST_CASE("observe: the universe and the space come from the requirements and the schemas") {
  const auto u = tt::universe_from_requirements(requirements);
  REQUIRE(u.size() > 50);
  CHECK(std::is_sorted(u.begin(), u.end()));
  CHECK(std::binary_search(u.begin(), u.end(), std::string("aten::_convolution")));
  CHECK(std::binary_search(u.begin(), u.end(), std::string("aten::relu")));
  CHECK(tt::universe_from_requirements(requirements + "/no_such_dir").empty());

  const auto& s = default_space();
  CHECK(s.ops.size() == u.size());
  const auto add = s.find("aten::add");
  REQUIRE(add);
  const auto& o = s.ops[*add];
  CHECK(std::binary_search(o.inputs.begin(), o.inputs.end(), std::string("self")));
  CHECK(std::binary_search(o.overloads.begin(), o.overloads.end(), std::string("Tensor")));
  CHECK(std::binary_search(o.overloads.begin(), o.overloads.end(), std::string("Scalar")));
  CHECK(std::none_of(o.overloads.begin(), o.overloads.end(), [](const std::string& x) { return x == "out"; }));
  CHECK(
      std::any_of(o.params.begin(), o.params.end(), [](const tm::param_slot& p) { return p.key() == "alpha:Scalar"; }));
  CHECK(o.produces_tensor);
  const auto size = s.find("aten::size");
  REQUIRE(size);
  CHECK_FALSE(s.ops[*size].produces_tensor);
  CHECK(s.valid_pairs == s.producers * s.consumers);
  CHECK(s.apis.size() > 1000);
  CHECK(s.registered("aten::relu"));
  CHECK_FALSE(s.registered("prim::Constant"));
}

TEST_CASE("observe: denominators") {
  const auto& s = default_space();
  MESSAGE("|U| = " << s.ops.size() << ", input slots = " << s.input_slots << ", input values = " << s.input_values
                   << ", param slots = " << s.param_slots << ", param values = " << s.param_values << ", producers = "
                   << s.producers << ", consumers = " << s.consumers << ", valid pairs = " << s.valid_pairs
                   << ", dfsd space = " << s.dfsd_space << ", registered aten ops = " << s.apis.size());
  std::size_t lic_ops = 0, lpc_ops = 0, paths = 0;
  for (const auto& o : s.ops) {
    lic_ops += o.input_space() > 0;
    lpc_ops += o.param_space() > 0;
    if (o.consumes_tensor()) paths += std::max<std::size_t>(1, o.overloads.size());
  }
  MESSAGE("ops averaged by LIC = " << lic_ops << ", by LPC = " << lpc_ops << ", DFSD paths = " << paths);
  CHECK(s.dfsd_space > 0);
}

TEST_CASE("observe: tiny_mix gives ratios strictly between 0 and 1") {
  const auto m = tt::torchscript_importer().load(seed);
  const auto p = profile_of(m);
  const auto obs = tt::observe(m, p);
  CHECK_FALSE(obs.inputs.empty());
  CHECK_FALSE(obs.params.empty());
  CHECK_FALSE(obs.pairs.empty());
  CHECK_FALSE(obs.signatures.empty());
  CHECK_FALSE(obs.apis.empty());
  CHECK(std::none_of(obs.apis.begin(), obs.apis.end(), [](const std::string& a) { return a.rfind("prim::", 0) == 0; }));

  tm::tracker t(default_space());
  t.observe(obs);
  const auto s = t.current();
  MESSAGE("tiny_mix: LIC " << s.lic << " LPC " << s.lpc << " LSC " << s.lsc << " DFSD " << s.dfsd << " signatures "
                           << s.signatures << " apis " << s.apis << " API coverage " << s.api_coverage);
  for (double r : {s.lic, s.lpc, s.lsc, s.dfsd, s.api_coverage}) {
    CHECK(r > 0);
    CHECK(r < 1);
  }
  CHECK(s.signatures > 0);
  CHECK(s.apis > 0);
  CHECK(s.test_cases == 1);

  // A checkpoint restores the same metrics.
  const auto u = tm::tracker::from_json(t.to_json(), default_space()).current();
  CHECK(u.lic == s.lic);
  CHECK(u.lpc == s.lpc);
  CHECK(u.lsc == s.lsc);
  CHECK(u.dfsd == s.dfsd);
  CHECK(u.signatures == s.signatures);
}

TEST_CASE("observe: observing the same model twice changes nothing") {
  const auto m = tt::torchscript_importer().load(seed);
  tm::tracker t(default_space());
  t.observe(tt::observe(m, profile_of(m)));
  const auto a = t.current();
  t.observe(tt::observe(m, profile_of(m)));  // a fresh profile of the same model
  const auto b = t.current();
  CHECK(a.lic == b.lic);
  CHECK(a.lpc == b.lpc);
  CHECK(a.lsc == b.lsc);
  CHECK(a.dfsd == b.dfsd);
  CHECK(a.signatures == b.signatures);
  CHECK(a.apis == b.apis);
  CHECK(b.test_cases == 2);
}

TEST_CASE("observe: a model with an extra operator kind raises API coverage") {
  auto m = tt::torchscript_importer().load(seed);
  const auto before = tt::observe(m, profile_of(m));
  std::string extra;
  for (const char* k : {"aten::neg", "aten::abs", "aten::sin", "aten::exp"})
    if (std::find(before.apis.begin(), before.apis.end(), k) == before.apis.end()) {
      extra = k;
      break;
    }
  REQUIRE_FALSE(extra.empty());
  // A float tensor edge that some operator produced.
  tfg::graph::edge_id x = tfg::graph::no_edge;
  for (auto e : m.graph.edges()) {
    const auto pr = m.graph.producer(e);
    if (m.graph.data(e).kind == tfg::state::value_kind::tensor && pr != tfg::graph::no_node &&
        !m.graph.data(pr).kind.is_prim()) {
      x = e;
      break;
    }
  }
  REQUIRE(x != tfg::graph::no_edge);
  auto b = tt::build_node(extra, {tt::proto_arg{tt::proto_arg::edge_ref{0, tfg::state::value_kind::tensor}}});
  (void)m.graph.add_node(std::move(b.data), {x}, std::move(b.outputs));  // the executor runs every node

  tm::tracker t(default_space());
  t.observe(before);
  const auto a = t.current();
  const auto after = tt::observe(m, profile_of(m));
  CHECK(std::find(after.apis.begin(), after.apis.end(), extra) != after.apis.end());
  t.observe(after);
  const auto c = t.current();
  CHECK(c.apis == a.apis + 1);
  CHECK(c.api_coverage > a.api_coverage);
  CHECK(c.signatures > a.signatures);  // the new consumer makes new signatures
  CHECK(c.lsc >= a.lsc);
}

}  // namespace tfg_test_torch_observe
