#pragma once
// Helpers of the matcher suites: compile DSL text, build mock graphs from example graphs.

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "tfg/dsl/parse.hpp"
#include "tfg/match/candidates.hpp"
#include "tfg/match/compile.hpp"
#include "tfg/match/evaluate.hpp"
#include "tfg/match/mock_adapter.hpp"

namespace tfg_match_test {

namespace match = tfg::match;
namespace dsl = tfg::dsl;
namespace state = tfg::state;
using match::mock_adapter;

/// An extern registry with the externs the operator pool uses (stubs that hold).
inline const match::extern_registry& externs() {
  static match::extern_registry const r = [] {
    match::extern_registry x;
    x.add("no_inplace_writer", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    x.add("no_geometry_reader", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    x.add("device_available", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    x.add("kernel_for", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    return x;
  }();
  return r;
}

/// Parses, checks and compiles `text`; fails the test on any diagnostic.
inline match::compile_result compile_text(const std::string& text, match::symbol_table& syms) {
  const auto parsed = dsl::parse(text, "test.tfg");
  INFO(parsed.format_diagnostics());
  REQUIRE(parsed.ok());
  auto r = match::compile(parsed.ast, syms, externs());
  INFO(dsl::format(r.diagnostics, parsed.source));
  REQUIRE(r.ok());
  return r;
}

/// An operator around `body` with trivially valid examples.
inline std::string op_text(const std::string& header, const std::string& body, const std::string& name = "t") {
  return "tfg 1\noperator " + name + " object tensor primitive update origin tfg " + header + " {\n" + body +
         "\n  example match { graph(%a: f32[2]): %y = aten::relu(%a) return (%y) }\n"
         "  example no_match rejected_by(input) { graph(): return () }\n}\n";
}

inline state::tensor_state T(state::dtype d, std::vector<std::int64_t> shape) {
  return mock_adapter::tensor(d, std::move(shape));
}

/// Ops whose result is a view of their first argument (shares storage).
inline bool is_view_op(const std::string& op) {
  static const char* const views[] = {"aten::view",      "aten::transpose", "aten::permute", "aten::expand",
                                      "aten::narrow",    "aten::slice",     "aten::select",  "aten::squeeze",
                                      "aten::unsqueeze", "aten::t",         "aten::detach",  "aten::as_strided",
                                      "aten::view_as",   "aten::alias",     "aten::unfold"};
  for (const auto* v : views)
    if (op == v) return true;
  return false;
}

/// Builds an example graph into `m`: input states from the declared types and attributes,
/// node states by a tiny transfer function (views take the list argument as shape and alias
/// their input; other ops copy their first tensor argument's state). Returns value -> edge.
inline std::map<std::string, match::edge_id> build_example(const dsl::example_graph& g, mock_adapter& m) {
  std::map<std::string, match::edge_id> v;
  for (const auto& in : g.inputs) {
    state::tensor_state s;
    if (in.tensor) {
      std::vector<std::int64_t> dims;
      for (const auto& d : in.dims) dims.push_back(d.int_value);
      const auto dt = tfg::state::parse_dtype(in.type_name.text);
      s = T(dt.value_or(state::dtype::other), dims);
      for (const auto& a : in.attrs) {
        if (a.key.text == "nan") s.numbers.nan_count = 1;
        if (a.key.text == "inf") s.numbers.inf_count = 1;
        if (a.key.text == "cuda") s.device.kind = state::device_kind::cuda;
        if (a.key.text == "requires_grad") s.requires_grad = true;
        if (a.key.text == "channels_last") s.format = state::memory_format::channels_last;
        auto num = [&] {
          return a.value->kind == dsl::expr_kind::int_literal ? double(a.value->int_value) : a.value->float_value;
        };
        if (a.key.text == "min" && a.value) s.numbers.min = num();
        if (a.key.text == "max" && a.value) s.numbers.max = num();
      }
    } else {
      s.kind = in.type_name.text == "float"  ? state::value_kind::floating
               : in.type_name.text == "bool" ? state::value_kind::boolean
                                             : state::value_kind::integer;
    }
    v[in.name.text] = m.add_input(s);
  }
  for (const auto& n : g.nodes) {
    std::vector<match::arg_view> args;
    std::optional<match::edge_id> first;
    std::optional<std::vector<std::int64_t>> list_arg;
    for (const auto& a : n.args) {
      switch (a.kind) {
        case dsl::expr_kind::value:
          args.push_back(mock_adapter::edge(v.at(a.text)));
          if (!first) first = v.at(a.text);
          break;
        case dsl::expr_kind::int_literal: args.push_back(mock_adapter::constant(a.int_value)); break;
        case dsl::expr_kind::float_literal: args.push_back(mock_adapter::constant(a.float_value)); break;
        case dsl::expr_kind::string_literal: args.push_back(mock_adapter::constant(a.text)); break;
        case dsl::expr_kind::name:
          if (a.text == "none") args.push_back(mock_adapter::none());
          else if (a.text == "true" || a.text == "false") args.push_back(mock_adapter::constant(a.text == "true"));
          else args.push_back(mock_adapter::constant(a.text));
          break;
        case dsl::expr_kind::list: {
          std::vector<match::arg_view> items;
          std::vector<std::int64_t> ints;
          for (const auto& x : a.args) {
            if (x.kind == dsl::expr_kind::value) items.push_back(mock_adapter::edge(v.at(x.text)));
            else {
              items.push_back(mock_adapter::constant(x.int_value));
              ints.push_back(x.int_value);
            }
          }
          if (!list_arg && ints.size() == a.args.size()) list_arg = ints;
          args.push_back(mock_adapter::list(std::move(items)));
          break;
        }
        default: args.push_back(match::arg_view{}); break;
      }
    }
    std::string const op = n.op.names.empty() ? std::string("aten::unknown") : n.op.names.front().text;
    const auto outs = m.add_node(op, std::move(args), n.results.size());
    for (std::size_t j = 0; j < outs.size(); ++j) {
      v[n.results[j].text] = outs[j];
      if (!first) continue;
      auto runs = m.graph().data(*first).profile.runs;
      if (is_view_op(op) && list_arg && op == "aten::view") {
        for (auto& r : runs)
          r = [&] {
            auto s = T(r.type, *list_arg);
            s.numbers = r.numbers;
            return s;
          }();
      }
      m.set_runs(outs[j], runs);
      if (is_view_op(op)) m.alias(*first, outs[j]);
    }
  }
  for (const auto& o : g.outputs) m.add_output(v.at(o.text));
  return v;
}

/// The outcome of an example at the match level: whether some candidate passed, and the
/// latest stage any candidate reached when none did.
struct example_outcome {
  bool matched = false;
  match::reject_stage latest = match::reject_stage::prefilter;
};

inline example_outcome run_example(const match::compiled_operator& op, const dsl::example_block& ex,
                                   match::symbol_table& syms) {
  mock_adapter m(syms);
  const auto v = build_example(ex.graph, m);
  example_outcome out;
  match::workspace ws;
  match::bindings b;
  for (const auto e : m.graph().edges()) {
    if (ex.anchor && v.at(ex.anchor->text) != e) continue;
    for (std::uint64_t seed = 0; seed < 32; ++seed) {
      std::mt19937_64 rng(seed);
      const auto st = match::evaluate(op, m, e, b, rng, ws);
      if (st == match::reject_stage::accepted) out.matched = true;
      else if (static_cast<int>(st) > static_cast<int>(out.latest)) out.latest = st;
    }
  }
  return out;
}

/// A probe that reports the same F, `p`, for every replacement value.
struct fixed_probe : match::probe_source {
  state::edge_profile p;
  const state::edge_profile* profile(std::uint32_t) const override { return &p; }
};

}  // namespace tfg_match_test
