// Every built-in evaluated against hand-set tensor states, and the all-runs semantics.

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "match_test_util.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_match_builtins {

using namespace tfg_match_test;
using state::dtype;

namespace {

/// %x and %w are the two inputs of an aten::add producing %y; conditions are evaluated as
/// `require input` of an operator anchored at %x.
struct site {
  match::symbol_table syms;
  mock_adapter m{syms};
  match::edge_id x, w, y;
  site(std::vector<state::tensor_state> xs, std::vector<state::tensor_state> ws) {
    x = m.add_input(std::move(xs));
    w = m.add_input(std::move(ws));
    y = m.add_node("aten::add", {mock_adapter::edge(x), mock_adapter::edge(w), mock_adapter::constant(std::int64_t{1})},
                   std::vector{T(dtype::f32, {2, 3})});
    m.add_output(y);
  }
  bool holds(const std::string& cond) {
    const auto r =
        compile_text(op_text("anchor %x", "pattern { %y = aten::add(%x, %w, _) }\nrequire input { " + cond +
                                              " }\nreplace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }"),
                     syms);
    match::workspace ws;
    match::bindings b;
    std::mt19937_64 rng(0);
    const auto st = match::evaluate(r.operators[0], m, x, b, rng, ws);
    REQUIRE((st == match::reject_stage::accepted || st == match::reject_stage::input));
    return st == match::reject_stage::accepted;
  }
};

state::tensor_state special() {
  auto s = T(dtype::f16, {4, 1, 3});
  s.strides = {3, 3, 1};
  s.storage_offset = 2;
  s.contiguous = false;
  s.format = state::memory_format::strided;
  s.device = {state::device_kind::cuda, 0};
  s.tensor_layout = state::layout::strided;
  s.requires_grad = true;
  s.numbers.min = -3;
  s.numbers.max = 2;
  s.numbers.mean = 0.25;
  s.numbers.zero_count = 5;
  s.numbers.nan_count = 1;
  return s;
}

}  // namespace

TEST_CASE("match builtins: state built-ins over hand-set states") {
  site s({special()}, {T(dtype::f32, {3})});
  CHECK(s.holds("rank(%x) == 3"));
  CHECK_FALSE(s.holds("rank(%x) == 2"));
  CHECK(s.holds("shape(%x) == [4, 1, 3] && shape(%w) == [3]"));
  CHECK(s.holds("dim(%x, 0) == 4 && dim(%x, -1) == 3 && dim(%x, 1) == 1"));
  CHECK_FALSE(s.holds("dim(%x, 3) == 0 || dim(%x, -4) == 0"));  // out of range: false either way
  CHECK(s.holds("numel(%x) == 12"));
  CHECK(s.holds("dtype(%x) == f16 && dtype(%w) == f32 && dtype(%x) in {f16, bf16}"));
  CHECK(s.holds("is_floating(%x)"));
  CHECK(s.holds("device(%x) == cuda && device(%w) == cpu"));
  CHECK(s.holds("layout(%x) == strided"));
  CHECK(s.holds("!contiguous(%x) && contiguous(%w)"));
  CHECK(s.holds("!channels_last(%x)"));
  CHECK(s.holds("strides(%x) == [3, 3, 1] && strides(%x)[-1] == 1"));
  CHECK(s.holds("storage_offset(%x) == 2"));
  CHECK(s.holds("!aliased(%x) && !same_storage(%x, %w)"));
  CHECK(s.holds("!finite(%x) && has_nan(%x) && !has_inf(%x) && finite(%w)"));
  CHECK(s.holds("min(%x) == -3 && max(%x) == 2.0 && mean(%x) == 0.25 && max_abs(%x) == 3"));
  CHECK(s.holds("zeros(%x) == 5"));
  CHECK(s.holds("requires_grad(%x) && !requires_grad(%w)"));
  CHECK(s.holds("broadcastable(%x, %w)"));
  CHECK_FALSE(s.holds("equal_values(%x, %w)"));
}

