#pragma once
/// \file
/// Umbrella header for the Tensor Flow Graph: ids, flow_graph, rewrite_transaction, concepts
/// and the DOT/JSON writers.

#include "tfg/graph/concepts.hpp"
#include "tfg/graph/dot.hpp"
#include "tfg/graph/flow_graph.hpp"
#include "tfg/graph/ids.hpp"
#include "tfg/graph/json.hpp"
#include "tfg/graph/rewrite.hpp"
