#pragma once
/// The op-by-op profiler: runs a model on its profiling inputs and records F(e) for every edge,
/// time per node, and the dispatcher-level event trace (at::RecordFunction) of each run.
#include "tfg/torch/execute.hpp"

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

[[nodiscard]] inline state::dtype to_state(c10::ScalarType t) {
  using state::dtype;
  switch (t) {
    case c10::kHalf: return dtype::f16;
    case c10::kBFloat16: return dtype::bf16;
    case c10::kFloat: return dtype::f32;
    case c10::kDouble: return dtype::f64;
    case c10::kComplexFloat: return dtype::c64;
    case c10::kComplexDouble: return dtype::c128;
    case c10::kChar: return dtype::i8;
    case c10::kByte: return dtype::u8;
    case c10::kShort: return dtype::i16;
    case c10::kInt: return dtype::i32;
    case c10::kLong: return dtype::i64;
    case c10::kBool: return dtype::boolean;
    default: return dtype::other;
  }
}

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
inline void summarise_f32(const float* p, std::int64_t n, state::numeric_summary& s) {
  // 16-byte vectors: native on every x86-64 (SSE2) and AArch64 (NEON) target; wider ones are
  // split by the compiler into slow generic code unless AVX is enabled for the whole TU.
  // Blocks are summarised optimistically (all finite: plain min/max/sum); a block that holds
  // NaN or Inf is summarised again by the scalar loop, which counts them.
  using f32x4 = float __attribute__((vector_size(16)));
  using i32x4 = std::int32_t __attribute__((vector_size(16)));
  constexpr float inf = INFINITY;
  const f32x4 infs = {inf, inf, inf, inf};
  f32x4 lo0 = infs, hi0 = -infs, lo1 = infs, hi1 = -infs;
  double sum = 0;
  std::uint64_t zero = 0;
  state::numeric_summary odd;  // blocks with NaN/Inf
  std::int64_t i = 0;
  constexpr std::int64_t block = 4 * 1024;  // flush float sums and 32-bit counts per block
  while (i + 8 <= n) {
    const std::int64_t begin = i;
    const std::int64_t end = std::min(n - (n - i) % 8, i + block);
    f32x4 s0 = {}, s1 = {}, blo0 = lo0, bhi0 = hi0, blo1 = lo1, bhi1 = hi1;
    i32x4 z0 = {}, z1 = {}, bad = {};
    for (; i < end; i += 8) {
      f32x4 v0, v1;
      std::memcpy(&v0, p + i, sizeof v0);
      std::memcpy(&v1, p + i + 4, sizeof v1);
      // NaN fails `<`; Inf fails it too once the sign bit is cleared.
      bad |= ~((f32x4)((i32x4)v0 & 0x7fffffff) < infs) | ~((f32x4)((i32x4)v1 & 0x7fffffff) < infs);
      blo0 = v0 < blo0 ? v0 : blo0;
      bhi0 = v0 > bhi0 ? v0 : bhi0;
      blo1 = v1 < blo1 ? v1 : blo1;
      bhi1 = v1 > bhi1 ? v1 : bhi1;
      s0 += v0;
      s1 += v1;
      z0 -= v0 == 0;
      z1 -= v1 == 0;
    }
    if (bad[0] | bad[1] | bad[2] | bad[3]) {
      summarise(p + begin, end - begin, odd);
      continue;
    }
    lo0 = blo0, hi0 = bhi0, lo1 = blo1, hi1 = bhi1;
    for (int l = 0; l < 4; ++l) {
      sum += static_cast<double>(s0[l]) + static_cast<double>(s1[l]);
      zero += static_cast<std::uint64_t>(z0[l]) + static_cast<std::uint64_t>(z1[l]);
    }
  }
  summarise(p + i, n - i, odd);  // the tail, at most 7 elements
  float flo = inf, fhi = -inf;
  for (int l = 0; l < 4; ++l) {
    flo = std::min({flo, lo0[l], lo1[l]});
    fhi = std::max({fhi, hi0[l], hi1[l]});
  }
  s.nan_count = odd.nan_count;
  s.inf_count = odd.inf_count;
  s.zero_count = zero + odd.zero_count;
  const bool vector_finite = flo <= fhi;  // some finite element went through the vector path
  if (vector_finite || !std::isnan(odd.min)) {
    s.min = std::isnan(odd.min) ? flo : vector_finite ? std::min(static_cast<double>(flo), odd.min) : odd.min;
    s.max = std::isnan(odd.max) ? fhi : vector_finite ? std::max(static_cast<double>(fhi), odd.max) : odd.max;
    const double total = sum + (std::isnan(odd.mean) ? 0.0 : odd.mean);
    s.mean = total / static_cast<double>(static_cast<std::uint64_t>(n) - s.nan_count - s.inf_count);
  }
}
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

