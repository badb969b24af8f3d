// The LibTorch model seen through tfg::match::match_adapter.
#include "tfg/torch/mutate/match_adapter.hpp"
#include "tfg/torch/torch.hpp"

#include <doctest/doctest.h>

#include <algorithm>

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_torch_match_adapter {

namespace {
namespace tt = tfg::torch;
namespace graph = tfg::graph;
using tfg::match::arg_view;
const std::string tiny = std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.pt";
}  // namespace

TEST_CASE("torch_match_adapter: kinds, symbols, argument views and F(e)") {
  auto m = tt::torchscript_importer().load(tiny);
  auto p = tt::profiler().run(m, tt::load_inputs(std::string(TFG_SOURCE_DIR) + "/tests/data/tiny_mix.inputs.pt"));
  tfg::match::symbol_table symbols;
  tt::torch_match_adapter a(m, p, symbols);
  const auto conv_symbol = symbols.find("aten::_convolution");
  REQUIRE(conv_symbol != 0);
  bool saw_conv = false, saw_dynamic_list = false;
  for (auto n : m.graph.nodes()) {
    CHECK(a.op_kind(n) == m.graph.data(n).name());
    CHECK(a.op_symbol(n) == symbols.find(a.op_kind(n)));
    const auto inputs = m.graph.inputs(n);
    for (std::size_t i = 0; i < a.arg_count(n); ++i) {
      const auto& v = a.arg(n, i);
      if (v.how == arg_view::form::edge) CHECK(std::find(inputs.begin(), inputs.end(), v.edge) != inputs.end());
      if (v.how == arg_view::form::list)
        for (const auto& item : v.items) saw_dynamic_list |= item.how == arg_view::form::edge;
    }
    if (a.op_symbol(n) == conv_symbol) {
      saw_conv = true;
      REQUIRE(a.arg_count(n) == 13);  // aten::_convolution's schema
      CHECK(a.arg(n, 0).how == arg_view::form::edge);
      CHECK(a.arg(n, 0).edge == m.graph.graph_inputs()[0]);
      REQUIRE(a.arg(n, 3).how == arg_view::form::constant);  // stride
      CHECK(std::get<std::vector<std::int64_t>>(a.arg(n, 3).value) == std::vector<std::int64_t>{1, 1});
      CHECK(std::holds_alternative<bool>(a.arg(n, 6).value));  // transposed
      CHECK(a.profile(m.graph.outputs(n)[0]).runs.size() == 3);
      CHECK(a.profile(m.graph.outputs(n)[0]).runs[0].rank() == 4);
    }
  }
  CHECK(saw_conv);
  CHECK(saw_dynamic_list);  // sizes computed at run time (aten::size) feeding a view
}

}  // namespace tfg_test_torch_match_adapter
