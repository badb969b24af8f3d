// Pattern matching, the anchor prefilter and rejection-stage attribution on mock graphs.

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <string>

#include "match_test_util.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_match_pattern {

using namespace tfg_match_test;
using state::dtype;

namespace {

struct chain {
  match::symbol_table syms;
  mock_adapter m{syms};
  match::edge_id a, r, g, s, w;  // a -> relu r -> gelu g ; s = aten::add(r, w); w input
  chain() {
    a = m.add_input(T(dtype::f32, {2, 3}));
    w = m.add_input(T(dtype::f32, {2, 3}));
    r = m.add_node("aten::relu", {mock_adapter::edge(a)}, std::vector{T(dtype::f32, {2, 3})});
    g = m.add_node("aten::gelu", {mock_adapter::edge(r), mock_adapter::constant(std::string("none"))},
                   std::vector{T(dtype::f32, {2, 3})});
    s = m.add_node("aten::add", {mock_adapter::edge(r), mock_adapter::edge(w), mock_adapter::constant(std::int64_t{1})},
                   std::vector{T(dtype::f32, {2, 3})});
    m.add_output(g);
    m.add_output(s);
  }
  match::reject_stage eval(const match::compiled_operator& op, match::edge_id e, match::bindings& b) {
    match::workspace ws;
    std::mt19937_64 rng(1);
    return match::evaluate(op, m, e, b, rng, ws);
  }
};

constexpr const char* replace_x = "replace { %c = aten::clone(%x, none) rewire consumers(%x) -> %c }";

}  // namespace