TEST_CASE("match builtins: aliasing, equal values and broadcasting") {
  auto a = T(dtype::f32, {2, 3});
  site s({a}, {a});
  CHECK(s.holds("equal_values(%x, %w)"));
  s.m.alias(s.x, s.w);
  CHECK(s.holds("aliased(%x) && aliased(%w) && same_storage(%x, %w)"));
  site t({T(dtype::f32, {2, 3})}, {T(dtype::f32, {4, 3})});
  CHECK_FALSE(t.holds("broadcastable(%x, %w)"));
  site u({T(dtype::f32, {5, 1, 3})}, {T(dtype::f32, {4, 1})});
  CHECK(u.holds("broadcastable(%x, %w)"));
}

TEST_CASE("match builtins: structural and pure built-ins") {
  site s({T(dtype::f32, {2, 3})}, {T(dtype::f32, {2, 3})});
  CHECK(s.holds("uses(%x) == 1 && consumers(%x) == 1 && is_input(%x) && !is_output(%x)"));
  CHECK(s.holds("is_output(%y) && !is_input(%y) && op(%y) == aten::add && op(%y) != aten::mul"));
  CHECK(s.holds("len(shape(%x)) == 2 && prod(shape(%x)) == 6 && prod([]) == 1"));
  CHECK(s.holds("abs(-2) == 2 && pow2(3) == 8 && pow2(-1) == 0.5"));
  CHECK(s.holds("dtype_max(f16) == 65504 && dtype_max(f32) > 3.0e38 && dtype_tiny(f16) < 0.0001"));
  CHECK(s.holds("7 % 3 == 1 && 7 / 2 == 3.5 && -(2) + 5 * 2 - 1 == 7 && [1, 2][-1] == 2"));
  CHECK_FALSE(s.holds("1 / 0 > 0"));
  // Lists of run-time length: a kernel shape of the edge's rank.
  CHECK(s.holds("repeat(3, 2) == [3, 3] && repeat(7, 0) == [] && len(repeat(1, 64)) == 64"));
  CHECK(s.holds("[dim(%x, 1), dim(%x, 1)] + repeat(5, rank(%x) - 1) == [3, 3, 5]"));
  CHECK(s.holds("shape(%x) + [] + shape(%x) == [2, 3, 2, 3] && prod([2] + repeat(3, 2)) == 18"));
  CHECK_FALSE(s.holds("len(repeat(1, -1)) >= 0"));  // a negative count is a fault
  CHECK_FALSE(s.holds("len(repeat(1, 65)) >= 0"));  // so is a list longer than 64
}

TEST_CASE("match builtins: imin and imax fit a layer's rank to its site") {
  site s({T(dtype::f32, {2, 3})}, {T(dtype::f32, {2, 3})});
  CHECK(s.holds("imin(4, 7) == 4 && imax(4, 7) == 7 && imin(-1, 0) == -1 && imax(-3, -5) == -3"));
  // The spatial rank of a convolution on a rank-2 edge lifted to [N, C, 1]: one dim.
  CHECK(s.holds("repeat(1, imin(imax(rank(%x), 3), 5) - 2) == [1]"));
  CHECK(s.holds("dim(%x, imin(rank(%x), 2) - 1) == 3"));
}

TEST_CASE("match builtins: ipow is a kernel's volume, and fails where an int cannot hold it") {
  site s({T(dtype::f32, {2, 3, 4, 5})}, {T(dtype::f32, {2, 3})});
  CHECK(s.holds("ipow(3, 2) == 9 && ipow(5, 0) == 1 && ipow(-2, 3) == -8 && ipow(0, 0) == 1 && ipow(0, 5) == 0"));
  // The same as the product of a repeated list (the form it replaces in the conv operators).
  CHECK(s.holds("ipow(5, rank(%x) - 2) == prod(repeat(5, rank(%x) - 2))"));
  CHECK(s.holds("ipow(2, 62) > 0"));
  CHECK_FALSE(s.holds("ipow(2, 63) != 0"));  // beyond 2^62: a fault, which holds for nothing
  CHECK_FALSE(s.holds("ipow(2, -1) == 0"));
}

