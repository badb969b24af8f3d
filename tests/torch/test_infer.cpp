// Constraints decided before execution (infer.hpp): shapes and dtypes of a mutant inferred on
// meta tensors agree with what the mutant computes when it runs, and what they refute is
// illegal when it runs.
#include "tfg/match/candidates.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/torch/import/externs.hpp"
#include "tfg/torch/mutate/infer.hpp"
#include "tfg/torch/torch.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <iterator>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_infer {

namespace {
namespace tt = tfg::torch;
namespace tm = tfg::match;
namespace fs = std::filesystem;

/// A model from TorchScript IR text, named `name` in messages.
tt::model model_from_ir(const char* ir, const char* name) {
  auto g = std::make_shared<::torch::jit::Graph>();
  ::torch::jit::parseIR(ir, g.get());
  return tt::torchscript_importer::from_graph(*g, name);
}

/// x[n,8] -> linear(8->16) -> relu -> linear(16->4).
tt::model two_linears() {
  return model_from_ir(R"IR(
graph(%x : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor, %b2 : Tensor):
  %h : Tensor = aten::linear(%x, %w1, %b1)
  %r : Tensor = aten::relu(%h)
  %y : Tensor = aten::linear(%r, %w2, %b2)
  return (%y))IR",
                       "two_linears.ir");
}

tt::model conv_net() {
  return model_from_ir(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %c : Tensor = aten::_convolution(%x, %w, %b, %s, %s, %s, %f, %z, %one, %f, %f, %t, %t)
  %r : Tensor = aten::relu(%c)
  %k : int[] = prim::Constant[value=[2, 2]]()
  %p : Tensor = aten::max_pool2d(%r, %k, %k, %z, %s, %f)
  %fl : Tensor = aten::flatten(%p, %one, %one)
  return (%fl))IR",
                       "conv_net.ir");
}

struct seed {
  tt::model m;
  tt::input_set inputs;
  tt::profile prof;
};

/// A seed of `m` profiled on `inputs`.
seed profiled(tt::model m, tt::input_set inputs) {
  seed s{std::move(m), std::move(inputs), {}};
  s.prof = tt::profiler().run(s.m, s.inputs);
  return s;
}

/// Every retained candidate of `pool` on `s`: instantiated, checked before execution and
/// probed. Counts what inference decided and fails on any disagreement with the probe.
struct tally {
  std::size_t candidates = 0, refused = 0, compared = 0, dtype_compared = 0;
};
/// The states inference gave `mu`'s edges against those its probe recorded: shapes, and dtypes
/// where inference knows them. Every edge is compared (an edge the propagation left at the
/// seed's state must still have it); the counts are of the states inference computed (new or
/// changed edges).
void check_inferred_states(const seed& s, const tt::torch_match_adapter& a, const tt::mutant& mu,
                           const tt::inference& inf, const std::string& name, tally& t) {
  for (auto e : mu.graph_model.graph.edges()) {
    const auto& got = inf.prof.edges[tfg::graph::index(e)].runs;
    const auto& ran = mu.probe.edges[tfg::graph::index(e)].runs;
    if (got.empty() || ran.size() != got.size()) continue;
    const auto& was = a.profile(e).runs;
    for (std::size_t r = 0; r < got.size(); ++r) {
      if (got[r].kind != tfg::state::value_kind::tensor) continue;
      const bool computed = was.size() != got.size() || was[r].shape != got[r].shape || !got[r].type_known ||
                            was[r].type != got[r].type || !mu.graph_model.graph.alive(e) ||
                            tfg::graph::index(e) >= s.prof.edges.size();
      t.compared += computed;
      const std::string where = name + " at %" + mu.graph_model.graph.data(e).name;
      CHECK_MESSAGE(got[r].shape == ran[r].shape, where);
      if (got[r].type_known) {
        t.dtype_compared += computed;
        CHECK_MESSAGE(got[r].type == ran[r].type, where);
      }
    }
  }
}

