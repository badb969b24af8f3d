// Requirements R(v): syntax, checks and evaluation (convolution channels vs groups,
// broadcasting of add, tensor lists, alternatives, substitution of a probed state).

#include <doctest/doctest.h>

#include <string>

#include "../dsl/dsl_test_util.hpp"
#include "match_test_util.hpp"
#include "tfg/match/pool.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_match_requirements {

using namespace tfg_match_test;
using state::dtype;

namespace {

constexpr const char* conv_text = R"(tfg 1
/// aten::_convolution: input [N, C, *spatial], weight [O, C / groups, *kernel]
requirement aten::_convolution(%input, %weight, %bias?, $stride, $padding, $dilation,
                               $transposed, $output_padding, $groups, ...) {
  rank(%input) >= 3 && rank(%input) <= 5
  rank(%weight) == rank(%input)
  $transposed || dim(%input, 1) == dim(%weight, 1) * $groups
  is_none(%bias) || numel(%bias) == dim(%weight, 0)
  dtype(%input) == dtype(%weight)
  device(%input) == device(%weight)
  len($stride) == rank(%input) - 2
}
requirement aten::add(%self, %other, _) { broadcastable(%self, %other) }
requirement aten::add(%self, $other, _) { is_floating(%self) || $other % 1 == 0 }
requirement aten::cat(%xs[], $dim) {
  len(%xs) >= 1
  rank(%xs[0]) > $dim && rank(%xs[-1]) > $dim
}
)";

match::arg_view ints(std::vector<std::int64_t> v) { return mock_adapter::constant(std::move(v)); }

}  // namespace

TEST_CASE("requirements: parse into the AST with argument kinds and docs") {
  const auto r = dsl::parse(conv_text, "req.tfg");
  INFO(r.format_diagnostics());
  REQUIRE(r.ok());
  REQUIRE(r.ast.requirements.size() == 4);
  const auto& conv = r.ast.requirements[0];
  CHECK(conv.op.text == "aten::_convolution");
  CHECK(conv.doc.find("weight [O, C / groups") != std::string::npos);
  REQUIRE(conv.args.size() == 10);
  CHECK(conv.args[0].kind == dsl::req_arg_kind::tensor);
  CHECK(conv.args[2].kind == dsl::req_arg_kind::optional_tensor);
  CHECK(conv.args[2].name.text == "bias");
  CHECK(conv.args[3].kind == dsl::req_arg_kind::constant);
  CHECK(conv.args[9].kind == dsl::req_arg_kind::rest);
  CHECK(conv.conditions.size() == 7);
  CHECK(r.ast.requirements[1].args[2].kind == dsl::req_arg_kind::ignore);
  CHECK(r.ast.requirements[3].args[0].kind == dsl::req_arg_kind::tensor_list);
}

TEST_CASE("requirements: check diagnostics (unbound names, misplaced '...', is_none)") {
  auto codes = [](const std::string& text) {
    std::vector<std::string> out;
    for (auto const& d : dsl::parse(text, "t.tfg").diagnostics) out.push_back(d.code);
    return out;
  };
  CHECK(codes("tfg 1\nrequirement aten::relu(%x) { rank(%y) > 0 }") == std::vector<std::string>{"E013"});
  CHECK(codes("tfg 1\nrequirement aten::relu(%x) { $k > 0 }") == std::vector<std::string>{"E014"});
  CHECK(codes("tfg 1\nrequirement aten::relu(..., %x) { rank(%x) > 0 }") == std::vector<std::string>{"E046"});
  CHECK(codes("tfg 1\nrequirement aten::relu(%x) { is_none(%x) }") == std::vector<std::string>{"E047"});
  CHECK(codes("tfg 1\nrequirement torch::relu(%x) { rank(%x) > 0 }") == std::vector<std::string>{"E008"});
  CHECK(codes("tfg 1\nrequirement aten::relu(%x) { rank(%x) }") == std::vector<std::string>{"E028"});
  CHECK(codes("tfg 1\nrequirement aten::relu(%x?) { count(aten::relu) > 0 }") == std::vector<std::string>{"E009"});
  CHECK(codes("tfg 1\nrequirement aten::relu(%x) { rank(%x) > }").front() == "E001");
}

