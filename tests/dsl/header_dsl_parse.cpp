// Compiles tfg/dsl/parse.hpp on its own: it must include everything it uses.
#include "tfg/dsl/parse.hpp"
