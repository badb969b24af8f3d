#pragma once
/// \file
/// Parser-internal AST pieces: header clauses as written, before `fold_clause` validates them
/// and folds them into `operator_decl`'s typed fields.

#include <optional>
#include <vector>

#include "tfg/dsl/ast.hpp"

namespace tfg::dsl::detail {

/// `atol=1e-5` in `preserves values within atol=1e-5, rtol=1e-3`.
struct raw_tolerance {
  symbol key;
  expr value;
};

enum class clause_kind : std::uint8_t { object, primitive, origin, preserves, anchor, requires_device };

/// One operator header clause as written.
struct raw_clause {
  clause_kind kind = clause_kind::object;
  source_loc keyword;           ///< the clause keyword (for duplicate diagnostics)
  symbol word;                  ///< object/primitive/origin kind; anchor value
  std::optional<symbol> study;  ///< origin cg <study>
  std::optional<expr> rule_id;  ///< origin ... "L-ARep"
  bool within = false;
  std::vector<raw_tolerance> tolerances;
  source_loc loc;
};

}  // namespace tfg::dsl::detail
