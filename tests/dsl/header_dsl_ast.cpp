// Compiles tfg/dsl/ast.hpp on its own: it must include everything it uses.
#include "tfg/dsl/ast.hpp"
