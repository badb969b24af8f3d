// Compiles tfg/graph/dot.hpp on its own, and instantiates write_dot for a graph that offers
// only what tensor_graph lists.
#include "tfg/graph/dot.hpp"

#include "mock_graph.hpp"

static_assert(tfg::graph::tensor_graph<tfg::test::mock_graph>);
template void tfg::graph::write_dot<tfg::test::mock_graph>(std::ostream&,
                                                           const tfg::test::mock_graph&);
