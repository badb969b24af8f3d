#pragma once
/// \file
/// The constraint-program interpreter: run-time values, built-ins over F(e) and `holds`
/// (a program evaluated once per profiling run). The first phase of evaluation; the
/// prefilter, the pattern matcher and R(v) build on it (evaluate.hpp includes them all).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "tfg/match/adapter.hpp"
#include "tfg/match/compile.hpp"
#include "tfg/match/program.hpp"

namespace tfg::match {

/// Supplies F for edges that exist only in the instantiated replacement (the local
/// execution probe of dsl/spec.md section 10).
class probe_source {
 public:
  virtual ~probe_source() = default;
  /// F of replacement value `slot` (an index into `compiled_operator::values`), or null
  /// when the probe did not produce it.
  [[nodiscard]] virtual const state::edge_profile* profile(std::uint32_t slot) const = 0;
};

/// Reusable buffers of the evaluator and matcher; one per thread. After warm-up, evaluating
/// a rejected pair allocates nothing.
struct workspace {
  std::vector<val> scratch;
  std::vector<val> stack;
  struct undo {
    std::uint8_t what;  // 0 value, 1 node, 2 param
    std::uint32_t slot;
  };
  std::vector<undo> log;
  std::vector<extern_arg> ext_args;
  /// A parameter's range computed from the site (pattern.hpp `site_ranges`).
  struct site_range {
    std::size_t slot;
    double lo, hi;
    bool integer;
    bool derived = false;  ///< one value (lo == hi), set without a draw
  };
  std::vector<site_range> ranges;
  std::uint64_t type_faults = 0;  ///< run-time type mismatches seen (requirements, `$p`)
};

namespace detail {

inline double dtype_max_of(state::dtype d) {
  using state::dtype;
  switch (d) {
    case dtype::f16: return 65504.0;
    case dtype::bf16: return 3.3895313892515355e38;
    case dtype::f32: return static_cast<double>(std::numeric_limits<float>::max());
    case dtype::f64: return std::numeric_limits<double>::max();
    case dtype::i8: return 127;
    case dtype::u8: return 255;
    case dtype::i16: return 32767;
    case dtype::i32: return 2147483647.0;
    case dtype::i64: return 9223372036854775807.0;
    case dtype::boolean: return 1;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}
inline double dtype_tiny_of(state::dtype d) {
  using state::dtype;
  switch (d) {
    case dtype::f16: return 6.103515625e-05;
    case dtype::bf16: return 1.1754943508222875e-38;
    case dtype::f32: return static_cast<double>(std::numeric_limits<float>::min());
    case dtype::f64: return std::numeric_limits<double>::min();
    default: return 1;
  }
}

/// The environment of one evaluation: where value slots, parameters and states come from.
template <class A>
struct env {
  A const& adapter;
  std::span<const edge_id> values;                                 ///< slot -> edge (no_edge: absent)
  std::span<const attr_value> params;                              ///< param slot -> value
  const std::vector<compiled_param>* param_info = nullptr;         ///< operator params (null: requirement)
  std::span<const std::pair<std::uint32_t, std::uint32_t>> lists;  ///< requirement list slots
  std::span<const edge_id> list_edges;
  std::uint32_t probe_from = UINT32_MAX;  ///< first slot served by `probe`
  const probe_source* probe = nullptr;
  edge_id subst_from = graph::no_edge;  ///< requirement: read `subst_to` for this edge
  const state::edge_profile* subst_to = nullptr;

  const state::edge_profile* profile(std::uint32_t slot, edge_id e) const {
    if (probe && slot >= probe_from && slot != UINT32_MAX) return probe->profile(slot);
    if (e == graph::no_edge) return nullptr;
    if (e == subst_from && subst_to) return subst_to;
    return &adapter.profile(e);
  }
#if defined(__GNUC__)
  [[gnu::always_inline]]
#endif
  const state::tensor_state*
  state(const val& t, std::size_t run) const {
    if (t.k != vk::tensor) return nullptr;
    const auto* p = profile(t.slot, t.e);
    if (!p || run >= p->runs.size()) return nullptr;
    // An int, float, bool or None edge has no tensor state: `layout(%x) == strided` must not
    // hold for the `16` a `aten::size` returned.
    const auto k = p->runs[run].kind;
    if (k != state::value_kind::tensor && k != state::value_kind::tensor_list) return nullptr;
    return &p->runs[run];
  }
};

/// Converts an attr_value to a val of the declared type (for parameters).
inline val from_attr(const attr_value& a, dsl::type_kind want, std::vector<val>& scratch) {
  return std::visit(
      [&](const auto& x) -> val {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          val v;
          v.k = vk::none;
          return v;
        } else if constexpr (std::is_same_v<T, bool>) {
          return val::boolean(x);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          if (want == dsl::type_kind::op) return val::code(vk::op, x);
          if (want == dsl::type_kind::floating) return val::floating(static_cast<double>(x));
          return val::integer(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return val::floating(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          val w = word_value(x);
          if (w.k != vk::fault && want != dsl::type_kind::string) return w;
          val v;
          v.k = vk::string;
          v.s = x;
          return v;
        } else {
          val v;
          v.k = vk::list;
          v.off = static_cast<std::uint32_t>(scratch.size());
          v.len = static_cast<std::uint32_t>(x.size());
          for (auto const& y : x) {
            if constexpr (std::is_same_v<T, std::vector<double>>) scratch.push_back(val::floating(y));
            else scratch.push_back(val::integer(y));
          }
          return v;
        }
      },
      a);
}

inline bool numeric(const val& v) { return v.k == vk::integer || v.k == vk::floating; }
inline double as_double(const val& v) { return v.k == vk::integer ? static_cast<double>(v.i) : v.f; }

inline bool equal(const val& a, const val& b, const std::vector<val>& s) {
  if (numeric(a) && numeric(b)) {
    if (a.k == vk::integer && b.k == vk::integer) return a.i == b.i;
    return as_double(a) == as_double(b);
  }
  if (a.k != b.k) return false;
  switch (a.k) {
    case vk::none: return true;
    case vk::boolean: return a.b == b.b;
    case vk::string: return a.s == b.s;
    case vk::dtype:
    case vk::device:
    case vk::layout:
    case vk::memfmt:
    case vk::op: return a.i == b.i;
    case vk::tensor: return a.e == b.e && a.slot == b.slot;
    case vk::list:
      if (a.len != b.len) return false;
      for (std::uint32_t i = 0; i < a.len; ++i)
        if (!equal(s[a.off + i], s[b.off + i], s)) return false;
      return true;
    default: return false;
  }
}

inline bool broadcast_ok(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::size_t const n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t const x = i < a.size() ? a[a.size() - 1 - i] : 1;
    std::int64_t const y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

/// Whether two schema arguments are the same: one edge, equal constants, or lists of such.
/// An argument the adapter cannot express is never the same as anything.
inline bool same_arg(const arg_view& x, const arg_view& y) {
  if (x.how != y.how) return false;
  switch (x.how) {
    case arg_view::form::edge: return x.edge == y.edge;
    case arg_view::form::constant: return x.value == y.value;
    case arg_view::form::list:
      if (x.items.size() != y.items.size()) return false;
      for (std::size_t i = 0; i < x.items.size(); ++i)
        if (!same_arg(x.items[i], y.items[i])) return false;
      return true;
    case arg_view::form::other: return false;
  }
  return false;
}

/// `ipow(b, e)`: b to the power e; false for e < 0, b = INT64_MIN or a magnitude beyond 2^62.
/// Bases 0, 1 and -1 take no loop (an exponent of 10^18 is a valid argument).
inline bool ipow_checked(std::int64_t b, std::int64_t e, std::int64_t& out) {
  if (e < 0 || b == INT64_MIN) return false;
  if (b == 0 || b == 1 || b == -1) {
    out = e == 0 ? 1 : b == -1 ? (e % 2 == 0 ? 1 : -1) : b;
    return true;
  }
  std::int64_t r = 1;
  for (std::int64_t k = 0; k < e; ++k) {
    if (std::abs(b) > (std::int64_t{1} << 62) / std::abs(r)) return false;
    r *= b;
  }
  out = r;
  return true;
}

template <class A>
val list_of_ints(const std::vector<std::int64_t>& xs, std::vector<val>& s) {
  val v;
  v.k = vk::list;
  v.off = static_cast<std::uint32_t>(s.size());
  v.len = static_cast<std::uint32_t>(xs.size());
  for (const auto x : xs) s.push_back(val::integer(x));
  return v;
}

template <class A>
#if defined(__GNUC__)
[[gnu::noinline]]
#endif
val call_builtin(bfn fn, std::span<const val> a,  const env<A> & E, std::size_t run, workspace& ws) {
  auto& s = ws.scratch;
  const auto& g = E.adapter.graph();
  auto st = [&](std::size_t i) { return E.state(a[i], run); };
  auto tensor_edge = [&](std::size_t i) -> edge_id {
    if (a[i].k != vk::tensor || (E.probe && a[i].slot >= E.probe_from && a[i].slot != UINT32_MAX))
      return graph::no_edge;
    return a[i].e;
  };
  switch (fn) {
    // ---- state
    case bfn::rank: {
      const auto* t = st(0);
      return t ? val::integer(t->rank()) : val::fault();
    }
    case bfn::shape: {
      const auto* t = st(0);
      return t ? list_of_ints<A>(t->shape, s) : val::fault();
    }
    case bfn::strides: {
      const auto* t = st(0);
      return t ? list_of_ints<A>(t->strides, s) : val::fault();
    }
    case bfn::dim: {
      const auto* t = st(0);
      if (!t || a[1].k != vk::integer) return val::fault();
      std::int64_t i = a[1].i;
      if (i < 0) i += t->rank();
      if (i < 0 || i >= t->rank()) return val::fault();
      return val::integer(t->shape[static_cast<std::size_t>(i)]);
    }
    case bfn::numel: {
      const auto* t = st(0);
      return t ? val::integer(t->numel) : val::fault();
    }
    case bfn::dtype: {
      const auto* t = st(0);
      return t && t->type_known ? val::code(vk::dtype, static_cast<std::int64_t>(t->type)) : val::fault();
    }
    case bfn::is_floating: {
      const auto* t = st(0);
      return t && t->type_known ? val::boolean(state::is_floating(t->type)) : val::fault();
    }
    case bfn::device: {
      const auto* t = st(0);
      return t ? val::code(vk::device, static_cast<std::int64_t>(t->device.kind)) : val::fault();
    }
    case bfn::layout: {
      const auto* t = st(0);
      return t ? val::code(vk::layout, static_cast<std::int64_t>(t->tensor_layout)) : val::fault();
    }
    case bfn::contiguous: {
      const auto* t = st(0);
      return t ? val::boolean(t->contiguous) : val::fault();
    }
    case bfn::channels_last: {
      const auto* t = st(0);
      return t ? val::boolean(t->format == state::memory_format::channels_last) : val::fault();
    }
    case bfn::storage_offset: {
      const auto* t = st(0);
      return t ? val::integer(t->storage_offset) : val::fault();
    }
    case bfn::aliased: {
      const auto* t = st(0);
      return t ? val::boolean(t->aliased()) : val::fault();
    }
    case bfn::same_storage: {
      const auto *x = st(0), *y = st(1);
      return x && y ? val::boolean(x->storage_group == y->storage_group) : val::fault();
    }
    case bfn::finite: {
      const auto* t = st(0);
      return t ? val::boolean(t->numbers.finite()) : val::fault();
    }
    case bfn::has_nan: {
      const auto* t = st(0);
      return t ? val::boolean(t->numbers.nan_count > 0) : val::fault();
    }
    case bfn::has_inf: {
      const auto* t = st(0);
      return t ? val::boolean(t->numbers.inf_count > 0) : val::fault();
    }
    case bfn::min: {
      const auto* t = st(0);
      return t ? val::floating(t->numbers.min) : val::fault();
    }
    case bfn::max: {
      const auto* t = st(0);
      return t ? val::floating(t->numbers.max) : val::fault();
    }
    case bfn::mean: {
      const auto* t = st(0);
      return t ? val::floating(t->numbers.mean) : val::fault();
    }
    case bfn::max_abs: {
      const auto* t = st(0);
      return t ? val::floating(t->numbers.max_abs()) : val::fault();
    }
    case bfn::scalar: {
      const auto* t = st(0);
      if (!t || !t->type_known || t->numel <= 0 || !(t->numbers.min == t->numbers.max)) return val::fault();
      if (state::is_floating(t->type)) return val::floating(t->numbers.max);
      return val::integer(static_cast<std::int64_t>(std::llround(t->numbers.max)));
    }
    case bfn::zeros: {
      const auto* t = st(0);
      return t ? val::integer(static_cast<std::int64_t>(t->numbers.zero_count)) : val::fault();
    }
    case bfn::equal_values: {
      const auto *x = st(0), *y = st(1);
      if (!x || !y) return val::fault();
      return val::boolean(x->shape == y->shape && x->type == y->type &&
                          x->numbers.content_hash == y->numbers.content_hash);
    }
    case bfn::requires_grad: {
      const auto* t = st(0);
      return t ? val::boolean(t->requires_grad) : val::fault();
    }
    case bfn::broadcastable: {
      const auto *x = st(0), *y = st(1);
      return x && y ? val::boolean(broadcast_ok(x->shape, y->shape)) : val::fault();
    }
    case bfn::any_record:
      return a[0].k == vk::boolean ? a[0] : val::fault();  // evaluated in eval_node
    // ---- structural
    case bfn::uses: {
      const auto e = tensor_edge(0);
      if (e == graph::no_edge) return val::fault();
      return val::integer(static_cast<std::int64_t>(std::ranges::distance(g.consumers(e))));
    }
    case bfn::consumers: {
      const auto e = tensor_edge(0);
      if (e == graph::no_edge) return val::fault();
      std::int64_t n = 0;
      const auto us = g.consumers(e);
      for (auto it = us.begin(); it != us.end(); ++it) {
        bool seen = false;
        for (auto jt = us.begin(); jt != it; ++jt) seen = seen || (*jt).node == (*it).node;
        if (!seen) ++n;
      }
      return val::integer(n);
    }
    case bfn::op: {
      const auto e = tensor_edge(0);
      if (e == graph::no_edge) return val::fault();
      const auto p = g.producer(e);
      return val::code(vk::op, p == graph::no_node ? 0 : static_cast<std::int64_t>(E.adapter.op_symbol(p)));
    }
    case bfn::is_input: {
      const auto e = tensor_edge(0);
      return e == graph::no_edge ? val::fault() : val::boolean(g.producer(e) == graph::no_node);
    }
    case bfn::is_output: {
      const auto e = tensor_edge(0);
      if (e == graph::no_edge) return val::fault();
      for (const auto o : g.graph_outputs())
        if (o == e) return val::boolean(true);
      return val::boolean(false);
    }
    case bfn::same_args: {
      const auto x = tensor_edge(0), y = tensor_edge(1);
      if (x == graph::no_edge || y == graph::no_edge) return val::fault();
      if (x == y) return val::boolean(true);
      const auto p = g.producer(x), q = g.producer(y);
      // Graph inputs, and two results of one node, are not one computation done twice.
      if (p == graph::no_node || q == graph::no_node || p == q) return val::boolean(false);
      if (E.adapter.op_symbol(p) != E.adapter.op_symbol(q)) return val::boolean(false);
      const auto n = E.adapter.arg_count(p);
      if (n != E.adapter.arg_count(q)) return val::boolean(false);
      for (std::size_t i = 0; i < n; ++i)
        if (!same_arg(E.adapter.arg(p, i), E.adapter.arg(q, i))) return val::boolean(false);
      return val::boolean(true);
    }
    case bfn::is_none: return a[0].k == vk::tensor ? val::boolean(a[0].e == graph::no_edge) : val::fault();
    // ---- pure
    case bfn::len: return a[0].k == vk::list ? val::integer(a[0].len) : val::fault();
    case bfn::prod: {
      if (a[0].k != vk::list) return val::fault();
      std::int64_t p = 1;
      for (std::uint32_t i = 0; i < a[0].len; ++i) {
        const auto& x = s[a[0].off + i];
        if (x.k != vk::integer) return val::fault();
        p *= x.i;
      }
      return val::integer(p);
    }
    case bfn::repeat: {
      if (a[0].k != vk::integer || a[1].k != vk::integer || a[1].i < 0 || a[1].i > 64) return val::fault();
      val v;
      v.k = vk::list;
      v.off = static_cast<std::uint32_t>(s.size());
      v.len = static_cast<std::uint32_t>(a[1].i);
      for (std::int64_t k = 0; k < a[1].i; ++k) s.push_back(val::integer(a[0].i));
      return v;
    }
    case bfn::imin:
    case bfn::imax:
      if (a[0].k != vk::integer || a[1].k != vk::integer) return val::fault();
      return val::integer(fn == bfn::imin ? std::min(a[0].i, a[1].i) : std::max(a[0].i, a[1].i));
    case bfn::ipow: {
      std::int64_t r = 0;
      if (a[0].k != vk::integer || a[1].k != vk::integer || !ipow_checked(a[0].i, a[1].i, r)) return val::fault();
      return val::integer(r);
    }
    case bfn::abs: return numeric(a[0]) ? val::floating(std::fabs(as_double(a[0]))) : val::fault();
    case bfn::pow2:
      return a[0].k == vk::integer ? val::floating(std::ldexp(1.0, static_cast<int>(a[0].i))) : val::fault();
    case bfn::dtype_max:
      return a[0].k == vk::dtype ? val::floating(dtype_max_of(static_cast<state::dtype>(a[0].i))) : val::fault();
    case bfn::dtype_tiny:
      return a[0].k == vk::dtype ? val::floating(dtype_tiny_of(static_cast<state::dtype>(a[0].i))) : val::fault();
    case bfn::count:
    case bfn::nodes: return val::fault();  // expect blocks only (the lead's example runner)
  }
  return val::fault();
}

/// A one-argument built-in: the common state built-ins inline (as `call_builtin` computes
/// them: `E.state` is null for a non-tensor or a missing run), the others by `call_builtin`.
template <class A>
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline val
builtin1(bfn fn, const val& t, const env<A>& E, std::size_t run, workspace& ws) {
  switch (fn) {
    case bfn::rank:
    case bfn::numel:
    case bfn::dtype:
    case bfn::is_floating:
    case bfn::device:
    case bfn::layout:
    case bfn::contiguous:
    case bfn::channels_last:
    case bfn::storage_offset:
    case bfn::aliased:
    case bfn::finite:
    case bfn::has_nan:
    case bfn::has_inf:
    case bfn::requires_grad: {
      const auto* s = E.state(t, run);
      if (!s) return val::fault();
      switch (fn) {
        case bfn::rank: return val::integer(s->rank());
        case bfn::numel: return val::integer(s->numel);
        case bfn::dtype: return s->type_known ? val::code(vk::dtype, static_cast<std::int64_t>(s->type)) : val::fault();
        case bfn::is_floating: return s->type_known ? val::boolean(state::is_floating(s->type)) : val::fault();
        case bfn::device: return val::code(vk::device, static_cast<std::int64_t>(s->device.kind));
        case bfn::layout: return val::code(vk::layout, static_cast<std::int64_t>(s->tensor_layout));
        case bfn::contiguous: return val::boolean(s->contiguous);
        case bfn::channels_last: return val::boolean(s->format == state::memory_format::channels_last);
        case bfn::storage_offset: return val::integer(s->storage_offset);
        case bfn::aliased: return val::boolean(s->aliased());
        case bfn::finite: return val::boolean(s->numbers.finite());
        case bfn::has_nan: return val::boolean(s->numbers.nan_count > 0);
        case bfn::has_inf: return val::boolean(s->numbers.inf_count > 0);
        case bfn::requires_grad: return val::boolean(s->requires_grad);
        default: break;
      }
      break;
    }
    default: break;
  }
  return call_builtin(fn, std::span<const val>(&t, 1), E, run, ws);
}

/// A binary value operator (comparison, `in`, arithmetic) over evaluated operands.
inline val binary(pop op, const val& x, const val& y, workspace& ws) {
  auto& s = ws.scratch;
  if (x.k == vk::fault || y.k == vk::fault) return val::fault();
  switch (op) {
    case pop::eq: return val::boolean(equal(x, y, s));
    case pop::ne: return val::boolean(!equal(x, y, s));
    case pop::in: {
      if (y.k != vk::list) return ++ws.type_faults, val::fault();
      for (std::uint32_t i = 0; i < y.len; ++i)
        if (equal(x, s[y.off + i], s)) return val::boolean(true);
      return val::boolean(false);
    }
    default: break;
  }
  if (op == pop::add && x.k == vk::list && y.k == vk::list) {
    // Concatenation. The operands may lie anywhere in the scratch; copy by index, since
    // push_back can move the storage.
    val v;
    v.k = vk::list;
    v.off = static_cast<std::uint32_t>(s.size());
    v.len = x.len + y.len;
    for (std::uint32_t i = 0; i < x.len; ++i) {
      const val e = s[x.off + i];
      s.push_back(e);
    }
    for (std::uint32_t i = 0; i < y.len; ++i) {
      const val e = s[y.off + i];
      s.push_back(e);
    }
    return v;
  }
  if (!numeric(x) || !numeric(y)) return ++ws.type_faults, val::fault();
  const bool ints = x.k == vk::integer && y.k == vk::integer;
  switch (op) {
    case pop::lt: return val::boolean(ints ? x.i < y.i : as_double(x) < as_double(y));
    case pop::le: return val::boolean(ints ? x.i <= y.i : as_double(x) <= as_double(y));
    case pop::gt: return val::boolean(ints ? x.i > y.i : as_double(x) > as_double(y));
    case pop::ge: return val::boolean(ints ? x.i >= y.i : as_double(x) >= as_double(y));
    case pop::add: return ints ? val::integer(x.i + y.i) : val::floating(as_double(x) + as_double(y));
    case pop::sub: return ints ? val::integer(x.i - y.i) : val::floating(as_double(x) - as_double(y));
    case pop::mul: return ints ? val::integer(x.i * y.i) : val::floating(as_double(x) * as_double(y));
    case pop::div: return as_double(y) == 0 ? val::fault() : val::floating(as_double(x) / as_double(y));
    case pop::mod:
      if (!ints || y.i == 0) return val::fault();
      return val::integer(x.i % y.i);
    default: return val::fault();
  }
}

/// Whether `k` is one of the kinds whose value is the code in `i` (compared by `i` alone).
inline bool code_kind(vk k) {
  return k == vk::dtype || k == vk::device || k == vk::layout || k == vk::memfmt || k == vk::op;
}

/// `equal` with the common cases (two integers, two codes of one kind) inline.
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline bool
equal_fast(const val& a, const val& b, const std::vector<val>& s) {
  if (a.k == b.k && (a.k == vk::integer || code_kind(a.k))) return a.i == b.i;
  return equal(a, b, s);
}

/// `binary` with the common cases (comparisons of two integers, (in)equality of two codes of
/// one kind) inline.
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline val
binary_fast(pop op, const val& x, const val& y, workspace& ws) {
  if (x.k == y.k && (x.k == vk::integer || (code_kind(x.k) && (op == pop::eq || op == pop::ne)))) {
    switch (op) {
      case pop::eq: return val::boolean(x.i == y.i);
      case pop::ne: return val::boolean(x.i != y.i);
      case pop::lt: return val::boolean(x.i < y.i);
      case pop::le: return val::boolean(x.i <= y.i);
      case pop::gt: return val::boolean(x.i > y.i);
      case pop::ge: return val::boolean(x.i >= y.i);
      default: break;
    }
  }
  return binary(op, x, y, ws);
}

template <class A>
val eval_node(const program& p, std::uint32_t idx, const env<A>& E, std::size_t run, workspace& ws);
template <class A>
val eval_tree(const program& p, std::uint32_t idx, const env<A>& E, std::size_t run, workspace& ws);
template <class A>
std::size_t run_count(const program& p, const env<A>& E);

/// The result of `run_icode`: an integer, a fault, or `bail` (a value at run time is not what
/// `mark_fast` assumed: the caller evaluates the node with the tree walk instead).
struct ival {
  enum class st : std::uint8_t { ok, fault, bail };
  std::int64_t v = 0;
  st s = st::ok;
};

/// A marked node's integer code (`program::icodes`): the integer the tree walk gives (for a
/// comparison, 0 or 1), in one loop over a local stack. Every integer operation faults when
/// an operand faults, so the first fault decides; a bail before it hands the node to the
/// walk, which then finds the same fault or the value the mark did not foresee. Integer
/// subtrees have no side effects (no scratch lists, no externs), so walking again is safe.
template <class A>
ival run_icode(const program& p, const pnode& n, const env<A>& E, std::size_t run) {
  using st = ival::st;
  using o = icode::op;
  std::int64_t s[icode_stack];
  std::size_t sp = 0;
  std::uint32_t cached = UINT32_MAX;  // the last value slot read, and its state
  const state::tensor_state* cst = nullptr;
  const icode* c = p.icodes.data() + n.code_at;
  const icode* const end = c + n.code_len;
  for (; c != end; ++c) {
    switch (c->o) {
      case o::lit: s[sp++] = c->v; break;
      case o::param: {
        if (c->slot >= E.params.size()) return {0, st::fault};
        if (E.param_info && (*E.param_info)[c->slot].type.kind != dsl::type_kind::integer) return {0, st::bail};
        const auto* x = std::get_if<std::int64_t>(&E.params[c->slot]);
        if (!x) return {0, st::bail};
        s[sp++] = *x;
        break;
      }
      case o::rank:
      case o::numel:
      case o::dim: {
        if (c->slot != cached) {
          if (!E.lists.empty() && c->slot < E.lists.size() && E.lists[c->slot].second != UINT32_MAX)
            return {0, st::bail};
          val t;
          t.k = vk::tensor;
          t.slot = c->slot;
          t.e = c->slot < E.values.size() ? E.values[c->slot] : graph::no_edge;
          cst = E.state(t, run);
          cached = c->slot;
        }
        if (!cst) return {0, st::fault};
        if (c->o == o::rank) {
          s[sp++] = static_cast<std::int64_t>(cst->rank());
        } else if (c->o == o::numel) {
          s[sp++] = static_cast<std::int64_t>(cst->numel);
        } else {
          std::int64_t k = s[sp - 1];
          const auto r = static_cast<std::int64_t>(cst->rank());
          if (k < 0) k += r;
          if (k < 0 || k >= r) return {0, st::fault};
          s[sp - 1] = cst->shape[static_cast<std::size_t>(k)];
        }
        break;
      }
      case o::neg: s[sp - 1] = -s[sp - 1]; break;
      default: {
        std::int64_t const y = s[--sp];
        std::int64_t& x = s[sp - 1];
        switch (c->o) {
          case o::imin: x = std::min(x, y); break;
          case o::imax: x = std::max(x, y); break;
          case o::ipow:
            if (!ipow_checked(x, y, x)) return {0, st::fault};
            break;
          case o::add: x = x + y; break;
          case o::sub: x = x - y; break;
          case o::mul: x = x * y; break;
          case o::mod:
            if (y == 0) return {0, st::fault};
            x = x % y;
            break;
          case o::eq: x = x == y; break;
          case o::ne: x = x != y; break;
          case o::lt: x = x < y; break;
          case o::le: x = x <= y; break;
          case o::gt: x = x > y; break;
          default: x = x >= y; break;
        }
        break;
      }
    }
  }
  return {s[0], st::ok};
}

/// `eval_node` for a node with integer code; the tree walk when a value bails.
template <class A>
val eval_fast(const program& p, std::uint32_t idx, const env<A>& E, std::size_t run, workspace& ws) {
  using st = ival::st;
  const pnode& n = p.nodes[idx];
  const ival x = run_icode(p, n, E, run);
  if (x.s == st::ok) return n.fast == fast_form::int_cmp ? val::boolean(x.v != 0) : val::integer(x.v);
  if (x.s == st::fault) return val::fault();
  return eval_tree(p, idx, E, run, ws);
}

/// One node's value: the integer code for nodes that have one, the tree walk otherwise.
template <class A>
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline val
eval_node(const program& p, std::uint32_t idx, const env<A>& E, std::size_t run, workspace& ws) {
  if (p.nodes[idx].code_len) return eval_fast(p, idx, E, run, ws);
  return eval_tree(p, idx, E, run, ws);
}

/// A value node or literal evaluated without recursion (the common leaves); false otherwise.
template <class A>
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline bool
eval_leaf(const program& p, std::uint32_t idx, const env<A>& E, val& out) {
  const pnode& n = p.nodes[idx];
  if (n.op == pop::lit) {
    out = n.lit;
    return true;
  }
  if (n.op == pop::value && (E.lists.empty() || n.slot >= E.lists.size() || E.lists[n.slot].second == UINT32_MAX)) {
    out = val{};
    out.k = vk::tensor;
    out.slot = n.slot;
    out.e = n.slot < E.values.size() ? E.values[n.slot] : graph::no_edge;
    return true;
  }
  if (n.op == pop::param && n.slot < E.params.size()) {
    // Scalar parameters without the variant visit of `from_attr` (same results); words,
    // strings, lists and unset parameters take the general path.
    const attr_value& a = E.params[n.slot];
    if (const auto* x = std::get_if<std::int64_t>(&a)) {
      const auto want = E.param_info ? (*E.param_info)[n.slot].type.kind : dsl::type_kind::unknown;
      if (want == dsl::type_kind::op) out = val::code(vk::op, *x);
      else if (want == dsl::type_kind::floating) out = val::floating(static_cast<double>(*x));
      else out = val::integer(*x);
      return true;
    }
    if (const auto* x = std::get_if<double>(&a)) {
      out = val::floating(*x);
      return true;
    }
    if (const auto* x = std::get_if<bool>(&a)) {
      out = val::boolean(*x);
      return true;
    }
  }
  return false;
}

template <class A>
val eval_tree(const program& p, std::uint32_t idx, const env<A>& E, std::size_t run, workspace& ws) {
  const pnode& n = p.nodes[idx];
  auto& s = ws.scratch;
  switch (n.op) {
    case pop::lit: return n.lit;
    case pop::value: {
      if (!E.lists.empty() && n.slot < E.lists.size() && E.lists[n.slot].second != UINT32_MAX) {
        const auto [off, len] = E.lists[n.slot];
        val v;
        v.k = vk::list;
        v.off = static_cast<std::uint32_t>(s.size());
        v.len = len;
        for (std::uint32_t i = 0; i < len; ++i) {
          val t;
          t.k = vk::tensor;
          t.e = E.list_edges[off + i];
          s.push_back(t);
        }
        return v;
      }
      val v;
      v.k = vk::tensor;
      v.slot = n.slot;
      v.e = n.slot < E.values.size() ? E.values[n.slot] : graph::no_edge;
      return v;
    }
    case pop::param: {
      if (n.slot >= E.params.size()) return val::fault();
      const auto want = E.param_info ? (*E.param_info)[n.slot].type.kind : dsl::type_kind::unknown;
      return from_attr(E.params[n.slot], want, s);
    }
    case pop::list: {
      // Evaluate items first (they may push to scratch), then copy them contiguously.
      std::size_t const mark = ws.stack.size();
      for (std::uint32_t i = 0; i < n.count; ++i) ws.stack.push_back(eval_node(p, p.kids[n.first + i], E, run, ws));
      val v;
      v.k = vk::list;
      v.off = static_cast<std::uint32_t>(s.size());
      v.len = n.count;
      for (std::uint32_t i = 0; i < n.count; ++i) s.push_back(ws.stack[mark + i]);
      ws.stack.resize(mark);
      return v;
    }
    case pop::call: {
      if (n.fn == bfn::any_record) {
        // The one quantifier over records: true when the condition holds on some record,
        // whichever record the enclosing condition is evaluated on (dsl/spec.md section 10).
        std::size_t const runs = std::max<std::size_t>(1, run_count(p, E));
        bool decided = false;
        for (std::size_t r = 0; r < runs; ++r) {
          const val x = eval_node(p, p.kids[n.first], E, r, ws);
          if (x.k != vk::boolean) continue;
          if (x.b) return x;
          decided = true;
        }
        return decided ? val::boolean(false) : val::fault();
      }
      if (n.count == 1) {
        val x;
        if (eval_leaf(p, p.kids[n.first], E, x)) return builtin1(n.fn, x, E, run, ws);
      }
      if (n.count == 2) {
        // As below, with the arguments in a local array instead of `ws.stack`.
        val xs[2];
        for (std::uint32_t i = 0; i < 2; ++i) {
          if (!eval_leaf(p, p.kids[n.first + i], E, xs[i])) xs[i] = eval_node(p, p.kids[n.first + i], E, run, ws);
          if (xs[i].k == vk::fault && n.fn != bfn::is_none) return val::fault();
        }
        return call_builtin(n.fn, std::span<const val>(xs, 2), E, run, ws);
      }
      std::size_t const mark = ws.stack.size();
      for (std::uint32_t i = 0; i < n.count; ++i) {
        const val x = eval_node(p, p.kids[n.first + i], E, run, ws);
        if (x.k == vk::fault && n.fn != bfn::is_none) {
          ws.stack.resize(mark);
          return val::fault();
        }
        ws.stack.push_back(x);
      }
      const val r = call_builtin(n.fn, std::span<const val>(ws.stack.data() + mark, n.count), E, run, ws);
      ws.stack.resize(mark);
      return r;
    }
    case pop::ext: {
      const auto& fn = p.externs[n.slot];
      if (!fn) return val::fault();
      std::size_t const mark = ws.ext_args.size();  // nested extern calls stack up here
      for (std::uint32_t i = 0; i < n.count; ++i) {
        const val x = eval_node(p, p.kids[n.first + i], E, run, ws);
        extern_arg ea;
        switch (x.k) {
          case vk::tensor:
            ea.edge = x.e;
            ea.state = E.state(x, run);
            break;
          case vk::boolean: ea.value = x.b; break;
          case vk::integer: ea.value = x.i; break;
          case vk::floating: ea.value = x.f; break;
          case vk::string: ea.value = std::string(x.s); break;
          case vk::fault: ws.ext_args.resize(mark); return val::fault();
          default: ea.value = x.k == vk::list ? std::int64_t{0} : x.i; break;  // list: i is not stored
        }
        ws.ext_args.push_back(std::move(ea));
      }
      const auto r = (*fn)(std::span<const extern_arg>(ws.ext_args.data() + mark, n.count));
      ws.ext_args.resize(mark);
      if (!r) return val::fault();
      if (const auto* b = std::get_if<bool>(&*r)) return val::boolean(*b);
      if (const auto* i = std::get_if<std::int64_t>(&*r)) return val::integer(*i);
      if (const auto* d = std::get_if<double>(&*r)) return val::floating(*d);
      return val::fault();
    }
    case pop::index: {
      const val b = eval_node(p, n.a, E, run, ws);
      const val i = eval_node(p, n.b, E, run, ws);
      if (b.k != vk::list || i.k != vk::integer) return ++ws.type_faults, val::fault();
      std::int64_t k = i.i < 0 ? i.i + b.len : i.i;
      if (k < 0 || k >= b.len) return val::fault();
      return s[b.off + static_cast<std::uint32_t>(k)];
    }
    case pop::lnot: {
      const val x = eval_node(p, n.a, E, run, ws);
      return x.k == vk::boolean ? val::boolean(!x.b) : val::fault();
    }
    case pop::neg: {
      const val x = eval_node(p, n.a, E, run, ws);
      if (x.k == vk::integer) return val::integer(-x.i);
      if (x.k == vk::floating) return val::floating(-x.f);
      return ++ws.type_faults, val::fault();
    }
    case pop::lor:
    case pop::land: {
      const val x = eval_node(p, n.a, E, run, ws);
      const bool want = n.op == pop::lor;
      if (x.k == vk::boolean && x.b == want) return x;  // short circuit
      const val y = eval_node(p, n.b, E, run, ws);
      if (x.k == vk::boolean && y.k == vk::boolean) return val::boolean(want ? (x.b || y.b) : (x.b && y.b));
      // A faulted side does not matter when the other decides.
      if (y.k == vk::boolean && y.b == want) return y;
      return val::fault();
    }
    default: break;
  }
  // Binary value operators.
  val x, y;
  if (!eval_leaf(p, n.a, E, x)) x = eval_node(p, n.a, E, run, ws);
  if (!eval_leaf(p, n.b, E, y)) y = eval_node(p, n.b, E, run, ws);
  return binary_fast(n.op, x, y, ws);
}

/// An operand of a decoded conjunct: the same value `eval_node` computes for `o.node`.
template <class A>
#if defined(__GNUC__)
[[gnu::always_inline]]
#endif
inline val
eval_operand(const program& p, const operand& o, const env<A>& E, std::size_t run, workspace& ws) {
  switch (o.f) {
    case operand::form::lit: return p.nodes[o.node].lit;
    case operand::form::call1: {
      val t;
      t.k = vk::tensor;
      t.slot = o.slot;
      t.e = o.slot < E.values.size() ? E.values[o.slot] : graph::no_edge;
      return builtin1(o.fn, t, E, run, ws);
    }
    case operand::form::node: break;
  }
  val v;
  if (eval_leaf(p, o.node, E, v)) return v;
  return eval_node(p, o.node, E, run, ws);
}

/// Number of runs a program must be evaluated on: the most runs among the tensors it names.
template <class A>
inline std::size_t run_count(const program& p, const env<A>& E) {
  if (p.slots.size() == 1 && E.lists.empty()) {  // the common case: one value
    const auto s = p.slots[0];
    const auto* pr = E.profile(s, s < E.values.size() ? E.values[s] : graph::no_edge);
    return pr ? pr->runs.size() : 0;
  }
  std::size_t r = 0;
  for (const auto s : p.slots) {
    if (!E.lists.empty() && s < E.lists.size() && E.lists[s].second != UINT32_MAX) {
      for (std::uint32_t i = 0; i < E.lists[s].second; ++i)
        if (const auto* pr = E.profile(UINT32_MAX, E.list_edges[E.lists[s].first + i]))
          r = std::max(r, pr->runs.size());
      continue;
    }
    const auto e = s < E.values.size() ? E.values[s] : graph::no_edge;
    if (const auto* pr = E.profile(s, e)) r = std::max(r, pr->runs.size());
  }
  return r;
}

}  // namespace detail

/// Whether `p` holds: evaluated once per profiling run (every edge of the expression reads
/// the same run) and combined with *and*. A program that reads state but names no edge with
/// a recorded run does not hold. O(|p| x runs); allocation-free after warm-up (externs aside).
template <match_adapter A>
[[nodiscard]] bool holds(const program& p, const detail::env<A>& E, workspace& ws) {
  std::size_t runs = 1;
  if (p.reads_state) {
    runs = detail::run_count(p, E);
    if (runs == 0) return false;
  }
  if (!p.conjuncts.empty() && E.lists.empty()) {
    // The `&&` chain, left to right: stop at the first false conjunct (as the tree's
    // short-circuit does), keep going after a fault (as the tree does: a faulted side does
    // not decide), hold when every conjunct is true.
    for (std::size_t r = 0; r < runs; ++r) {
      ws.scratch.clear();
      ws.stack.clear();
      bool all = true;
      for (const auto& c : p.conjuncts) {
        val v;
        switch (c.f) {
          case conjunct::form::node: v = detail::eval_node(p, c.node, E, r, ws); break;
          case conjunct::form::truth: v = detail::eval_operand(p, c.x, E, r, ws); break;
          case conjunct::form::negated: {
            const val x = detail::eval_operand(p, c.x, E, r, ws);
            v = x.k == vk::boolean ? val::boolean(!x.b) : val::fault();
            break;
          }
          case conjunct::form::binary: {
            const val x = detail::eval_operand(p, c.x, E, r, ws);
            const val y = detail::eval_operand(p, c.y, E, r, ws);
            v = detail::binary_fast(c.op, x, y, ws);
            break;
          }
          case conjunct::form::in_lits: {
            const val x = detail::eval_operand(p, c.x, E, r, ws);
            if (x.k == vk::fault) {
              v = val::fault();
            } else {
              v = val::boolean(false);
              for (std::uint32_t k = 0; k < c.count; ++k)
                if (detail::equal_fast(x, p.nodes[p.kids[c.first + k]].lit, ws.scratch)) {
                  v = val::boolean(true);
                  break;
                }
            }
            break;
          }
        }
        if (v.k == vk::boolean && !v.b) return false;
        all = all && v.k == vk::boolean;
      }
      if (!all) return false;
    }
    return true;
  }
  for (std::size_t r = 0; r < runs; ++r) {
    ws.scratch.clear();
    ws.stack.clear();
    const val v = detail::eval_node(p, p.root, E, r, ws);
    if (v.k != vk::boolean || !v.b) return false;
  }
  return true;
}

/// Whether what metadata alone decides refutes `p`: some conjunct of its top-level `&&` chain
/// that reads only metadata (`conjunct::metadata_only`) is false on some run. A fault (a state
/// that was not inferred) decides nothing, and conjuncts that read values, strides, aliasing
/// or externs are skipped. Evaluated on the inferred states of replacement values before the
/// mutant runs; `holds` decides once it has run.
template <match_adapter A>
[[nodiscard]] bool refuted(const program& p, const detail::env<A>& E, workspace& ws) {
  std::size_t runs = 1;
  if (p.reads_state) {
    runs = detail::run_count(p, E);
    if (runs == 0) return false;
  }
  for (std::size_t r = 0; r < runs; ++r)
    for (const auto& c : p.conjuncts) {
      if (!c.metadata_only) continue;
      ws.scratch.clear();
      ws.stack.clear();
      const val v = detail::eval_node(p, c.node, E, r, ws);
      if (v.k == vk::boolean && !v.b) return true;
    }
  return false;
}

}  // namespace tfg::match
