// Compiles tfg/dsl/error_codes.hpp on its own: it must include everything it uses.
#include "tfg/dsl/error_codes.hpp"
