#pragma once
/// The compiled execution configurations of PyTorch 2.x (torch.compile with Inductor or
/// aot_eager, the decomposed exported program), run by a Python worker: PyTorch compiles from
/// Python, LibTorch cannot. The mutant is written as a torch.export program (save_pt2), its inputs
/// with torch.save; `backends/torch/python/tfg_compiled_worker.py` runs the configuration and
/// writes the outputs with torch.save; they come back as a run_result and are judged by the same
/// C++ oracle as every configuration.
///
/// The Python worker is supervised like the C++ one (tfg::campaign::worker: fork + exec, its own
/// process group, PR_SET_PDEATHSIG, the worker protocol on fds 3 and 4, a timeout). One Python
/// process serves the compiled configurations of one C++ process (started on first use; its
/// `import torch` is paid once per worker request, the compile once per configuration). In a
/// worker process (`propagate_deaths`), a Python worker that dies takes the C++ worker with it the
/// same way (the same signal, or the same exit code), so the supervisor records the crash against
/// the configuration current.json names; in any other process the death becomes the
/// configuration's error.
///
/// Where things are: compiled_defaults().python, else $TFG_PYTHON; compiled_defaults().script,
/// else $TFG_COMPILED_WORKER (`flowmut` sets both to its build's venv Python and the script in the
/// source tree). The Python's torch must be the version of the LibTorch this build links (a
/// compiled result is compared with LibTorch's eager one).
#include "tfg/torch/linkage.hpp"
#include "tfg/campaign/process.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/pickle_compat.hpp"
#include "tfg/torch/import/pt2.hpp"

#include <nlohmann/json.hpp>
#include <torch/version.h>
#if TFG_HAS_PT2
#include <ATen/Parallel.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace tfg::torch {

/// The compiled configurations, in `flowmut configs` order.
[[nodiscard]] TFG_TORCH_DECL const std::vector<std::string>& compiled_config_names();

/// The configurations that export the mutant to ONNX (torch.onnx.export) and run it in ONNX
/// Runtime: a second framework, run by the same Python worker.
[[nodiscard]] inline bool is_onnx_config(std::string_view name) { return name.rfind("onnxruntime", 0) == 0; }

