// Localisation in the LibTorch worker, end to end in process: a test-only operator that returns
// wrong values only under one configuration, deep in a model of 150 nodes, is named as the
// culprit — by bisection of cuts for the graph executor and by an edge-by-edge trace for
// threads_1_vs_n — within 2 log2(n) + 2 configuration runs; the worker's skeleton keeps the
// positions of its import; the float64 reference keeps an explicit bf16 cast.
#include "tfg/campaign/localise.hpp"
#include "tfg/campaign/loop.hpp"
#include "tfg/campaign/skeleton.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/execute/worker.hpp"

#include <doctest/doctest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/library.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_localise {

namespace {

namespace tt = tfg::torch;
namespace tc = tfg::campaign;
namespace fs = std::filesystem;

// Wrong (x + 1) under one configuration only, the identity elsewhere.
at::Tensor wrong_in_graph(const at::Tensor& x) {
  return tt::running_configuration() == "graph_executor" ? x + 1 : x.clone();
}
at::Tensor wrong_in_threads(const at::Tensor& x) {
  return tt::running_configuration() == "threads_1_vs_n" ? x * 1.01 : x.clone();
}
// NaN under one configuration only.
at::Tensor nan_in_threads(const at::Tensor& x) {
  return tt::running_configuration() == "threads_1_vs_n" ? x * std::numeric_limits<double>::quiet_NaN() : x.clone();
}

TORCH_LIBRARY(tfg_test_fault, m) {
  m.def("wrong_in_graph(Tensor x) -> Tensor", &wrong_in_graph);
  m.def("wrong_in_threads(Tensor x) -> Tensor", &wrong_in_threads);
  m.def("nan_in_threads(Tensor x) -> Tensor", &nan_in_threads);
}

/// A 150-node model: sin / neg / add over a [4, 8] input, with `fault` at node 130.
tt::model deep_model(const std::string& fault) {
  std::ostringstream ir;
  ir << "graph(%x0 : Tensor):\n  %c : float = prim::Constant[value=0.5]()\n  %one : int = prim::Constant[value=1]()\n";
  for (int i = 0; i < 150; ++i) {
    const std::string in = "%x" + std::to_string(i), out = "%x" + std::to_string(i + 1);
    if (i == 130) ir << "  " << out << " : Tensor = tfg_test_fault::" << fault << "(" << in << ")\n";
    else if (i % 3 == 0) ir << "  " << out << " : Tensor = aten::sin(" << in << ")\n";
    else if (i % 3 == 1) ir << "  " << out << " : Tensor = aten::neg(" << in << ")\n";
    else ir << "  " << out << " : Tensor = aten::add(" << in << ", %c, %one)\n";
  }
  ir << "  return (%x150)\n";
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(ir.str(), g.get());
  return tt::torchscript_importer::from_graph(*g, "deep.ir");
}

struct in_process_worker {
  tt::worker_state st;
  int runs = 0;
  tc::run_outcome operator()(const tc::worker_request& r) {
    const auto reply = r.op == tc::request_op::run ? tt::handle_request(r, st) : tt::handle_localisation(r, st);
    for (const auto& l : reply.found) runs += l.runs;
    tc::exchange_result ex;
    ex.kind = tc::outcome::reply;
    ex.reply = tc::to_line(reply);
    return tc::make_outcome(ex);
  }
};

struct files {
  fs::path dir = fs::temp_directory_path() / ("tfg-localise-" + std::to_string(::getpid()));
  fs::path model = dir / "deep.pt", inputs = dir / "inputs.pt";
  explicit files(const tt::model& m) {
    fs::create_directories(dir);
    tt::save(m, model.string());
    tt::save_inputs({{at::randn({4, 8})}, {at::randn({4, 8})}}, inputs);
  }
  files(const tt::model& m, const std::vector<c10::IValue>& one_input) {
    fs::create_directories(dir);
    tt::save(m, model.string());
    tt::save_inputs({one_input}, inputs);
  }
  ~files() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

tc::localisation localise(const files& f, const std::string& a, const std::string& b, bool op_by_op, int& runs) {
  in_process_worker w;
  tc::worker_request base;
  base.model = f.model.string();
  base.inputs = f.inputs.string();
  base.configs = {a, b, "float64_reference"};
  auto d = base;
  d.op = tc::request_op::describe;
  const auto o = w(d);
  REQUIRE(o.reply);
  REQUIRE(o.reply->structure);
  const auto& sk = *o.reply->structure;
  const auto g = tc::build_graph(sk);
  tc::localiser<tc::skeleton_graph> loc(
      g, [&](tfg::graph::edge_id e) { return g.data(e); }, [&](tfg::graph::node_id n) { return g.data(n); });
  base.config_a = a;
  base.config_b = b;
  auto l = loc.run(base, tc::output_edges(g, sk, ""), op_by_op, false, std::ref(w));
  runs = w.runs;
  return l;
}

/// `f`'s model in an in-process worker, eager_op_by_op against float64_reference: whether some
/// verdict is of `kind`, and how many findings the campaign's localising attributor keeps
/// (`culprit` names the operator where localisation does not).
std::pair<bool, std::size_t> eager_vs_float64(const files& f, tfg::oracle::verdict_kind kind, const char* culprit) {
  in_process_worker w;
  tc::worker_request req;
  req.model = f.model.string();
  req.inputs = f.inputs.string();
  req.configs = {"eager_op_by_op", "float64_reference"};
  const auto o = w(req);
  REQUIRE(o.reply);
  bool seen = false;
  for (const auto& v : o.reply->verdicts) seen = seen || v.kind == kind;
  tt::backend b;
  tc::attribution fallback;
  fallback.culprit_op = culprit;
  return {seen,
          tc::findings_of(o, tc::localising_attributor<tt::backend>(req, fallback, b.configs(), std::ref(w))).size()};
}

}  // namespace

TEST_CASE("localise: a defect of the graph executor deep in a 150-node model is named, by bisection") {
  const auto m = deep_model("wrong_in_graph");
  REQUIRE(m.graph.node_count() >= 150);
  const files f(m);
  // The disagreement exists at the outputs.
  in_process_worker w;
  tc::worker_request run;
  run.model = f.model.string();
  run.inputs = f.inputs.string();
  run.configs = {"eager_op_by_op", "graph_executor", "float64_reference"};
  const auto reply = tt::handle_request(run, w.st);
  REQUIRE(reply.ok);
  bool found = false;
  for (const auto& v : reply.verdicts) found = found || (v.config_b == "graph_executor" && v.finding());
  REQUIRE(found);
  int runs = 0;
  const auto l = localise(f, "eager_op_by_op", "graph_executor", false, runs);
  INFO(l.note);
  REQUIRE(l.localised);
  CHECK(l.op == "tfg_test_fault::wrong_in_graph");
  CHECK(l.confirmed);
  CHECK(l.inputs == "f32 r2 contiguous");
  const double n = static_cast<double>(m.graph.node_count());
  MESSAGE("bisection: " << runs << " configuration runs, " << l.requests << " requests for " << n << " nodes");
  CHECK(runs == l.runs);
  CHECK(static_cast<double>(runs) <= 2 * std::log2(n) + 2);
}

TEST_CASE("localise: a cut with a tensor-list edge before a tensor edge compares each edge with its own value") {
  // x -> chunk (a list of two) -> cat -> sin: cut at the chunk and at the sin. The
  // configurations agree; pairing the cut's flattened outputs with its edges by position once
  // compared the chunk's list with its first tensor ("tensor lists of different length") and
  // the sin with the second chunk, and named aten::chunk (the tiny_mix demo's second finding,
  // really F1 at a relu).
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %zero : int = prim::Constant[value=0]()
  %l : Tensor[] = aten::chunk(%x, %two, %zero)
  %c : Tensor = aten::cat(%l, %zero)
  %s : Tensor = aten::sin(%c)
  return (%s))IR",
                        g.get());
  const auto m = tt::torchscript_importer::from_graph(*g, "chunk.ir");
  const auto& order = m.graph.topological_order();
  std::vector<tc::cut_edge> cut;
  for (std::uint32_t p = 0; p < order.size(); ++p) {
    const auto k = m.graph.data(order[p]).name();
    if (k == "aten::chunk" || k == "aten::sin") cut.push_back({p, -1});
  }
  REQUIRE(cut.size() == 2);
  const std::vector<c10::IValue> input{at::randn({4, 3})};
  tt::probe_cache cache;
  const auto out = tt::probe_cut(m, input, "eager_op_by_op", "graph_executor", cut, cache);
  INFO(out.divergence.message);
  CHECK(!out.divergence.finding());
  CHECK(out.diverges == std::vector<std::uint8_t>(2, 0));
}

