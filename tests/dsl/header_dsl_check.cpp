// Compiles tfg/dsl/check.hpp on its own: it must include everything it uses.
#include "tfg/dsl/check.hpp"
