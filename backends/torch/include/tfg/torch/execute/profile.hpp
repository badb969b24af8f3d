#pragma once
/// The op-by-op profiler: runs a model on its profiling inputs and records F(e) for every edge,
/// time per node, and the dispatcher-level event trace (at::RecordFunction) of each run.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/execute/execute.hpp"

#include <ATen/record_function.h>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL  // xxHash as a header-only library
#endif
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tfg::torch {

// ---------------------------------------------------------------------------------------------
// Tensor state
// ---------------------------------------------------------------------------------------------

[[nodiscard]] TFG_TORCH_DECL state::dtype to_state(c10::ScalarType t);

namespace detail {

template <class T>
void summarise(const T* p, std::int64_t n, state::numeric_summary& s) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  std::uint64_t nan = 0, inf = 0, zero = 0, finite = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    if (std::isnan(v)) {
      ++nan;
      continue;
    }
    if (std::isinf(v)) {
      ++inf;
      continue;
    }
    zero += v == 0;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
    ++finite;
  }
  s.nan_count += nan;
  s.inf_count += inf;
  s.zero_count += zero;
  if (finite) {
    s.min = std::isnan(s.min) ? lo : std::min(s.min, lo);
    s.max = std::isnan(s.max) ? hi : std::max(s.max, hi);
    // `mean` carries the running sum here; summarise_f32 divides once at the end.
    s.mean = (std::isnan(s.mean) ? 0.0 : s.mean) + sum;
  }
}

#if defined(__GNUC__)
/// float32 is most of what flows through a model: eight elements a step with GCC/Clang vector
/// extensions, in two independent 4-lane chains.
TFG_TORCH_DECL void summarise_f32(const float* p, std::int64_t n, state::numeric_summary& s);
#endif

template <class T>
void summarise_all(const T* p, std::int64_t n, state::numeric_summary& s) {
  summarise(p, n, s);
  const auto finite = static_cast<std::uint64_t>(n) - s.nan_count - s.inf_count;
  if (finite) s.mean /= static_cast<double>(finite);
}

/// Integer and bool elements are always finite: a branch-free loop the compiler vectorises.
template <class T>
void summarise_integral(const T* p, std::int64_t n, state::numeric_summary& s) {
  if (n == 0) return;
  T lo = p[0], hi = p[0];
  double sum = 0;
  std::uint64_t zero = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    lo = p[i] < lo ? p[i] : lo;
    hi = p[i] > hi ? p[i] : hi;
    zero += p[i] == 0;
    sum += static_cast<double>(p[i]);
  }
  s.min = static_cast<double>(lo);
  s.max = static_cast<double>(hi);
  s.mean = sum / static_cast<double>(n);
  s.zero_count = zero;
}

[[nodiscard]] TFG_TORCH_DECL state::numeric_summary numbers_of(const at::Tensor& t);

}  // namespace detail

/// F(e) of one tensor, without storage grouping (the profiler assigns groups per run).
[[nodiscard]] TFG_TORCH_DECL state::tensor_state tensor_state_of(const at::Tensor& t, bool with_numbers = true);

// ---------------------------------------------------------------------------------------------
// Dispatcher events
// ---------------------------------------------------------------------------------------------

/// One dispatcher-level event: an operator (or TorchScript function) entered at a nesting depth.
struct event {
  std::uint32_t label;  ///< index into event_labels::names
  std::uint16_t depth;  ///< 0 = called by the executor, 1 = called from inside that op, ...
};

/// Interned event label names, shared across runs so labels compare across a campaign.
struct event_labels {
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> names;
  std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>> ids;
  /// Id of `s`, adding it when new. Heterogeneous lookup: no allocation for a known label.
  std::uint32_t intern(std::string_view s) {
    auto it = ids.find(s);
    if (it != ids.end()) return it->second;
    names.emplace_back(s);
    return ids.emplace(names.back(), static_cast<std::uint32_t>(names.size() - 1)).first->second;
  }
};

using event_trace = std::vector<event>;

/// Records at::RecordFunction events while alive, those of the thread that made it only: events
/// of intra-op worker threads (threads_1_vs_n) arrive in an order that changes from run to run,
/// and their depth is not this thread's, so a trace with them differed between two runs of one
/// campaign (a reward 0.516651 or 0.516719 in round 11 of a resnet18 campaign). One recorder at
/// a time per process.
class event_recorder {
 public:
  event_recorder(event_labels& labels, event_trace& out)
      : labels_(labels), out_(out), owner_(std::this_thread::get_id()) {
    current().store(this);
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                        .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                                                 at::RecordScope::TORCHSCRIPT_FUNCTION}));
  }
  ~event_recorder() {
    at::removeCallback(handle_);
    current().store(nullptr);
  }
  event_recorder(const event_recorder&) = delete;
  event_recorder& operator=(const event_recorder&) = delete;

 private:
  static std::atomic<event_recorder*>& current() {
    static std::atomic<event_recorder*> r{nullptr};
    return r;
  }
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    if (auto* r = current().load(); r && std::this_thread::get_id() == r->owner_) {
      std::lock_guard lock(r->mutex_);
      r->out_.push_back({r->labels_.intern(fn.name()), r->depth_});
      ++r->depth_;
    }
    return nullptr;
  }
  static void on_end(const at::RecordFunction&, at::ObserverContext*) {
    if (auto* r = current().load(); r && std::this_thread::get_id() == r->owner_) {
      std::lock_guard lock(r->mutex_);
      if (r->depth_ > 0) --r->depth_;
    }
  }

  event_labels& labels_;
  event_trace& out_;
  std::thread::id owner_;
  std::uint16_t depth_ = 0;
  std::mutex mutex_;
  at::CallbackHandle handle_{};
};