/// x -> conv2d -> relu -> max_pool2d(dilation 2) -> relu -> conv2d: optimize_for_inference
/// hands the pooling to MKLDNN, which refuses dilation (docs/findings.md, F8's class).
tt::model dilated_pool_model() {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %w2 : Tensor):
  %one : int[] = prim::Constant[value=[1, 1]]()
  %two : int[] = prim::Constant[value=[2, 2]]()
  %k : int[] = prim::Constant[value=[3, 3]]()
  %g : int = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %c : Tensor = aten::conv2d(%x, %w, %b, %one, %one, %one, %g)
  %r : Tensor = aten::relu(%c)
  %m : Tensor = aten::max_pool2d(%r, %k, %one, %one, %two, %f)
  %r2 : Tensor = aten::relu(%m)
  %c2 : Tensor = aten::conv2d(%r2, %w2, %none, %one, %one, %one, %g)
  return (%c2))IR",
                        g.get());
  // The weights as constants (freezing folds them; MKLDNN wants constant weights).
  ::torch::jit::WithInsertPoint at(g->nodes().front());
  const at::Tensor w[] = {at::randn({8, 3, 3, 3}), at::randn({8}), at::randn({4, 8, 3, 3})};
  for (int i = 3; i >= 1; --i) {
    g->inputs()[i]->replaceAllUsesWith(g->insertConstant(w[i - 1]));
    g->eraseInput(i);
  }
  return tt::torchscript_importer::from_graph(*g, "dilated_pool.ir");
}

