// Compiles tfg/util/assert.hpp on its own: it must include everything it uses.
#include "tfg/util/assert.hpp"
