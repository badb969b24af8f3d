// Compiles tfg/select/features.hpp alone: it must include everything it uses.
#include "tfg/select/features.hpp"
