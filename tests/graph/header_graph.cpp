// Compiles tfg/graph.hpp on its own: it must include everything it uses.
#include "tfg/graph.hpp"
