#pragma once
/// \file
/// What a loaded operator pool says about itself, for tools and reports: the object and
/// primitive names of the paper's Table 1, an operator's origin, its parameters, the pool's
/// cell counts, and the pool as JSON (`flowmut ops list --json`).
#include <array>
#include <cstddef>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "tfg/dsl/ast.hpp"
#include "tfg/match/compile.hpp"
#include "tfg/util/json_escape.hpp"

namespace tfg::match {

[[nodiscard]] constexpr std::string_view name(dsl::object_kind k) noexcept {
  constexpr std::string_view n[] = {"tensor", "operator", "relation", "subgraph"};
  return n[static_cast<int>(k)];
}
[[nodiscard]] constexpr std::string_view name(dsl::primitive_kind k) noexcept {
  constexpr std::string_view n[] = {"update", "insertion", "deletion", "rewiring"};
  return n[static_cast<int>(k)];
}

/// `cg STUDY "RULE"`, `tfg "RULE"`, or "" when the file has no origin.
[[nodiscard]] inline std::string origin_text(const compiled_operator& op) {
  if (!op.ast || !op.ast->origin) return "";
  const auto& o = *op.ast->origin;
  std::string s = o.from_cg ? "cg " + o.study : "tfg";
  if (!o.rule_id.empty()) s += " " + o.rule_id;
  return s;
}

/// The parameter names, `$a $b`.
[[nodiscard]] inline std::string params_text(const compiled_operator& op) {
  std::string s;
  for (const auto& p : op.params) s += (s.empty() ? "$" : " $") + p.name;
  return s;
}

/// Operators per (object, primitive) cell.
using cell_table = std::array<std::array<std::size_t, 4>, 4>;

/// The paper's Table 1: the final pool of 147 operators by object (tensor, operator, relation,
/// subgraph) and primitive (update, insertion, deletion, rewiring).
inline constexpr cell_table paper_cells{{{8, 4, 0, 0}, {38, 4, 1, 0}, {44, 6, 3, 3}, {17, 10, 2, 7}}};

[[nodiscard]] inline cell_table cell_counts(std::span<const compiled_operator> ops) {
  cell_table t{};
  for (const auto& op : ops) ++t[static_cast<int>(op.object)][static_cast<int>(op.primitive)];
  return t;
}

/// The pool as a JSON array of {name, object, primitive, origin, preserves_values, requires
/// (a device, or ""), parameters, file}, one operator per line.
inline void write_json(std::ostream& os, std::span<const compiled_operator> ops) {
  os << "[";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& op = ops[i];
    os << (i ? ",\n " : "\n ") << "{\"name\":";
    json::write_string(os, op.name);
    os << ",\"object\":\"" << name(op.object) << "\",\"primitive\":\"" << name(op.primitive) << "\",\"origin\":";
    json::write_string(os, origin_text(op));
    os << ",\"preserves_values\":" << (op.preserves_values ? "true" : "false") << ",\"requires\":";
    json::write_string(os, op.requires_device);
    os << ",\"parameters\":[";
    for (std::size_t k = 0; k < op.params.size(); ++k) {
      os << (k ? "," : "");
      json::write_string(os, op.params[k].name);
    }
    os << "],\"file\":";
    json::write_string(os, op.file);
    os << "}";
  }
  os << "\n]\n";
}

}  // namespace tfg::match
