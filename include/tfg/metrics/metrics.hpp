#pragma once
/// \file
/// Diversity and coverage metrics of a campaign (FlowMuT, section Metrics): LIC, LPC, LSC,
/// DFSD, the raw count of distinct data-flow signatures, and API coverage.
///
/// Backend-neutral: a backend turns one legal test case into an `observation` (names and small
/// integer classes, computed with the helpers below from `state::tensor_state`), and a
/// `tracker` folds observations into coverage sets over a fixed `test_space`. Every ratio's
/// denominator comes from the test space alone, never from what was seen; docs/metrics.md
/// gives the definitions and the denominators of the default LibTorch build.
///
///     tfg::metrics::tracker t(space);            // space: e.g. tfg::torch::metrics_space(U)
///     t.observe(obs);                            // once per legal test case
///     auto s = t.current();                      // s.lic, s.lpc, s.lsc, s.dfsd, ...
///     auto j = t.to_json();                      // checkpoint; tracker::from_json(j, space)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/state/tensor_state.hpp"

namespace tfg::metrics {

// ---- value classes ------------------------------------------------------------------------------

/// dtype classes: every `state::dtype` except `other` (f16 .. bool, in enum order). A tensor of
/// dtype `other` (quantized, ...) has no input class and is not counted by LIC.
inline constexpr std::uint32_t dtype_classes = 12;
/// Highest rank told apart; higher ranks fold into it.
inline constexpr int max_rank = 6;
/// Shape classes of a tensor of rank >= 1: 0 some dim is 0 (empty), 1 every dim is 1,
/// 2 some (not every) dim is 1, 3 every dim >= 2.
inline constexpr std::uint32_t shape_classes = 4;
/// Rank-shape classes: rank 0 (one class: a scalar) plus ranks 1..6 times the shape classes.
inline constexpr std::uint32_t rank_shape_classes = 1 + max_rank * shape_classes;  // 25
/// Input classes of one tensor input slot: dtype class x rank-shape class.
inline constexpr std::uint32_t input_classes = dtype_classes * rank_shape_classes;  // 300
/// Value classes of a tensor's numeric summary (see value_class).
inline constexpr std::uint32_t value_classes = 12;
/// Layout classes (`state::layout`), device classes (`state::device_kind`).
inline constexpr std::uint32_t layout_classes = 4;
inline constexpr std::uint32_t device_classes = 3;
/// Size of the tensor part of one data-flow signature: rank-shape x dtype (with `other`) x
/// value x layout x device x aliased x requires_grad.
inline constexpr double signature_tensor_space =
    double(rank_shape_classes) * (dtype_classes + 1) * value_classes * layout_classes * device_classes * 2 * 2;

/// Rank-shape class of a shape, in [0, rank_shape_classes).
[[nodiscard]] inline std::uint32_t rank_shape_class(std::span<const std::int64_t> shape) noexcept {
  if (shape.empty()) return 0;
  const auto rank = static_cast<std::uint32_t>(std::min<std::size_t>(shape.size(), max_rank));
  bool zero = false, all_one = true, some_one = false;
  for (auto d : shape) {
    zero |= d == 0;
    all_one &= d == 1;
    some_one |= d == 1;
  }
  const std::uint32_t s = zero ? 0 : all_one ? 1 : some_one ? 2 : 3;
  return 1 + (rank - 1) * shape_classes + s;
}

/// Input class of a tensor state (dtype class * 25 + rank-shape class), in [0, input_classes);
/// nullopt for non-tensors and dtype `other`.
[[nodiscard]] inline std::optional<std::uint32_t> input_class(const state::tensor_state& s) noexcept {
  if (s.kind != state::value_kind::tensor || s.type == state::dtype::other) return std::nullopt;
  return static_cast<std::uint32_t>(s.type) * rank_shape_classes + rank_shape_class(s.shape);
}

/// Value class of a tensor's elements, in [0, value_classes): 0 unknown (no elements or not
/// summarised), 1 some NaN/Inf, 2 all zero, then 3 + 3 * sign + magnitude with sign 0 all >= 0,
/// 1 all <= 0, 2 mixed, and magnitude of max |x|: 0 <= 1, 1 <= 1e3, 2 larger.
[[nodiscard]] inline std::uint32_t value_class(const state::numeric_summary& n) noexcept {
  if (n.nan_count > 0 || n.inf_count > 0) return 1;
  if (std::isnan(n.min) || std::isnan(n.max)) return 0;
  if (n.min == 0 && n.max == 0) return 2;
  const std::uint32_t sign = n.min >= 0 ? 0 : n.max <= 0 ? 1 : 2;
  const double m = n.max_abs();
  const std::uint32_t mag = m <= 1 ? 0 : m <= 1e3 ? 1 : 2;
  return 3 + 3 * sign + mag;
}

// ---- parameter bins ------------------------------------------------------------------------------

/// The type of a parameter slot; each has a fixed number of bins (`base_bins`). An optional
/// parameter has one more bin, the last, for None.
enum class param_kind : std::uint8_t {
  boolean,        ///< 2: false, true
  integer,        ///< 8: <0, 0, 1, 2, 3-4, 5-8, 9-64, >64
  floating,       ///< 8: non-finite, <-1, [-1,0), 0, (0,1), 1, (1,10], >10
  scalar,         ///< 8: as floating, of the value converted to double
  int_list,       ///< 17: empty, or length 1..4+ x content (has <0, all <=1, max <=4, max >4)
  float_list,     ///< 5: length 0, 1, 2, 3, 4+
  dtype,          ///< 12: the dtype classes
  layout,         ///< 3: strided, sparse (any sparse layout), mkldnn
  device,         ///< 3: cpu, cuda, other
  memory_format,  ///< 4: contiguous, preserve, channels_last, channels_last_3d
};

[[nodiscard]] constexpr std::string_view name(param_kind k) noexcept {
  constexpr std::string_view names[] = {"bool",    "int",        "float",  "Scalar", "int[]",
                                        "float[]", "ScalarType", "Layout", "Device", "MemoryFormat"};
  return names[static_cast<int>(k)];
}

[[nodiscard]] constexpr std::uint32_t base_bins(param_kind k) noexcept {
  constexpr std::uint32_t bins[] = {2, 8, 8, 8, 17, 5, dtype_classes, 3, 3, 4};
  return bins[static_cast<int>(k)];
}

[[nodiscard]] constexpr std::uint32_t bin_bool(bool v) noexcept { return v ? 1 : 0; }

[[nodiscard]] constexpr std::uint32_t bin_int(std::int64_t v) noexcept {
  return v < 0 ? 0 : v == 0 ? 1 : v == 1 ? 2 : v == 2 ? 3 : v <= 4 ? 4 : v <= 8 ? 5 : v <= 64 ? 6 : 7;
}

[[nodiscard]] inline std::uint32_t bin_float(double v) noexcept {
  if (!std::isfinite(v)) return 0;
  return v < -1 ? 1 : v < 0 ? 2 : v == 0 ? 3 : v < 1 ? 4 : v == 1 ? 5 : v <= 10 ? 6 : 7;
}

[[nodiscard]] inline std::uint32_t bin_int_list(std::span<const std::int64_t> v) noexcept {
  if (v.empty()) return 0;
  const auto len = static_cast<std::uint32_t>(std::min<std::size_t>(v.size(), 4));
  const auto lo = *std::min_element(v.begin(), v.end());
  const auto hi = *std::max_element(v.begin(), v.end());
  const std::uint32_t content = lo < 0 ? 0 : hi <= 1 ? 1 : hi <= 4 ? 2 : 3;
  return 1 + (len - 1) * 4 + content;
}

[[nodiscard]] constexpr std::uint32_t bin_float_list(std::size_t length) noexcept {
  return static_cast<std::uint32_t>(std::min<std::size_t>(length, 4));
}

/// dtype bin; nullopt for `other`.
[[nodiscard]] constexpr std::optional<std::uint32_t> bin_dtype(state::dtype d) noexcept {
  if (d == state::dtype::other) return std::nullopt;
  return static_cast<std::uint32_t>(d);
}

// ---- data-flow signatures ------------------------------------------------------------------------

namespace detail {
/// FNV-1a over bytes, then a splitmix64 finaliser: stable across runs and platforms.
constexpr std::uint64_t fnv(std::uint64_t h, std::string_view s) noexcept {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return (h ^ 0xff) * 0x100000001b3ULL;  // terminator: ("ab","c") != ("a","bc")
}
constexpr std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}
}  // namespace detail