[[nodiscard]] inline bool is_compiled_config(std::string_view name) {
  const auto& n = compiled_config_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

/// Configurations compiled by Inductor (a finding of one is attributed to Inductor or to graph
/// capture by rerunning the pair with aot_eager).
[[nodiscard]] inline bool is_inductor_config(std::string_view name) { return name.rfind("inductor", 0) == 0; }

/// Configurations whose results are gradients (compared with autograd_eager): the autograd
/// family and Inductor's compiled backward.
[[nodiscard]] inline bool is_gradient_config(std::string_view name) {
  return name.rfind("autograd", 0) == 0 || name == "inductor_autograd";
}

/// Process-wide settings of the compiled configurations.
struct compiled_settings {
  std::string python;  ///< empty: $TFG_PYTHON
  std::string script;  ///< empty: $TFG_COMPILED_WORKER
  /// A worker process sets this: the Python worker's death ends this process the same way.
  bool propagate_deaths = false;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  ///< per configuration (compile included)
  /// Inductor config flags set for every Inductor configuration (the flag search of a finding).
  std::map<std::string, nlohmann::json> inductor_flags;
  /// Where the Python worker's programs, inputs and outputs go (a folder per process,
  /// `compiled-PID-N`); empty: the system's temporary folder. A campaign's worker sets its own
  /// folder, which it sweeps when it starts: a worker killed at a timeout cannot remove its own.
  std::filesystem::path work_root;
};

[[nodiscard]] inline compiled_settings& compiled_defaults() {
  static compiled_settings s;
  return s;
}

namespace compiled_detail {

[[nodiscard]] inline std::string env_or(const char* name, const char* fallback) {
  if (const char* v = std::getenv(name); v && *v) return v;
  return fallback ? fallback : "";
}

[[nodiscard]] inline std::string python_path() {
  const auto& s = compiled_defaults();
  return s.python.empty() ? env_or("TFG_PYTHON", nullptr) : s.python;
}

[[nodiscard]] inline std::string script_path() {
  const auto& s = compiled_defaults();
  return s.script.empty() ? env_or("TFG_COMPILED_WORKER", nullptr) : s.script;
}

/// The version without a local suffix ("2.15.0+cu132" -> "2.15.0").
[[nodiscard]] inline std::string public_version(std::string v) {
  if (const auto plus = v.find('+'); plus != std::string::npos) v.resize(plus);
  return v;
}

/// The Python worker of this process (started on first use, replaced after it died; a forked
/// child never reuses its parent's).
struct python_process {
  std::unique_ptr<campaign::worker> proc;
  pid_t owner = 0;
  std::filesystem::path dir;  ///< programs, inputs, outputs and the worker's log
  std::string torch_version;  ///< what its ping answered
  std::int64_t next_id = 1;
};

[[nodiscard]] TFG_TORCH_DECL python_process& process();

[[nodiscard]] TFG_TORCH_DECL std::filesystem::path work_dir();

}  // namespace compiled_detail

/// Removes the Python worker folders (`compiled-PID-N`) of processes that no longer exist from
/// `dir` and, when `dir` is a campaign's `workers/N`, from its siblings: a worker killed at a
/// timeout cannot remove its programs and outputs (megabytes each; a night's hangs would fill
/// the disk). A worker calls it when it starts; folders of live processes stay.
TFG_TORCH_DECL void sweep_dead_work_dirs(const std::filesystem::path& dir);

namespace compiled_detail {

/// What the Python worker wrote to its log since `from` (the traceback of an error), to stderr.
inline void forward_log(const std::string& log) {
  if (!log.empty()) std::cerr << log << (log.back() == '\n' ? "" : "\n") << std::flush;
}

/// Ends this process as the Python worker ended (worker processes only).
[[noreturn]] TFG_TORCH_DECL void die_like(const campaign::exchange_result& ex);

[[nodiscard]] TFG_TORCH_DECL std::string death_message(const campaign::exchange_result& ex);

/// Sends one request; a death is propagated (worker processes) or returned as an error.
[[nodiscard]] TFG_TORCH_DECL tfg::expected<nlohmann::json, std::string> exchange(const nlohmann::json& request);

/// Why the compiled configurations cannot run here ("" when they can). Checked once per process.
[[nodiscard]] TFG_TORCH_DECL const std::string& unavailable_reason();

/// Why the ONNX configurations cannot run here ("" when they can): the compiled ones' reasons,
/// or the Python lacks onnxruntime or onnxscript (torch.onnx.export's dynamo exporter).
/// Looked up in the Python's site-packages, not imported (every process lists configurations).
[[nodiscard]] TFG_TORCH_DECL const std::string& onnx_unavailable_reason();

}  // namespace compiled_detail

/// Whether this process can run the compiled configurations, and if not why.
[[nodiscard]] inline bool compiled_available() { return compiled_detail::unavailable_reason().empty(); }

/// What a compiled configuration produced (run_config turns it into a run_result).
struct compiled_result {
  std::vector<output_list> outputs;
  double wall_ms = 0, prepare_ms = 0;
  std::string error;         ///< empty: ok
  bool skipped = false;      ///< not run: tfg could not give it the mutant (its own limitation, not judged)
  bool unsupported = false;  ///< skipped: the configuration does not support the model (the worker's "unsupported")
};

#if TFG_HAS_PT2
namespace compiled_detail {

/// The shapes, dtypes and non-tensor values of one forward input: a program written by save_pt2
/// holds the sizes of the input it was written with (torch.export specialises), so inputs of
/// other shapes need a program of their own.
[[nodiscard]] TFG_TORCH_DECL std::string shape_key(const std::vector<c10::IValue>& args);

/// A package's model library names `libtorch.so` without a path; this process links only
/// libtorch_cpu and c10, so the dynamic loader would take the first `libtorch.so` on the system
/// path (Debian's 1.13 on these machines: a second LibTorch in the process, SIGBUS in its
/// initialisers). The LibTorch beside the libtorch_cpu this process runs is loaded first, once,
/// globally, so the package's dependency resolves to it. "" when it loaded.
[[nodiscard]] TFG_TORCH_DECL const std::string& load_own_libtorch();

/// AOTInductor: loads the package the Python worker compiled and runs it here, in C++, as a
/// deployment does (torch::inductor::AOTIModelPackageLoader): `warmup` calls on the group's first
/// input, then each input timed. Outputs are named by the paths the Python worker read from the
/// program's output spec.
TFG_TORCH_DECL void run_package(compiled_result& r, const nlohmann::json& c, const input_set& used,
                                const std::vector<std::size_t>& group, std::size_t warmup);

/// Runs the inputs `group` (indices into `used`) of one shape in one program; appends to `r`.
TFG_TORCH_DECL void run_group(compiled_result& r, std::string_view name, const model& m, const input_set& used,
                              const std::vector<std::size_t>& group, std::size_t warmup, int threads);

}  // namespace compiled_detail
#endif  // TFG_HAS_PT2

/// For a disagreement of the ONNX configuration `name` on `m`: where in the exported ONNX model
/// its values first leave eager's, on the first input ("first diverging ONNX node: Add `n0_19`,
/// exported from FX node `hardswish_18` (...)", or why the mapping is lost). The Python worker
/// compares every ONNX value named after a node of the program the exporter translated with that
/// node's eager value (tfg_compiled_worker.py, onnx_localise).
[[nodiscard]] TFG_TORCH_DECL std::string onnx_localise(std::string_view name, const model& m, const input_set& inputs,
                                                       int threads);

/// Runs `m` under the compiled configuration `name` on the first `max_inputs` of `inputs`
/// (0: all), with `warmup` calls before timing (at least one: it compiles). Inputs of one shape
/// share a program and a compile; each further shape is written and compiled anew (the program
/// has static shapes, as torch.export gives them).
[[nodiscard]] TFG_TORCH_DECL compiled_result run_compiled(std::string_view name, const model& m,
                                                          const input_set& inputs, std::size_t max_inputs,
                                                          std::size_t warmup, int threads);

/// Helpers of compiled_detail other files use (the configuration list says why a compiled configuration is
/// unavailable); the rest of compiled_detail is this file's own.
using compiled_detail::onnx_unavailable_reason;
using compiled_detail::unavailable_reason;

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/compiled.ipp"
#endif
