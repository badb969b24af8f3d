// tfg::torch_compiled, the oracle (comparison, localisation, influence, per-op checks): the definitions of these
// headers, compiled once.
#include "tfg/torch/linkage.hpp"

#if !defined(TFG_TORCH_SEPARATE)
#error "tfg::torch_compiled is built with TFG_TORCH_SEPARATE"
#endif

#include "tfg/torch/oracle/compare.ipp"
#include "tfg/torch/oracle/localise.ipp"
#include "tfg/torch/oracle/influence.ipp"
#include "tfg/torch/oracle/ops_check.ipp"
