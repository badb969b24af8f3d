// Compiles tfg/graph/flow_graph.hpp on its own; the explicit instantiations compile every
// member, the rewrite transaction included (flow_graph.hpp provides it).
#include "tfg/graph/flow_graph.hpp"

template class tfg::graph::flow_graph<int, double>;
template class tfg::graph::rewrite_transaction<tfg::graph::flow_graph<int, double>>;