TEST_CASE("localise: an exception of frozen_optimized is named after the node its own traceback names") {
  const auto m = dilated_pool_model();
  std::int64_t pool = -1, p = 0;
  for (auto n : m.graph.topological_order()) {
    if (m.graph.data(n).name() == "aten::max_pool2d") pool = p;
    ++p;
  }
  REQUIRE(pool >= 0);
  const tt::input_set in{{at::randn({1, 3, 16, 16})}};
  REQUIRE(tt::run_config("eager_op_by_op", m, in).ok());
  const auto r = tt::run_config("frozen_optimized", m, in);
  REQUIRE_FALSE(r.ok());
  INFO(r.error);
  CHECK(r.failed_position == pool);
  CHECK(r.error.find("mkldnn_max_pool2d does not support dilation case") != std::string::npos);
  CHECK(r.error.find("<tfg model>") == std::string::npos);  // the traceback is read, not shown
  // Through the worker protocol and the campaign's localising attributor: the finding names
  // the pooling, with the state of its input.
  const files f(m, {at::randn({1, 3, 16, 16})});
  in_process_worker w;
  tc::worker_request req;
  req.model = f.model.string();
  req.inputs = f.inputs.string();
  req.configs = {"eager_op_by_op", "frozen_optimized", "float64_reference"};
  const auto o = w(req);
  REQUIRE(o.reply);
  tt::backend b;
  const auto found = tc::findings_of(o, tc::localising_attributor<tt::backend>(req, {}, b.configs(), std::ref(w)));
  REQUIRE(found.size() == 1);
  const auto& at = found[0].where;
  INFO(at.note);
  CHECK(at.localised);
  CHECK(at.culprit_op == "aten::max_pool2d");
  CHECK(at.position == pool);
  CHECK(at.inputs == "f32 r4 contiguous");
}

TEST_CASE("localise: a defect of an op-by-op configuration is named by one edge-by-edge trace") {
  const auto m = deep_model("wrong_in_threads");
  const files f(m);
  int runs = 0;
  const auto l = localise(f, "eager_op_by_op", "threads_1_vs_n", true, runs);
  INFO(l.note);
  REQUIRE(l.localised);
  CHECK(l.op == "tfg_test_fault::wrong_in_threads");
  CHECK_FALSE(l.conditioned);  // wrong on its own inputs: a defect, not ill-conditioning
  CHECK(l.requests == 1);
  CHECK(runs == 4);  // eager, threads, float64, and channels_last as the float32 peer
}

