// Compiles tfg/dsl/builtins.hpp on its own: it must include everything it uses.
#include "tfg/dsl/builtins.hpp"