tally agree_with_probe(seed& s, tm::pool& pool, tm::symbol_table& symbols, tt::extern_context& ctx) {
  tally t;
  tt::torch_match_adapter a(s.m, s.prof, symbols);
  ctx = {&s.m, &s.prof};
  tm::workspace ws;
  auto set = tm::construct(a, std::span<const tm::compiled_operator>(pool.operators), {.seed = 7});
  for (const auto& c : set.candidates) {
    const auto& op = pool.operators[c.op];
    const auto b = set.bound(c);
    auto made = tt::instantiate(s.m, a, op, b, symbols, ws, &s.inputs);
    if (!std::holds_alternative<tt::mutant>(made)) continue;
    auto& mu = std::get<tt::mutant>(made);
    ++t.candidates;
    const auto inf = tt::infer_mutant(mu, a);
    const auto before = tt::static_check(mu, a, op, b, symbols, pool.requirements, ws);
    const auto probe = tt::check_mutant(mu, a, op, b, symbols, pool.requirements, s.inputs, ws);
    if (before) {
      ++t.refused;
      const std::string msg = op.name + ": refused before execution but legal when run: " + before->message;
      CHECK_MESSAGE(probe.has_value(), msg);
      continue;
    }
    if (probe) continue;  // illegal: the probe may have stopped before every edge ran
    check_inferred_states(s, a, mu, inf, op.name, t);
  }
  return t;
}

/// Every candidate of the operators at `paths` on `s` (construction seeded with 1), decided as
/// a campaign decides it: instantiated (which must succeed), checked before execution, then
/// probed. Owns the pool the decisions point into.
struct decisions {
  struct one {
    const tm::compiled_operator* op;
    tfg::graph::edge_id anchor;
    tt::mutant mu;
    std::optional<tt::mutation_failure> before, probe;
  };
  tm::symbol_table symbols;
  std::shared_ptr<tt::extern_context> ctx = std::make_shared<tt::extern_context>();
  tm::pool pool;
  std::vector<one> all;
};

std::unique_ptr<decisions> decide_all(seed& s, const std::vector<fs::path>& paths) {
  auto d = std::make_unique<decisions>();
  d->pool = tm::load_pool(paths, d->symbols, tt::torch_externs(d->ctx));
  for (const auto& m : d->pool.diagnostics) MESSAGE(m);
  REQUIRE(d->pool.ok());
  tt::torch_match_adapter a(s.m, s.prof, d->symbols);
  *d->ctx = {&s.m, &s.prof};
  tm::workspace ws;
  auto set = tm::construct(a, std::span<const tm::compiled_operator>(d->pool.operators), {.seed = 1});
  for (const auto& c : set.candidates) {
    const auto& op = d->pool.operators[c.op];
    const auto b = set.bound(c);
    auto made = tt::instantiate(s.m, a, op, b, d->symbols, ws, &s.inputs);
    REQUIRE(std::holds_alternative<tt::mutant>(made));
    auto& mu = std::get<tt::mutant>(made);
    auto before = tt::static_check(mu, a, op, b, d->symbols, d->pool.requirements, ws);
    auto probe = tt::check_mutant(mu, a, op, b, d->symbols, d->pool.requirements, s.inputs, ws);
    d->all.push_back({&op, c.anchor, std::move(mu), std::move(before), std::move(probe)});
  }
  return d;
}

fs::path write_operators(const std::string& name, const std::string& text) {
  auto dir = fs::temp_directory_path() / ("tfg-infer-" + std::to_string(::getpid()) + "-" + name);
  fs::create_directories(dir);
  std::ofstream(dir / (name + ".tfg")) << text;
  return dir;
}

/// A test operator that halves a rank-4 map with a 2x2 stride-2 pool and reverts it to the
/// input's shape with `revert` (replacement lines that define %r from %p), so the amounts
/// depend on the map's size.
std::string halve_operator(const std::string& name, const std::string& doc, const std::string& revert) {
  return "tfg 1\n\n/// " + doc + "\noperator " + name + R"(
  object operator  primitive insertion  origin tfg "test"
  anchor %x
{
  require input { rank(%x) == 4 && is_floating(%x) && dim(%x, 2) >= 2 && dim(%x, 3) >= 2 }
  replace {
    %p = aten::max_pool2d(%x, [2, 2], [2, 2], [0, 0], [1, 1], false)
)" + revert +
         R"(    rewire consumers(%x) -> %r
  }
  require output { shape(%r) == shape(%x) && dtype(%r) == dtype(%x) }
  example match {
    graph(%a: f32[1,2,4,4]):
      %x = aten::relu(%a)
      %o = aten::neg(%x)
      return (%o)
    anchor %x
  }
  example no_match rejected_by(input) {
    graph(%a: f32[4,4]):
      %x = aten::relu(%a)
      return (%x)
    anchor %x
  }
}
)";
}

