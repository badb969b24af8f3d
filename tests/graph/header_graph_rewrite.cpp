// Compiles tfg/graph/rewrite.hpp on its own; the explicit instantiations compile every member.
#include "tfg/graph/rewrite.hpp"

template class tfg::graph::flow_graph<long, char>;
template class tfg::graph::rewrite_transaction<tfg::graph::flow_graph<long, char>>;
