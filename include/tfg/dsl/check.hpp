#pragma once
/// \file
/// Semantic checks of a parsed module (the `check` phase of error_codes.hpp): name
/// resolution, value binding in pattern / replacement / constraints, the type system of the
/// constraint language, parameter domains, op names, built-in arity, examples.
/// `parse()` runs it by default; call it yourself on a module built or edited in code.

/// The checker's phases live in tfg/dsl/detail/ (checker.hpp and one header per phase).

#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/diagnostic.hpp"
#include "tfg/dsl/detail/checker.hpp"
#include "tfg/dsl/detail/check_declarations.hpp"
#include "tfg/dsl/detail/check_bodies.hpp"
#include "tfg/dsl/detail/check_expressions.hpp"
#include "tfg/dsl/detail/check_examples.hpp"

namespace tfg::dsl {

/// Checks `m` and fills the `resolved` types of its expressions, parameters and externs.
/// Returns the diagnostics (unsorted; `parse()` sorts them). Does not throw except on
/// allocation failure. O(size of the module) plus O(operators log operators).
[[nodiscard]] inline std::vector<diagnostic> check(module& m) {
  detail::checker c(m);
  return c.run();
}

}  // namespace tfg::dsl
