// Compiles tfg/graph/ids.hpp on its own: it must include everything it uses.
#include "tfg/graph/ids.hpp"
