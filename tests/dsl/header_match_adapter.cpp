// Compiles tfg/match/adapter.hpp alone: the header is self-contained.
#include "tfg/match/adapter.hpp"
