#pragma once
/// \file
/// The seed's own check before a campaign: op-by-op execution (tfg::torch::executor) of the
/// imported model must reproduce TorchScript's forward of the same frozen graph bit for bit
/// (NaN equal to NaN). Where it does not, every finding on that seed would be flowmut's own
/// import or execution, not the framework's: `run` refuses the seed, naming the first node
/// whose output differs. For a `.pt2` seed, the TorchScript graph built from the program's
/// nodes is run by TorchScript's executor (LibTorch's C++ runtime for exported programs is not
/// part of the wheel's public library).
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/oracle/compare.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/export.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"

#include <torch/csrc/jit/api/function_impl.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tfg::torch {

/// "" when op-by-op execution of `m` (imported from `path`) equals TorchScript's forward on
/// every input of `inputs`, else what differs: the first node (in execution order) whose
/// tensor output differs, or the output. Runs in this process (as profiling does).
namespace seed_check_detail {
[[nodiscard]] TFG_TORCH_DECL std::string number(double d);
}  // namespace seed_check_detail

[[nodiscard]] TFG_TORCH_DECL std::string check_seed(const model& m, const std::string& path, const input_set& inputs);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/seed_check.ipp"
#endif
