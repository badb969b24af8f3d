// The DSL parser, compiled once for flowmut (TFG_DSL_SEPARATE_PARSER), so the LibTorch-heavy
// translation unit does not also compile the Spirit X3 grammar.
#define TFG_DSL_PARSER_IMPLEMENTATION
#include <tfg/dsl/parse.hpp>
