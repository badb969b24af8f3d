// Compiles tfg/dsl/source.hpp on its own: it must include everything it uses.
#include "tfg/dsl/source.hpp"
