#pragma once
/// `extern` predicates the LibTorch backend registers for operator files (dsl/spec.md,
/// "Externs"). Externs see only their arguments, so the graph and profile they reason about
/// are published through an `extern_context` that the caller points at the model being
/// matched (one model at a time per registry).
#include "tfg/torch/linkage.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/match/program.hpp"
#include "tfg/torch/compat.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/execute/profile.hpp"

#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <iterator>
#include <utility>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <array>
#include <optional>
#include <vector>

#include <memory>

namespace tfg::torch {

struct extern_context {
  const model* target = nullptr;
  const profile* prof = nullptr;
  /// Per profiling run, the storage groups some in-place operator writes, sorted, each with the
  /// topological index of its last writer; built on first use. Assigning a new {target, prof}
  /// to the context clears it.
  mutable std::optional<std::vector<std::vector<std::pair<std::uint32_t, std::size_t>>>> written_groups = {};
};

namespace detail {

/// True for operators that write their first tensor argument in place (aten's trailing-underscore
/// convention: relu_, add_, copy_, fill_, index_put_, ...).
[[nodiscard]] inline bool writes_in_place(const node_data& d) {
  const auto name = std::string_view(d.kind.toQualString());
  return name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_' && name.rfind("aten::", 0) == 0;
}

/// True for operators whose result depends on a tensor's raw geometry (strides, storage
/// offset, storage) rather than on its values: moving such a reader to another tensor with
/// equal values but another layout changes what it computes.
[[nodiscard]] TFG_TORCH_DECL bool reads_geometry(const node_data& d);

}  // namespace detail

/// Makes the namespaces of every operator registered in this process (custom operator
/// libraries loaded with TORCH_LIBRARY, e.g. the test-only `tfg_fault`) valid in operator
/// files (dsl::extra_op_namespaces). Idempotent; called by torch_externs.
TFG_TORCH_DECL void register_custom_op_namespaces();

/// Whether op `kind` has a kernel for dtype `t` on `device`, decided by trial execution
/// (DevMuT's way) of the op on a small tensor with typical arguments, once per (op, dtype,
/// device) in the process. nullopt for an op it has no trial for. CPU half-precision kernels
/// are incomplete in LibTorch 1.13 (cos, gelu, softmax, hardsigmoid, ...) and more complete
/// later: the trial asks the LibTorch that runs, not a version table.
[[nodiscard]] TFG_TORCH_DECL std::optional<bool> kernel_runs(std::string_view kind, c10::ScalarType t,
                                                             c10::Device device);

/// The backend's externs:
///  * `no_inplace_writer(tensor) -> bool`: no in-place operator writes the storage of the tensor
///    (in the current profiling run) after the tensor is produced, so every reader of it, early
///    or late, directly or through a copy, sees the values it had when it was produced. A write
///    that runs before the producer (to a base the tensor then views) is already in those values.
///  * `device_available(device) -> bool`: this process can run on the device (cpu always;
///    cuda when LibTorch has CUDA and sees a GPU), so a mutation never moves data to a device
///    the configurations cannot use.
///  * `kernel_for(tensor, dtype) -> bool`: the op producing the tensor has a kernel for the
///    dtype on the tensor's device (`kernel_runs`, a trial execution); false for an op it has
///    no trial for.
///  * `no_geometry_reader(tensor) -> bool`: no consumer of the tensor reads its raw geometry
///    (`as_strided`, `stride`, `storage_offset`, `is_contiguous`, `set_`, `data_ptr`), so moving
///    one consumer to an equal-valued tensor with another layout cannot change what it reads.
[[nodiscard]] TFG_TORCH_DECL match::extern_registry torch_externs(std::shared_ptr<const extern_context> ctx);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/externs.ipp"
#endif
