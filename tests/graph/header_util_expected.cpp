// Compiles tfg/util/expected.hpp on its own; the explicit instantiation compiles every member.
#include "tfg/util/expected.hpp"

template class tfg::expected<int, long>;
