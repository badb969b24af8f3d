// Activation forms (dsl/builtins.hpp): tfg::threshold, tfg::prelu, tfg::softmax,
// tfg::tanhshrink and tfg::softsign are values of op-typed parameters, drawn by the bundled
// insert_activation and swap_activation like aten activations, and expand into aten ops that
// compute the activation they name.
#include "tfg/match/candidates.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/torch/import/externs.hpp"
#include "tfg/torch/mutate/match_adapter.hpp"
#include "tfg/torch/mutate/mutate.hpp"
#include "tfg/torch/torch.hpp"

#include <doctest/doctest.h>

#include <torch/csrc/jit/ir/irparser.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_activation_forms {

namespace {
namespace tt = tfg::torch;
namespace tm = tfg::match;
namespace fs = std::filesystem;

/// x[2,6] -> neg -> sin: insert_activation anchors at %h; swap_activation at a relu.
tt::model neg_sin() {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %h : Tensor = aten::neg(%x)
  %r : Tensor = aten::relu(%h)
  %y : Tensor = aten::sin(%r)
  return (%y))IR",
                        g.get());
  return tt::torchscript_importer::from_graph(*g, "neg_sin.ir");
}

/// neg_sin profiled on one input, with the operators at `paths` loaded against it and the
/// externs' context pointing at it. Not movable: the context holds its addresses.
struct sin_site {
  tm::symbol_table symbols;
  std::shared_ptr<tt::extern_context> ctx = std::make_shared<tt::extern_context>();
  tm::pool pool;
  tt::model m = neg_sin();
  tt::input_set inputs{{at::linspace(-3, 3, 12).reshape({2, 6})}};
  tt::profile prof = tt::profiler().run(m, inputs);

  explicit sin_site(const std::vector<fs::path>& paths) {
    pool = tm::load_pool(paths, symbols, tt::torch_externs(ctx));
    for (const auto& d : pool.diagnostics) MESSAGE(d);
    REQUIRE(pool.ok());
    *ctx = {&m, &prof};
  }
  sin_site(const sin_site&) = delete;
  sin_site& operator=(const sin_site&) = delete;
};

const std::map<std::string, std::function<at::Tensor(const at::Tensor&)>>& expected() {
  static const std::map<std::string, std::function<at::Tensor(const at::Tensor&)>> m{
      {"tfg::threshold", [](const at::Tensor& v) { return at::where(v > 1.0, v, at::zeros_like(v)); }},
      {"tfg::prelu", [](const at::Tensor& v) { return at::where(v >= 0, v, 0.25 * v); }},
      {"tfg::softmax", [](const at::Tensor& v) { return at::softmax(v, -1); }},
      {"tfg::tanhshrink", [](const at::Tensor& v) { return v - at::tanh(v); }},
      {"tfg::softsign", [](const at::Tensor& v) { return v / (1 + at::abs(v)); }},
  };
  return m;
}

}  // namespace