TEST_CASE("match builtins: ipow of 0, 1 and -1 answers any exponent at once") {
  site s({T(dtype::f32, {2, 3})}, {T(dtype::f32, {2, 3})});
  CHECK(s.holds("ipow(1, 1000000000000000000) == 1 && ipow(-1, 1000000000000000001) == -1"));
  CHECK(s.holds("ipow(-1, 1000000000000000000) == 1 && ipow(0, 1000000000000000000) == 0"));
}

TEST_CASE("match builtins: integer conditions decide as the tree walk does, faults included") {
  // Integer expressions run as postfix code (mark_fast, program::icodes); it must give what
  // the general walk gives, fault for fault.
  // Each program is evaluated as compiled and with its marks cleared, on sites of rank 0, 1
  // and 4, on two records whose shapes differ, and with an int parameter that holds a float
  // (a bail to the walk).
  const std::vector<std::string> conds = {
      "rank(%x) == 0 || dim(%x, imin(rank(%x), 2) - 1) * dim(%x, imin(rank(%x), 2) - 1) * ipow(2 * $h + 1, 2) <= 64",
      "rank(%x) == 0 || numel(%x) % (rank(%x) - 1) == 0",
      "dim(%x, 3) > 1",
      "dim(%x, -1) - $h >= -numel(%x)",
      "ipow(dim(%x, 0), 70) > 0",
      "imax($h, rank(%x)) * $f > 1",
      "imin(imax(rank(%x), 3), 5) - 2 == $h",
      "dim(%w, $h) != dim(%x, $h)",
      "ipow($h, rank(%w)) > -(numel(%x) - numel(%w))",
      "any_record(dim(%x, 0) == 3) && rank(%x) + $h > 2",
  };
  std::string body =
      "param $h : int in [-3, 3]\nparam $f : float in [0.5, 1.5]\npattern { %y = aten::add(%x, %w, _) }\n";
  body += "require input {\n";
  for (const auto& c : conds) body += "  " + c + "\n";
  body += "}\nreplace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }";
  std::vector<std::vector<state::tensor_state>> sites = {{T(dtype::f32, {})},
                                                         {T(dtype::f32, {7})},
                                                         {T(dtype::f32, {2, 3, 4, 5})},
                                                         {T(dtype::f32, {3, 8}), T(dtype::f32, {1, 8, 2})}};
  int marked = 0, coded = 0, compared = 0;
  for (const auto& xs : sites) {
    site s(xs, {T(dtype::f32, {3, 2}), T(dtype::f32, {4, 2})});
    const auto r = compile_text(op_text("anchor %x", body), s.syms);
    const auto& op = r.operators[0];
    REQUIRE(op.input.size() == conds.size());
    match::workspace ws;
    match::bindings b;
    REQUIRE(match::match_pattern(op, s.m, s.x, b, ws));
    for (std::size_t i = 0; i < conds.size(); ++i) {
      auto walk = op.input[i];
      for (auto& n : walk.nodes) {
        marked += n.fast != match::fast_form::none;
        coded += n.code_len > 0;
        n.fast = match::fast_form::none;
        n.code_len = 0;
      }
      for (const match::attr_value& h :
           {match::attr_value(std::int64_t{-3}), match::attr_value(std::int64_t{0}), match::attr_value(std::int64_t{1}),
            match::attr_value(std::int64_t{3}), match::attr_value(1.5)}) {
        b.params = {h, match::attr_value(0.75)};
        const auto E = match::make_env(op, s.m, b);
        for (std::size_t run = 0; run < 2; ++run) {
          ws.scratch.clear();
          const auto fast = match::detail::eval_node(op.input[i], op.input[i].root, E, run, ws);
          ws.scratch.clear();
          const auto tree = match::detail::eval_tree(walk, walk.root, E, run, ws);
          INFO(conds[i], " on site ", &xs - sites.data(), ", $h = ", h.index() == 2 ? std::get<std::int64_t>(h) : 99,
               ", run ", run);
          REQUIRE(fast.k == tree.k);
          if (fast.k == match::vk::boolean) CHECK(fast.b == tree.b);
          if (fast.k == match::vk::integer) CHECK(fast.i == tree.i);
          CHECK(match::holds(op.input[i], E, ws) == match::holds(walk, E, ws));
          ++compared;
        }
      }
    }
  }
  CHECK(marked > 0);
  CHECK(coded > 0);
  CHECK(compared == 4 * 10 * 5 * 2);
}