// x + (-1e4) then softmax over the row: float32 absorbs x to steps of 2^-10 in the add (within
// tolerance there, relative to 1e4), and the softmax of the sum, which cancels the -1e4, shows
// that rounding at 1e-3 relative: a numeric mismatch against float64 localised at the softmax.
// The softmax is accurate on the values it was given: ill-conditioning, dismissed as a finding.
TEST_CASE("localise: an operator accurate on its own inputs is ill-conditioning, not a finding") {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %m : float = prim::Constant[value=-10000.]()
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::add(%x, %m, %one)
  %z : Tensor = aten::softmax(%y, %one, %none)
  return (%z))IR",
                        g.get());
  const auto m = tt::torchscript_importer::from_graph(*g, "masked_softmax.ir");
  const auto input = std::vector<c10::IValue>{at::randn({4, 16})};
  const auto l = tt::trace_localise(m, input, "eager_op_by_op", "float64_reference");
  INFO(l.note);
  REQUIRE(l.position >= 0);
  CHECK(l.op == "aten::softmax");
  CHECK(l.divergence.kind == tfg::oracle::verdict_kind::numeric_mismatch);
  CHECK(l.conditioned);
  // End to end: the worker's verdict is a numeric mismatch, and findings_of drops it.
  const auto [mismatch, found] =
      eager_vs_float64(files(m), tfg::oracle::verdict_kind::numeric_mismatch, "aten::softmax");
  CHECK(mismatch);
  CHECK(found == 0);
}

TEST_CASE("localise: Inf where the exact value exceeds float32's range is not a finding; a kernel's NaN is") {
  // 1 / 1e-40 (a float32 denormal) is 1e40: Inf in float32, finite in float64; times 1e-30 the
  // output is Inf in float32 and 1e10 in float64. The division is correctly rounded in both.
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor, %d : Tensor):
  %s : float = prim::Constant[value=1e-30]()
  %y : Tensor = aten::div(%x, %d)
  %z : Tensor = aten::mul(%y, %s)
  return (%z))IR",
                        g.get());
  const auto m = tt::torchscript_importer::from_graph(*g, "overflow.ir");
  auto d = at::ones({2, 4});
  d.index_put_({0, 1}, 1e-40);  // a denormal in float32
  const auto input = std::vector<c10::IValue>{at::ones({2, 4}), d};
  const auto l = tt::trace_localise(m, input, "eager_op_by_op", "float64_reference");
  INFO(l.note);
  REQUIRE(l.position >= 0);
  // The division's 1e40 compares equal once the float64 value is seen in float32 (Inf); the
  // first output that differs is the product (Inf against 1e10), computed correctly from it.
  CHECK(l.op == "aten::mul");
  CHECK(l.divergence.kind == tfg::oracle::verdict_kind::nan_inf_mismatch);
  CHECK(l.conditioned);
  const auto [nonfinite, found] =
      eager_vs_float64(files(m, input), tfg::oracle::verdict_kind::nan_inf_mismatch, "aten::div");
  CHECK(nonfinite);  // the outputs do disagree
  CHECK(found == 0);

  // A kernel that returns NaN from finite inputs in one configuration stays a finding.
  auto g2 = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %y : Tensor = aten::sin(%x)
  %z : Tensor = tfg_test_fault::nan_in_threads(%y)
  %o : Tensor = aten::neg(%z)
  return (%o))IR",
                        g2.get());
  const auto m2 = tt::torchscript_importer::from_graph(*g2, "nan_kernel.ir");
  const auto l2 =
      tt::trace_localise(m2, std::vector<c10::IValue>{at::randn({2, 4})}, "eager_op_by_op", "threads_1_vs_n");
  INFO(l2.note);
  CHECK(l2.op == "tfg_test_fault::nan_in_threads");
  CHECK(l2.divergence.kind == tfg::oracle::verdict_kind::nan_inf_mismatch);
  CHECK_FALSE(l2.conditioned);
}

