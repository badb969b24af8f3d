// tfg::torch_compiled, reduction and reproducers: the definitions of these headers, compiled once.
#include "tfg/torch/linkage.hpp"

#if !defined(TFG_TORCH_SEPARATE)
#error "tfg::torch_compiled is built with TFG_TORCH_SEPARATE"
#endif

#include "tfg/torch/reduce/reduce.ipp"
#include "tfg/torch/reduce/repro.ipp"
