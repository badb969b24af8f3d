// Compiles tfg/match/program.hpp alone: the header is self-contained.
#include "tfg/match/program.hpp"
