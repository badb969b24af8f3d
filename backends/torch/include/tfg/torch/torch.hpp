#pragma once
/// tfg::torch: the LibTorch backend. Import TorchScript, run op by op, profile F(e), export.
#include "tfg/torch/compat.hpp"
#include "tfg/torch/execute.hpp"
#include "tfg/torch/export.hpp"
#include "tfg/torch/import.hpp"
#include "tfg/torch/pt2.hpp"
#include "tfg/torch/inputs.hpp"
#include "tfg/torch/ivalue.hpp"
#include "tfg/torch/model.hpp"
#include "tfg/torch/pickle_compat.hpp"
#include "tfg/torch/profile.hpp"
#include "tfg/torch/summary.hpp"
