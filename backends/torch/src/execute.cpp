// tfg::torch_compiled, execution and configurations (eager, frozen, compiled; the worker): the definitions of these
// headers, compiled once.
#include "tfg/torch/linkage.hpp"

#if !defined(TFG_TORCH_SEPARATE)
#error "tfg::torch_compiled is built with TFG_TORCH_SEPARATE"
#endif

#include "tfg/torch/execute/execute.ipp"
#include "tfg/torch/execute/configs.ipp"
#include "tfg/torch/execute/compat_configs.ipp"
#include "tfg/torch/execute/compiled.ipp"
#include "tfg/torch/execute/observe.ipp"
#include "tfg/torch/execute/window.ipp"
#include "tfg/torch/execute/worker.ipp"
#include "tfg/torch/execute/profile.ipp"
