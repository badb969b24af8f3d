// Compiles tfg/graph/json.hpp on its own, and instantiates write_json for a graph that offers
// only what tensor_graph lists.
#include "tfg/graph/json.hpp"

#include "mock_graph.hpp"

template void tfg::graph::write_json<tfg::test::mock_graph>(std::ostream&,
                                                            const tfg::test::mock_graph&);
