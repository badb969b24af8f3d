// Raw influence g(e) (influence.hpp): the gradient estimate matches analytic values, in-place
// ops do not leak the modified value's gradient into the edge before the modification, edges
// without a path to the output get 0, the perturbation estimate agrees with the gradient on
// smooth ops, and a node without a derivative (aten::_native_multi_head_attention) leaves its
// upstream edges to perturbation. "zoo influence" times resnet18 / vit when the zoo is built.
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/oracle/influence.hpp"
#include "tfg/torch/import/inputs.hpp"

#include <doctest/doctest.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_influence {

namespace {

namespace tt = tfg::torch;
namespace fs = std::filesystem;
using tt::influence_method;

tt::model from_ir(const std::string& ir) {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(ir, g.get());
  return tt::torchscript_importer::from_graph(*g, "test.ir");
}

/// The output of the `k`-th node (execution order) of kind `kind`, or graph input `kind` = "in", k.
/// (The importer keeps the debug names of graph inputs only; non-tensor constants become
/// node attributes, not edges.)
tfg::graph::edge_id edge_at(const tt::model& m, const std::string& kind, std::size_t k, std::size_t output = 0) {
  if (kind == "in") return m.graph.graph_inputs()[k];
  for (auto n : m.graph.topological_order())
    if (m.graph.data(n).name() == kind && k-- == 0) return m.graph.outputs(n)[output];
  FAIL("no node " << kind);
  return {};
}

struct probe {
  const tt::model& m;
  const tt::influence_result& r;
  [[nodiscard]] double g(const std::string& kind, std::size_t k = 0, std::size_t output = 0) const {
    return r.g.at(tfg::graph::index(edge_at(m, kind, k, output)));
  }
  [[nodiscard]] influence_method method(const std::string& kind, std::size_t k = 0, std::size_t output = 0) const {
    return r.method.at(tfg::graph::index(edge_at(m, kind, k, output)));
  }
};

const char* const linear_ir = R"IR(
graph(%x : Tensor, %z : Tensor):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %three : int = prim::Constant[value=3]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %three)
  %b : Tensor = aten::mul(%z, %zero)
  %y : Tensor = aten::add(%a, %b, %one)
  %i : Tensor = aten::argmax(%x, %none, %false)
  %u : Tensor = aten::exp(%z)
  %t : (Tensor, Tensor) = prim::TupleConstruct(%y, %i)
  return (%t)
)IR";

}  // namespace

TEST_CASE("influence: gradient matches the analytic value; an edge without a path to the output gets 0") {
  const auto m = from_ir(linear_ir);
  const auto inputs = tt::random_inputs({{{2, 3}}, {{2, 3}}}, 2, 7);
  const auto r = tt::influence(m, inputs);
  const probe p{m, r};
  INFO(r.note);
  CHECK(r.note.empty());
  CHECK(r.perturbed_edges == 0);
  CHECK(r.g.size() == m.graph.edge_capacity());
  CHECK(p.g("in", 0) == doctest::Approx(3.0));  // l = sum(3x + 0z) (+ nothing from the integer argmax)
  CHECK(p.g("aten::mul", 0) == doctest::Approx(1.0));
  CHECK(p.g("aten::mul", 1) == doctest::Approx(1.0));
  CHECK(p.g("aten::add") == doctest::Approx(1.0));
  CHECK(p.g("in", 1) == doctest::Approx(0.0));  // a zero gradient, not a missing one
  CHECK(p.method("in", 1) == influence_method::gradient);
  // Non-floating edges are unknown.
  CHECK(std::isnan(p.g("aten::argmax")));
  CHECK(p.method("aten::argmax") == influence_method::none);
  // exp(z) reaches no output (if the importer kept it): exactly 0, no run needed.
  bool has_exp = false;
  for (auto n : m.graph.topological_order()) has_exp = has_exp || m.graph.data(n).name() == "aten::exp";
  if (has_exp) {
    CHECK(p.g("aten::exp") == 0.0);
    CHECK(p.method("aten::exp") == influence_method::gradient);
  }
  MESSAGE("linear graph: " << r.ms << " ms");
}