TEST_CASE("match builtins: scalar reads the one value of a uniform tensor") {
  auto c = T(dtype::f32, {});
  c.numbers.min = c.numbers.max = 0.25;
  auto u = T(dtype::f32, {3, 1});
  u.numbers.min = -1;
  u.numbers.max = 2;
  site s({c}, {u});
  CHECK(s.holds("scalar(%x) == 0.25 && scalar(%x) * 4 == 1"));
  CHECK_FALSE(s.holds("scalar(%w) < 100"));  // elements differ: no one value
  auto k = T(dtype::i64, {});
  k.numbers.min = k.numbers.max = 4;
  site t({k}, {k});
  CHECK(t.holds("scalar(%x) == 4 && scalar(%x) + scalar(%w) == 8"));
}

TEST_CASE("match builtins: a constraint must hold on every profiling run") {
  auto r0 = T(dtype::f32, {2, 3});
  auto r1 = T(dtype::f32, {2, 3});
  r1.numbers.inf_count = 1;
  site s({r0, r1}, {T(dtype::f32, {2, 3}), T(dtype::f32, {2, 3})});
  CHECK_FALSE(s.holds("finite(%x)"));  // true on run 0, false on run 1
  CHECK(s.holds("finite(%w)"));
  CHECK(s.holds("rank(%x) == 2"));
  // An edge with fewer runs than the other edge of the expression: the missing run fails.
  site t({r0, r0}, {T(dtype::f32, {2, 3})});
  CHECK_FALSE(t.holds("rank(%x) == rank(%w)"));
  CHECK(t.holds("rank(%x) == 2"));
  // No runs at all: a state condition does not hold; a structural one does.
  site u(std::vector<state::tensor_state>{}, std::vector<state::tensor_state>{});
  CHECK_FALSE(u.holds("rank(%x) >= 0"));
  CHECK(u.holds("uses(%x) == 1"));
}

TEST_CASE("match builtins: externs are called per run; an unregistered extern is a diagnostic") {
  match::symbol_table syms;
  match::extern_registry reg;
  int calls = 0;
  reg.add("big", [&](std::span<const match::extern_arg> args) -> std::optional<match::attr_value> {
    ++calls;
    if (args.size() != 2 || !args[0].state) return std::nullopt;
    return args[0].state->numel >= std::get<std::int64_t>(args[1].value);
  });
  std::string const text = "tfg 1\nextern pred big(tensor, int) -> bool\n" +
                           op_text("anchor %x",
                                   "require input { big(%x, 6) }\nreplace { %c = aten::clone(%x, none) "
                                   "rewire consumers(%x) -> %c }")
                               .substr(6);
  const auto parsed = dsl::parse(text, "t.tfg");
  REQUIRE(parsed.ok());
  const auto bad = match::compile(parsed.ast, syms, match::extern_registry{});
  CHECK_FALSE(bad.ok());
  REQUIRE(bad.diagnostics.size() == 1);
  CHECK(bad.diagnostics[0].code == "E009");
  const auto good = match::compile(parsed.ast, syms, reg);
  REQUIRE(good.ok());
  mock_adapter m(syms);
  const auto x = m.add_input(std::vector{T(dtype::f32, {2, 3}), T(dtype::f32, {3, 3})});
  const auto z = m.add_input(std::vector{T(dtype::f32, {2, 3}), T(dtype::f32, {1, 3})});
  match::workspace ws;
  match::bindings b;
  std::mt19937_64 rng(0);
  CHECK(match::evaluate(good.operators[0], m, x, b, rng, ws) == match::reject_stage::accepted);
  CHECK(calls == 2);
  CHECK(match::evaluate(good.operators[0], m, z, b, rng, ws) == match::reject_stage::input);
}