/// The tensor part of a data-flow signature, as one number < signature_tensor_space:
/// rank-shape class, dtype (all 13), value class, layout, device kind, aliased, requires_grad.
[[nodiscard]] inline std::uint64_t signature_tensor_class(const state::tensor_state& s) noexcept {
  std::uint64_t c = rank_shape_class(s.shape);
  c = c * (dtype_classes + 1) + static_cast<std::uint64_t>(s.type);
  c = c * value_classes + value_class(s.numbers);
  c = c * layout_classes + static_cast<std::uint64_t>(s.tensor_layout);
  c = c * device_classes + static_cast<std::uint64_t>(s.device.kind);
  c = c * 2 + (s.aliased() ? 1 : 0);
  c = c * 2 + (s.requires_grad ? 1 : 0);
  return c;
}

/// 64-bit hash of the data-flow signature of tensor `s` flowing from an operator of kind
/// `producer` into an operator of kind `consumer` called through overload `overload` ("" for
/// the default overload). Equal arguments give equal hashes on every platform.
[[nodiscard]] inline std::uint64_t signature_hash(std::string_view producer, std::string_view consumer,
                                                  std::string_view overload, const state::tensor_state& s) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  h = detail::fnv(h, producer);
  h = detail::fnv(h, consumer);
  h = detail::fnv(h, overload);
  return detail::mix(h, signature_tensor_class(s));
}

