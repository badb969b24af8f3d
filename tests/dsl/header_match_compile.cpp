// Compiles tfg/match/compile.hpp alone: the header is self-contained.
#include "tfg/match/compile.hpp"
