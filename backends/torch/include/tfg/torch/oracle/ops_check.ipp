#pragma once
// The definitions of ops_check.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/oracle/ops_check.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::pair<double, double> value_claim_tolerance(const match::compiled_operator& op,
                                                                             const c10::IValue& output) {
  const oracle::tolerance_table table;
  auto tol = table.f32;
  for (const auto& t : ivalue::floating_tensors(output))
    if (t.scalar_type() == c10::kBFloat16) tol = table.bf16;
    else if (t.scalar_type() == c10::kHalf && tol.atol < table.f16.atol) tol = table.f16;
  return {std::max(op.atol.value_or(0.0), tol.atol), std::max(op.rtol.value_or(0.0), tol.rtol)};
}

}  // namespace tfg::torch

namespace tfg::torch::detail {

TFG_TORCH_DECL std::optional<double> expect_value(const dsl::expr& e, const model& m) {
  using K = dsl::expr_kind;
  switch (e.kind) {
    case K::int_literal: return static_cast<double>(e.int_value);
    case K::float_literal: return e.float_value;
    case K::call: {
      if (e.text == "nodes" && e.args.empty()) return static_cast<double>(m.graph.node_count());
      if (e.text == "count" && e.args.size() == 1 && e.args[0].kind == K::op_name) {
        double n = 0;
        for (auto v : m.graph.nodes()) n += m.graph.data(v).name() == e.args[0].text;
        return n;
      }
      return std::nullopt;
    }
    case K::unary: {
      auto v = e.args.empty() ? std::nullopt : expect_value(e.args[0], m);
      if (!v) return std::nullopt;
      return e.op == dsl::op_code::neg ? -*v : (*v == 0 ? 1.0 : 0.0);
    }
    case K::binary: {
      auto a = expect_value(e.args[0], m), b = expect_value(e.args[1], m);
      if (!a || !b) return std::nullopt;
      using O = dsl::op_code;
      switch (e.op) {
        case O::logical_or: return (*a != 0 || *b != 0) ? 1.0 : 0.0;
        case O::logical_and: return (*a != 0 && *b != 0) ? 1.0 : 0.0;
        case O::eq: return *a == *b ? 1.0 : 0.0;
        case O::ne: return *a != *b ? 1.0 : 0.0;
        case O::lt: return *a < *b ? 1.0 : 0.0;
        case O::le: return *a <= *b ? 1.0 : 0.0;
        case O::gt: return *a > *b ? 1.0 : 0.0;
        case O::ge: return *a >= *b ? 1.0 : 0.0;
        case O::add: return *a + *b;
        case O::sub: return *a - *b;
        case O::mul: return *a * *b;
        case O::div: return *b == 0 ? std::nullopt : std::optional<double>(*a / *b);
        default: return std::nullopt;
      }
    }
    default: return std::nullopt;
  }
}

TFG_TORCH_DECL std::optional<std::vector<std::vector<match::attr_value>>> enumerate_params(
    const match::compiled_operator& op, std::size_t limit) {
  std::vector<std::vector<match::attr_value>> domains(op.params.size());
  std::size_t total = 1;
  for (std::size_t i = 0; i < op.params.size(); ++i) {
    const auto& p = op.params[i];
    auto& d = domains[i];
    if (p.bound_by_match) {
      d.emplace_back();
    } else if (p.domain == dsl::domain_kind::set && !p.members.empty()) {
      d = p.members;
    } else if (p.domain == dsl::domain_kind::range) {
      // As `match::sample_params`: integer ranges are drawn as ints, anything else as floats.
      const auto* lo = std::get_if<std::int64_t>(&p.lo);
      const auto* hi = std::get_if<std::int64_t>(&p.hi);
      if (p.type.kind != dsl::type_kind::integer || !lo || !hi || *hi < *lo ||
          static_cast<std::uint64_t>(*hi) - static_cast<std::uint64_t>(*lo) >= limit)
        return std::nullopt;
      for (std::int64_t v = *lo; v <= *hi; ++v) d.emplace_back(v);
    } else {
      d.emplace_back();  // not sampled: stays None
    }
    total *= d.size();
    if (total > limit) return std::nullopt;
  }
  std::vector<std::vector<match::attr_value>> out;
  out.reserve(total);
  std::vector<std::size_t> at(domains.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    auto& combo = out.emplace_back();
    for (std::size_t i = 0; i < domains.size(); ++i) combo.push_back(domains[i][at[i]]);
    for (std::size_t i = domains.size(); i-- > 0;) {
      if (++at[i] < domains[i].size()) break;
      at[i] = 0;
    }
  }
  return out;
}

TFG_TORCH_DECL int stage_rank(match::reject_stage s) {
  switch (s) {
    case match::reject_stage::pattern: return 0;
    case match::reject_stage::input: return 1;
    case match::reject_stage::internal: return 2;
    case match::reject_stage::output: return 3;
    default: return -1;
  }
}

}  // namespace tfg::torch::detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL example_outcome run_example(const match::compiled_operator& op,
                                                         const dsl::example_block& ex, match::symbol_table& symbols,
                                                         const match::requirement_table& requirements,
                                                         extern_context* externs) {
  example_outcome out;
  out.op = op.name;
  out.where = op.file + ":" + std::to_string(ex.loc.line);
  out.match = ex.match;
  if (!op.requires_device.empty() && !compat::device_available(op.requires_device)) {
    out.passed = out.skipped = true;
    out.message = "skipped: " + op.name + " requires " + op.requires_device;
    return out;
  }
  for (const auto& in : ex.graph.inputs)
    for (const auto& a : in.attrs)
      if (a.key.text == "cuda" && !at::hasCUDA()) {
        out.passed = out.skipped = true;
        out.message = "skipped: needs a CUDA device";
        return out;
      }
  try {
    auto seed = build_example(ex.graph, op.file);
    auto inputs = example_inputs(ex.graph, 3);
    auto prof = profiler({c10::Device(c10::kCPU), true, false, false}).run(seed, inputs);
    torch_match_adapter adapter(seed, prof, symbols);
    if (externs) *externs = extern_context{&seed, &prof};
    struct reset_context {
      extern_context* c;
      ~reset_context() {
        if (c) *c = {};
      }
    } reset{externs};
    graph::edge_id only = graph::no_edge;
    if (ex.anchor) {
      for (auto e : seed.graph.edges())
        if (seed.graph.data(e).name == ex.anchor->text) only = e;
      if (only == graph::no_edge) {
        out.message = "anchor %" + ex.anchor->text + " is not a value of the example graph";
        return out;
      }
    }
    // Sampled parameters (dsl/spec.md section 11): when the domains of the parameters not
    // bound by matching are finite with at most `max_enumerated` combinations in all, every
    // combination is tried; otherwise each example is tried with `parameter_seeds` fixed
    // sampling seeds. A match needs one legal mutant, a no_match none under any of them.
    constexpr std::uint64_t parameter_seeds = 64;
    const auto combinations = detail::enumerate_params(op, detail::max_enumerated);
    const std::uint64_t tries = combinations ? combinations->size() : (op.params.empty() ? 1 : parameter_seeds);
    int latest = -1;
    std::string latest_message;
    match::workspace ws;
    std::size_t legal = 0;
    std::string failures;
    for (std::uint64_t sample = 0; sample < tries; ++sample) {
      match::construct_options opt;
      opt.use_prefilter = false;  // exact stages: the prefilter folds input tests into its own count
      opt.record_pairs = true;
      opt.seed = sample;
      if (combinations) opt.params = &(*combinations)[sample];
      auto set = match::construct(adapter, std::span<const match::compiled_operator>(&op, 1), opt);
      for (const auto& pr : set.pairs)
        if (only == graph::no_edge || pr.anchor == only) latest = std::max(latest, detail::stage_rank(pr.stage));
      for (const auto& c : set.candidates) {
        if (only != graph::no_edge && c.anchor != only) continue;
        const auto bound = set.bound(c);
        auto r = mutate(seed, adapter, op, bound, symbols, requirements, inputs, ws);
        if (auto* f = std::get_if<mutation_failure>(&r)) {
          if (detail::stage_rank(f->stage) >= latest) latest_message = f->message;
          latest = std::max(latest, detail::stage_rank(f->stage));
          if (ex.match && failures.size() < 2000) failures += "\n    " + f->message;
          continue;
        }
        ++legal;
        auto& mu = std::get<mutant>(r);
        // What is decided before execution must never refuse a mutant the probe finds legal.
        if (auto f = static_check(mu, adapter, op, bound, symbols, requirements, ws)) {
          out.message = "a legal mutant is refused before execution: " + f->message;
          return out;
        }
        if (!ex.match) continue;
        for (const auto& cond : ex.expect) {
          auto v = detail::expect_value(cond, mu.graph_model);
          if (!v || *v == 0) {
            out.message = "expect condition at line " + std::to_string(cond.loc.line) + " does not hold on the mutant";
            return out;
          }
        }
        if (op.preserves_values) {
          for (std::size_t i = 0; i < inputs.size(); ++i) {
            const auto [atol, rtol] = value_claim_tolerance(op, prof.outputs[i]);
            const double ex_ = ivalue::excess(mu.probe.outputs[i], prof.outputs[i], atol, rtol);
            if (ex_ > 0) {
              char buf[160];
              std::snprintf(buf, sizeof buf,
                            "claims to preserve values but input %zu differs by %.3g beyond atol=%g rtol=%g", i, ex_,
                            atol, rtol);
              out.message = buf;
              return out;
            }
          }
        }
      }
      if (ex.match && legal > 0) break;
    }
    if (ex.match) {
      out.passed = legal > 0;
      out.message = out.passed ? std::to_string(legal) + " legal mutant(s)"
                               : "no legal mutant (latest stage reached: " +
                                     std::string(latest >= 0 ? match::name(static_cast<match::reject_stage>(latest + 1))
                                                             : "none") +
                                     ")" + failures;
      return out;
    }
    const int want = static_cast<int>(ex.rejected_by);  // dsl::stage: pattern, input, internal, output
    if (legal > 0) {
      out.message = "expected no match, got " + std::to_string(legal) + " legal mutant(s)";
    } else if (latest != want) {
      out.message = std::string("rejected by ") +
                    (latest >= 0 ? std::string(match::name(static_cast<match::reject_stage>(latest + 1))) : "nothing") +
                    ", expected " + std::string(match::name(static_cast<match::reject_stage>(want + 1))) +
                    (latest_message.empty() ? "" : ": " + latest_message);
    } else {
      out.passed = true;
      out.message = "rejected by " + std::string(match::name(static_cast<match::reject_stage>(latest + 1)));
    }
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
    out.message = what;
  }
  return out;
}

}  // namespace tfg::torch
