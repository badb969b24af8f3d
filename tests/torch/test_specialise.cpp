// Scripted control flow specialised on the profiling inputs (specialise.hpp): branches taken,
// for-loops unrolled, the result computing what TorchScript computes on those inputs; inputs
// that disagree and while-loops refused naming the node.
#include "tfg/torch/backend.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/reduce/repro.hpp"
#include "tfg/torch/import/specialise.hpp"

#include <doctest/doctest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <memory>
#include <string>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_specialise {

namespace {

namespace tt = tfg::torch;

// A shape-dependent branch, a value-dependent branch, and a for-loop over the batch whose body
// branches on the iteration number.
constexpr const char* kFlow = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %fzero : float = prim::Constant[value=0.]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %d : int = aten::dim(%x)
  %is2 : bool = aten::eq(%d, %two)
  %y : Tensor = prim::If(%is2)
    block0():
      %a : Tensor = aten::sin(%x)
      -> (%a)
    block1():
      %b : Tensor = aten::cos(%x)
      -> (%b)
  %s : Tensor = aten::sum(%x, %none)
  %sf : float = aten::Float(%s)
  %pos : bool = aten::gt(%sf, %fzero)
  %w : Tensor = prim::If(%pos)
    block0():
      %p : Tensor = aten::relu(%y)
      -> (%p)
    block1():
      %q : Tensor = aten::neg(%y)
      -> (%q)
  %n : int = aten::size(%x, %zero)
  %z : Tensor = prim::Loop(%n, %true, %w)
    block0(%i : int, %acc : Tensor):
      %first : bool = aten::eq(%i, %zero)
      %t : Tensor = prim::If(%first)
        block0():
          %u : Tensor = aten::add(%acc, %x, %one)
          -> (%u)
        block1():
          %v : Tensor = aten::mul(%acc, %x)
          -> (%v)
      -> (%true, %t)
  return (%z))IR";

std::shared_ptr<::torch::jit::Graph> parse(const char* ir) {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(ir, g.get());
  return g;
}

at::Tensor interpret(const std::shared_ptr<::torch::jit::Graph>& g, const at::Tensor& x) {
  ::torch::jit::Code code(g, "reference");
  ::torch::jit::Stack st{x.clone()};
  ::torch::jit::InterpreterState(code).run(st);
  return st.at(0).toTensor();
}

int count(const tt::model& m, const char* kind) {
  int k = 0;
  for (auto n : m.graph.nodes()) k += m.graph.data(n).name() == kind;
  return k;
}

}  // namespace

TEST_CASE("specialise: branches taken and a for-loop unrolled as the profiling inputs run them") {
  const auto original = parse(kFlow);
  // Two inputs that take the same path: rank 2, positive sums, batch 3.
  const tt::input_set inputs{{at::rand({3, 4}) + 0.1}, {at::rand({3, 4}) + 0.2}};
  CHECK_THROWS_WITH_AS(tt::torchscript_importer::from_graph(*original, "flow.ir"),
                       doctest::Contains("no profiling inputs to specialise it on"), tt::model_error);
  auto g = original->copy();
  tt::specialise_control_flow(g, inputs, "flow.ir");
  CHECK_FALSE(tt::has_control_flow(*g));
  const auto m = tt::torchscript_importer::from_graph(*g, "flow.ir");
  CHECK(count(m, "aten::sin") == 1);  // rank 2: the first branch
  CHECK(count(m, "aten::cos") == 0);
  CHECK(count(m, "aten::relu") == 1);  // positive sum
  CHECK(count(m, "aten::neg") == 0);
  CHECK(count(m, "aten::add") == 1);  // iteration 0
  CHECK(count(m, "aten::mul") == 2);  // iterations 1 and 2
  // The same values as TorchScript's interpreter runs the original on, input by input.
  for (const auto& in : inputs) {
    tt::executor ex(m);
    const auto got = ex.run(in);
    REQUIRE(got.isTensor());
    CHECK(at::allclose(got.toTensor(), interpret(original, in[0].toTensor())));
  }
}

TEST_CASE("specialise: inputs that take different branches are refused naming the node and both values") {
  auto g = parse(kFlow);
  const tt::input_set inputs{{at::rand({3, 4}) + 0.1}, {-at::rand({3, 4}) - 0.1}};
  CHECK_THROWS_WITH_AS(tt::specialise_control_flow(g, inputs, "flow.ir"),
                       doctest::Contains("flow.ir: node `prim::If`: the profiling inputs disagree (condition true on "
                                         "input 0, false on input 1)"),
                       tt::model_error);
  // Loops of other trip counts too.
  auto g2 = parse(kFlow);
  const tt::input_set batches{{at::rand({3, 4}) + 0.1}, {at::rand({5, 4}) + 0.1}};
  CHECK_THROWS_WITH_AS(tt::specialise_control_flow(g2, batches, "flow.ir"),
                       doctest::Contains("node `prim::Loop`: the profiling inputs disagree (trip count 3 on input 0, 5 "
                                         "on input 1)"),
                       tt::model_error);
}

TEST_CASE("specialise: a while-loop is refused with the reason") {
  auto g = parse(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %big : int = prim::Constant[value=100]()
  %true : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %fone : float = prim::Constant[value=10.]()
  %z : Tensor = prim::Loop(%big, %true, %x)
    block0(%i : int, %acc : Tensor):
      %t : Tensor = aten::add(%acc, %acc, %one)
      %s : Tensor = aten::sum(%t, %none)
      %sf : float = aten::Float(%s)
      %go : bool = aten::lt(%sf, %fone)
      -> (%go, %t)
  return (%z))IR");
  const tt::input_set inputs{{at::rand({2, 2})}};
  CHECK_THROWS_WITH_AS(tt::specialise_control_flow(g, inputs, "while.ir"),
                       doctest::Contains("while.ir: node `prim::Loop`: a while loop"), tt::model_error);
}

}  // namespace tfg_test_torch_specialise

namespace tfg_test_torch_specialise {

TEST_CASE("repro.py: arithmetic on sizes is written as Python operators, which eager Python keeps as ints") {
  // `torch.ops.aten.add(n, 1)` resolves to add.Tensor in eager Python and returns a tensor where
  // the graph has an int (a reduced DenseNet's repro.py failed on it); `n + 1` is an int in both
  // eager Python and torch.jit.script.
  auto g = parse(R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %n : int = aten::size(%x, %zero)
  %m : int = aten::add(%n, %one)
  %k : int = aten::floordiv(%m, %two)
  %neg : int = aten::neg(%k)
  %mone : int = prim::Constant[value=-1]()
  %l : int[] = prim::ListConstruct(%neg, %mone)
  %y : Tensor = aten::add(%x, %x, %one)
  %r : Tensor = aten::view(%y, %l)
  return (%r))IR");
  const auto m = tt::torchscript_importer::from_graph(*g, "sizes.ir");
  for (auto dialect : {tt::repro_dialect::python, tt::repro_dialect::torchscript}) {
    const auto src = tt::python_forward(m, dialect).forward_source;
    INFO(src);
    CHECK(src.find(" + 1)") != std::string::npos);
    CHECK(src.find(" // 2)") != std::string::npos);
    CHECK(src.find("(-v") != std::string::npos);
    CHECK(src.find("add(x0, x0, alpha=1)") != std::string::npos);  // the tensor add stays an operator call
    CHECK(src.find("aten.floordiv") == std::string::npos);
  }
}

}  // namespace tfg_test_torch_specialise