TEST_CASE("requirements: convolution channels against groups, optional bias") {
  match::symbol_table syms;
  const auto r = compile_text(conv_text, syms);
  const auto& table = r.requirements;
  mock_adapter m(syms);
  const auto x = m.add_input(T(dtype::f32, {1, 4, 8, 8}));
  const auto w_ok = m.add_input(T(dtype::f32, {6, 2, 3, 3}));   // C/groups = 2 with groups = 2
  const auto w_bad = m.add_input(T(dtype::f32, {6, 3, 3, 3}));  // 3 * 2 != 4
  const auto bias = m.add_input(T(dtype::f32, {6}));
  const auto bias_bad = m.add_input(T(dtype::f32, {5}));
  auto conv = [&](match::edge_id w, match::arg_view b, bool transposed, std::int64_t groups) {
    auto const y =
        m.add_node("aten::_convolution",
                   {mock_adapter::edge(x), mock_adapter::edge(w), b, ints({1, 1}), ints({0, 0}), ints({1, 1}),
                    mock_adapter::constant(transposed), ints({0, 0}), mock_adapter::constant(groups),
                    mock_adapter::constant(false), mock_adapter::constant(false), mock_adapter::constant(true),
                    mock_adapter::constant(true)},
                   std::vector{T(dtype::f32, {1, 6, 6, 6})});
    return m.graph().producer(y);
  };
  match::workspace ws;
  using O = match::requirement_outcome;
  CHECK(match::evaluate_requirement(table, m, conv(w_ok, mock_adapter::none(), false, 2), ws) == O::holds);
  CHECK(match::evaluate_requirement(table, m, conv(w_ok, mock_adapter::edge(bias), false, 2), ws) == O::holds);
  CHECK(match::evaluate_requirement(table, m, conv(w_ok, mock_adapter::edge(bias_bad), false, 2), ws) == O::fails);
  CHECK(match::evaluate_requirement(table, m, conv(w_bad, mock_adapter::none(), false, 2), ws) == O::fails);
  CHECK(match::evaluate_requirement(table, m, conv(w_bad, mock_adapter::none(), true, 2), ws) == O::holds);
  CHECK(match::evaluate_requirement(table, m, conv(w_ok, mock_adapter::none(), false, 1), ws) == O::fails);
  // A probed replacement state substituted for the input: 2-D input breaks the rank rule.
  const auto n = conv(w_ok, mock_adapter::none(), false, 2);
  state::edge_profile flat;
  flat.runs = {T(dtype::f32, {4, 64})};
  const match::compiled_requirement* failed = nullptr;
  CHECK(match::evaluate_requirement(table, m, n, ws, x, &flat, &failed) == O::fails);
  REQUIRE(failed != nullptr);
  CHECK(failed->where.find("test.tfg:3:") == 0);
}

