// Compiles tfg/match/pool.hpp alone: the header is self-contained.
#include "tfg/match/pool.hpp"
