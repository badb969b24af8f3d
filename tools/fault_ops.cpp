// Fault-injection operators for the tool's own tests (reliability-and-reporting.md 6.1 item 15).
// They are registered in every flowmut process under the `tfg_fault` namespace but are reachable
// only through the test-only operator files in tests/data/fault_ops/: the bundled pool never
// creates them. Each reproduces one way a framework under test can fail.
#include <torch/library.h>
#include <ATen/ATen.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

// Free functions outside namespace tfg, with stable names, so the crash's stack frames (and
// therefore the finding's signature) name them.
extern "C" __attribute__((noinline)) void tfg_fault_segv_here(volatile int* p) { *p = 42; }

// The execution configuration running on this thread (tfg::torch::running_configuration(),
// exported by campaign_cmd.cpp so this file need not include the LibTorch backend).
extern "C" const char* tfg_running_configuration();

namespace {

at::Tensor segv(const at::Tensor& x) {
  tfg_fault_segv_here(nullptr);
  return x.clone();
}

at::Tensor abort_op(const at::Tensor& x) {
  std::abort();
  return x.clone();
}

at::Tensor hang(const at::Tensor& x) {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  return x.clone();
}

at::Tensor hog(const at::Tensor& x) {
  static std::vector<char*> kept;  // never freed: memory grows until the watchdog kills us
  for (;;) {
    auto* p = static_cast<char*>(std::malloc(64 << 20));
    if (!p) break;
    std::memset(p, 1, 64 << 20);
    kept.push_back(p);
  }
  return x.clone();
}

// NaN only in float64: the float64 reference configuration disagrees with eager float32.
at::Tensor nan_in_f64(const at::Tensor& x) {
  if (x.scalar_type() == at::kDouble) return at::full_like(x, std::numeric_limits<double>::quiet_NaN());
  return x.clone();
}

// Wrong values under the graph executor only (1.5 x), the truth elsewhere: a deterministic
// defect of one graph-level configuration, for localisation (it must be named as the culprit).
at::Tensor wrong_in_graph(const at::Tensor& x) {
  if (std::strcmp(tfg_running_configuration(), "graph_executor") == 0) return x * 1.5;
  return x.clone();
}

// The same defect as a second operator kind: a different root on the same configuration pair.
at::Tensor wrong_in_graph_b(const at::Tensor& x) {
  if (std::strcmp(tfg_running_configuration(), "graph_executor") == 0) return x - 0.75;
  return x.clone();
}

// 300 ms slower under the graph executor only, every call: a deterministic performance
// anomaly of one configuration (graph_executor against eager_op_by_op), which interleaved
// re-timing confirms.
at::Tensor slow_in_graph(const at::Tensor& x) {
  if (std::strcmp(tfg_running_configuration(), "graph_executor") == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return x.clone();
}

// A worker slowed once by a busy machine: the first call under eager_op_by_op in the whole
// campaign (processes share the marker file $TFG_TEST_BUSY_ONCE, created atomically) sleeps
// 60 s, past any test's timeout; every later call, in that worker's replacement or a rerun, is
// fast. Without $TFG_TEST_BUSY_ONCE it never sleeps.
at::Tensor busy_once(const at::Tensor& x) {
  const char* marker = std::getenv("TFG_TEST_BUSY_ONCE");
  if (marker && *marker && std::strcmp(tfg_running_configuration(), "eager_op_by_op") == 0) {
    const int fd = ::open(marker, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0) {
      ::close(fd);
      std::this_thread::sleep_for(std::chrono::seconds(60));
    }
  }
  return x.clone();
}

// Nondeterministic under eager_op_by_op only: each call adds 0.5 x (the calls so far in this
// process), so eager run twice disagrees with itself; every other configuration returns x.
// PyTorch's triage judges a pair only where eager agrees with itself: no finding.
at::Tensor drift_in_eager(const at::Tensor& x) {
  static int calls = 0;
  if (std::strcmp(tfg_running_configuration(), "eager_op_by_op") == 0) return x + 0.5 * ++calls;
  return x.clone();
}

}  // namespace

TORCH_LIBRARY(tfg_fault, m) {
  m.def("slow_in_graph(Tensor x) -> Tensor", &slow_in_graph);
  m.def("busy_once(Tensor x) -> Tensor", &busy_once);
  m.def("drift_in_eager(Tensor x) -> Tensor", &drift_in_eager);
  m.def("wrong_in_graph(Tensor x) -> Tensor", &wrong_in_graph);
  m.def("wrong_in_graph_b(Tensor x) -> Tensor", &wrong_in_graph_b);
  m.def("segv(Tensor x) -> Tensor", &segv);
  m.def("abort(Tensor x) -> Tensor", &abort_op);
  m.def("hang(Tensor x) -> Tensor", &hang);
  m.def("hog(Tensor x) -> Tensor", &hog);
  m.def("nan_in_f64(Tensor x) -> Tensor", &nan_in_f64);
}
