// The LibTorch backend on the committed default seed and on hand-written IR: import, op-by-op
// execution, F(e) profiling, export, and the errors a user sees for bad models.
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/torch.hpp"
#include "tfg/torch/import/trace_labels.hpp"

#include <doctest/doctest.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_torch_backend {

namespace {

namespace graph = tfg::graph;
namespace state = tfg::state;
namespace tt = tfg::torch;
namespace fs = std::filesystem;

const std::string tiny_path = std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt";
const std::string tiny_inputs = std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.inputs.pt";

bool same_value(const c10::IValue& a, const c10::IValue& b) { return tt::ivalue::max_abs_diff(a, b) == 0; }

std::map<std::string, int> kinds(const tt::model& m) {
  std::map<std::string, int> k;
  for (auto n : m.graph.nodes()) ++k[m.graph.data(n).name()];
  return k;
}

tt::model from_ir(const std::string& ir) {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(ir, g.get());
  return tt::torchscript_importer::from_graph(*g, "test.ir");
}

std::string import_error(const std::string& ir) {
  try {
    (void)from_ir(ir);
  } catch (const tt::model_error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("importing the default seed gives a valid TFG with list plumbing folded away") {
  auto m = tt::torchscript_importer().load(tiny_path);
  CHECK(m.graph.check().empty());
  auto k = kinds(m);
  CHECK(k.count("prim::ListConstruct") == 0);
  CHECK(k.count("prim::ListUnpack") == 0);
  CHECK(k.count("prim::TupleConstruct") == 0);
  CHECK(k["prim::Constant"] > 0);  // weights are tensor edges produced by constant nodes
  CHECK(m.graph.graph_inputs().size() == 1);
  CHECK(m.output.how == tt::output_tree::form::tuple);
  CHECK(m.output.items.size() == 2);
  // Some node has several tensor outputs (an unpacked chunk/split) and some edge several consumers.
  bool multi_output = false, multi_consumer = false;
  for (auto n : m.graph.nodes()) multi_output |= m.graph.outputs(n).size() > 1;
  for (auto e : m.graph.edges()) multi_consumer |= m.graph.consumers(e).size() > 1;
  CHECK(multi_output);
  CHECK(multi_consumer);
  // Every non-constant node resolved a kernel.
  for (auto n : m.graph.nodes())
    if (m.graph.data(n).kind != c10::prim::Constant)
      CHECK_MESSAGE(m.graph.data(n).op.has_value(), tt::describe(m.graph, n));
}

TEST_CASE("op-by-op execution equals module.forward bit for bit") {
  auto module = ::torch::jit::load(tiny_path);
  module.eval();
  auto m = tt::torchscript_importer::from_module(module, tiny_path);
  auto inputs = tt::load_inputs(tiny_inputs);
  REQUIRE(inputs.size() >= 2);
  tt::executor keep(m), lean(m, {c10::Device(c10::kCPU), true});
  for (const auto& x : inputs) {
    auto ref = module.forward(x);
    CHECK(same_value(keep.run(x), ref));
    CHECK(same_value(lean.run(x), ref));
  }
  SUBCASE("a wrong number of inputs is reported, not crashed on") { CHECK_THROWS_AS(keep.run({}), tt::model_error); }
}

TEST_CASE("the profiler records F(e) that matches the tensors") {
  auto m = tt::torchscript_importer().load(tiny_path);
  auto inputs = tt::load_inputs(tiny_inputs);
  tt::profiler prof;
  auto p = prof.run(m, inputs);
  REQUIRE(p.runs == inputs.size());
  // Reference: what the tensors look like right when they are produced (in-place operators
  // change some of them later, and F(e) is the state at production).
  struct seen {
    std::vector<std::int64_t> shape, strides;
    bool contiguous;
    double min, max;
    const void* storage;
  };
  std::map<std::size_t, seen> at_production;
  tt::executor ex(m);
  ex.run(inputs[0], [&](graph::node_id, std::span<const graph::edge_id> outs) {
    for (auto e : outs) {
      const auto& v = ex.value(e);
      if (!v.isTensor()) continue;
      const auto& t = v.toTensor();
      const bool numbers = t.is_floating_point() && t.numel() > 0;
      at_production[graph::index(e)] = {std::vector<std::int64_t>(t.sizes().begin(), t.sizes().end()),
                                        std::vector<std::int64_t>(t.strides().begin(), t.strides().end()),
                                        t.is_contiguous(),
                                        numbers ? t.min().item<double>() : 0.0,
                                        numbers ? t.max().item<double>() : 0.0,
                                        t.storage().unsafeGetStorageImpl()};
    }
  });
  std::size_t aliased = 0, non_contiguous = 0, tensors = 0;
  std::map<std::uint32_t, const void*> storage_of_group;
  for (auto e : m.graph.edges()) {
    const auto& runs = p.edges[graph::index(e)].runs;
    REQUIRE(runs.size() == inputs.size());
    const auto& s = runs[0];
    if (m.graph.data(e).kind != state::value_kind::tensor) continue;
    ++tensors;
    REQUIRE(at_production.count(graph::index(e)) == 1);
    const auto& ref = at_production[graph::index(e)];
    CHECK(s.shape == ref.shape);
    CHECK(s.strides == ref.strides);
    CHECK(s.contiguous == ref.contiguous);
    if (s.type == state::dtype::f32 && s.numel > 0) {
      CHECK(s.numbers.max == doctest::Approx(ref.max));
      CHECK(s.numbers.min == doctest::Approx(ref.min));
    }
    aliased += s.aliased();
    non_contiguous += !s.contiguous;
    // Storage groups: two edges share a group exactly when their tensors share storage.
    auto [it, fresh] = storage_of_group.emplace(s.storage_group, ref.storage);
    if (!fresh) CHECK(it->second == ref.storage);
  }
  CHECK(tensors > 20);
  CHECK(aliased >= 2);         // views and in-place results share storage
  CHECK(non_contiguous >= 1);  // a transpose
  // The same input twice gives the same content hashes; another input changes the network input's hash.
  auto again = prof.run(m, {inputs[0]});
  auto in0 = m.graph.graph_inputs()[0];
  CHECK(again.edges[graph::index(in0)].runs[0].numbers.content_hash ==
        p.edges[graph::index(in0)].runs[0].numbers.content_hash);
  CHECK(p.edges[graph::index(in0)].runs[1].numbers.content_hash !=
        p.edges[graph::index(in0)].runs[0].numbers.content_hash);
  // Dispatcher events: every run saw the convolution.
  for (const auto& trace : p.traces) {
    std::set<std::string> names;
    for (const auto& ev : trace) names.insert(prof.labels().names[ev.label]);
    CHECK(names.count("aten::_convolution") == 1);
    CHECK(std::any_of(trace.begin(), trace.end(), [](const tt::event& ev) { return ev.depth > 0; }));
  }
}

TEST_CASE("trace labels: the interned sequence is the label text of every event, repeats collapsed") {
  auto m = tt::torchscript_importer().load(tiny_path);
  auto inputs = tt::load_inputs(tiny_inputs);
  tt::profiler prof;
  auto p = prof.run(m, inputs);
  REQUIRE(p.traces.size() >= 2);
  const auto& names = prof.labels();
  // The reference: each event's label as text, from its caller on the stack (the documented rule).
  std::vector<std::string> text;
  auto reference = [&](const tt::event_trace& trace, const std::string& tag) {
    std::vector<std::string> stack;
    for (const auto& e : trace) {
      if (stack.size() > e.depth) stack.resize(e.depth);
      auto label =
          tt::event_label(tag, e.depth > 0 && !stack.empty() ? stack.back() : std::string(), names.names[e.label]);
      stack.push_back(names.names[e.label]);
      if (text.empty() || text.back() != label) text.push_back(std::move(label));
    }
  };
  tt::label_sequence seq;
  for (std::size_t i = 0; i < p.traces.size(); ++i) {
    const std::string tag = i == 0 ? "eager" : "again";
    seq.append(p.traces[i], names, tag);
    reference(p.traces[i], tag);
  }
  CHECK(seq.text() == text);
  const auto got = seq.summary(), want = tt::summarise_labels(text);
  CHECK(got.labels == want.labels);
  CHECK(got.transitions == want.transitions);
  // What the labels say: operators entered by the executor, the kernels they chose, per tag.
  CHECK(std::count(got.labels.begin(), got.labels.end(), "eager:op:aten::_convolution") == 1);
  CHECK(std::any_of(got.labels.begin(), got.labels.end(),
                    [](const std::string& l) { return l.rfind("eager:nested:aten::_convolution>", 0) == 0; }));
  CHECK(std::count(got.labels.begin(), got.labels.end(), "again:op:aten::_convolution") == 1);
  CHECK(tt::event_label("g", "", "prim::TensorExprGroup") == "g:jit:prim::TensorExprGroup");
  CHECK(tt::event_label("g", "aten::conv2d", "aten::contiguous") == "g:copy:aten::conv2d>aten::contiguous");
  CHECK(tt::event_label("g", "aten::mul", "MulBackward0") == "g:autograd:MulBackward0");
}

TEST_CASE("tensor_state_of: numeric summary, layout and memory format") {
  auto t = ::torch::tensor({1.0f, -2.0f, 0.0f, NAN, INFINITY, 3.0f});
  auto s = tt::tensor_state_of(t);
  CHECK(s.numbers.nan_count == 1);
  CHECK(s.numbers.inf_count == 1);
  CHECK(s.numbers.zero_count == 1);
  CHECK(s.numbers.min == -2.0);
  CHECK(s.numbers.max == 3.0);
  CHECK(s.numbers.mean == doctest::Approx(0.5));
  CHECK_FALSE(s.numbers.finite());
  CHECK(s.type == state::dtype::f32);
  auto x = ::torch::randn({1, 3, 4, 4}).contiguous(c10::MemoryFormat::ChannelsLast);
  CHECK(tt::tensor_state_of(x).format == state::memory_format::channels_last);
  auto tr = ::torch::randn({3, 5}).t();
  auto st = tt::tensor_state_of(tr);
  CHECK_FALSE(st.contiguous);
  CHECK(st.format == state::memory_format::strided);
  CHECK(st.strides == std::vector<std::int64_t>{1, 5});
  // Equal values, different layouts: the content hash is over the logical element sequence.
  CHECK(tt::tensor_state_of(tr).numbers.content_hash == tt::tensor_state_of(tr.contiguous()).numbers.content_hash);
  auto i = ::torch::arange(10);
  auto si = tt::tensor_state_of(i);
  CHECK(si.type == state::dtype::i64);
  CHECK(si.numbers.max == 9);
  CHECK(si.numbers.zero_count == 1);
}

TEST_CASE("numeric summary of a large float tensor agrees with ATen, whatever the NaN/Inf placement") {
  for (std::int64_t n : {7, 8, 9, 8191, 8192, 8200, 100003}) {
    CAPTURE(n);
    auto t = ::torch::randn({n}, at::TensorOptions().dtype(c10::kFloat));
    if (n > 100) {
      t[3] = NAN;
      t[n - 1] = INFINITY;
      t[n / 2] = -INFINITY;
      t[n / 3] = 0.0f;
    }
    auto s = tt::tensor_state_of(t).numbers;
    auto finite = t.isfinite();
    auto f = t.masked_select(finite);
    CHECK(s.nan_count == static_cast<std::uint64_t>(t.isnan().sum().item<std::int64_t>()));
    CHECK(s.inf_count == static_cast<std::uint64_t>(t.isinf().sum().item<std::int64_t>()));
    CHECK(s.zero_count == static_cast<std::uint64_t>((t == 0).sum().item<std::int64_t>()));
    CHECK(s.min == f.min().item<double>());
    CHECK(s.max == f.max().item<double>());
    CHECK(s.mean == doctest::Approx(f.to(c10::kDouble).mean().item<double>()).epsilon(1e-5));
  }
}

TEST_CASE("IR with run-time sizes, list arguments and tuple unpacking imports and runs") {
  auto m = from_ir(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %n : int = aten::size(%x, %zero)
  %shape : int[] = prim::ListConstruct(%n, %one, %one)
  %y : Tensor = aten::view(%x, %shape)
  %l : Tensor[] = aten::chunk(%x, %one, %zero)
  %a : Tensor = prim::ListUnpack(%l)
  %t : (Tensor, Tensor) = prim::TupleConstruct(%y, %a)
  %p : Tensor, %q : Tensor = prim::TupleUnpack(%t)
  %s : Tensor = aten::add(%p, %q, %one)
  return (%s)
)IR");
  CHECK(m.graph.check().empty());
  auto k = kinds(m);
  CHECK(k["aten::size"] == 1);
  CHECK(k.count("prim::TupleUnpack") == 0);
  tt::executor ex(m);
  auto x = ::torch::arange(6.0f);
  auto out = ex.run({x}).toTensor();
  CHECK(out.sizes() == c10::IntArrayRef({6, 1, 6}));  // [6,1,1] + [6] broadcasts
  CHECK(out.sum().item<float>() == doctest::Approx(2 * 15.0f * 6).epsilon(1e-6));
}

TEST_CASE("bad models give one clear error naming the file and the node") {
  SUBCASE("not a TorchScript file") {
    auto path = (fs::temp_directory_path() / "tfg_garbage.pt").string();
    std::ofstream(path) << "definitely not a zip archive";
    try {
      (void)tt::torchscript_importer().load(path);
      FAIL("no error");
    } catch (const tt::model_error& e) {
      CHECK(std::string(e.what()).find(path + ": cannot load TorchScript module") == 0);
    }
  }
  SUBCASE("an operator without a kernel") {
    auto msg = import_error(R"IR(
graph(%x : Tensor):
  %y : Tensor = foo::frobnicate(%x)
  return (%y)
)IR");
    CHECK(msg.find("test.ir") == 0);
    CHECK(msg.find("foo::frobnicate") != std::string::npos);
    CHECK(msg.find("unsupported operator") != std::string::npos);
  }
  SUBCASE("control flow (a scripted, not traced, model)") {
    auto msg = import_error(R"IR(
graph(%x : Tensor, %c : bool):
  %y : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      %z : Tensor = aten::neg(%x)
      -> (%z)
  return (%y)
)IR");
    CHECK(msg.find("prim::If") != std::string::npos);
    CHECK(msg.find("control flow, and no profiling inputs to specialise it on") != std::string::npos);
  }
  SUBCASE("a torch.export archive: read on 2.x, refused on 1.13 with the reason; never an empty message") {
    // An archive as torch.export.save begins one (archive_format = pt2), without a program.
    const auto path = (std::filesystem::temp_directory_path() / "tfg_no_program.pt2").string();
    {
      caffe2::serialize::PyTorchStreamWriter w(path);
      const std::string fmt = "pt2";
      w.writeRecord("archive_format", fmt.data(), fmt.size());
      w.writeEndOfFile();
    }
    CHECK(tt::looks_like_pt2(path));
    CHECK(tt::format_of(path) == "torch.export");
    std::string msg;
    try {
      (void)tt::load_any(path);
    } catch (const tt::model_error& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(msg.find(path + ": ") == 0);
#if TFG_HAS_PT2
    CHECK(msg.find("holds no program") != std::string::npos);
#else
    CHECK(msg.find("needs the LibTorch 2.x build") != std::string::npos);
#endif
    std::filesystem::remove(path);
  }
  SUBCASE("a failing operator at run time names the node") {
    auto m = from_ir(R"IR(
graph(%x : Tensor, %w : Tensor):
  %y : Tensor = aten::mm(%x, %w)
  return (%y)
)IR");
    tt::executor ex(m);
    try {
      ex.run({::torch::randn({2, 3}), ::torch::randn({4, 5})});
      FAIL("no error");
    } catch (const tt::model_error& e) {
      CHECK(std::string(e.what()).find("(aten::mm) failed") != std::string::npos);
    }
  }
  SUBCASE("a trace that baked a shape, profiled on inputs of another shape") {
    // What torch.jit.trace records for `x.view(int(x.shape[0]), -1)` traced at batch 1.
    auto m = from_ir(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %n : int = prim::Constant[value=48]()
  %shape : int[] = prim::ListConstruct(%one, %n)
  %y : Tensor = aten::view(%x, %shape)
  %z : Tensor = aten::relu(%y)
  return (%z)
)IR");
    tt::profiler prof;
    // Other values at the traced shape are fine: F(e) gets a state per input.
    auto ok = prof.run(m, {{::torch::randn({1, 3, 4, 4})}, {::torch::randn({1, 3, 4, 4})}});
    CHECK(ok.runs == 2);
    try {
      (void)prof.run(m, {{::torch::randn({1, 3, 4, 4})}, {::torch::randn({2, 3, 4, 4})}});
      FAIL("no error");
    } catch (const tt::model_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("test.ir: ") == 0);                                                  // the file
      CHECK(msg.find("aten::view") != std::string::npos);                                 // the node
      CHECK(msg.find("on profiling input 2 of 2 (2x3x4x4 Float)") != std::string::npos);  // the input
      CHECK(msg.find("input 1 is 1x3x4x4 Float") != std::string::npos);                   // against the traced shape
      CHECK(msg.find("trace it again for these shapes") != std::string::npos);
    }
  }
}

TEST_CASE("the profiler records one state per input when the inputs differ in shape") {
  auto m = from_ir(R"IR(
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %y : Tensor = aten::flatten(%x, %two, %three)
  %z : Tensor = aten::relu(%y)
  return (%z)
)IR");
  tt::profiler prof;
  auto p =
      prof.run(m, {{::torch::randn({1, 3, 4, 4})}, {::torch::randn({2, 3, 4, 4})}, {::torch::randn({1, 3, 2, 2})}});
  REQUIRE(p.runs == 3);
  REQUIRE(m.graph.graph_outputs().size() == 1);
  const auto& runs = p.edges[tfg::graph::index(m.graph.graph_outputs()[0])].runs;
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].shape == std::vector<std::int64_t>{1, 3, 16});
  CHECK(runs[1].shape == std::vector<std::int64_t>{2, 3, 16});
  CHECK(runs[2].shape == std::vector<std::int64_t>{1, 3, 4});
  CHECK(runs[1].numel == 96);
}

TEST_CASE("a mutation of a constant survives export and import: the importer folds no constant") {
  // What an operator applied to a weight looks like once exported: an op on a tensor constant.
  // Freezing would fold it back into a constant and the worker would run the seed instead.
  auto g = std::make_shared<::torch::jit::Graph>();
  auto* x = g->addInput("x");
  x->setType(c10::TensorType::get());
  auto* c = g->insertConstant(at::arange(3, at::kFloat));
  auto* neg = g->insert(c10::aten::neg, {c});
  g->registerOutput(g->insert(c10::aten::mul, {x, neg}));
  const auto m = tt::torchscript_importer::from_graph(*g, "test.ir");
  REQUIRE(kinds(m).count("aten::neg") == 1);
  const auto path = (fs::temp_directory_path() / "tfg_constant_mutation.pt").string();
  tt::save(m, path);
  const auto again = tt::torchscript_importer().load(path);
  CHECK(kinds(again) == kinds(m));
  tt::executor ex(again);
  const auto in = at::ones({3});
  CHECK(same_value(ex.run({c10::IValue(in)}), c10::IValue(-at::arange(3, at::kFloat))));
  fs::remove(path);
}

TEST_CASE("export writes a .pt that reloads and computes the same outputs") {
  auto m = tt::torchscript_importer().load(tiny_path);
  auto inputs = tt::load_inputs(tiny_inputs);
  auto path = (fs::temp_directory_path() / "tfg_tiny_roundtrip.pt").string();
  tt::save(m, path);
  auto reloaded = ::torch::jit::load(path);
  tt::executor ex(m);
  for (const auto& x : inputs) CHECK(same_value(reloaded.forward(x), ex.run(x)));
  // Importing the export again gives the same graph shape.
  auto again = tt::torchscript_importer().load(path);
  CHECK(kinds(again) == kinds(m));
  CHECK(again.graph.edge_count() == m.graph.edge_count());
}

}  // namespace tfg_test_torch_torch_backend
