// Compiles the DSL parser once for the test binary. With TFG_DSL_SEPARATE_PARSER defined for
// the target, the test sources include parse.hpp as a declaration only (about 1.5 s instead of
// 11 s each); without it this file is merely redundant.
#define TFG_DSL_PARSER_IMPLEMENTATION
#include "tfg/dsl/parse.hpp"