TEST_CASE("autograd: a gradient beyond float32's range is float32's overflow, not a finding") {
  // Issue 43's efficientad case: a 1e-40 divisor (a float32 denormal). The forward stays in
  // range (x * 1e-30 / 1e-40 = 1e10), but the gradient through the division is 1/1e-40 = 1e40:
  // Inf in float32, finite in float64. autograd_eager and autograd_float64 disagree on Inf, and
  // float32 is right to overflow.
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor, %d : Tensor):
  %s : float = prim::Constant[value=1e-30]()
  %y : Tensor = aten::mul(%x, %s)
  %z : Tensor = aten::div(%y, %d)
  return (%z))IR",
                        g.get());
  const auto m = tt::torchscript_importer::from_graph(*g, "grad_overflow.ir");
  auto d = at::ones({2, 4});
  d.index_put_({0, 1}, 1e-40);
  const auto input = std::vector<c10::IValue>{at::ones({2, 4}), d};
  const auto why = tt::gradient_range_exceeded(m, input);
  INFO(why);
  CHECK(why.find("the float64 gradient at position") == 0);
  CHECK(why.find("aten::mul") != std::string::npos);  // the gradient of %y is 1/d
  CHECK(why.find("beyond Float's largest") != std::string::npos);
  // The same model on an ordinary divisor stays in range.
  CHECK(tt::gradient_range_exceeded(m, {at::ones({2, 4}), at::ones({2, 4})}).empty());
  // End to end: the worker does not call the pair's disagreement a finding.
  const files f(m, input);
  in_process_worker w;
  tc::worker_request req;
  req.model = f.model.string();
  req.inputs = f.inputs.string();
  req.configs = {"eager_op_by_op", "autograd_eager", "autograd_float64"};
  const auto o = w(req);
  REQUIRE(o.reply);
  REQUIRE(o.reply->ok);
  for (const auto& v : o.reply->verdicts) {
    INFO(v.message);
    CHECK_FALSE(v.finding());
  }
  bool ran = false;
  for (const auto& r : o.reply->results) ran = ran || (r.config == "autograd_float64" && r.ok);
  CHECK(ran);
}

TEST_CASE("has_nonfinite_parameters: a value computed from constants alone counts (freezing folds it)") {
  auto model_of = [](const std::string& weight_op, bool from_input) {
    const std::string src = from_input ? "%x" : "%w";
    auto g = std::make_shared<::torch::jit::Graph>();
    ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[2, 3]]()
  %w : Tensor = aten::ones(%s, %none, %none, %none, %none)
  %zero : float = prim::Constant[value=0.]()
  %z : Tensor = aten::mul()IR" +
                              src + R"IR(, %zero)
  %v : Tensor = )IR" + weight_op +
                              R"IR((%z)
  %y : Tensor = aten::mul(%x, %v)
  return (%y))IR",
                          g.get());
    return tt::torchscript_importer::from_graph(*g, "cone.ir");
  };
  CHECK(tt::has_nonfinite_parameters(model_of("aten::reciprocal", false)));       // 1 / 0 from a constant
  CHECK_FALSE(tt::has_nonfinite_parameters(model_of("aten::exp", false)));        // finite
  CHECK_FALSE(tt::has_nonfinite_parameters(model_of("aten::reciprocal", true)));  // reads the input
}

// swinir in an hour's fuzz (issue 43): conv(x) / z with z a 0-dim zero computed from constants
// (softshrink(softshrink(1))). Eager gives -Inf; freezing folds the division into the conv's
// weights (w / 0) and gives NaN, and so does Inductor's binary folding. The divisor is a
// non-finite parameter in all but name.
TEST_CASE("has_nonfinite_parameters: a division by a constant-computed zero counts (folding makes w / 0)") {
  auto model_of = [](const std::string& start, const std::string& divisor_src) {
    auto g = std::make_shared<::torch::jit::Graph>();
    ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %s : int[] = prim::Constant[value=[1]]()
  %half : float = prim::Constant[value=0.5]()
  %start : float = prim::Constant[value=)IR" +
                              start + R"IR(]()
  %one : Tensor = aten::full(%s, %start, %none, %none, %none, %none)
  %a : Tensor = aten::softshrink(%one, %half)
  %z : Tensor = aten::softshrink(%a, %half)
  %y : Tensor = aten::div(%x, )IR" +
                              divisor_src + R"IR()
  return (%y))IR",
                          g.get());
    return tt::torchscript_importer::from_graph(*g, "div_by_folded.ir");
  };
  CHECK(tt::has_nonfinite_parameters(model_of("1.", "%z")));        // softshrink(softshrink(1)) = 0
  CHECK_FALSE(tt::has_nonfinite_parameters(model_of("3.", "%z")));  // = 2: no zero
  CHECK_FALSE(tt::has_nonfinite_parameters(model_of("1.", "%x")));  // a divisor from the input is not folded
}