// ---------------------------------------------------------------------------------------------
// Profiler
// ---------------------------------------------------------------------------------------------

struct profile_options {
  c10::Device device = c10::Device(c10::kCPU);
  bool numbers = true;  ///< numeric summaries (min/max/mean/counts/hash)
  bool events = true;   ///< record dispatcher events
  bool timing = true;   ///< wall time per node
};

/// F for a whole model, plus per-run traces.
struct profile {
  std::vector<state::edge_profile> edges;  ///< indexed by edge id; empty runs for dead edges
  std::vector<double> node_seconds;        ///< summed over runs, indexed by node id
  std::vector<event_trace> traces;         ///< one per profiling input
  std::vector<c10::IValue> outputs;        ///< forward's value per profiling input
  std::size_t runs = 0;
};

/// Runs `m` on each profiling input and records F(e) for every edge.
class profiler {
 public:
  explicit profiler(profile_options opt = {}) : opt_(opt) {}

  [[nodiscard]] profile run(const model& m, const std::vector<std::vector<c10::IValue>>& inputs) {
    profile p;
    const auto& g = m.graph;
    p.edges.resize(g.edge_capacity());
    p.node_seconds.assign(g.node_capacity(), 0.0);
    executor ex(m, {opt_.device, false});
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const auto& x = inputs[k];
      run_groups_.clear();
      std::vector<graph::edge_id> produced;
      produced.reserve(g.edge_count());
      auto record = [&](graph::edge_id e, bool constant) {
        auto& runs = p.edges[graph::index(e)].runs;
        runs.push_back(state_of(ex.value(e), constant));
        produced.push_back(e);
      };
      event_trace trace;
      std::optional<event_recorder> recorder;
      if (opt_.events) recorder.emplace(labels_, trace);
      auto last = std::chrono::steady_clock::now();
      c10::IValue out;
      try {
        out = ex.run(x, [&](graph::node_id n, std::span<const graph::edge_id> outs) {
          if (opt_.timing && n != graph::no_node) {
            auto now = std::chrono::steady_clock::now();
            p.node_seconds[graph::index(n)] += std::chrono::duration<double>(now - last).count();
          }
          const bool constant = n != graph::no_node && g.data(n).kind == c10::prim::Constant;
          for (auto e : outs) record(e, constant);
          if (opt_.timing) last = std::chrono::steady_clock::now();
        });
      } catch (const model_error& e) {
        throw input_error(e, inputs, k);
      }
      recorder.reset();
      // Storage sharing is known only once the whole run is seen.
      std::unordered_map<std::uint32_t, std::uint32_t> sharers;
      for (auto e : produced) {
        const auto& s = p.edges[graph::index(e)].runs.back();
        if (s.kind == state::value_kind::tensor && s.storage_nbytes > 0) ++sharers[s.storage_group];
      }
      for (auto e : produced) {
        auto& s = p.edges[graph::index(e)].runs.back();
        if (s.kind == state::value_kind::tensor && s.storage_nbytes > 0) s.storage_sharers = sharers[s.storage_group];
      }
      p.outputs.push_back(std::move(out));
      p.traces.push_back(std::move(trace));
      ++p.runs;
    }
    return p;
  }

  [[nodiscard]] const event_labels& labels() const noexcept { return labels_; }
  [[nodiscard]] event_labels& labels() noexcept { return labels_; }

 private:
  state::tensor_state state_of(const c10::IValue& v, bool constant) {
    state::tensor_state s;
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      if (constant && t.defined()) {
        // Weights do not change between runs (or rounds): summarise each tensor once. The cache
        // holds the tensor, so its address cannot be reused by another; the version counter
        // catches in-place writes.
        auto it = constant_cache_.find(t.unsafeGetTensorImpl());
        if (it == constant_cache_.end() || it->second.version != t._version())
          it = constant_cache_
                   .insert_or_assign(t.unsafeGetTensorImpl(),
                                     cached_state{t, t._version(), tensor_state_of(t, opt_.numbers)})
                   .first;
        s = it->second.state;
      } else {
        s = tensor_state_of(t, opt_.numbers);
      }
      if (t.defined() && t.has_storage()) {
        const void* key = t.storage().unsafeGetStorageImpl();
        auto [it, fresh] = run_groups_.emplace(key, static_cast<std::uint32_t>(run_groups_.size()));
        (void)fresh;
        s.storage_group = it->second;
      }
    } else if (v.isInt()) {
      s.kind = state::value_kind::integer;
      s.scalar = static_cast<double>(v.toInt());
    } else if (v.isDouble()) {
      s.kind = state::value_kind::floating;
      s.scalar = v.toDouble();
    } else if (v.isBool()) {
      s.kind = state::value_kind::boolean;
      s.scalar = v.toBool();
    } else if (v.isTensorList()) {
      s.kind = state::value_kind::tensor_list;
      s.scalar = static_cast<double>(v.toTensorList().size());
    } else if (v.isIntList()) {
      s.kind = state::value_kind::int_list;
      s.scalar = static_cast<double>(v.toIntList().size());
    } else {
      s.kind = state::value_kind::other;
    }
    return s;
  }

  profile_options opt_;
  event_labels labels_;
  std::unordered_map<const void*, std::uint32_t> run_groups_;
  struct cached_state {
    at::Tensor tensor;
    std::int64_t version;
    state::tensor_state state;
  };
  std::unordered_map<const void*, cached_state> constant_cache_;
};

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/profile.ipp"
#endif
