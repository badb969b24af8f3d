// tfg::torch_compiled, import (TorchScript and torch.export programs, inputs, inference): the definitions of these
// headers, compiled once.
#include "tfg/torch/linkage.hpp"

#if !defined(TFG_TORCH_SEPARATE)
#error "tfg::torch_compiled is built with TFG_TORCH_SEPARATE"
#endif

#include "tfg/torch/import/model.ipp"
#include "tfg/torch/import/import.ipp"
#include "tfg/torch/import/pickle_compat.ipp"
#include "tfg/torch/import/ivalue.ipp"
#include "tfg/torch/import/inputs.ipp"
#include "tfg/torch/import/schema.ipp"
#include "tfg/torch/import/externs.ipp"
#include "tfg/torch/import/export.ipp"
#include "tfg/torch/import/pt2.ipp"
#include "tfg/torch/import/trace_labels.ipp"
#include "tfg/torch/import/example_graph.ipp"
#include "tfg/torch/import/seed_check.ipp"
#include "tfg/torch/mutate/infer.ipp"
#include "tfg/torch/import/specialise.ipp"
#include "tfg/torch/import/summary.ipp"