TEST_CASE("activation forms: insert_activation and swap_activation draw them, and each computes its activation") {
  sin_site site({fs::path(TFG_SOURCE_DIR) / "operators/operator/insert_activation.tfg",
                 fs::path(TFG_SOURCE_DIR) / "operators/operator/swap_activation.tfg"});
  auto& [symbols, ctx, pool, m, inputs, prof] = site;
  tt::torch_match_adapter a(m, prof, symbols);
  tm::workspace ws;
  auto set = tm::construct(a, std::span<const tm::compiled_operator>(pool.operators), {.seed = 3});
  const at::Tensor x = inputs[0][0].toTensor();
  std::size_t checked = 0;
  for (const auto& c : set.candidates) {
    const auto& op = pool.operators[c.op];
    const bool insert = op.name == "insert_activation";
    const auto producer = m.graph.producer(c.anchor);
    if (producer == tfg::graph::no_node) continue;
    const auto kind = m.graph.data(producer).kind;
    // insert_activation on neg's output (relu then reads act(-x)); swap_activation on relu.
    if (kind != c10::Symbol::fromQualString(insert ? "aten::neg" : "aten::relu")) continue;
    std::size_t k = 0;
    while (k < op.params.size() && op.params[k].name != "act") ++k;
    REQUIRE(k < op.params.size());
    std::size_t forms = 0;
    for (const auto& member : op.params[k].members) {
      const std::string name(symbols.name(static_cast<std::uint32_t>(std::get<std::int64_t>(member))));
      if (!expected().count(name)) continue;
      ++forms;
      auto b = set.bound(c);
      b.params[k] = member;
      auto made = tt::instantiate(m, a, op, b, symbols, ws, &inputs);
      REQUIRE_MESSAGE(std::holds_alternative<tt::mutant>(made), op.name << " " << name);
      auto& mu = std::get<tt::mutant>(made);
      CHECK_FALSE(tt::check_mutant(mu, a, op, b, symbols, pool.requirements, inputs, ws).has_value());
      tt::executor run(mu.graph_model);
      const auto out = run.run(inputs[0]);
      REQUIRE(out.isTensor());
      const at::Tensor h = -x;
      // insert: sin(relu(act(-x))); swap: sin(act(-x)).
      const at::Tensor want = insert ? at::sin(at::relu(expected().at(name)(h))) : at::sin(expected().at(name)(h));
      CHECK_MESSAGE(at::allclose(out.toTensor(), want, 1e-6, 1e-6), op.name << " with " << name);
      // Swapped for relu, no form computes relu on this input: the output changes. (Inserted
      // before the relu, a prelu's change of the negatives is masked.)
      if (!insert) CHECK_MESSAGE(!at::equal(out.toTensor(), at::sin(at::relu(h))), op.name << " with " << name);
      ++checked;
    }
    CHECK(forms == expected().size());
  }
  CHECK(checked == 2 * expected().size());
}

TEST_CASE("activation forms are values, not pattern ops") {
  tm::symbol_table symbols;
  const auto dir = fs::temp_directory_path() / ("tfg-forms-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bad.tfg") << R"(tfg 1

operator bad_form_in_pattern
  object operator  primitive update  origin tfg "test"
  anchor %y
{
  pattern { %y = tfg::softmax(%x) }
  replace {
    %z = aten::relu(%x)
    rewire consumers(%y) -> %z
    delete %y
  }
}
)";
  auto pool = tm::load_pool({dir}, symbols);
  CHECK_FALSE(pool.ok());
  bool e032 = false;
  for (const auto& d : pool.diagnostics) e032 = e032 || d.find("E032") != std::string::npos;
  CHECK(e032);
  fs::remove_all(dir);
}

TEST_CASE(
    "kernel_for: a trial execution says which dtype an op has a kernel for, and lower_op_precision_f16 follows it") {
  const c10::Device cpu(c10::kCPU);
  CHECK(tt::kernel_runs("aten::relu", c10::kBFloat16, cpu) == std::optional<bool>(true));
  CHECK(tt::kernel_runs("aten::sin", c10::kFloat, cpu) == std::optional<bool>(true));
  CHECK_FALSE(tt::kernel_runs("aten::not_an_op", c10::kFloat, cpu).has_value());
  // float16 on the CPU: whatever this LibTorch has (1.13 lacks many such kernels), the trial
  // agrees with calling the op.
  bool direct = true;
  try {
    (void)at::sin(at::ones({2}, at::TensorOptions().dtype(c10::kHalf)));
  } catch (const std::exception&) {
    direct = false;
  }
  CHECK(tt::kernel_runs("aten::sin", c10::kHalf, cpu) == std::optional<bool>(direct));

  // The operator's candidates on sin: each chosen dtype runs, so every mutant runs.
  sin_site site({fs::path(TFG_SOURCE_DIR) / "operators/relation/lower_op_precision_f16.tfg"});
  auto& [symbols, ctx, pool, m, inputs, prof] = site;
  tt::torch_match_adapter a(m, prof, symbols);
  tm::workspace ws;
  std::size_t ran = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    auto set = tm::construct(a, std::span<const tm::compiled_operator>(pool.operators), {.seed = seed});
    for (const auto& c : set.candidates) {
      const auto& op = pool.operators[c.op];
      auto b = set.bound(c);
      auto made = tt::instantiate(m, a, op, b, symbols, ws, &inputs);
      REQUIRE(std::holds_alternative<tt::mutant>(made));
      auto& mu = std::get<tt::mutant>(made);
      CHECK_FALSE(tt::check_mutant(mu, a, op, b, symbols, pool.requirements, inputs, ws).has_value());
      ++ran;
    }
  }
  CHECK(ran > 0);
}

}  // namespace tfg_test_torch_activation_forms
