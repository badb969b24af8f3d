#pragma once
/// Graph reduction of a finding (`flowmut reduce`): the localised operator's *window* — the
/// operator and its producers up to some depth — as a model of its own whose graph inputs are
/// the values that flowed into the window from outside, recorded on the finding's inputs.
///
///  - windows (window.hpp): `window_of`, `window_model`, `locate_culprit`.
///  - `record_boundary(m, inputs, boundary)`: those edges' values on every input of `inputs`
///    (op by op, each value copied when produced, before a later in-place operator writes it);
///    `fold_constant_inputs`: boundary tensors computed from constants only become constants.
///  - `reduce_finding(dir, worker, ...)`: grows the window (depth 0, 1, 2, 3, 4, 6, 8, ...) until
///    it reproduces the finding's signature in a fresh worker (campaign::replay), checkpointing
///    each try in `dir/reduce/progress.json`; then keeps the first single input that still
///    shows it; the result is `dir/reduced/`.
#include "tfg/torch/linkage.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/replay.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/execute/window.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

/// The values of `boundary` edges on each input of `inputs`, run op by op (eager, one thread,
/// as the reference configuration runs): one argument list per input, in boundary order. Each
/// value is copied as its producer returns it (graph inputs: as given). Throws model_error
/// naming the node when the model fails on an input.
[[nodiscard]] TFG_TORCH_DECL input_set record_boundary(const model& m, const input_set& inputs,
                                                       const std::vector<graph::edge_id>& boundary);

/// Edges whose value depends on no graph input (computed from constants only; index = edge).
[[nodiscard]] TFG_TORCH_DECL std::vector<char> constant_derived(const model& m);

/// The window with each graph input that stands for a constant-derived tensor (the same value
/// on every input) turned into a tensor constant holding the recorded value, as freezing would
/// have folded it in the mutant: `optimize_for_inference` folds batch norm into a convolution
/// only when its statistics are constants. `values` loses those arguments.
TFG_TORCH_DECL void fold_constant_inputs(const model& m, window_result& wm, input_set& values);

/// One try of a reduction.
struct reduce_step {
  std::size_t depth = 0;
  std::size_t nodes = 0;  ///< operators of the window
  bool reproduced = false;
  std::string note;  ///< why the try could not run (export, recording), if it could not
};

/// What `reduce_finding` did.
struct reduce_outcome {
  std::string error;              ///< the finding cannot be reduced: why (nothing was written)
  bool reduced = false;           ///< a window reproduces: `dir/reduced/` holds it
  std::size_t mutant_nodes = 0;   ///< operators of the finding's mutant
  std::size_t reduced_nodes = 0;  ///< operators of the reduced graph
  std::size_t depth = 0;
  std::vector<reduce_step> steps;
  bool resumed = false;          ///< tries of an earlier, interrupted reduction were kept
  bool budget_spent = false;     ///< stopped at the deadline before a window reproduced
  std::size_t inputs_total = 0;  ///< inputs of the finding
  std::size_t inputs_kept = 0;   ///< inputs of the reduced window (1 when one input shows it)
  std::size_t input_kept = 0;    ///< which one, when inputs_kept == 1 < inputs_total
};

/// Kinds a window can show: a divergence localised to one operator. Hangs, out-of-memory,
/// performance and metamorphic findings (seed against mutant) are not reduced.
[[nodiscard]] inline bool reducible_kind(std::string_view kind) {
  return kind == "numeric" || kind == "nan_inf" || kind == "exception" || kind == "state" || kind == "crash" ||
         kind == "abort" || kind == "export_failure";
}

/// Reduces the finding in `dir` (`DIR/findings/ID`). Each try is a finding folder of its own
/// (`dir/reduce/dN`: the window's model, its recorded inputs, the finding's meta.json),
/// replayed by campaign::replay in a fresh worker with `timeout`; the signature must match.
/// `progress(step)` is called after each try; no try starts after `deadline` (a later call
/// resumes).
TFG_TORCH_DECL reduce_outcome
reduce_finding(const std::filesystem::path& dir, const std::filesystem::path& worker_exe,
               std::chrono::milliseconds timeout, std::int64_t rss_limit_bytes, const oracle::nan_rules& rules = {},
               const std::function<void(const reduce_step&)>& progress = {},
               std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/reduce/reduce.ipp"
#endif
