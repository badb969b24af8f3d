#pragma once
/// \file
/// The X3 configuration, spelled once (as in boostorg/spirit example/x3): iterator, skipper
/// and the context every rule is parsed in.

#include <boost/spirit/home/x3.hpp>

namespace tfg::dsl::detail {
struct parse_state;
}

namespace tfg::dsl::detail::parser {

namespace x3 = boost::spirit::x3;

/// The grammar reads a contiguous buffer.
using iterator_type = const char*;

/// Blanks and `//` comments (doc comments `///` included; the driver reads those from the
/// line table). Character sets instead of x3::space: X3's classifiers assert on bytes >= 0x80.
inline const auto skipper = x3::char_(" \t\r\n\f\v") | (x3::lit("//") >> *(x3::char_ - x3::eol));
using skipper_type = std::remove_const_t<decltype(skipper)>;

/// Tag under which the rules find the `parse_state` (diagnostics sink, line table).
struct state_tag;

using skipper_context_type = decltype(x3::make_context<x3::skipper_tag>(std::declval<const skipper_type&>()));
using context_type = x3::context<state_tag, parse_state, skipper_context_type>;

}  // namespace tfg::dsl::detail::parser
