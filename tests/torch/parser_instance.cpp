// The DSL parser, compiled once for the torch test binary (TFG_DSL_SEPARATE_PARSER).
#define TFG_DSL_PARSER_IMPLEMENTATION
#include <tfg/dsl/parse.hpp>
