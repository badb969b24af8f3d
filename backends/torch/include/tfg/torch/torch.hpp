#pragma once
/// tfg::torch: the LibTorch backend. Import TorchScript, run op by op, profile F(e), export.
#include "tfg/torch/compat.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/export.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/pt2.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/pickle_compat.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/torch/import/summary.hpp"