TEST_CASE("requirements: add broadcasting, alternatives by binding, and ops without requirements") {
  match::symbol_table syms;
  const auto r = compile_text(conv_text, syms);
  mock_adapter m(syms);
  const auto a = m.add_input(T(dtype::f32, {2, 3}));
  const auto b = m.add_input(T(dtype::f32, {1, 3}));
  const auto c = m.add_input(T(dtype::f32, {4, 3}));
  auto node = [&](const std::string& op, std::vector<match::arg_view> args) {
    return m.graph().producer(m.add_node(op, std::move(args), std::vector{T(dtype::f32, {2, 3})}));
  };
  const auto one = mock_adapter::constant(std::int64_t{1});
  match::workspace ws;
  using O = match::requirement_outcome;
  CHECK(match::evaluate_requirement(
            r.requirements, m, node("aten::add", {mock_adapter::edge(a), mock_adapter::edge(b), one}), ws) == O::holds);
  CHECK(match::evaluate_requirement(
            r.requirements, m, node("aten::add", {mock_adapter::edge(a), mock_adapter::edge(c), one}), ws) == O::fails);
  // Second alternative: a scalar `other` binds only `$other`.
  CHECK(match::evaluate_requirement(r.requirements, m,
                                    node("aten::add", {mock_adapter::edge(a), mock_adapter::constant(2.5), one}),
                                    ws) == O::holds);
  // No alternative binds (wrong argument count) / no requirement for the op.
  CHECK(match::evaluate_requirement(r.requirements, m, node("aten::add", {mock_adapter::edge(a)}), ws) == O::none);
  CHECK(match::evaluate_requirement(r.requirements, m, node("aten::relu", {mock_adapter::edge(a)}), ws) == O::none);
  // Tensor lists.
  const auto cat = [&](std::vector<match::arg_view> xs, std::int64_t dim) {
    return node("aten::cat", {mock_adapter::list(std::move(xs)), mock_adapter::constant(dim)});
  };
  CHECK(match::evaluate_requirement(r.requirements, m, cat({mock_adapter::edge(a), mock_adapter::edge(c)}, 1), ws) ==
        O::holds);
  CHECK(match::evaluate_requirement(r.requirements, m, cat({mock_adapter::edge(a), mock_adapter::edge(c)}, 2), ws) ==
        O::fails);
  CHECK(match::evaluate_requirement(r.requirements, m, cat({}, 0), ws) == O::fails);
}

TEST_CASE("requirements: the requirement files of the pool load") {
  match::symbol_table syms;
  const auto pool = match::load_pool({tfg_test::source_dir() / "operators" / "requirements"}, syms, externs());
  for (const auto& d : pool.diagnostics) MESSAGE(d);
  std::size_t n = 0;
  for (const auto& [op, alts] : pool.requirements.by_op) n += alts.size();
  MESSAGE("requirement files: " << pool.files << ", declarations: " << n
                                << ", ops: " << pool.requirements.by_op.size());
  CHECK(pool.operators.empty());
}

TEST_CASE("requirements: output stage checks the requirements of rewired outside consumers") {
  match::symbol_table syms;
  const auto reqs = compile_text(
      "tfg 1\nrequirement aten::linear(%input, %weight, %bias?) {\n"
      "  dim(%input, -1) == dim(%weight, 1)\n}\n",
      syms);
  const auto ops =
      compile_text(op_text("anchor %x", "replace { %r = aten::flatten(%x, 0, -1) rewire consumers(%x) -> %r }"), syms);
  const auto& op = ops.operators[0];
  mock_adapter m(syms);
  const auto x = m.add_input(T(dtype::f32, {8, 16}));
  const auto w = m.add_input(T(dtype::f32, {4, 16}));
  const auto y = m.add_node("aten::linear", {mock_adapter::edge(x), mock_adapter::edge(w), mock_adapter::none()},
                            std::vector{T(dtype::f32, {8, 4})});
  m.add_output(y);
  match::workspace ws;
  match::bindings b;
  std::mt19937_64 rng(0);
  REQUIRE(match::evaluate(op, m, x, b, rng, ws) == match::reject_stage::accepted);
  fixed_probe pr;
  pr.p.runs = {T(dtype::f32, {128})};  // flattened: the linear's last dim no longer matches
  match::node_id bad{};
  CHECK(match::check_rewired_consumers(op, m, b, reqs.requirements, &pr, ws, &bad) == match::reject_stage::output);
  CHECK(bad == m.graph().producer(y));
  pr.p.runs = {T(dtype::f32, {8, 16})};
  CHECK(match::check_rewired_consumers(op, m, b, reqs.requirements, &pr, ws) == match::reject_stage::accepted);
  // Without a probed state nothing can be substituted: deferred, not rejected.
  CHECK(match::check_rewired_consumers(op, m, b, reqs.requirements, nullptr, ws) == match::reject_stage::accepted);
}