// ---- the test space --------------------------------------------------------------------------------

/// A parameter slot of an operator: a named non-tensor argument of one type. The same name with
/// another type (e.g. `other` as Scalar and as Tensor) is another slot.
struct param_slot {
  std::string name;
  param_kind kind = param_kind::integer;
  bool optional = false;
  /// `name:type`, e.g. `dim:int[]`, `dtype:ScalarType?` — how observations name the slot.
  [[nodiscard]] std::string key() const {
    return name + ":" + std::string(metrics::name(kind)) + (optional ? "?" : "");
  }
  [[nodiscard]] std::uint32_t bins() const noexcept { return base_bins(kind) + (optional ? 1 : 0); }
  /// The None bin of an optional slot.
  [[nodiscard]] std::uint32_t none_bin() const noexcept { return base_bins(kind); }
};

/// The key of a parameter slot, as param_slot::key.
[[nodiscard]] inline std::string param_key(std::string_view name, param_kind kind, bool optional) {
  return std::string(name) + ":" + std::string(metrics::name(kind)) + (optional ? "?" : "");
}

/// One operator of the universe U.
struct op_space {
  std::string name;                    ///< `aten::conv2d`
  std::vector<std::string> inputs;     ///< tensor input slot names (each has input_classes classes)
  std::vector<param_slot> params;      ///< parameter slots
  std::vector<std::string> overloads;  ///< overload names counted as DFSD paths ("" = default)
  bool produces_tensor = false;        ///< some overload returns a tensor (valid as a producer)

  [[nodiscard]] bool consumes_tensor() const noexcept { return !inputs.empty(); }
  [[nodiscard]] std::size_t input_space() const noexcept { return inputs.size() * input_classes; }
  [[nodiscard]] std::size_t param_space() const noexcept {
    std::size_t n = 0;
    for (const auto& p : params) n += p.bins();
    return n;
  }
};

/// The fixed test space all ratios are taken over. Build the op list, then call finalize()
/// (sorts names, removes duplicates, computes the derived totals); `tracker` finalizes a copy.
struct test_space {
  std::vector<op_space> ops;      ///< U, sorted by name after finalize()
  std::vector<std::string> apis;  ///< API-coverage denominator: registered operator names, sorted