TEST_CASE("match builtins: deferred output conditions read replacement states from the probe") {
  match::symbol_table syms;
  const auto r = compile_text(op_text("anchor %x",
                                      "require input { rank(%x) == 2 }\n"
                                      "replace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }\n"
                                      "require output { shape(%c) == shape(%x) && !same_storage(%c, %x) }\n"
                                      "require internal { rank(%x) == 2 }"),
                              syms);
  const auto& op = r.operators[0];
  REQUIRE(op.output.size() == 1);
  CHECK(op.output[0].needs_probe);
  CHECK_FALSE(op.internal[0].needs_probe);
  mock_adapter m(syms);
  const auto x = m.add_input(T(dtype::f32, {2, 3}));
  match::workspace ws;
  match::bindings b;
  std::mt19937_64 rng(0);
  REQUIRE(match::evaluate(op, m, x, b, rng, ws) == match::reject_stage::accepted);
  fixed_probe pr;
  auto c = T(dtype::f32, {2, 3});
  c.storage_group = 99;
  pr.p.runs = {c};
  CHECK(match::evaluate_deferred(op, m, b, pr, ws) == match::reject_stage::accepted);
  pr.p.runs[0].shape = {3, 2};
  CHECK(match::evaluate_deferred(op, m, b, pr, ws) == match::reject_stage::output);
  pr.p.runs[0] = m.profile(x).runs[0];  // same storage as %x
  CHECK(match::evaluate_deferred(op, m, b, pr, ws) == match::reject_stage::output);
}

TEST_CASE("builtins: same_args holds for one computation done twice, not for siblings that differ") {
  match::symbol_table syms;
  mock_adapter m{syms};
  const auto x = m.add_input(T(dtype::f32, {2, 3}));
  const auto w = m.add_input(T(dtype::f32, {2, 3}));
  const auto two = [&](std::string_view op, std::vector<match::arg_view> args) {
    return m.add_node(op, std::move(args), std::vector{T(dtype::f32, {2, 3})});
  };
  const auto edge = [](match::edge_id e) { return mock_adapter::edge(e); };
  const auto constant = [](match::attr_value v) { return mock_adapter::constant(std::move(v)); };
  const auto r1 = two("aten::relu", {edge(x)});
  const auto r2 = two("aten::relu", {edge(x)});
  const auto s1 = two("aten::sigmoid", {edge(x)});
  const auto m2 = two("aten::mul", {edge(x), constant(2.0)});
  const auto m2b = two("aten::mul", {edge(x), constant(2.0)});
  const auto m3 = two("aten::mul", {edge(x), constant(3.0)});
  const auto a1 = two("aten::add", {edge(x), edge(w), constant(std::int64_t{1})});
  const auto a2 = two("aten::add", {edge(w), edge(x), constant(std::int64_t{1})});
  for (const auto e : {r1, r2, s1, m2, m2b, m3, a1, a2}) m.add_output(e);
  const auto r = compile_text(op_text("anchor %b",
                                      "pattern { %a = *(%x, ...) %b = *(%x, ...) %a != %b && same_args(%a, %b) }\n"
                                      "replace { rewire consumers(%b) -> %a }"),
                              syms);
  const auto& op = r.operators.at(0);
  match::workspace ws;
  match::bindings b;
  const auto matches = [&](match::edge_id anchor) { return match::match_pattern(op, m, anchor, b, ws); };
  CHECK(matches(r2));  // relu(x) twice
  CHECK(b.values[1] == r1);
  CHECK(matches(m2b));  // mul(x, 2.0) twice
  CHECK(b.values[1] == m2);
  CHECK_FALSE(matches(s1));  // sigmoid(x): no other sigmoid
  CHECK_FALSE(matches(m3));  // mul(x, 3.0): another constant
  CHECK_FALSE(matches(a2));  // add(w, x) is not add(x, w): arguments in order
}
}  // namespace tfg_test_match_builtins
