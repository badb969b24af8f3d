// Compiles tfg/dsl/fwd.hpp on its own: it must include everything it uses.
#include "tfg/dsl/fwd.hpp"
