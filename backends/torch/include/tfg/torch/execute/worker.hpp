#pragma once
/// The execution worker: runs one mutant under the requested execution configurations, judges
/// every configuration against its reference and returns the verdicts and the runtime-trace
/// labels as one JSON line. It runs inside a process started by exec (`flowmut worker`,
/// supervised by tfg::campaign::worker) so that a crash, an abort, a hang or unbounded memory
/// of the framework under test kills only the worker; `serve_requests` is the process's loop,
/// `handle_request` the in-process core (tests call it directly).
///
/// Requests and replies are tfg::campaign::worker_request / worker_reply, one JSON line each
/// (tfg/campaign/protocol.hpp). A reply carries, per compared pair, the worst verdict when it is
/// a finding or an error in both configurations.
/// Before each configuration the worker writes `current.json` ({"id","model","config","pid"})
/// into its folder: a write-ahead record that names the mutant and configuration a crash or
/// hang belongs to even when the reply never comes.
#include "tfg/torch/linkage.hpp"
#include "tfg/campaign/crash_handler.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/campaign/protocol.hpp"
#include "tfg/torch/oracle/compare.hpp"
#include "tfg/torch/execute/configs.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/pt2.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/oracle/localise.hpp"
#include "tfg/oracle/nan_propagation.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/torch/import/trace_labels.hpp"
#include "tfg/util/clock.hpp"

#include <nlohmann/json.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cerrno>
#include <cstdlib>

