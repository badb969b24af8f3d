// Compiles tfg/match/candidates.hpp alone: the header is self-contained.
#include "tfg/match/candidates.hpp"
