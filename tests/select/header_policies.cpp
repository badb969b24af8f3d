// Compiles tfg/select/policies.hpp alone: it must include everything it uses.
#include "tfg/select/policies.hpp"
