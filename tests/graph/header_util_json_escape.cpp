// Compiles tfg/util/json_escape.hpp on its own: it must include everything it uses.
#include "tfg/util/json_escape.hpp"