// sigmoid(10 x) for x in 1.8..2.4 is exactly 1.0 in float32 and distinct in float64: top-k
// picks other elements in the two precisions, and everything gathered with its indices differs.
TEST_CASE("localise: a selection flip at near-tied scores is not a finding") {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %c : float = prim::Constant[value=10.]()
  %k : int = prim::Constant[value=2]()
  %zero : int = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %s0 : Tensor = aten::mul(%x, %c)
  %s : Tensor = aten::sigmoid(%s0)
  %vals : Tensor, %idx : Tensor = aten::topk(%s, %k, %zero, %t, %t)
  %y : Tensor = aten::index_select(%x, %zero, %idx)
  %z : Tensor = aten::mul(%y, %c)
  return (%z))IR",
                        g.get());
  const auto m = tt::torchscript_importer::from_graph(*g, "topk_gather.ir");
  const auto input = std::vector<c10::IValue>{at::tensor({1.8f, 2.0f, 2.2f, 2.4f, 1.9f})};
  // The two precisions do select differently here (else the test would show nothing).
  const auto f32 = tt::run_config("eager_op_by_op", m, {input});
  const auto f64 = tt::run_config("float64_reference", m, {input});
  REQUIRE(f32.ok());
  REQUIRE(f64.ok());
  const auto& a = f32.outputs[0][0].value.toTensor();
  const auto& b = f64.outputs[0][0].value.toTensor();
  REQUIRE(!at::allclose(a.to(at::kDouble), b.to(at::kDouble)));
  // The judge does not compare the selected values against float64 ...
  const auto v = tt::judge(f32, f64, {}, &m);
  INFO(v.message);
  CHECK(!tfg::oracle::is_finding(v.kind));
  CHECK(v.tie_dependent);
  // ... and between float32 configurations that chose differently (other rounding before the
  // top-k), the localiser calls the node that reads the differing indices a selection flip.
  const auto a_run = tt::snapshot_run("eager_op_by_op", m, input, 1);
  REQUIRE(a_run.ok());
  const auto traits = tt::edge_traits(m);
  tfg::graph::node_id gather = tfg::graph::no_node;
  tfg::graph::edge_id idx = tfg::graph::no_edge;
  for (auto n : m.graph.nodes())
    if (m.graph.data(n).name() == "aten::index_select") {
      gather = n;
      for (auto e : m.graph.inputs(n))
        if (auto p = m.graph.producer(e); p != tfg::graph::no_node && m.graph.data(p).name() == "aten::topk") idx = e;
    }
  REQUIRE(gather != tfg::graph::no_node);
  REQUIRE(idx != tfg::graph::no_edge);
  CHECK(traits[tfg::graph::index(idx)].selection);
  CHECK_FALSE(tt::reads_flipped_selection(m, gather, a_run, a_run, traits));
  auto b_run = a_run;
  b_run.at[tfg::graph::index(idx)] = c10::IValue(a_run.at[tfg::graph::index(idx)].toTensor().flip(0));
  CHECK(tt::reads_flipped_selection(m, gather, a_run, b_run, traits));
  // The index_select's float input is no index: changing it is not a flip.
  auto c_run = a_run;
  const auto xin = tfg::graph::index(m.graph.graph_inputs()[0]);
  c_run.at[xin] = c10::IValue(a_run.at[xin].toTensor() + 1);
  CHECK_FALSE(tt::reads_flipped_selection(m, gather, a_run, c_run, traits));
  // Without a selection in the cone the same difference is a finding: the rule is that narrow.
  auto g2 = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %c : float = prim::Constant[value=3.]()
  %y : Tensor = aten::mul(%x, %c)
  return (%y))IR",
                        g2.get());
  const auto m2 = tt::torchscript_importer::from_graph(*g2, "plain.ir");
  auto r2 = tt::run_config("eager_op_by_op", m2, {input});
  r2.outputs[0][0].value = c10::IValue(r2.outputs[0][0].value.toTensor() + 1.0f);  // a wrong result
  CHECK(tfg::oracle::is_finding(tt::judge(r2, tt::run_config("float64_reference", m2, {input}), {}, &m2).kind));
}