  // Derived by finalize():
  std::size_t input_slots = 0;   ///< sum of |inputs| over U
  std::size_t input_values = 0;  ///< input_slots * input_classes
  std::size_t param_slots = 0;   ///< sum of |params| over U
  std::size_t param_values = 0;  ///< sum of bins over all parameter slots
  std::size_t producers = 0;     ///< operators of U that produce a tensor
  std::size_t consumers = 0;     ///< operators of U with a tensor input
  std::size_t valid_pairs = 0;   ///< producers * consumers: the LSC denominator
  double dfsd_space = 0;         ///< sum over valid pairs (p, c) of max(1, |overloads(c)|) * signature_tensor_space

  void finalize() {
    std::sort(ops.begin(), ops.end(), [](const op_space& a, const op_space& b) { return a.name < b.name; });
    ops.erase(
        std::unique(ops.begin(), ops.end(), [](const op_space& a, const op_space& b) { return a.name == b.name; }),
        ops.end());
    input_slots = input_values = param_slots = param_values = producers = consumers = 0;
    double paths = 0;
    for (auto& o : ops) {
      std::sort(o.inputs.begin(), o.inputs.end());
      o.inputs.erase(std::unique(o.inputs.begin(), o.inputs.end()), o.inputs.end());
      std::sort(o.params.begin(), o.params.end(),
                [](const param_slot& a, const param_slot& b) { return a.key() < b.key(); });
      o.params.erase(std::unique(o.params.begin(), o.params.end(),
                                 [](const param_slot& a, const param_slot& b) { return a.key() == b.key(); }),
                     o.params.end());
      std::sort(o.overloads.begin(), o.overloads.end());
      o.overloads.erase(std::unique(o.overloads.begin(), o.overloads.end()), o.overloads.end());
      input_slots += o.inputs.size();
      input_values += o.input_space();
      param_slots += o.params.size();
      param_values += o.param_space();
      producers += o.produces_tensor;
      if (o.consumes_tensor()) {
        ++consumers;
        paths += static_cast<double>(std::max<std::size_t>(1, o.overloads.size()));
      }
    }
    valid_pairs = producers * consumers;
    dfsd_space = static_cast<double>(producers) * paths * signature_tensor_space;
    std::sort(apis.begin(), apis.end());
    apis.erase(std::unique(apis.begin(), apis.end()), apis.end());
  }

  /// Index of operator `name` in ops, or nullopt when it is outside U. O(log |U|).
  [[nodiscard]] std::optional<std::size_t> find(std::string_view name) const {
    auto it = std::lower_bound(ops.begin(), ops.end(), name,
                               [](const op_space& o, std::string_view n) { return o.name < n; });
    if (it == ops.end() || it->name != name) return std::nullopt;
    return static_cast<std::size_t>(it - ops.begin());
  }
  /// True when `name` is in the API-coverage denominator.
  [[nodiscard]] bool registered(std::string_view name) const {
    return std::binary_search(apis.begin(), apis.end(), name, std::less<>{});
  }
};

// ---- observations -------------------------------------------------------------------------------

/// What one legal test case exercised. Names are operator kinds (`aten::add`); duplicates are
/// fine (coverage is a set). Produced by a backend (e.g. tfg::torch::observe).
struct observation {
  struct input {
    std::string op, slot;
    std::uint32_t cls = 0;  ///< input class, < input_classes
  };
  struct param {
    std::string op, slot;   ///< slot: param_slot::key()
    std::uint32_t bin = 0;  ///< < the slot's bins()
  };
  struct pair {
    std::string producer, consumer;
  };
  struct signature {
    std::string producer, consumer, overload;
    std::uint64_t hash = 0;  ///< signature_hash(producer, consumer, overload, state)
  };
  std::vector<input> inputs;
  std::vector<param> params;
  std::vector<pair> pairs;
  std::vector<signature> signatures;
  std::vector<std::string> apis;  ///< every operator kind executed
};

