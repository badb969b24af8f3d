#pragma once
/// \file
/// Declarations of the grammar's entry rules (the X3 "API header"). The definitions are in
/// grammar_def.hpp; the driver (parse.hpp) includes both, since the library is header-only.

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/detail/config.hpp"

namespace tfg::dsl::detail::parser {

struct operator_decl_class;
struct extern_decl_class;
struct requirement_decl_class;

/// `operator name <header clauses> { <body> }`
using operator_rule_type = x3::rule<operator_decl_class, operator_decl>;
/// `extern pred|fn name(types) [-> type]`
using extern_rule_type = x3::rule<extern_decl_class, extern_decl>;

/// `requirement ns::op(args) { conditions }`
using requirement_rule_type = x3::rule<requirement_decl_class, requirement_decl>;

BOOST_SPIRIT_DECLARE(operator_rule_type, extern_rule_type, requirement_rule_type)

}  // namespace tfg::dsl::detail::parser

namespace tfg::dsl::detail {
inline const parser::operator_rule_type& operator_grammar();
inline const parser::extern_rule_type& extern_grammar();
inline const parser::requirement_rule_type& requirement_grammar();
}  // namespace tfg::dsl::detail
