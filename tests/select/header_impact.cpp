// Compiles tfg/select/impact.hpp alone: it must include everything it uses.
#include "tfg/select/impact.hpp"
