// The Spirit X3 grammar of the mutation DSL, compiled once (target tfg_dsl_parser): every
// target that links it sees tfg/dsl/parse.hpp as a declaration (TFG_DSL_SEPARATE_PARSER
// travels with the target's interface) instead of compiling the grammar itself.
#define TFG_DSL_PARSER_IMPLEMENTATION
#include <tfg/dsl/parse.hpp>