/// The metrics at one moment (e.g. one checkpoint round).
struct snapshot {
  double lic = 0, lpc = 0, lsc = 0, dfsd = 0;
  std::size_t signatures = 0;  ///< distinct data-flow signatures, raw count (any operators)
  std::size_t apis = 0;        ///< distinct registered operators exercised
  double api_coverage = 0;     ///< apis / |test_space::apis|
  std::size_t test_cases = 0;  ///< observations folded in
};

/// The snapshot as the campaign store's metrics row (name -> value).
[[nodiscard]] inline std::map<std::string, double> to_map(const snapshot& s) {
  return {{"lic", s.lic},
          {"lpc", s.lpc},
          {"lsc", s.lsc},
          {"dfsd", s.dfsd},
          {"signatures", static_cast<double>(s.signatures)},
          {"api_coverage", s.api_coverage},
          {"apis", static_cast<double>(s.apis)},
          {"test_cases", static_cast<double>(s.test_cases)}};
}

[[nodiscard]] inline nlohmann::json to_json(const snapshot& s) {
  return {{"lic", s.lic},
          {"lpc", s.lpc},
          {"lsc", s.lsc},
          {"dfsd", s.dfsd},
          {"signatures", s.signatures},
          {"apis", s.apis},
          {"api_coverage", s.api_coverage},
          {"test_cases", s.test_cases}};
}

// ---- the tracker --------------------------------------------------------------------------------

/// Accumulates observations of legal test cases over a fixed test space.
///
/// Counting rules (docs/metrics.md): input classes and parameter bins count only for operators
/// in U and slots of their space (anything else is ignored); a producer-consumer pair counts
/// for LSC only when both are in U and the pair is valid; a signature counts for the raw
/// `signatures` always, and for DFSD only when its pair is valid and its overload is one of the
/// consumer's (an op without listed overloads accepts only ""); an API counts when it is in
/// test_space::apis (or, when that list is empty, never for the ratio). Observing the same
/// observation twice changes no metric but `test_cases`. Not thread-safe.
class tracker {
 public:
  explicit tracker(test_space space) : space_(std::move(space)) {
    space_.finalize();
    inputs_.resize(space_.ops.size());
    params_.resize(space_.ops.size());
    input_hits_.assign(space_.ops.size(), 0);
    param_hits_.assign(space_.ops.size(), 0);
    for (std::size_t i = 0; i < space_.ops.size(); ++i) {
      inputs_[i].assign(space_.ops[i].inputs.size(), std::vector<bool>(input_classes, false));
      for (const auto& p : space_.ops[i].params) params_[i].emplace_back(p.bins(), false);
    }
    param_keys_.resize(space_.ops.size());
    for (std::size_t i = 0; i < space_.ops.size(); ++i)
      for (const auto& p : space_.ops[i].params) param_keys_[i].push_back(p.key());  // sorted by finalize()
  }

  [[nodiscard]] const test_space& space() const noexcept { return space_; }

  /// Folds in one legal test case. O(|obs| log |U|).
  void observe(const observation& obs) {
    ++test_cases_;
    for (const auto& x : obs.inputs) add_input(x.op, x.slot, x.cls);
    for (const auto& x : obs.params) add_param(x.op, x.slot, x.bin);
    for (const auto& x : obs.pairs) add_pair(x.producer, x.consumer);
    for (const auto& x : obs.signatures) add_signature(x.producer, x.consumer, x.overload, x.hash);
    for (const auto& a : obs.apis) apis_.insert(a);
  }