TEST_CASE("influence: in-place ops report the gradient of the value before the modification") {
  const auto m = from_ir(R"IR(
graph(%x : Tensor):
  %three : int = prim::Constant[value=3]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %three)
  %r : Tensor = aten::relu_(%a)
  %s : Tensor = aten::add_(%x, %one, %one)
  %y : Tensor = aten::add(%r, %s, %one)
  return (%y)
)IR");
  // a = 3x = [3, -3, 6, -6]: relu passes half of it.
  const tt::input_set inputs{{at::tensor({1.0F, -1.0F, 2.0F, -2.0F})}};
  const auto before = inputs[0][0].toTensor().clone();
  const auto r = tt::influence(m, inputs);
  const probe p{m, r};
  INFO(r.note);
  CHECK(at::equal(inputs[0][0].toTensor(), before));  // the caller's inputs are not modified
  CHECK(p.g("aten::relu_") == doctest::Approx(1.0));
  CHECK(p.g("aten::mul") == doctest::Approx(0.5));  // d sum(relu(a)) / da, not d/d relu(a)
  CHECK(p.g("aten::add_") == doctest::Approx(1.0));
  CHECK(p.g("in", 0) == doctest::Approx(2.5));  // via 3x then relu: 1.5, via add_: 1
  CHECK(r.perturbed_edges == 0);
}

TEST_CASE("influence: batch_norm running statistics get derived gradients that perturbation confirms") {
  const auto m = from_ir(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %rm : Tensor, %rv : Tensor):
  %false : bool = prim::Constant[value=0]()
  %mom : float = prim::Constant[value=0.10000000000000001]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %y : Tensor = aten::batch_norm(%x, %w, %b, %rm, %rv, %false, %mom, %eps, %false)
  %t : Tensor = aten::tanh(%y)
  return (%t)
)IR");
  const auto x = at::tensor({0.3F, -1.2F, 0.7F, 1.5F, 0.1F, -0.4F}).reshape({2, 3});
  const tt::input_set inputs{{x, at::tensor({1.5F, -0.5F, 0.8F}), at::tensor({0.1F, 0.2F, -0.3F}),
                              at::tensor({0.2F, -0.1F, 0.4F}), at::tensor({0.9F, 1.3F, 0.6F})}};
  const auto grad = tt::influence(m, inputs);
  tt::influence_options po;
  po.force_perturbation = true;
  po.probes = 8;
  const auto pert = tt::influence(m, inputs, po);
  const probe pg{m, grad}, pp{m, pert};
  INFO(grad.note);
  CHECK(grad.perturbed_edges == 0);
  for (std::size_t k = 0; k < 5; ++k) {
    INFO("input " << k);
    CHECK(pg.method("in", k) == influence_method::gradient);
    CHECK(pg.g("in", k) > 0);
    CHECK(pp.g("in", k) == doctest::Approx(pg.g("in", k)).epsilon(0.1));
  }
}

TEST_CASE("influence: perturbation agrees with the gradient on smooth ops") {
  const auto m = from_ir(R"IR(
graph(%x : Tensor, %w : Tensor):
  %t : Tensor = aten::tanh(%x)
  %p : Tensor = aten::mul(%t, %w)
  %y : Tensor = aten::sigmoid(%p)
  return (%y)
)IR");
  const std::pair<const char*, std::size_t> edges[] = {
      {"in", 0}, {"in", 1}, {"aten::tanh", 0}, {"aten::mul", 0}, {"aten::sigmoid", 0}};
  SUBCASE("coordinate probes (numel <= probes)") {
    const auto inputs = tt::random_inputs({{{2, 3}}, {{2, 3}}}, 2, 7);
    const auto grad = tt::influence(m, inputs);
    tt::influence_options po;
    po.force_perturbation = true;
    po.probes = 8;
    const auto pert = tt::influence(m, inputs, po);
    CHECK(pert.gradient_edges == 0);
    const probe pg{m, grad}, pp{m, pert};
    for (const auto& [kind, k] : edges) {
      INFO(std::string(kind) << " " << k);
      CHECK(pg.method(kind, k) == influence_method::gradient);
      CHECK(pp.method(kind, k) == influence_method::perturbation);
      CHECK(pp.g(kind, k) == doctest::Approx(pg.g(kind, k)).epsilon(0.1));
    }
  }
  SUBCASE("Rademacher probes on a larger tensor: the right scale") {
    const auto inputs = tt::random_inputs({{{16, 16}}, {{16, 16}}}, 1, 11);
    const auto grad = tt::influence(m, inputs);
    tt::influence_options po;
    po.force_perturbation = true;
    po.probes = 64;
    const auto pert = tt::influence(m, inputs, po);
    const probe pg{m, grad}, pp{m, pert};
    for (const auto& [kind, k] : edges) {
      INFO(std::string(kind) << " " << k);
      const double ratio = pp.g(kind, k) / pg.g(kind, k);
      MESSAGE(std::string(kind) << " " << k << ": perturbation / gradient = " << ratio);
      CHECK(ratio > 0.5);
      CHECK(ratio < 1.6);
    }
  }
}