[[nodiscard]] inline state::numeric_summary numbers_of(const at::Tensor& t) {
  state::numeric_summary s;
  if (!t.defined() || t.numel() == 0 || t.layout() != c10::kStrided) return s;
  at::Tensor c = t.device().is_cpu() ? t.contiguous() : t.to(c10::kCPU).contiguous();
  const auto n = c.numel();
  const auto bytes = static_cast<std::size_t>(n) * c.element_size();
  s.content_hash = XXH3_64bits(c.data_ptr(), bytes);
  switch (c.scalar_type()) {
#if defined(__GNUC__)
    case c10::kFloat: summarise_f32(c.data_ptr<float>(), n, s); break;
#else
    case c10::kFloat: summarise_all(c.data_ptr<float>(), n, s); break;
#endif
    case c10::kDouble: summarise_all(c.data_ptr<double>(), n, s); break;
    case c10::kHalf: summarise_all(c.data_ptr<c10::Half>(), n, s); break;
    case c10::kBFloat16: summarise_all(c.data_ptr<c10::BFloat16>(), n, s); break;
    case c10::kLong: summarise_integral(c.data_ptr<std::int64_t>(), n, s); break;
    case c10::kInt: summarise_integral(c.data_ptr<std::int32_t>(), n, s); break;
    case c10::kShort: summarise_integral(c.data_ptr<std::int16_t>(), n, s); break;
    case c10::kChar: summarise_integral(c.data_ptr<std::int8_t>(), n, s); break;
    case c10::kByte: summarise_integral(c.data_ptr<std::uint8_t>(), n, s); break;
    case c10::kBool: summarise_integral(reinterpret_cast<const std::uint8_t*>(c.data_ptr<bool>()), n, s); break;
    default: break;  // complex and quantized: hash only
  }
  return s;
}

}  // namespace detail

/// F(e) of one tensor, without storage grouping (the profiler assigns groups per run).
[[nodiscard]] inline state::tensor_state tensor_state_of(const at::Tensor& t, bool with_numbers = true) {
  state::tensor_state s;
  s.kind = state::value_kind::tensor;
  if (!t.defined()) return s;
  s.shape.assign(t.sizes().begin(), t.sizes().end());
  s.numel = t.numel();
  s.type = to_state(t.scalar_type());
  s.device = {t.device().is_cpu()    ? state::device_kind::cpu
              : t.device().is_cuda() ? state::device_kind::cuda
                                     : state::device_kind::other,
              static_cast<std::int16_t>(t.device().has_index() ? t.device().index() : -1)};
  s.requires_grad = t.requires_grad();
  switch (t.layout()) {
    case c10::kStrided: s.tensor_layout = state::layout::strided; break;
    case c10::kSparse: s.tensor_layout = state::layout::sparse; break;
    case c10::kMkldnn: s.tensor_layout = state::layout::mkldnn; break;
    default: s.tensor_layout = state::layout::other; break;
  }
  if (t.layout() == c10::kStrided) {
    s.strides.assign(t.strides().begin(), t.strides().end());
    s.storage_offset = t.storage_offset();
    s.contiguous = t.is_contiguous();
    const auto rank = t.dim();
    if (s.contiguous) s.format = state::memory_format::contiguous;
    else if ((rank == 4 && t.is_contiguous(c10::MemoryFormat::ChannelsLast)) ||
             (rank == 5 && t.is_contiguous(c10::MemoryFormat::ChannelsLast3d)))
      s.format = state::memory_format::channels_last;
    else s.format = state::memory_format::strided;
  }
  if (t.has_storage()) s.storage_nbytes = static_cast<std::int64_t>(t.storage().nbytes());
  if (with_numbers) s.numbers = detail::numbers_of(t);
  return s;
}

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
