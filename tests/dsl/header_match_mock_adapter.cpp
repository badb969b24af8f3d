// Compiles tfg/match/mock_adapter.hpp alone: the header is self-contained.
#include "tfg/match/mock_adapter.hpp"