TEST_CASE("influence: an op without derivative gets its upstream edges by perturbation") {
  const auto m = from_ir(R"IR(
graph(%x : Tensor, %wqkv : Tensor, %bqkv : Tensor, %wo : Tensor, %bo : Tensor):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %E : int = prim::Constant[value=4]()
  %H : int = prim::Constant[value=2]()
  %two : int = prim::Constant[value=2]()
  %h : Tensor = aten::mul(%x, %two)
  %o : Tensor, %aw : Tensor = aten::_native_multi_head_attention(%h, %h, %h, %E, %H, %wqkv, %bqkv, %wo, %bo, %none, %false, %true, %none)
  %y : Tensor = aten::tanh(%o)
  return (%y)
)IR");
  const auto inputs = tt::random_inputs({{{1, 3, 4}}, {{12, 4}}, {{12}}, {{4, 4}}, {{4}}}, 1, 3);
  const auto r = tt::influence(m, inputs);
  const probe p{m, r};
  INFO(r.note);
  CHECK(r.note.find("_native_multi_head_attention") != std::string::npos);
  const std::pair<const char*, std::size_t> upstream[] = {{"in", 0}, {"in", 1}, {"in", 3}, {"aten::mul", 0}};
  for (const auto& [kind, k] : upstream) {
    INFO(std::string(kind) << " " << k);
    CHECK(p.method(kind, k) == influence_method::perturbation);
    CHECK(std::isfinite(p.g(kind, k)));
    CHECK(p.g(kind, k) > 0);
  }
  CHECK(p.method("aten::_native_multi_head_attention") == influence_method::gradient);
  CHECK(p.method("aten::tanh") == influence_method::gradient);
  CHECK(p.g("aten::tanh") == doctest::Approx(1.0));
  CHECK(r.perturbed_edges >= 4);

  tt::influence_options no_fallback;
  no_fallback.perturbation_fallback = false;
  const auto n = tt::influence(m, inputs, no_fallback);
  const probe pn{m, n};
  CHECK(std::isnan(pn.g("aten::mul")));
  CHECK(pn.method("aten::mul") == influence_method::none);

  tt::influence_options capped;
  capped.max_perturbed_edges = 1;
  const auto c = tt::influence(m, inputs, capped);
  CHECK(c.perturbed_edges == 1);
}

TEST_CASE("influence: tiny_mix") {
  const std::string dir = std::string(TFG_SOURCE_DIR) + "/tests/data/";
  const auto m = tt::torchscript_importer().load(dir + "tiny_mix.pt");
  const auto inputs = tt::load_inputs(dir + "tiny_mix.inputs.pt");
  const auto r = tt::influence(m, inputs);
  std::size_t finite = 0;
  for (double v : r.g) finite += std::isfinite(v);
  CHECK(finite > 0);
  CHECK(finite == r.gradient_edges + r.perturbed_edges);
  for (auto e : m.graph.graph_outputs())
    if (r.method[tfg::graph::index(e)] == influence_method::gradient) CHECK(r.g[tfg::graph::index(e)] > 0);
  MESSAGE("tiny_mix: " << r.ms << " ms, " << r.gradient_edges << " by gradient, " << r.perturbed_edges
                       << " by perturbation, " << m.graph.edge_count() << " edges; note: " << r.note);
}