  /// The metrics now. O(|U|).
  [[nodiscard]] snapshot current() const {
    snapshot s;
    double lic = 0, lpc = 0;
    std::size_t lic_ops = 0, lpc_ops = 0;
    for (std::size_t i = 0; i < space_.ops.size(); ++i) {
      const auto& o = space_.ops[i];
      if (o.input_space()) {
        lic += static_cast<double>(input_hits_[i]) / static_cast<double>(o.input_space());
        ++lic_ops;
      }
      if (o.param_space()) {
        lpc += static_cast<double>(param_hits_[i]) / static_cast<double>(o.param_space());
        ++lpc_ops;
      }
    }
    s.lic = lic_ops ? lic / static_cast<double>(lic_ops) : 0;
    s.lpc = lpc_ops ? lpc / static_cast<double>(lpc_ops) : 0;
    s.lsc = space_.valid_pairs ? static_cast<double>(pairs_.size()) / static_cast<double>(space_.valid_pairs) : 0;
    s.dfsd = space_.dfsd_space > 0 ? static_cast<double>(dfsd_.size()) / space_.dfsd_space : 0;
    s.signatures = all_signatures_.size();
    for (const auto& a : apis_) s.apis += space_.registered(a);
    s.api_coverage = space_.apis.empty() ? 0 : static_cast<double>(s.apis) / static_cast<double>(space_.apis.size());
    s.test_cases = test_cases_;
    return s;
  }

  /// Everything observed, by name (so a checkpoint survives a change of space):
  /// `{"version":1, "test_cases":n, "inputs":{op:{slot:[cls...]}}, "params":{op:{slot:[bin...]}},
  ///   "pairs":[[p,c]...], "signatures":{"p\tc\toverload":["<16 hex digits>"...]}, "apis":[...]}`.
  /// Only what falls inside the space is kept for inputs, params and pairs.
  [[nodiscard]] nlohmann::json to_json() const {
    nlohmann::json j;
    j["version"] = 1;
    j["test_cases"] = test_cases_;
    auto& in = j["inputs"] = nlohmann::json::object();
    auto& pa = j["params"] = nlohmann::json::object();
    for (std::size_t i = 0; i < space_.ops.size(); ++i) {
      const auto& o = space_.ops[i];
      for (std::size_t s = 0; s < o.inputs.size(); ++s) {
        auto cls = nlohmann::json::array();
        for (std::uint32_t c = 0; c < input_classes; ++c)
          if (inputs_[i][s][c]) cls.push_back(c);
        if (!cls.empty()) in[o.name][o.inputs[s]] = std::move(cls);
      }
      for (std::size_t s = 0; s < o.params.size(); ++s) {
        auto bins = nlohmann::json::array();
        for (std::uint32_t b = 0; b < params_[i][s].size(); ++b)
          if (params_[i][s][b]) bins.push_back(b);
        if (!bins.empty()) pa[o.name][o.params[s].key()] = std::move(bins);
      }
    }
    auto& pr = j["pairs"] = nlohmann::json::array();
    std::vector<std::uint64_t> pairs(pairs_.begin(), pairs_.end());
    std::sort(pairs.begin(), pairs.end());
    for (auto p : pairs) pr.push_back({space_.ops[p >> 32].name, space_.ops[p & 0xffffffffu].name});
    auto& sg = j["signatures"] = nlohmann::json::object();
    for (const auto& [site, hashes] : by_site_) {
      auto& a = sg[site] = nlohmann::json::array();
      for (auto h : hashes) a.push_back(hex(h));
    }
    j["apis"] = std::vector<std::string>(apis_.begin(), apis_.end());
    return j;
  }

