// Building nodes from op names and DSL-level arguments, and committing them into a real model.
#include "tfg/torch/mutate/instantiate.hpp"
#include "tfg/torch/torch.hpp"

#include <doctest/doctest.h>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_instantiate {

namespace {
namespace tt = tfg::torch;
namespace graph = tfg::graph;
using tfg::match::attr_value;
using tfg::state::value_kind;

tt::proto_arg edge(std::uint32_t i, value_kind k = value_kind::tensor) { return {tt::proto_arg::edge_ref{i, k}}; }
tt::proto_arg constant(attr_value v) { return {std::move(v)}; }
}  // namespace

TEST_CASE("build_node resolves overloads and converts DSL words") {
  auto clone = tt::build_node("aten::clone", {edge(0), constant(std::string("none"))});
  CHECK(clone.data.args.size() == 2);
  CHECK(clone.data.args[1].constant.isNone());
  REQUIRE(clone.outputs.size() == 1);
  CHECK(clone.outputs[0].kind == value_kind::tensor);

  auto to = tt::build_node("aten::to", {edge(0), constant(std::string("f64"))});
  REQUIRE(to.data.args.size() >= 2);
  CHECK(to.data.args[1].constant.toInt() == static_cast<std::int64_t>(c10::kDouble));

  auto cl = tt::build_node("aten::contiguous", {edge(0), constant(std::string("channels_last_format"))});
  CHECK(cl.data.args[1].constant.toInt() == static_cast<std::int64_t>(c10::MemoryFormat::ChannelsLast));

  // Trailing defaults: softmax's dtype, add's alpha.
  auto add = tt::build_node("aten::add", {edge(0), edge(1)});
  REQUIRE(add.data.args.size() == 3);
  CHECK(add.data.args[2].constant.toInt() == 1);
  // A scalar constant selects the Scalar overload.
  auto adds = tt::build_node("aten::add", {edge(0), constant(std::int64_t{2})});
  CHECK(adds.data.args[1].how == tt::argument::form::constant);

  // Lists mixing run-time ints and constants.
  auto view = tt::build_node(
      "aten::view",
      {edge(0), tt::proto_arg{std::vector<tt::proto_arg>{edge(1, value_kind::integer), constant(std::int64_t{-1})}}});
  REQUIRE(view.data.args[1].how == tt::argument::form::list);
  CHECK(view.data.args[1].items.size() == 2);

  CHECK_THROWS_AS(tt::build_node("aten::clone", {constant(std::string("f32"))}), tt::model_error);
  CHECK_THROWS_AS(tt::build_node("aten::no_such_op", {edge(0)}), tt::model_error);
}

TEST_CASE("a built node committed into the default seed runs, exports and keeps values") {
  auto m = tt::torchscript_importer().load(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt");
  auto inputs = tt::load_inputs(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.inputs.pt");
  tt::executor before(m);
  auto ref = before.run(inputs[0]);
  // Break the aliasing of every view edge with several consumers: clone it for all of them.
  auto p = tt::profiler().run(m, inputs);
  graph::edge_id target = graph::no_edge;
  for (auto e : m.graph.edges())
    if (m.graph.data(e).kind == value_kind::tensor && m.graph.consumers(e).size() > 1 &&
        p.edges[graph::index(e)].runs[0].aliased()) {
      target = e;
      break;
    }
  REQUIRE(target != graph::no_edge);
  auto built = tt::build_node("aten::clone", {edge(0), constant(std::string("none"))});
  auto rw = m.graph.begin_rewrite();
  auto n = rw.new_node(std::move(built.data), {target}, std::move(built.outputs));
  rw.replace_uses(target, rw.output(n, 0));
  auto applied = rw.commit();
  REQUIRE(applied);
  const auto clone_node = applied->node(n);
  CHECK(m.graph.check().empty());
  // Every former reader of the view now reads the private copy.
  CHECK(m.graph.consumers(target).size() == 1);
  CHECK(m.graph.consumers(target)[0].node == clone_node);
  tt::executor after(m);
  auto out = after.run(inputs[0]);
  const auto& a = ref.toTupleRef().elements();
  const auto& b = out.toTupleRef().elements();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(at::equal(a[i].toTensor(), b[i].toTensor()));
  auto prof = tt::profiler().run(m, inputs);
  const auto copy = m.graph.outputs(clone_node)[0];
  REQUIRE(prof.edges[graph::index(copy)].runs.size() == inputs.size());
  // The copy has storage of its own (its readers may still be views of it).
  CHECK(prof.edges[graph::index(copy)].runs[0].storage_group != prof.edges[graph::index(target)].runs[0].storage_group);
  CHECK(prof.edges[graph::index(copy)].runs[0].numbers.content_hash ==
        prof.edges[graph::index(target)].runs[0].numbers.content_hash);
  auto path = (std::filesystem::temp_directory_path() / "tfg_clone_mutant.pt").string();
  tt::save(m, path);
  auto reloaded = torch::jit::load(path);
  auto rl = reloaded.forward(inputs[0]).toTupleRef().elements();
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(at::equal(a[i].toTensor(), rl[i].toTensor()));
}

}  // namespace tfg_test_torch_instantiate