TEST_CASE("zoo influence: every zoo seed, with timing (build/zoo or TFG_ZOO_DIR)") {
  const char* env = std::getenv("TFG_ZOO_DIR");
  const fs::path dir = env ? fs::path(env) : fs::path(TFG_SOURCE_DIR) / "build" / "zoo";
  if (!fs::is_directory(dir)) {
    MESSAGE(dir.string() << " not found: skipped");
    return;
  }
  std::vector<fs::path> seeds;
  for (const auto& f : fs::directory_iterator(dir)) {
    const auto name = f.path().filename().string();
    if (f.path().extension() == ".pt" && name.find(".inputs.") == std::string::npos) seeds.push_back(f.path());
  }
  std::sort(seeds.begin(), seeds.end());
  for (const auto& path : seeds) {
    const auto name = path.stem().string();
    INFO(name);
    const auto m = tt::torchscript_importer().load(path.string());
    const auto inputs = tt::load_inputs(tt::inputs_path_for(path.string()));
    const auto r = tt::influence(m, inputs);
    std::size_t finite = 0;
    for (double v : r.g) finite += std::isfinite(v);
    CHECK(finite > 0);
    CHECK(finite == r.gradient_edges + r.perturbed_edges);
    std::string unknown;  // producers of tensor edges left NaN (non-floating tensors, mostly)
    std::size_t n_unknown = 0;
    for (auto e : m.graph.edges())
      if (!std::isfinite(r.g[tfg::graph::index(e)]) && m.graph.data(e).kind == tfg::state::value_kind::tensor &&
          n_unknown++ < 6)
        unknown += " " + (m.graph.producer(e) == tfg::graph::no_node ? std::string("input")
                                                                     : m.graph.data(m.graph.producer(e)).name());
    MESSAGE(name << ": " << r.ms << " ms, " << r.gradient_edges << " by gradient, " << r.perturbed_edges
                 << " by perturbation, " << m.graph.edge_count() << " edges, " << n_unknown
                 << " tensor edges unknown:" << unknown << "; note: " << r.note);
  }
}

TEST_CASE("zoo influence: forced perturbation timing on resnet18 and vit (build/zoo or TFG_ZOO_DIR)") {
  const char* env = std::getenv("TFG_ZOO_DIR");
  const fs::path dir = env ? fs::path(env) : fs::path(TFG_SOURCE_DIR) / "build" / "zoo";
  for (const std::string name : {"resnet18", "vit"}) {
    const auto path = dir / (name + ".pt");
    if (!fs::exists(path)) {
      MESSAGE(path.string() << " not found: skipped");
      continue;
    }
    const auto m = tt::torchscript_importer().load(path.string());
    const auto inputs = tt::load_inputs(tt::inputs_path_for(path.string()));
    const auto grad = tt::influence(m, inputs);
    tt::influence_options po;
    po.force_perturbation = true;
    const auto pert = tt::influence(m, inputs, po);
    CHECK(pert.perturbed_edges > 0);
    CHECK(pert.perturbed_edges <= po.max_perturbed_edges);
    // Agreement of the two estimates where both exist (informative: Rademacher probes are noisy).
    std::vector<double> a, b;
    for (std::size_t i = 0; i < grad.g.size(); ++i)
      if (pert.method[i] == influence_method::perturbation && grad.method[i] == influence_method::gradient &&
          grad.g[i] > 0) {
        a.push_back(std::log(grad.g[i]));
        b.push_back(std::log(std::max(pert.g[i], 1e-30)));
      }
    double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0, ratio = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ma += a[i] / a.size();
      mb += b[i] / b.size();
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      sab += (a[i] - ma) * (b[i] - mb);
      saa += (a[i] - ma) * (a[i] - ma);
      sbb += (b[i] - mb) * (b[i] - mb);
      ratio += std::abs(b[i] - a[i]) / a.size();
    }
    MESSAGE(name << ": forced perturbation " << pert.ms << " ms for " << pert.perturbed_edges << " edges (gradient "
                 << grad.ms << " ms); log-log correlation " << sab / std::sqrt(saa * sbb) << ", mean |log ratio| "
                 << ratio << " over " << a.size() << " edges");
  }
}

}  // namespace tfg_test_torch_influence