  /// Rebuilds a tracker from to_json() over `space` (which may differ from the one saved:
  /// entries are re-checked against it). Throws std::invalid_argument on a malformed document.
  [[nodiscard]] static tracker from_json(const nlohmann::json& j, test_space space) {
    tracker t(std::move(space));
    try {
      if (!j.is_object() || j.value("version", 0) != 1)
        throw std::invalid_argument("metrics: unknown checkpoint version");
      t.test_cases_ = j.at("test_cases").get<std::size_t>();
      for (const auto& [op, slots] : j.at("inputs").items())
        for (const auto& [slot, cls] : slots.items())
          for (const auto& c : cls) t.add_input(op, slot, c.get<std::uint32_t>());
      for (const auto& [op, slots] : j.at("params").items())
        for (const auto& [slot, bins] : slots.items())
          for (const auto& b : bins) t.add_param(op, slot, b.get<std::uint32_t>());
      for (const auto& p : j.at("pairs")) t.add_pair(p.at(0).get<std::string>(), p.at(1).get<std::string>());
      for (const auto& [site, hashes] : j.at("signatures").items()) {
        const auto a = site.find('\t'), b = a == std::string::npos ? a : site.find('\t', a + 1);
        if (b == std::string::npos) throw std::invalid_argument("metrics: bad signature site '" + site + "'");
        for (const auto& h : hashes)
          t.add_signature(site.substr(0, a), site.substr(a + 1, b - a - 1), site.substr(b + 1),
                          unhex(h.get<std::string>()));
      }
      for (const auto& a : j.at("apis")) t.apis_.insert(a.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(std::string("metrics: malformed checkpoint: ") + e.what());
    }
    return t;
  }

 private:
  static std::string hex(std::uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
  static std::uint64_t unhex(const std::string& s) {
    std::size_t used = 0;
    const auto v = std::stoull(s, &used, 16);
    if (used != s.size() || s.empty()) throw std::invalid_argument("metrics: bad signature hash '" + s + "'");
    return v;
  }

  void add_input(std::string_view op, std::string_view slot, std::uint32_t cls) {
    const auto i = space_.find(op);
    if (!i || cls >= input_classes) return;
    const auto& names = space_.ops[*i].inputs;
    auto it = std::lower_bound(names.begin(), names.end(), slot);
    if (it == names.end() || *it != slot) return;
    auto bit = inputs_[*i][static_cast<std::size_t>(it - names.begin())][cls];
    if (!bit) {
      bit = true;
      ++input_hits_[*i];
    }
  }
  void add_param(std::string_view op, std::string_view slot, std::uint32_t bin) {
    const auto i = space_.find(op);
    if (!i) return;
    const auto& keys = param_keys_[*i];
    auto it = std::lower_bound(keys.begin(), keys.end(), slot);
    if (it == keys.end() || *it != slot) return;
    const auto s = static_cast<std::size_t>(it - keys.begin());
    if (bin >= space_.ops[*i].params[s].bins()) return;
    auto bit = params_[*i][s][bin];
    if (!bit) {
      bit = true;
      ++param_hits_[*i];
    }
  }
  /// Index pair of a valid producer-consumer pair, or nullopt.
  std::optional<std::uint64_t> valid_pair(std::string_view producer, std::string_view consumer) const {
    const auto p = space_.find(producer), c = space_.find(consumer);
    if (!p || !c || !space_.ops[*p].produces_tensor || !space_.ops[*c].consumes_tensor()) return std::nullopt;
    return (static_cast<std::uint64_t>(*p) << 32) | *c;
  }
  void add_pair(std::string_view producer, std::string_view consumer) {
    if (auto k = valid_pair(producer, consumer)) pairs_.insert(*k);
  }
  void add_signature(const std::string& producer, const std::string& consumer, const std::string& overload,
                     std::uint64_t h) {
    all_signatures_.insert(h);
    by_site_[producer + '\t' + consumer + '\t' + overload].insert(h);
    const auto k = valid_pair(producer, consumer);
    if (!k) return;
    const auto& ov = space_.ops[*k & 0xffffffffu].overloads;
    const bool path = ov.empty() ? overload.empty() : std::binary_search(ov.begin(), ov.end(), overload);
    if (path) dfsd_.insert(h);
  }

  test_space space_;
  std::vector<std::vector<std::vector<bool>>> inputs_;  // [op][slot][class]
  std::vector<std::vector<std::vector<bool>>> params_;  // [op][slot][bin]
  std::vector<std::vector<std::string>> param_keys_;    // [op][slot]: param_slot::key(), sorted
  std::vector<std::size_t> input_hits_, param_hits_;    // covered values per op
  std::unordered_set<std::uint64_t> pairs_;             // producer index << 32 | consumer index
  std::unordered_set<std::uint64_t> all_signatures_, dfsd_;
  std::map<std::string, std::set<std::uint64_t>> by_site_;  // "p\tc\toverload" -> hashes
  std::set<std::string> apis_;
  std::size_t test_cases_ = 0;
};

}  // namespace tfg::metrics