TEST_CASE("requirements: 'propagates nan RULE' parses, compiles into the table, and a wrong rule is a syntax error") {
  const auto ok = dsl::parse(R"(tfg 1
requirement aten::relu(%self) propagates nan elementwise { rank(%self) >= 0 }
requirement aten::sum(%self, ...) propagates nan any {}
requirement aten::relu(%self, ...) propagates nan preserve { rank(%self) >= 1 }
)",
                             "nan.tfg");
  INFO(ok.format_diagnostics());
  REQUIRE(ok.ok());
  REQUIRE(ok.ast.requirements.size() == 3);
  CHECK(ok.ast.requirements[0].nan_rule == "elementwise");
  CHECK(ok.ast.requirements[1].nan_rule == "any");
  tfg::match::symbol_table syms;
  const auto c = tfg::match::compile(ok.ast, syms, {});
  REQUIRE(c.ok());
  // The first declaration of a kind that states a rule gives the kind's rule.
  CHECK(c.requirements.nan_rules.at("aten::relu") == "elementwise");
  CHECK(c.requirements.nan_rules.at("aten::sum") == "any");
  const auto bad = dsl::parse("tfg 1\nrequirement aten::relu(%self) propagates nan sideways { }\n", "bad.tfg");
  CHECK_FALSE(bad.ok());
  const auto text = bad.format_diagnostics();
  CHECK(text.find("bad.tfg:2:") != std::string::npos);
  CHECK(text.find("error[E001]") != std::string::npos);
  CHECK(text.find("NaN rule") != std::string::npos);
}

TEST_CASE("requirements: 'propagates nan RULE from %x' names the operand by its input position, or is E046") {
  const auto ok = dsl::parse(R"(tfg 1
requirement aten::reshape_as(%self, %other) propagates nan preserve from %self { numel(%self) == numel(%other) }
requirement aten::fake_as(%self, $k, %other) propagates nan elementwise from %other {}
)",
                             "from.tfg");
  INFO(ok.format_diagnostics());
  REQUIRE(ok.ok());
  tfg::match::symbol_table syms;
  const auto c = tfg::match::compile(ok.ast, syms, {});
  REQUIRE(c.ok());
  CHECK(c.requirements.nan_rules.at("aten::reshape_as") == "preserve@0");
  CHECK(c.requirements.nan_rules.at("aten::fake_as") == "elementwise@1");  // constants are not input edges
  for (const char* bad : {"requirement aten::f(%self) propagates nan any from %nope {}\n",
                          "requirement aten::f(%self, $k) propagates nan any from %k {}\n",
                          "requirement aten::f(%w?, %self) propagates nan any from %self {}\n",
                          "requirement aten::f(%xs[]) propagates nan any from %xs {}\n"}) {
    const auto r = dsl::parse(std::string("tfg 1\n") + bad, "bad.tfg");
    CHECK_FALSE(r.ok());
    const auto text = r.format_diagnostics();
    CHECK(text.find("error[E046]") != std::string::npos);
    CHECK(text.find("bad.tfg:2:") != std::string::npos);
  }
}

TEST_CASE("requirements: the bundled requirement files state NaN rules for the propagating operators") {
  tfg::match::symbol_table syms;
  const auto pool = tfg::match::load_pool({tfg_test::source_dir() / "operators" / "requirements"}, syms, externs());
  REQUIRE(pool.ok());
  const auto& r = pool.requirements.nan_rules;
  CHECK(r.size() >= 80);
  CHECK(r.at("aten::relu") == "elementwise");
  CHECK(r.at("aten::cat") == "preserve");
  CHECK(r.at("aten::reshape_as") == "preserve@0");  // `other` lends only its shape
  CHECK(r.at("aten::expand_as") == "elementwise@0");
  CHECK(r.at("aten::_convolution") == "any");
  CHECK(r.count("aten::where") == 0);  // selects: a NaN may legitimately not be chosen
  CHECK(r.count("aten::pow") == 0);    // pow(NaN, 0) = 1
}

}  // namespace tfg_test_match_requirements