TEST_CASE("match: op-kind alternatives, '...' and result binding") {
  chain c;
  const auto r =
      compile_text(op_text("anchor %y", std::string("pattern { %y = aten::relu|aten::gelu(%x, ...) }\n") +
                                            "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
                   c.syms);
  const auto& op = r.operators.at(0);
  match::bindings b;
  CHECK(c.eval(op, c.r, b) == match::reject_stage::accepted);
  CHECK(b.values[op.anchor] == c.r);
  CHECK(b.values[1] == c.a);  // %x
  CHECK(c.eval(op, c.g, b) == match::reject_stage::accepted);
  CHECK(b.values[1] == c.r);
  CHECK(c.eval(op, c.s, b) == match::reject_stage::pattern);  // aten::add
  CHECK(c.eval(op, c.a, b) == match::reject_stage::pattern);  // graph input: no producer
}

TEST_CASE("match: exact argument count without '...', wildcard '_' and '*'") {
  chain c;
  const auto exact =
      compile_text(op_text("anchor %y", std::string("pattern { %y = aten::gelu(%x) }\n") +
                                            "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
                   c.syms);
  match::bindings b;
  CHECK(c.eval(exact.operators[0], c.g, b) == match::reject_stage::pattern);  // gelu has 2 args
  const auto wild =
      compile_text(op_text("anchor %y", std::string("pattern { %y = *(%x, _) }\n") +
                                            "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
                   c.syms);
  CHECK(c.eval(wild.operators[0], c.g, b) == match::reject_stage::accepted);
  CHECK(c.eval(wild.operators[0], c.r, b) == match::reject_stage::pattern);  // relu has 1 arg
}

TEST_CASE("match: literal arguments and $param bound by matching within the domain") {
  chain c;
  const auto lit =
      compile_text(op_text("anchor %y", std::string("pattern { %y = aten::add(%p, %q, 1) }\n") +
                                            "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
                   c.syms);
  match::bindings b;
  CHECK(c.eval(lit.operators[0], c.s, b) == match::reject_stage::accepted);
  const auto lit2 =
      compile_text(op_text("anchor %y", std::string("pattern { %y = aten::add(%p, %q, 2) }\n") +
                                            "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
                   c.syms);
  CHECK(c.eval(lit2.operators[0], c.s, b) == match::reject_stage::pattern);
  const auto par = compile_text(
      op_text("anchor %y", std::string("param $alpha : int in [1, 3]\npattern { %y = aten::add(%p, %q, $alpha) }\n") +
                               "replace { %c = aten::mul(%y, $alpha) rewire consumers(%y) -> %c }"),
      c.syms);
  const auto& op = par.operators[0];
  REQUIRE(op.params.size() == 1);
  CHECK(op.params[0].bound_by_match);
  CHECK(c.eval(op, c.s, b) == match::reject_stage::accepted);
  CHECK(b.params[0] == match::attr_value(std::int64_t{1}));
  const auto out = compile_text(
      op_text("anchor %y", std::string("param $alpha : int in [2, 3]\npattern { %y = aten::add(%p, %q, $alpha) }\n") +
                               "replace { %c = aten::mul(%y, $alpha) rewire consumers(%y) -> %c }"),
      c.syms);
  CHECK(c.eval(out.operators[0], c.s, b) == match::reject_stage::pattern);  // 1 not in [2, 3]
}

TEST_CASE("match: multi-node patterns through producers and consumers") {
  chain c;
  // Anchor in the middle: its producer (relu) and a consumer (gelu) are pattern nodes.
  const auto r =
      compile_text(op_text("anchor %m", std::string("pattern { %m = aten::relu(%x)\n %z = aten::gelu(%m, _) }\n") +
                                            "replace { %c = aten::clone(%m, none) rewire consumers(%m) -> %c }"),
                   c.syms);
  const auto& op = r.operators[0];
  match::bindings b;
  CHECK(c.eval(op, c.r, b) == match::reject_stage::accepted);
  REQUIRE(b.nodes.size() == 2);
  CHECK(b.nodes[0] == c.m.graph().producer(c.r));
  CHECK(b.nodes[1] == c.m.graph().producer(c.g));
  // The consumer search skips the add and finds the gelu; an absent consumer kind fails.
  const auto none =
      compile_text(op_text("anchor %m", std::string("pattern { %m = aten::relu(%x)\n %z = aten::sigmoid(%m) }\n") +
                                            "replace { %c = aten::clone(%m, none) rewire consumers(%m) -> %c }"),
                   c.syms);
  CHECK(c.eval(none.operators[0], c.r, b) == match::reject_stage::pattern);
  // A value read twice must be the same edge.
  const auto same =
      compile_text(op_text("anchor %m", std::string("pattern { %z = aten::add(%m, %m, _) }\n") +
                                            "replace { %c = aten::clone(%m, none) rewire consumers(%m) -> %c }"),
                   c.syms);
  CHECK(c.eval(same.operators[0], c.r, b) == match::reject_stage::pattern);
}

TEST_CASE("match: structural pattern conditions (consumers, uses, op, is_output)") {
  chain c;
  auto mk = [&](const std::string& cond) {
    return compile_text(op_text("anchor %x", "pattern { " + cond + " }\n" + replace_x), c.syms);
  };
  match::bindings b;
  const auto two = mk("consumers(%x) >= 2");
  CHECK(c.eval(two.operators[0], c.r, b) == match::reject_stage::accepted);
  CHECK(c.eval(two.operators[0], c.a, b) == match::reject_stage::pattern);
  const auto kind = mk("op(%x) == aten::relu && !is_output(%x) && !is_input(%x) && uses(%x) == 2");
  CHECK(c.eval(kind.operators[0], c.r, b) == match::reject_stage::accepted);
  CHECK(c.eval(kind.operators[0], c.g, b) == match::reject_stage::pattern);
}

TEST_CASE("match: the prefilter rejects only what the full evaluation rejects, at the same stage") {
  chain c;
  const auto views =
      c.m.add_node("aten::view", {mock_adapter::edge(c.g), mock_adapter::constant(std::vector<std::int64_t>{6})},
                   std::vector{T(dtype::f32, {6})});
  c.m.alias(c.g, views);
  const auto ints = c.m.add_node("aten::relu", {mock_adapter::edge(c.w)}, std::vector{T(dtype::i64, {4, 4, 4, 4})});
  (void)ints;
  // An unprofiled edge read by one node: only state conditions may reject it.
  const auto bare = c.m.add_node("aten::neg", {mock_adapter::edge(c.w)}, 1)[0];
  c.m.add_node("aten::neg", {mock_adapter::edge(bare)}, 1);
  std::string const ops[] = {
      op_text("anchor %y", std::string("pattern { %y = aten::relu|aten::gelu(%x, ...) }\n") +
                               "require input { rank(%y) == 2 && is_floating(%y) }\n"
                               "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
      op_text("anchor %x", std::string("require input { aliased(%x) }\n") + replace_x),
      op_text("anchor %x",
              std::string("pattern { consumers(%x) >= 2 }\nrequire input { dtype(%x) in {f32, f16} }\n") + replace_x),
      op_text("anchor %x", std::string("require input { rank(%x) in {2, 4} && dtype(%x) == i64 }\n") + replace_x),
      op_text("anchor %x", std::string("require input { uses(%x) >= 1 }\n") + replace_x),
  };
  for (const auto& text : ops) {
    const auto r = compile_text(text, c.syms);
    const auto summaries = match::summarize(c.m);
    for (const auto e : c.m.graph().edges()) {
      match::bindings b;
      const auto full = c.eval(r.operators[0], e, b);
      const auto pf = match::prefilter_check(r.operators[0].pre, summaries[tfg::graph::index(e)]);
      INFO(text << " edge " << e);
      if (pf != match::reject_stage::accepted) CHECK(full == pf);
    }
    const auto set = match::construct(c.m, std::span<const match::compiled_operator>(r.operators));
    const auto slow =
        match::construct(c.m, std::span<const match::compiled_operator>(r.operators), {.use_prefilter = false});
    CHECK(slow.candidates.size() == set.candidates.size());
    for (int s = 1; s < 6; ++s) CHECK(slow.total.by_stage[s] == set.total.by_stage[s] + set.total.prefilter_as[s]);
  }
}

TEST_CASE("match: construct counts every (edge, operator) pair once, by first rejecting stage") {
  chain c;
  const auto r = compile_text(op_text("anchor %x", std::string("require input { rank(%x) == 2 }\n") + replace_x) +
                                  op_text("anchor %y",
                                          std::string("pattern { %y = aten::gelu(%x, _) }\n") +
                                              "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }",
                                          "u")
                                      .substr(6),
                              c.syms);
  REQUIRE(r.operators.size() == 2);
  const auto set =
      match::construct(c.m, std::span<const match::compiled_operator>(r.operators), {.record_pairs = true});
  std::size_t const edges = c.m.graph().edge_count();
  CHECK(set.total.pairs() == edges * 2);
  CHECK(set.pairs.size() == edges * 2);
  CHECK(set.per_operator[0][match::reject_stage::accepted] == edges);  // every edge is rank 2
  CHECK(set.per_operator[1][match::reject_stage::accepted] == 1);      // only the gelu output
  CHECK(set.candidates.size() == edges + 1);
  for (const auto& cand : set.candidates) {
    if (cand.op == 1) CHECK(cand.anchor == c.g);
    const auto& op = r.operators[cand.op];
    REQUIRE(set.values_of(cand).size() == op.pattern_value_count);
    REQUIRE(set.bound(cand).values.size() == op.values.size());
    CHECK(set.values_of(cand)[op.anchor] == cand.anchor);
    CHECK(set.nodes_of(cand).size() == op.pattern.size());
    CHECK(set.bound(cand).values[op.anchor] == cand.anchor);
  }
}

TEST_CASE("match: sampled parameters are drawn from their domains") {
  match::symbol_table syms;
  const auto r =
      compile_text(op_text("anchor %x", std::string("param $k : int in [1, 8]\nparam $p : float in [0.5, 1.0]\n"
                                                    "param $a in {aten::relu, aten::gelu}\nparam $b : bool\n"
                                                    "replace { %c = $a(%x) %d = aten::mul(%c, $k) "
                                                    "%e = aten::mul(%d, $p) %f = aten::mul(%e, $b) "
                                                    "rewire consumers(%x) -> %f }")),
                   syms);
  const auto& op = r.operators[0];
  std::mt19937_64 rng(7);
  std::set<std::int64_t> ks, acts;
  for (int i = 0; i < 200; ++i) {
    const auto p = match::sample_params(op, rng);
    const auto k = std::get<std::int64_t>(p[0]);
    CHECK((k >= 1 && k <= 8));
    ks.insert(k);
    const auto f = std::get<double>(p[1]);
    CHECK((f >= 0.5 && f <= 1.0));
    acts.insert(std::get<std::int64_t>(p[2]));
    CHECK(std::holds_alternative<bool>(p[3]));
  }
  CHECK(ks.size() == 8);
  CHECK(acts == std::set<std::int64_t>{syms.find("aten::relu"), syms.find("aten::gelu")});
}

TEST_CASE("match: a range bound read from the site holds on every record, and an empty range rejects at input") {
  match::symbol_table syms;
  mock_adapter m{syms};
  // %x has rank 3 on one record and rank 4 on the other; %w has rank 2.
  const auto x = m.add_input(std::vector{T(dtype::f32, {2, 5, 7}), T(dtype::f32, {2, 5, 7, 9})});
  const auto w = m.add_input(T(dtype::f32, {3, 4}));
  const auto y = m.add_node(
      "aten::softmax",
      {mock_adapter::edge(x), mock_adapter::constant(std::int64_t{1}), mock_adapter::constant(std::monostate{})},
      std::vector{T(dtype::f32, {2, 5, 7}), T(dtype::f32, {2, 5, 7, 9})});
  const auto v = m.add_node(
      "aten::softmax",
      {mock_adapter::edge(w), mock_adapter::constant(std::int64_t{1}), mock_adapter::constant(std::monostate{})},
      std::vector{T(dtype::f32, {3, 4})});
  m.add_output(y);
  m.add_output(v);
  // $d: any dim other than the matched one, counted from the end; $j: up to the matched dim.
  const auto r = compile_text(
      op_text("anchor %y",
              "param $d0 : int in [-8, 8]\n"
              "param $d : int in [-rank(%x), rank(%x) - 1]\n"
              "param $j : int in [0, $d0 - 1]\n"
              "pattern { %y = aten::softmax(%x, $d0, none) }\n"
              "require input { $d != $d0 }\n"
              "replace { %z = aten::softmax(%x, $d, none) %u = aten::mul(%z, $j) rewire consumers(%y) -> %u }"),
      syms);
  const auto& op = r.operators.at(0);
  CHECK(op.params[1].computed_bounds());
  CHECK(op.params[2].computed_bounds());
  CHECK_FALSE(op.params[0].computed_bounds());
  match::workspace ws;
  std::mt19937_64 rng(3);
  match::bindings b;
  std::set<std::int64_t> ds;
  for (int i = 0; i < 300; ++i) {
    const auto st = match::evaluate(op, m, y, b, rng, ws);
    if (st != match::reject_stage::accepted) {
      CHECK(st == match::reject_stage::input);  // only $d == $d0
      CHECK(std::get<std::int64_t>(b.params[1]) == 1);
      continue;
    }
    const auto d = std::get<std::int64_t>(b.params[1]);
    ds.insert(d);
    CHECK(std::get<std::int64_t>(b.params[2]) == 0);  // [0, $d0 - 1] with $d0 == 1
  }
  // The intersection over records: rank 3 and rank 4 give [-3, 2].
  CHECK(ds == std::set<std::int64_t>{-3, -2, -1, 0, 2});
  // A replayed value outside the site's range is an input rejection, inside it is accepted.
  REQUIRE(match::match_pattern(op, m, y, b, ws));
  b.params[1] = std::int64_t{3};
  b.params[2] = std::int64_t{0};
  CHECK(match::check_constraints(op, m, b, ws) == match::reject_stage::input);
  b.params[1] = std::int64_t{-3};
  CHECK(match::check_constraints(op, m, b, ws) == match::reject_stage::accepted);
  // $d0 = 1 on %v too, but rank 2 leaves [-2, 1] for $d: sampled in range, never 2.
  for (int i = 0; i < 50; ++i)
    if (match::evaluate(op, m, v, b, rng, ws) == match::reject_stage::accepted)
      CHECK((std::get<std::int64_t>(b.params[1]) >= -2 && std::get<std::int64_t>(b.params[1]) <= 0));
  // An empty range ($j in [0, -1] where $d0 == 0) rejects at the input stage.
  const auto r0 = compile_text(op_text("anchor %y",
                                       "param $d0 : int in [-8, 8]\nparam $j : int in [0, $d0 - 1]\n"
                                       "pattern { %y = aten::softmax(%x, $d0, none) }\n"
                                       "replace { %u = aten::mul(%y, $j) rewire consumers(%y) -> %u }"),
                               syms);
  const auto z = m.add_node(
      "aten::softmax",
      {mock_adapter::edge(w), mock_adapter::constant(std::int64_t{0}), mock_adapter::constant(std::monostate{})},
      std::vector{T(dtype::f32, {3, 4})});
  m.add_output(z);
  CHECK(match::evaluate(r0.operators.at(0), m, z, b, rng, ws) == match::reject_stage::input);
  CHECK(match::evaluate(r0.operators.at(0), m, v, b, rng, ws) == match::reject_stage::accepted);
}

TEST_CASE("match: a parameter derived from the site is one value, the same on every record, never redrawn") {
  match::symbol_table syms;
  mock_adapter m{syms};
  // %x: rank 3 on both records (sizes differ); %u: rank 3 on one record, rank 4 on the other.
  const auto x = m.add_input(std::vector{T(dtype::f32, {2, 5, 7}), T(dtype::f32, {2, 6, 7})});
  const auto u = m.add_input(std::vector{T(dtype::f32, {2, 5, 7}), T(dtype::f32, {2, 5, 7, 9})});
  const auto y = m.add_node("aten::relu", {mock_adapter::edge(x)},
                            std::vector{T(dtype::f32, {2, 5, 7}), T(dtype::f32, {2, 6, 7})});
  const auto v = m.add_node("aten::relu", {mock_adapter::edge(u)},
                            std::vector{T(dtype::f32, {2, 5, 7}), T(dtype::f32, {2, 5, 7, 9})});
  m.add_output(y);
  m.add_output(v);
  // $nd: 2 on %y (rank 3, the same on both records); $k: sampled in [1, 4], accepted when
  // $k <= $nd.
  const auto r = compile_text(op_text("anchor %y",
                                      "param $nd : int = imin(imax(rank(%x), 3), 5) - 1\n"
                                      "param $k : int in [1, 4]\n"
                                      "pattern { %y = aten::relu(%x) }\n"
                                      "require input { $k <= $nd }\n"
                                      "replace { %z = aten::mul(%y, ipow($k, $nd)) rewire consumers(%y) -> %z }"),
                              syms);
  REQUIRE(r.operators.size() == 1);
  const auto& op = r.operators.at(0);
  CHECK(op.params[0].derived);
  CHECK(op.params[0].computed_bounds());
  CHECK(op.params[0].lo_expr == op.params[0].hi_expr);
  CHECK(op.input.at(0).reads_sampled);  // reads $k
  match::workspace ws;
  std::mt19937_64 rng(5);
  match::bindings b;
  std::set<std::int64_t> ks;
  for (int i = 0; i < 200; ++i) {
    const auto st = match::evaluate(op, m, y, b, rng, ws);
    CHECK(std::get<std::int64_t>(b.params[0]) == 2);
    if (st == match::reject_stage::accepted) ks.insert(std::get<std::int64_t>(b.params[1]));
    else CHECK(st == match::reject_stage::input);
  }
  CHECK(ks == std::set<std::int64_t>{1, 2});
  // The records of %u disagree (rank 3 and 4): the site is rejected at the input stage.
  for (int i = 0; i < 20; ++i) CHECK(match::evaluate(op, m, v, b, rng, ws) == match::reject_stage::input);
  // Replayed: the derived value must be the site's.
  REQUIRE(match::match_pattern(op, m, y, b, ws));
  b.params[0] = std::int64_t{3};
  b.params[1] = std::int64_t{1};
  CHECK(match::check_constraints(op, m, b, ws) == match::reject_stage::input);
  b.params[0] = std::int64_t{2};
  CHECK(match::check_constraints(op, m, b, ws) == match::reject_stage::accepted);

  // An operator whose only non-matched parameter is derived is not sampled (one check).
  const auto r1 = compile_text(op_text("anchor %y",
                                       "param $nd : int = rank(%y) - 1\npattern { %y = aten::relu(%x) }\n"
                                       "replace { %z = aten::mul(%y, $nd) rewire consumers(%y) -> %z }"),
                               syms);
  CHECK_FALSE(r1.operators.at(0).sampled_params);
}

TEST_CASE("match: construct's per-summary prefilter counts and visits exactly as the per-pair one") {
  chain c;
  const auto views =
      c.m.add_node("aten::view", {mock_adapter::edge(c.g), mock_adapter::constant(std::vector<std::int64_t>{6})},
                   std::vector{T(dtype::f32, {6})});
  c.m.alias(c.g, views);
  c.m.add_node("aten::relu", {mock_adapter::edge(c.w)}, std::vector{T(dtype::i64, {4, 4, 4, 4})});
  const auto bare = c.m.add_node("aten::neg", {mock_adapter::edge(c.w)}, 1)[0];
  c.m.add_node("aten::neg", {mock_adapter::edge(bare)}, 1);
  std::string const texts[] = {
      op_text("anchor %y", std::string("pattern { %y = aten::relu|aten::gelu(%x, ...) }\n") +
                               "require input { rank(%y) == 2 && is_floating(%y) }\n"
                               "replace { %c = aten::clone(%y, none) rewire consumers(%y) -> %c }"),
      op_text("anchor %x", std::string("require input { aliased(%x) }\n") + replace_x),
      op_text("anchor %x",
              std::string("pattern { consumers(%x) >= 2 }\nrequire input { dtype(%x) in {f32, f16} }\n") + replace_x),
      op_text("anchor %x", std::string("require input { rank(%x) in {2, 4} && dtype(%x) == i64 }\n") + replace_x),
      op_text("anchor %x",
              std::string("require input { !aliased(%x) && 0 < numel(%x) && dtype(%x) != f16 }\n") + replace_x),
  };
  std::vector<match::compiled_operator> ops;
  for (const auto& t : texts)
    for (const auto& op : compile_text(t, c.syms).operators) ops.push_back(op);
  REQUIRE(ops.size() == 5);
  const auto grouped = match::construct(c.m, std::span<const match::compiled_operator>(ops));
  const auto per_pair = match::construct(c.m, std::span<const match::compiled_operator>(ops), {.record_pairs = true});
  for (std::size_t i = 0; i < ops.size(); ++i) {
    CHECK(grouped.per_operator[i].by_stage == per_pair.per_operator[i].by_stage);
    CHECK(grouped.per_operator[i].prefilter_as == per_pair.per_operator[i].prefilter_as);
  }
  REQUIRE(grouped.candidates.size() == per_pair.candidates.size());
  for (std::size_t i = 0; i < grouped.candidates.size(); ++i) {
    const auto &x = grouped.candidates[i], &y = per_pair.candidates[i];
    CHECK(x.anchor == y.anchor);
    CHECK(x.op == y.op);
    CHECK(grouped.bound(x).values == per_pair.bound(y).values);
  }
}

TEST_CASE("match: candidate parameters of every kind read back as stored; construct_into reuses a set") {
  // Parameters are stored packed (scalars in 9 bytes, strings and lists aside): what a
  // candidate gives back must be the attr_value it was accepted with, for every kind.
  chain c;
  const auto r = compile_text(
      op_text("anchor %x",
              std::string("param $k : int in [-8, 8]\nparam $f : float in [-2.5, 2.5]\n") +
                  "param $b in {true, false}\nrequire input { $k != 0 }\n" +
                  "replace { %c = aten::mul(%x, $k) %d = aten::add(%c, $f, 1) %e = aten::dropout(%d, 0.0, $b)\n"
                  "  rewire consumers(%x) -> %e }"),
      c.syms);
  REQUIRE(r.operators.size() == 1);
  const std::span<const match::compiled_operator> ops(r.operators);
  std::size_t const edges = c.m.graph().edge_count();
  const std::vector<std::vector<match::attr_value>> choices = {
      {std::int64_t{-7}, -0.0, true},
      {std::int64_t{5}, 2.25, false},
      {std::int64_t{1}, std::numeric_limits<double>::denorm_min(), std::string("word")},
      {std::int64_t{2}, std::vector<double>{1.5, -3.0}, std::vector<std::int64_t>{4, 5}},
  };
  match::candidate_set reused;
  for (const auto& params : choices) {
    const auto fresh = match::construct(c.m, ops, {.params = &params});
    match::construct_into(reused, c.m, ops, {.params = &params});
    REQUIRE(fresh.candidates.size() == edges);
    REQUIRE(reused.candidates.size() == edges);
    CHECK(reused.total.by_stage == fresh.total.by_stage);
    CHECK(reused.per_operator.size() == 1);
    for (const match::candidate_set* set : {&fresh, static_cast<const match::candidate_set*>(&reused)})
      for (const auto& cand : set->candidates) {
        const auto got = set->params_of(cand);
        REQUIRE(got.size() == params.size());
        for (std::size_t i = 0; i < params.size(); ++i) CHECK(got[i] == params[i]);
        CHECK(set->bound(cand).params == params);
      }
    // A double's sign and subnormals survive the packing bit for bit.
    if (const auto* d = std::get_if<double>(&params[1]))
      CHECK(std::signbit(std::get<double>(reused.params_of(reused.candidates[0])[1])) == std::signbit(*d));
  }
  // A rejecting construct into the same set leaves no candidate of the previous one.
  const std::vector<match::attr_value> zero{std::int64_t{0}, 1.0, true};
  match::construct_into(reused, c.m, ops, {.params = &zero});
  CHECK(reused.candidates.empty());
  CHECK(reused.params.size() == 0);
  CHECK(reused.total[match::reject_stage::input] == edges);
}

TEST_CASE("match: construct with explicit parameter values instead of a sample") {
  chain c;
  const auto r =
      compile_text(op_text("anchor %x", std::string("param $k : int in [1, 8]\nrequire input { $k == 3 }\n") +
                                            "replace { %c = aten::mul(%x, $k) rewire consumers(%x) -> %c }"),
                   c.syms);
  REQUIRE(r.operators.size() == 1);
  const std::span<const match::compiled_operator> ops(r.operators);
  std::size_t const edges = c.m.graph().edge_count();
  std::vector<match::attr_value> three{std::int64_t{3}}, four{std::int64_t{4}};
  const auto yes = match::construct(c.m, ops, {.params = &three});
  CHECK(yes.candidates.size() == edges);
  for (const auto& cand : yes.candidates) CHECK(yes.params_of(cand)[0] == match::attr_value(std::int64_t{3}));
  const auto no = match::construct(c.m, ops, {.use_prefilter = false, .params = &four});
  CHECK(no.candidates.empty());
  CHECK(no.total[match::reject_stage::input] == edges);
}

}  // namespace tfg_test_match_pattern
