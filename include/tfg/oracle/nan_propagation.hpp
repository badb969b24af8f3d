#pragma once
/// \file
/// The NaN-propagation oracle (docs/oracle.md): a NaN that enters an operator whose documented
/// semantics propagate it, and does not come out, is a finding even when every configuration
/// agrees. The rule of each operator is data, declared in the requirement files
/// (`requirement aten::relu(%self) propagates nan elementwise { ... }`, dsl/spec.md 14):
///
///  - `elementwise`: every output element reads the input element at its (broadcast)
///    position: an output has at least `in_nan * (out_numel / in_numel)` NaNs;
///  - `preserve`: the output keeps every input element (cat, views, copies): at least `in_nan`;
///  - `any`: an output element reads many input elements (reductions, matmul, convolution,
///    normalisation, softmax, pooling): at least one NaN out when one comes in.
///
/// `from %x` limits the rule to one operand, for ops whose other tensor operands lend only a
/// shape or a type (view_as, reshape_as, expand_as).
///
/// Judged from F(e) alone (NaN counts per profiling run), so no extra execution is needed.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/graph/concepts.hpp"
#include "tfg/state/tensor_state.hpp"

namespace tfg::oracle {

enum class nan_rule : std::uint8_t { elementwise, preserve, any };

[[nodiscard]] constexpr std::string_view to_string(nan_rule r) noexcept {
  switch (r) {
    case nan_rule::elementwise: return "elementwise";
    case nan_rule::preserve: return "preserve";
    case nan_rule::any: return "any";
  }
  return "?";
}

/// An operator's rule and the operand it applies to: `operand` is the index among the node's
/// input edges of the one input whose values flow to the output (`propagates nan preserve from
/// %self` of view_as, reshape_as, expand_as: `other` only lends its shape); -1: every input.
struct nan_spec {
  nan_rule rule = nan_rule::any;
  int operand = -1;
  constexpr nan_spec() = default;
  constexpr nan_spec(nan_rule r, int from = -1) noexcept : rule(r), operand(from) {}  // NOLINT: a rule is a spec
  friend constexpr bool operator==(const nan_spec&, const nan_spec&) = default;
};

/// "elementwise", "preserve", "any", or with an operand "preserve@0" (as requirement files compile).
[[nodiscard]] inline std::string to_string(const nan_spec& s) {
  std::string out(to_string(s.rule));
  if (s.operand >= 0) out += "@" + std::to_string(s.operand);
  return out;
}

/// Inverse of to_string(nan_spec); nullopt for any other text.
[[nodiscard]] inline std::optional<nan_spec> parse_nan_rule(std::string_view s) noexcept {
  int operand = -1;
  if (const auto at = s.find('@'); at != std::string_view::npos) {
    const auto digits = s.substr(at + 1);
    if (digits.empty() || digits.size() > 4) return std::nullopt;
    operand = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      operand = operand * 10 + (c - '0');
    }
    s = s.substr(0, at);
  }
  for (auto r : {nan_rule::elementwise, nan_rule::preserve, nan_rule::any})
    if (to_string(r) == s) return nan_spec{r, operand};
  return std::nullopt;
}

/// Op kind -> its rule.
using nan_rules = std::map<std::string, nan_spec, std::less<>>;

/// One operator a NaN vanished through, on one profiling run.
struct nan_violation {
  graph::node_id node = graph::no_node;
  std::size_t run = 0;
  std::uint64_t in_nan = 0;    ///< NaNs in the input that carried most
  std::uint64_t expected = 0;  ///< at least this many in the output
  std::uint64_t out_nan = 0;   ///< what came out
  std::string message;
};

/// Every violation of `rules` in graph `g` with F(e) from `profile_of(e)` (a
/// `const state::edge_profile*`, null when unknown) and op kinds from `kind_of(n)`.
/// O(nodes x inputs x runs).
template <graph::tensor_graph G, class KindOf, class ProfileOf>
[[nodiscard]] std::vector<nan_violation> nan_vanished(const G& g, KindOf&& kind_of, ProfileOf&& profile_of,
                                                      const nan_rules& rules) {
  std::vector<nan_violation> out;
  if (rules.empty()) return out;
  for (auto n : g.topological_order()) {
    const std::string kind{kind_of(n)};
    const auto it = rules.find(kind);
    if (it == rules.end()) continue;
    const auto rule = it->second.rule;
    const int operand = it->second.operand;
    const state::edge_profile* first_out = nullptr;
    for (auto e : g.outputs(n))
      if (const auto* p = profile_of(e); p && !p->runs.empty() && p->runs[0].kind == state::value_kind::tensor &&
                                         state::is_floating(p->runs[0].type)) {
        first_out = p;
        break;
      }
    if (!first_out) continue;
    for (std::size_t r = 0; r < first_out->runs.size(); ++r) {
      const auto& o = first_out->runs[r];
      nan_violation worst;
      int index = -1;
      for (auto e : g.inputs(n)) {
        ++index;
        if (operand >= 0 && index != operand) continue;  // an operand that only lends its shape
        const auto* p = profile_of(e);
        if (!p || r >= p->runs.size()) continue;
        const auto& s = p->runs[r];
        if (s.kind != state::value_kind::tensor || !state::is_floating(s.type) || s.numbers.nan_count == 0) continue;
        std::uint64_t expected = 1;
        if (rule == nan_rule::preserve) expected = s.numbers.nan_count;
        if (rule == nan_rule::elementwise) {
          if (s.numel <= 0 || o.numel % s.numel != 0) continue;  // not a broadcast of this input
          expected = s.numbers.nan_count * static_cast<std::uint64_t>(o.numel / s.numel);
        }
        if (o.numbers.nan_count < expected && expected > worst.expected) {
          worst.in_nan = s.numbers.nan_count;
          worst.expected = expected;
        }
      }
      if (worst.expected == 0) continue;
      worst.node = n;
      worst.run = r;
      worst.out_nan = o.numbers.nan_count;
      worst.message = kind + " (propagates nan " + std::string(to_string(rule)) +
                      (operand >= 0 ? " from operand " + std::to_string(operand) : std::string()) + ") read " +
                      std::to_string(worst.in_nan) + " NaN and returned " + std::to_string(o.numbers.nan_count) +
                      " (at least " + std::to_string(worst.expected) + " expected) on profiling input " +
                      std::to_string(r);
      out.push_back(std::move(worst));
      break;  // one violation per node
    }
  }
  return out;
}

}  // namespace tfg::oracle
