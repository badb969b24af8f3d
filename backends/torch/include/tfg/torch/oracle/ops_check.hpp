#pragma once
/// The example runner: every `example match` / `example no_match` block of an operator
/// becomes a test on LibTorch (dsl/spec.md section 11). A match must yield a legal mutant
/// (all four stages, the probe, R(v) of the new readers), satisfy its `expect` block, run,
/// and — when the operator claims to preserve values — compute the seed's outputs within
/// its tolerance. A no_match must be rejected, by the stage it names.
#include "tfg/torch/linkage.hpp"
#include "tfg/dsl/ast.hpp"
#include "tfg/torch/import/example_graph.hpp"
#include "tfg/torch/import/externs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/mutate/infer.hpp"
#include "tfg/torch/mutate/mutate.hpp"
#include "tfg/oracle/verdict.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tfg::torch {

struct example_outcome {
  std::string op;     ///< operator name
  std::string where;  ///< file:line of the example
  bool match = true;  ///< the example's kind
  bool passed = false;
  bool skipped = false;  ///< needs a device this machine lacks (counts as passed)
  std::string message;   ///< why it failed, or a short summary of what held
};

/// The tolerance within which a mutant of `op` (which `preserves values`) must give the
/// seed's `output`: the operator's own, never below the rounding of the output's dtype (bf16,
/// f16; a value-preserving rewrite may still change which kernels run downstream). The
/// legality label and `flowmut ops check` judge with it.
[[nodiscard]] TFG_TORCH_DECL std::pair<double, double> value_claim_tolerance(const match::compiled_operator& op,
                                                                             const c10::IValue& output);

namespace detail {

/// `count(aten::clone)`, `nodes()`, literals, comparisons, arithmetic and logic over a model.
TFG_TORCH_DECL std::optional<double> expect_value(const dsl::expr& e, const model& m);

/// Most parameter combinations an example is tried with exhaustively.
inline constexpr std::size_t max_enumerated = 16;

/// Every combination of values of the parameters of `op` not bound by matching (a vector of
/// `op.params.size()` values each; bound ones and ones without a domain left None), when
/// their domains (sets, integer ranges) are finite with at most `limit` combinations in all;
/// nullopt otherwise (a float range, or too many). The first parameter varies slowest.
TFG_TORCH_DECL std::optional<std::vector<std::vector<match::attr_value>>> enumerate_params(
    const match::compiled_operator& op, std::size_t limit);

TFG_TORCH_DECL int stage_rank(match::reject_stage s);

}  // namespace detail

/// Runs one example of `op`. `symbols` must be the table `op` was compiled with, and
/// `externs` the context of the registry it was compiled with (may be null).
[[nodiscard]] TFG_TORCH_DECL example_outcome run_example(const match::compiled_operator& op,
                                                         const dsl::example_block& ex, match::symbol_table& symbols,
                                                         const match::requirement_table& requirements,
                                                         extern_context* externs = nullptr);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/oracle/ops_check.ipp"
#endif