TEST_CASE("localise: the worker's skeleton has the positions of its import, and the backend's outputs") {
  auto m = tt::torchscript_importer().load(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt");
  const auto sk = tt::skeleton_of(m);
  const auto& order = m.graph.topological_order();
  REQUIRE(sk.nodes.size() == order.size());
  for (std::size_t i = 0; i < order.size(); ++i) CHECK(sk.nodes[i].kind == m.graph.data(order[i]).name());
  CHECK(sk.outputs.size() == m.graph.graph_outputs().size());
  const auto g = tc::build_graph(sk);
  CHECK(tc::output_edges(g, sk, "").size() == sk.outputs.size());
  CHECK(tc::output_edges(g, sk, "1").size() == 1);
}

TEST_CASE("config float64_reference keeps an explicit cast to bf16 (the cast rounds in the reference too)") {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %bf16 : int = prim::Constant[value=15]()
  %f32 : int = prim::Constant[value=6]()
  %b : Tensor = aten::to(%x, %bf16, %false, %false, %none)
  %y : Tensor = aten::to(%b, %f32, %false, %false, %none)
  %z : Tensor = aten::sin(%y)
  return (%z)
)IR",
                        g.get());
  const auto m = tt::torchscript_importer::from_graph(*g, "cast.ir");
  const tt::input_set in{{at::randn({64})}};
  const auto eager = tt::run_config("eager_op_by_op", m, in);
  const auto f64 = tt::run_config("float64_reference", m, in);
  REQUIRE(eager.ok());
  REQUIRE(f64.ok());
  // sin of bf16-rounded values in f64, against the same in f32: close, and within tolerance.
  const auto v = tt::judge(eager, f64, {}, &m);
  INFO(v.message);
  CHECK(v.kind <= tfg::oracle::verdict_kind::within_tolerance);
  // Without the cast kept, f64 would compute sin of the unrounded input: far beyond f32 rounding.
  const auto x = in[0][0].toTensor().to(at::kDouble);
  const auto unrounded = x.sin();
  CHECK((f64.outputs[0][0].value.toTensor() - unrounded).abs().max().item<double>() > 1e-4);
}

// A bfloat16 model casts back to its own dtype (Qwen's softmax in float32, then `.to(q.dtype)`):
// in the float64 reference that cast is the model's working precision, widened like float32's,
// else the next matmul mixes float64 and bfloat16 and the reference fails (qwen_decoder_bf16).
TEST_CASE("config float64_reference widens a bfloat16 model's casts to its own dtype") {
  ::torch::jit::Module mod("m");
  mod.register_parameter("w", at::randn({8, 8}).to(at::kBFloat16), false);
  mod.define(R"(
def forward(self, x):
    a = torch.matmul(x, self.w)
    p = torch.softmax(a.float(), -1).to(15)  # torch.bfloat16, a constant as in a trace
    return torch.matmul(p, self.w)
)");
  mod.eval();
  const auto m = tt::torchscript_importer::from_module(mod, "bf16.pt");
  const bool works_in_bf16 = tt::working_dtype(m) == at::kBFloat16;
  CHECK(works_in_bf16);
  const tt::input_set in{{at::randn({2, 8}).to(at::kBFloat16)}};
  const auto eager = tt::run_config("eager_op_by_op", m, in);
  const auto f64 = tt::run_config("float64_reference", m, in);
  INFO(f64.error);
  REQUIRE(eager.ok());
  REQUIRE(f64.ok());
  const bool double_out = f64.outputs[0][0].value.toTensor().scalar_type() == at::kDouble;
  CHECK(double_out);
  const auto v = tt::judge(eager, f64, {}, &m);
  INFO(v.message);
  CHECK(!tfg::oracle::is_finding(v.kind));
}

}  // namespace tfg_test_torch_localise