/// conv_net profiled on an 8x8 input of batch 1 and a 6x6 one of batch 2.
seed conv_net_two_sizes() {
  tt::input_set inputs;
  inputs.push_back({at::randn({1, 3, 8, 8}), at::randn({4, 3, 3, 3}) * 0.3, at::randn({4})});
  inputs.push_back({at::randn({2, 3, 6, 6}), at::randn({4, 3, 3, 3}) * 0.3, at::randn({4})});
  return profiled(conv_net(), std::move(inputs));
}

}  // namespace

TEST_CASE("inferred shapes and dtypes agree with the probe on every candidate of the pool") {
  tm::symbol_table symbols;
  auto ctx = std::make_shared<tt::extern_context>();
  auto pool = tm::load_pool({fs::path(TFG_SOURCE_DIR) / "operators"}, symbols, tt::torch_externs(ctx));
  REQUIRE(pool.ok());
  seed mix{tt::torchscript_importer().load(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt"),
           tt::load_inputs(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.inputs.pt"),
           {}};
  mix.prof = tt::profiler().run(mix.m, mix.inputs);
  const auto t1 = agree_with_probe(mix, pool, symbols, *ctx);
  seed conv{conv_net(), {}, {}};
  for (int n : {1, 2}) conv.inputs.push_back({at::randn({n, 3, 8, 8}), at::randn({4, 3, 3, 3}) * 0.3, at::randn({4})});
  conv.prof = tt::profiler().run(conv.m, conv.inputs);
  const auto t2 = agree_with_probe(conv, pool, symbols, *ctx);
  MESSAGE("tiny_mix: " << t1.candidates << " mutants, " << t1.refused << " refused before execution, " << t1.compared
                       << " inferred states compared (" << t1.dtype_compared << " with dtype); conv_net: "
                       << t2.candidates << " mutants, " << t2.refused << " refused, " << t2.compared << " compared");
  // The comparison is not vacuous: inference reaches the values of most mutants.
  CHECK(t1.compared > 100);
  CHECK(t2.compared > 20);
  // Convolutions have no meta kernel in LibTorch 1.13: their outputs are still inferred
  // (TorchScript's shape function), with the dtype left undecided there.
  CHECK(t2.compared > t2.dtype_compared);
}

TEST_CASE("a consumer rewired to a value of the wrong width is refused before execution, at output") {
  const auto dir = write_operators("bypass", R"(tfg 1

/// A layer bypass with no input constraint: only inference can see that it is illegal.
operator test_bypass_linear
  object operator  primitive deletion  origin tfg "test"
  anchor %y
{
  pattern { %y = aten::linear(%x, ...) }
  replace {
    rewire consumers(%y) -> %x
    delete %y
  }
  example match {
    graph(%a: f32[2,3], %w: f32[3,3]):
      %y = aten::linear(%a, %w, none)
      return (%y)
    anchor %y
  }
  example no_match rejected_by(pattern) {
    graph(%a: f32[2,3]):
      %y = aten::relu(%a)
      return (%y)
    anchor %y
  }
}

/// A replacement whose own output has the wrong shape: refuted by its output constraint.
operator test_sum_rows
  object operator  primitive update  origin tfg "test"
  anchor %y
{
  pattern { %y = aten::relu(%x) }
  replace {
    %s = aten::sum(%x, [1], false, none)
    rewire consumers(%y) -> %s
  }
  require output { shape(%s) == shape(%y) }
  example match {
    graph(%a: f32[2,3]):
      %y = aten::relu(%a)
      return (%y)
    anchor %y
  }
  example no_match rejected_by(pattern) {
    graph(%a: f32[2,3]):
      %y = aten::neg(%a)
      return (%y)
    anchor %y
  }
}
)");
  seed s{two_linears(), {}, {}};
  for (int n : {4, 2})
    s.inputs.push_back({at::randn({n, 8}), at::randn({16, 8}), at::randn({16}), at::randn({4, 16}), at::randn({4})});
  s.prof = tt::profiler().run(s.m, s.inputs);
  const auto d = decide_all(s, {dir});
  std::size_t bypass_refused = 0, bypass_accepted = 0, sum_refused = 0;
  for (const auto& [op, anchor, mu, before, probe] : d->all) {
    if (op->name == "test_bypass_linear") {
      // Bypassing the first linear feeds 8 features to a linear that takes 16; bypassing the
      // second returns the 16 features of relu: legal (nothing reads the output).
      if (before) {
        ++bypass_refused;
        CHECK(before->stage == tm::reject_stage::output);
        CHECK(before->message.find("aten::linear") != std::string::npos);
        CHECK(before->message.find("before execution") != std::string::npos);
        CHECK(probe.has_value());
      } else {
        ++bypass_accepted;
        CHECK_FALSE(probe.has_value());
      }
    } else {
      REQUIRE(before.has_value());
      ++sum_refused;
      CHECK(before->stage == tm::reject_stage::output);
      CHECK(probe.has_value());  // the probe agrees, after running it
    }
  }
  CHECK(bypass_refused == 1);
  CHECK(bypass_accepted == 1);
  CHECK(sum_refused == 1);
  fs::remove_all(dir);
}

TEST_CASE("only metadata conjuncts are refuted: a condition on values is left to the probe") {
  // refuted() skips conjuncts that read numbers; holds() still decides them.
  const auto dir = write_operators("values", R"(tfg 1

/// Claims the replacement is all zeros: only running it can tell.
operator test_claim_zeros
  object operator  primitive update  origin tfg "test"
  anchor %y
{
  pattern { %y = aten::relu(%x) }
  replace {
    %n = aten::neg(%x)
    rewire consumers(%y) -> %n
  }
  require output { shape(%n) == shape(%y) && max_abs(%n) == 0.0 }
  example match {
    graph(%a: f32[2,3]):
      %y = aten::relu(%a)
      return (%y)
    anchor %y
  }
  example no_match rejected_by(pattern) {
    graph(%a: f32[2,3]):
      %y = aten::neg(%a)
      return (%y)
    anchor %y
  }
}
)");
  seed s{two_linears(), {}, {}};
  s.inputs.push_back({at::randn({4, 8}), at::randn({16, 8}), at::randn({16}), at::randn({4, 16}), at::randn({4})});
  s.prof = tt::profiler().run(s.m, s.inputs);
  const auto d = decide_all(s, {dir});
  REQUIRE(d->all.size() == 1);
  CHECK_FALSE(d->all[0].before.has_value());
  const auto& probe = d->all[0].probe;
  REQUIRE(probe.has_value());
  CHECK(probe->stage == tm::reject_stage::output);
  fs::remove_all(dir);
}

TEST_CASE(
    "a shape revert is kept on inputs of several sizes when its amounts agree, refused before execution when not") {
  // tfg::revert_shape bakes the first input's pad amounts: right for every input when the
  // reverted value has the target's shape on each (a 3x3 pool shrinks any map by 2), wrong
  // when the amounts depend on the size (a stride-2 pool halves it: 8 -> 4, 6 -> 3).
  const auto dir =
      write_operators("revert", halve_operator("test_halve_with_revert",
                                               "Halves a map, then pads it back: the amounts depend on the map's size.",
                                               "    %r = tfg::revert_shape(%p, %x, 0.0)\n"));
  auto s = conv_net_two_sizes();
  const auto d =
      decide_all(s, {dir, fs::path(TFG_SOURCE_DIR) / "operators/operator/insert_pool_with_shape_revert.tfg"});
  std::size_t kept_legal = 0, halve_refused = 0, halve_legal = 0;
  for (const auto& [op, anchor, mu, before, probe] : d->all) {
    // The weight is an input too, of the same shape on both runs.
    const auto& runs = s.prof.edges[tfg::graph::index(anchor)].runs;
    REQUIRE(runs.size() == 2);
    const bool sizes_differ = runs[0].shape != runs[1].shape;
    const std::string where = op->name + " at %" + s.m.graph.data(anchor).name;
    if (op->name == "insert_pool_with_shape_revert") {
      CHECK_MESSAGE(!before.has_value(), where);
      CHECK_MESSAGE(!probe.has_value(), where);  // legal on both sizes
      kept_legal += sizes_differ && !before && !probe;
    } else {
      // Inference and the run agree, candidate by candidate.
      CHECK_MESSAGE(before.has_value() == probe.has_value(), where);
      if (before) {
        CHECK(sizes_differ);
        CHECK(before->stage == tm::reject_stage::output);
        ++halve_refused;
      } else {
        ++halve_legal;  // the weight (same size on both runs), or amounts that happen to agree
      }
    }
  }
  // conv_net's rank-4 float edges whose size differs between the runs (the input, the
  // convolution, relu, the pool, the flatten of size 1): the 3x3 pool's revert is kept and
  // legal on each; the halving one is refused before execution where 8 and 6 halve to
  // amounts that differ (the input, the convolution, relu), and kept where they agree.
  CHECK(kept_legal >= 4);
  CHECK(halve_refused >= 3);
  CHECK(halve_legal >= 1);
  fs::remove_all(dir);
}

TEST_CASE("a shape revert to sizes the mutant computes is right on inputs of every size") {
  // The halving pool of the test above, reverted with tfg::pad_or_crop to a list of sizes read
  // when the mutant runs (aten::size of the input; the channel count, the same on every input,
  // as a constant): the amounts are 4 on the 8x8 input and 3 on the 6x6 one, each right for
  // its own input, so nothing is refused and every mutant runs.
  const auto dir = write_operators(
      "revert_runtime",
      halve_operator("test_halve_with_runtime_revert",
                     "Halves a map, then pads it back to the size it had, read when the mutant runs.",
                     "    %h = aten::size(%x, 2)\n    %w = aten::size(%x, 3)\n"
                     "    %sz = prim::ListConstruct(dim(%x, 1), %h, %w)\n    %r = tfg::pad_or_crop(%p, %sz, 0.0)\n"));
  auto s = conv_net_two_sizes();
  const auto d = decide_all(s, {dir});
  std::size_t legal_where_sizes_differ = 0, candidates = 0;
  for (const auto& [op, anchor, mu, before, probe] : d->all) {
    const auto& runs = s.prof.edges[tfg::graph::index(anchor)].runs;
    REQUIRE(runs.size() == 2);
    const std::string where = op->name + " at %" + s.m.graph.data(anchor).name;
    ++candidates;
    CHECK_MESSAGE(!before.has_value(), where);
    CHECK_MESSAGE(!probe.has_value(), where);  // the mutant runs on both inputs, shapes restored
    legal_where_sizes_differ += runs[0].shape != runs[1].shape && !before && !probe;
  }
  // The input, the convolution, relu: 8 and 6 halve to 4 and 3, which revert_shape's baked
  // amounts could not serve (the test above refuses them); here each is legal.
  CHECK(legal_where_sizes_differ >= 3);
  CHECK(candidates >= 3);
  fs::remove_all(dir);
}

TEST_CASE("a mutant that writes a constant of the model in place is refused at instantiation") {
  // The supervisor's copy of the seed shares its constants with every mutant: a probe of such
  // a mutant changed the seed's weights for the rounds after it (mobilenet_v3_small, round 185
  // functional_to_inplace silu -> silu_ on a constant; round 186 reported its detach as a
  // metamorphic violation of 28.5).
  tm::symbol_table symbols;
  auto ctx = std::make_shared<tt::extern_context>();
  const auto dir = write_operators("writer", R"(tfg 1

/// Writes a view of a constant in place. (Its example match cannot hold: the fixture is
/// loaded, never checked with `ops check`.)
operator test_write_constant
  object operator  primitive insertion  origin tfg "test"
  anchor %w
{
  pattern { op(%w) == prim::Constant }
  require input { is_floating(%w) && numel(%w) > 1 }
  replace {
    %v = aten::alias(%w)
    %z = aten::relu_(%v)
    %c = aten::clone(%z, none)
    rewire consumers(%w) -> %c
  }
  example match {
    graph(%a: f32[2,3]):
      %w = aten::ones_like(%a, none, none, none, none, none)
      %y = aten::neg(%w)
      return (%y)
    anchor %w
  }
  example no_match rejected_by(internal) {
    graph(%a: f32[2,3]):
      %w = aten::ones_like(%a, none, none, none, none, none)
      %y = aten::neg(%w)
      return (%y)
    anchor %w
  }
}
)");
  auto pool = tm::load_pool({dir}, symbols, tt::torch_externs(ctx));
  for (const auto& d : pool.diagnostics) MESSAGE(d);
  REQUIRE(pool.ok());
  seed mix{tt::torchscript_importer().load(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt"),
           tt::load_inputs(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.inputs.pt"),
           {}};
  mix.prof = tt::profiler().run(mix.m, mix.inputs);
  tt::torch_match_adapter a(mix.m, mix.prof, symbols);
  *ctx = {&mix.m, &mix.prof};
  tm::workspace ws;
  auto set = tm::construct(a, std::span<const tm::compiled_operator>(pool.operators), {.seed = 1});
  REQUIRE(!set.candidates.empty());
  for (const auto& c : set.candidates) {
    const auto b = set.bound(c);
    auto made = tt::instantiate(mix.m, a, pool.operators[0], b, symbols, ws, &mix.inputs);
    REQUIRE(std::holds_alternative<tt::mutation_failure>(made));
    const auto& f = std::get<tt::mutation_failure>(made);
    CHECK(f.stage == tm::reject_stage::internal);
    CHECK(f.message.find("writes a constant") != std::string::npos);
    CHECK(f.message.find("aten::relu_") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("a traced size carried by a tensor (NumToTensor, floor_divide, Int) follows the mutation upstream") {
  // How tracing records window partitions (swin_v2_t, mask2former): the size goes through a
  // 0-dim tensor. Its metadata does not change with the size, so inference used to stop there
  // and the view read the seed's size: change_input_resolution on swin_v2_t was refused before
  // execution ("shape '[1, 4, 4, 4, 4, 48]' is invalid") and legal when run.
  const char* ir = R"IR(
graph(%x : Tensor, %k : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %four : int = prim::Constant[value=4]()
  %s : int[] = prim::Constant[value=[1, 1]]()
  %z : int[] = prim::Constant[value=[0, 0]]()
  %f : bool = prim::Constant[value=0]()
  %t : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::_convolution(%x, %k, %none, %s, %s, %s, %f, %z, %one, %f, %f, %t, %t)
  %n : int = aten::size(%y, %zero)
  %c : int = aten::size(%y, %one)
  %h : int = aten::size(%y, %two)
  %w : int = aten::size(%y, %three)
  %ht : Tensor = prim::NumToTensor(%h)
  %qt : Tensor = aten::floor_divide(%ht, %four)
  %q : int = aten::Int(%qt)
  %l : int[] = prim::ListConstruct(%n, %c, %q, %four, %w)
  %v : Tensor = aten::view(%y, %l)
  %r : Tensor = aten::relu(%v)
  return (%r))IR";
  seed s = profiled(model_from_ir(ir, "traced_size.ir"), {{at::randn({1, 3, 16, 16}), at::randn({2, 3, 3, 3})},
                                                          {at::randn({2, 3, 24, 24}), at::randn({2, 3, 3, 3})}});
  // The bundled operator, one scale at a time (a candidate draws one).
  std::ifstream in(fs::path(TFG_SOURCE_DIR) / "operators/tensor/change_input_resolution.tfg");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string scales = "{0.5, 0.75, 1.25, 1.5, 2.0}";
  REQUIRE(text.find(scales) != std::string::npos);
  std::size_t legal = 0, refused = 0;
  for (const std::string scale : {"0.5", "0.75", "1.25", "1.5", "2.0"}) {
    std::string one = text;
    one.replace(one.find(scales), scales.size(), "{" + scale + "}");
    const auto dir = write_operators("resolution", one);
    const auto d = decide_all(s, {dir});
    REQUIRE(d->all.size() == 1);
    const auto& [op, anchor, mu, before, probe] = d->all.front();
    // 16 and 24 rows become 8 and 12, 12 and 18, 20 and 30, 24 and 36, 32 and 48: the view
    // needs a multiple of 4 on both inputs. Inference and the run agree on each scale.
    CHECK_MESSAGE(before.has_value() == probe.has_value(),
                  "scale " << scale << ": " << (before ? before->message : "kept"));
    legal += !before && !probe;
    refused += before.has_value();
    if (!before && !probe) {
      const tt::torch_match_adapter a(s.m, s.prof, d->symbols);
      tally t;
      check_inferred_states(s, a, mu, tt::infer_mutant(mu, a), op->name, t);
    }
    fs::remove_all(dir);
  }
  // Scales 0.5, 1.5 and 2.0 keep both inputs' rows multiples of 4.
  CHECK(legal == 3);
  CHECK(refused == 2);
}

TEST_CASE("a traced size mixing a changed and an unchanged factor is left unknown, not the seed's") {
  // mask2former's window attention: reshape(x, [B * num_windows, ...]) where B changes with
  // the batch and num_windows (from H and W) does not. num_windows is read back from its
  // state (a meta tensor, value unknown); the product used to keep the seed's metadata, the
  // propagation stopped, and aten::Int gave the seed's B * num_windows: expand_input_batch
  // was refused before execution ("shape '[16, 16, 32]' is invalid") and legal when run.
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %three : int = prim::Constant[value=3]()
  %four : int = prim::Constant[value=4]()
  %y : Tensor = aten::relu(%x)
  %n : int = aten::size(%y, %zero)
  %nt : Tensor = prim::NumToTensor(%n)
  %h : int = aten::size(%y, %two)
  %ht : Tensor = prim::NumToTensor(%h)
  %q : Tensor = aten::floor_divide(%ht, %four)
  %m : Tensor = aten::mul(%nt, %q)
  %mi : int = aten::Int(%m)
  %c : int = aten::size(%y, %one)
  %w : int = aten::size(%y, %three)
  %l : int[] = prim::ListConstruct(%mi, %c, %four, %w)
  %v : Tensor = aten::reshape(%y, %l)
  %r : Tensor = aten::relu(%v)
  return (%r))IR";
  seed s = profiled(model_from_ir(ir, "traced_product.ir"), {{at::randn({1, 3, 16, 8})}, {at::randn({2, 3, 16, 8})}});
  const auto d = decide_all(s, {fs::path(TFG_SOURCE_DIR) / "operators/tensor/expand_input_batch.tfg"});
  REQUIRE(d->all.size() == 1);
  const auto& [op, anchor, mu, before, probe] = d->all.front();
  CHECK_MESSAGE(!probe.has_value(), (probe ? probe->message : std::string()));
  CHECK_MESSAGE(!before.has_value(), (before ? before->message : std::string()));
}

TEST_CASE("a view or reshape rewrite forwards the seed's own size list, so it holds for every profiling input") {
  // The seed computes its view size from the batch (aten::size -> ListConstruct), and the two
  // profiling inputs have batches 1 and 2. A replacement that wrote shape(%y), the profiled
  // size, would be right for one input only: refused ("one mutant for every record"). With
  // arg(%y, 1) the new reshape / view reads the seed's list, edges and constants as they are.
  const char* ir = R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %m1 : int = prim::Constant[value=-1]()
  %y : Tensor = aten::relu(%x)
  %n : int = aten::size(%y, %zero)
  %l : int[] = prim::ListConstruct(%n, %m1)
  %v : Tensor = aten::view(%y, %l)
  %r : Tensor = aten::sigmoid(%v)
  %three : int = prim::Constant[value=3]()
  %four : int = prim::Constant[value=4]()
  %l2 : int[] = prim::ListConstruct(%n, %three, %four)
  %w : Tensor = aten::reshape(%r, %l2)
  %o : Tensor = aten::neg(%w)
  return (%o))IR";
  seed s = profiled(model_from_ir(ir, "dynamic_view.ir"), {{at::randn({1, 3, 4})}, {at::randn({2, 3, 4})}});
  const auto d = decide_all(s, {fs::path(TFG_SOURCE_DIR) / "operators/operator/view_to_reshape_clone.tfg",
                                fs::path(TFG_SOURCE_DIR) / "operators/operator/reshape_to_view.tfg"});
  std::set<std::string> legal;
  for (const auto& [op, anchor, mu, before, probe] : d->all) {
    CHECK_MESSAGE(!before.has_value(), op->name << ": " << (before ? before->message : std::string()));
    CHECK_MESSAGE(!probe.has_value(), op->name << ": " << (probe ? probe->message : std::string()));
    // The new node's size argument is the seed's list: its first item is the batch edge.
    bool reads_batch = false;
    for (const auto n : mu.added) {
      const auto& nd = mu.graph_model.graph.data(n);
      if (nd.kind.toQualString() != std::string("aten::reshape") && nd.kind.toQualString() != std::string("aten::view"))
        continue;
      REQUIRE(nd.args.size() == 2);
      reads_batch = nd.args[1].how == tt::argument::form::list && nd.args[1].items.size() >= 2 &&
                    nd.args[1].items[0].is_edge && !nd.args[1].items[1].is_edge;
    }
    CHECK_MESSAGE(reads_batch, op->name);
    if (!before && !probe && reads_batch) legal.insert(op->name);
  }
  CHECK(legal == std::set<std::string>{"view_to_reshape_clone", "reshape_to_view"});
}

}  // namespace tfg_test_torch_infer
