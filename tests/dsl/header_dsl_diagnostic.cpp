// Compiles tfg/dsl/diagnostic.hpp on its own: it must include everything it uses.
#include "tfg/dsl/diagnostic.hpp"
