// Compiles tfg/graph/concepts.hpp on its own.
#include "tfg/graph/concepts.hpp"

#include <vector>

static_assert(tfg::graph::range_of<std::vector<tfg::graph::node_id>, tfg::graph::node_id>);
static_assert(!tfg::graph::tensor_graph<int>);
