#pragma once
/// \file
/// Boost.Fusion adaptation of the parser-internal structs that X3 fills by attribute
/// propagation. Most public AST nodes are built by semantic actions instead: they hold
/// std::optional, std::vector<expr> trees and source spans, which X3 1.74 cannot propagate
/// into, and keeping them plain keeps X3 out of the public headers.

#include <boost/fusion/include/adapt_struct.hpp>

#include "tfg/dsl/detail/raw_ast.hpp"

BOOST_FUSION_ADAPT_STRUCT(tfg::dsl::detail::raw_tolerance, key, value)