namespace tfg::torch {

/// State a worker keeps across requests: loaded input sets by path, the last model a
/// localisation step loaded (by path and modification time) and its reference values.
struct worker_state {
  std::filesystem::path dir;  ///< where current.json goes; empty: none (in-process use)
  std::map<std::string, input_set> inputs;
  std::string model_key;
  std::optional<model> loaded;
  probe_cache cache;
};

namespace worker_detail {

TFG_TORCH_DECL void write_current(const worker_state& st, const nlohmann::json& rec);

[[nodiscard]] inline bool is_gradient_config(std::string_view c) { return tfg::torch::is_gradient_config(c); }

/// Reseeds the default CPU generator, so that random operators of a mutant draw the same
/// numbers in every configuration (and a difference in how many they draw becomes visible).
TFG_TORCH_DECL void reseed_cpu_generator();

/// A hash of the default CPU generator's state (its consumption since the last reseed).
[[nodiscard]] TFG_TORCH_DECL std::uint64_t cpu_generator_state_hash();

/// The largest excess of a's outputs over b's (per input; see ivalue::excess) and its input.
[[nodiscard]] TFG_TORCH_DECL std::pair<double, std::size_t> output_excess(const run_result& a, const run_result& b,
                                                                          double atol, double rtol);

/// The metamorphic check's look in float64: the largest excess of the mutant's float64 outputs
/// over the seed's, within the operator's tolerance but never below float64's own (a
/// value-preserving mutation may still change which kernels run downstream: rounding, not
/// values), and the tolerance used. The worker's check and `flowmut legality`'s label.
struct float64_judgement {
  std::pair<double, std::size_t> worst;
  double atol = 0, rtol = 0;
};
[[nodiscard]] TFG_TORCH_DECL float64_judgement float64_excess(const run_result& mine64, const run_result& theirs64,
                                                              double atol, double rtol);

/// "backend: ..." for a finding `v` of an Inductor configuration, from the run `ref` of the
/// configuration Inductor compiles the input of, judged against the same reference: aot_eager
/// (the same graph capture and AOTAutograd, without Inductor) for torch.compile's
/// configurations, export_decomposed (the same torch.export program decomposed to core ATen,
/// run eagerly) for `aoti`. Where `ref` agrees, Inductor breaks; where it shows the finding
/// too, what feeds Inductor does.
[[nodiscard]] TFG_TORCH_DECL std::string backend_attribution(const oracle::verdict& v,
                                                             const std::map<std::string, run_result>& results,
                                                             const std::string& ref_name, const run_result& ref,
                                                             const model& m, const std::vector<c10::IValue>& opt_input,
                                                             bool nonfinite, bool nonfinite_forward);

/// The largest finite magnitude of a floating tensor (0 when it has none).
[[nodiscard]] TFG_TORCH_DECL double max_finite_magnitude(const at::Tensor& t);

/// Where the float64 gradient computation of `m` on `input` leaves the range of the model's
/// working dtype (float32: 3.4e38): the first node in execution order whose float64 forward
/// value, or the gradient of the loss with respect to it, is finite and larger than the
/// working dtype's largest value. Empty when there is none, or when it cannot be computed.
/// Where there is one, a NaN or Inf that only the working dtype's gradients show is that
/// dtype's overflow (IEEE: beyond the largest is Inf, and Inf - Inf or 0 x Inf is NaN), not a
/// framework defect (issue 43: efficientad's `1e-40` divisor, whose gradient 1/1e-40 is 1e40).
[[nodiscard]] TFG_TORCH_DECL std::string gradient_range_exceeded(const model& m, const std::vector<c10::IValue>& input);

}  // namespace worker_detail

/// Runs one request (see tfg/campaign/protocol.hpp). Never throws: failures become fields of
/// the reply.
[[nodiscard]] TFG_TORCH_DECL campaign::worker_reply handle_request(const campaign::worker_request& req,
                                                                   worker_state& st);

/// The structure of `m` for the supervisor's localisation (positions = topological order).
[[nodiscard]] TFG_TORCH_DECL campaign::skeleton skeleton_of(const model& m);

/// A trace, cut, nan_check or describe request (see tfg/campaign/protocol.hpp). Never throws.
[[nodiscard]] TFG_TORCH_DECL campaign::worker_reply handle_localisation(const campaign::worker_request& req,
                                                                        worker_state& st);

/// The worker process's main loop: crash handler installed, one reply per request line, until
/// the supervisor closes the request pipe. Returns the process exit status.
namespace worker_detail {

/// Whether `req` runs a CUDA configuration (names start with "cuda").
[[nodiscard]] inline bool uses_cuda(const campaign::worker_request& req) {
  auto cuda = [](const std::string& c) { return c.rfind("cuda", 0) == 0; };
  return std::any_of(req.configs.begin(), req.configs.end(), cuda) || cuda(req.config_a) || cuda(req.config_b);
}

/// Ends this process the way `status` (from waitpid) says its child ended: the same signal
/// (default disposition, so the supervisor sees the signal, not the crash handler's re-raise)
/// or the same exit code.
[[noreturn]] TFG_TORCH_DECL void end_like(int status);

}  // namespace worker_detail

/// The worker's loop. By default it is a fork server (AFL's): the process loads LibTorch but
/// never runs an operator itself; every request runs in a child forked for it, so every
/// request starts from the same process state. A worker that had run the previous mutants
/// itself traced differently than a fresh one (JIT-internal functions compiled lazily and
/// cached per process: `graph_executor:jit:defaults` appeared or not), so a campaign resumed
/// in a fresh worker rewarded a round differently from the uninterrupted one. A child that
/// crashes ends the server the same way (signal or exit code), so the supervisor classifies
/// it as before; it dies with the server (PR_SET_PDEATHSIG) and shares its process group
/// (timeouts kill both). CUDA cannot be initialised again in a forked child and costs seconds
/// per initialisation: a request with a CUDA configuration runs in this process, which is
/// then persistent for the rest of its life. `TFG_WORKER_PERSISTENT=1` turns the fork server off.
/// A run request gets a child of its own; consecutive localisation steps share one child (a
/// session: it keeps the loaded model and its reference values between steps, which
/// localisation needs to be fast) until another kind of request arrives, which the child hands
/// back to the server through a pipe before it exits.
TFG_TORCH_DECL int serve_requests(const std::filesystem::path& dir);

/// Helpers of worker_detail other files use (flowmut legality and the tests judge as the worker does); the rest of
/// worker_detail is this file's own.
using worker_detail::float64_excess;
using worker_detail::gradient_range_exceeded;

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/worker.ipp"
#endif
