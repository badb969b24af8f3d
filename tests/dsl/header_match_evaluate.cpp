// Compiles tfg/match/evaluate.hpp alone: the header is self-contained.
#include "tfg/match/evaluate.hpp"
