// Compiles tfg/util/str_cat.hpp on its own: it must include everything it uses.
#include "tfg/util/str_cat.hpp"
