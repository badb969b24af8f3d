#pragma once
/// \file
/// Constraint programs: DSL expressions compiled once into a flat vector of small nodes with
/// resolved built-ins, and the run-time values they compute. The evaluator lives in
/// evaluate.hpp; the compiler (compile.hpp) builds programs from `dsl::expr` trees.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/match/adapter.hpp"

namespace tfg::match {

/// The stage that rejected an (edge, operator) pair; `accepted` when none did.
/// `prefilter` is reported separately from the stage the failed prefilter test was derived
/// from (see `construct`'s counters).
enum class reject_stage : std::uint8_t { prefilter, pattern, input, internal, output, accepted };
inline constexpr std::size_t reject_stage_count = 6;

[[nodiscard]] constexpr std::string_view name(reject_stage s) noexcept {
  constexpr std::string_view names[] = {"prefilter", "pattern", "input", "internal", "output", "accepted"};
  return names[static_cast<int>(s)];
}

/// Kinds of run-time values.
enum class vk : std::uint8_t {
  fault,  ///< evaluation failed (missing state, type mismatch, index out of range): false
  none,
  boolean,
  integer,
  floating,
  string,
  dtype,   ///< i: state::dtype
  device,  ///< i: state::device_kind
  layout,  ///< i: state::layout
  memfmt,  ///< i: index of contiguous/channels_last/channels_last_3d/preserve format
  op,      ///< i: op symbol
  tensor,  ///< slot, e (e == no_edge: an absent optional argument)
  list,    ///< off, len: items in the evaluator's scratch
};

/// A run-time value. Plain data: lists live in a scratch vector owned by the evaluator, so
/// evaluation allocates nothing once the scratch has grown. 32 bytes: the payloads of the
/// kinds that never mix share storage (`i` integer and codes, `f` floating, `off` list,
/// `s` string); a default value has i = 0, f = 0.0 and off = 0.
struct val {
  vk k = vk::fault;
  bool b = false;
  std::uint32_t slot = UINT32_MAX;  ///< tensor
  edge_id e = graph::no_edge;       ///< tensor
  std::uint32_t len = 0;            ///< list
  union {
    std::int64_t i;
    double f;
    std::uint32_t off;
    std::string_view s;
  };

  val() noexcept : i(0) {}

  static val fault() { return {}; }
  static val boolean(bool x) {
    val v;
    v.k = vk::boolean;
    v.b = x;
    return v;
  }
  static val integer(std::int64_t x) {
    val v;
    v.k = vk::integer;
    v.i = x;
    return v;
  }
  static val floating(double x) {
    val v;
    v.k = vk::floating;
    v.f = x;
    return v;
  }
  static val code(vk k, std::int64_t x) {
    val v;
    v.k = k;
    v.i = x;
    return v;
  }
};

static_assert(sizeof(val) == 32 && std::is_trivially_copyable_v<val>);

/// Built-in function ids, in the order of `dsl::builtins`.
enum class bfn : std::uint8_t {
  rank,
  shape,
  dim,
  numel,
  dtype,
  is_floating,
  device,
  layout,
  contiguous,
  channels_last,
  strides,
  storage_offset,
  aliased,
  same_storage,
  finite,
  has_nan,
  has_inf,
  min,
  max,
  mean,
  max_abs,
  scalar,
  zeros,
  equal_values,
  requires_grad,
  broadcastable,
  any_record,
  uses,
  consumers,
  op,
  is_input,
  is_output,
  same_args,
  is_none,
  len,
  prod,
  repeat,
  imin,
  imax,
  ipow,
  abs,
  pow2,
  dtype_max,
  dtype_tiny,
  count,
  nodes,
};
static_assert(dsl::builtins.size() == static_cast<std::size_t>(bfn::nodes) + 1);
static_assert(dsl::builtins[static_cast<std::size_t>(bfn::is_none)].name == "is_none");
static_assert(dsl::builtins[static_cast<std::size_t>(bfn::same_args)].name == "same_args");
static_assert(dsl::builtins[static_cast<std::size_t>(bfn::broadcastable)].name == "broadcastable");
static_assert(dsl::builtins[static_cast<std::size_t>(bfn::dtype_tiny)].name == "dtype_tiny");

/// One argument passed to an extern: a tensor (its state in the current run, or null when
/// none was recorded) or a plain value.
struct extern_arg {
  edge_id edge = graph::no_edge;
  const state::tensor_state* state = nullptr;
  attr_value value;
};

/// A C++ function registered for an `extern pred` / `extern fn`. Returns the result (bool
/// for a pred), or nullopt when it cannot be computed (the condition is then false).
using extern_fn = std::function<std::optional<attr_value>(std::span<const extern_arg>)>;

/// Externs by name. Compiling a module that calls an unregistered extern is a diagnostic.
class extern_registry {
 public:
  void add(std::string name, extern_fn fn) { fns_[std::move(name)] = std::make_shared<extern_fn>(std::move(fn)); }
  [[nodiscard]] std::shared_ptr<const extern_fn> find(std::string_view name) const {
    const auto it = fns_.find(std::string(name));
    return it == fns_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, std::shared_ptr<const extern_fn>> fns_;
};

/// Program node opcodes.
enum class pop : std::uint8_t {
  lit,    ///< `lit` (strings point into `program::strings`)
  value,  ///< `%v`: slot
  param,  ///< `$p`: slot (operator parameter or requirement constant)
  list,   ///< kids[first .. first+count)
  call,   ///< built-in `fn` over kids
  ext,    ///< extern `slot` (index into program::externs) over kids
  index,  ///< a[b]
  lnot,
  neg,  ///< unary on a
  lor,
  land,  ///< short-circuit on a, b
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  in,
  add,
  sub,
  mul,
  div,
  mod,
};

/// `pnode::fast`: how the interpreter may evaluate a node without the general tree walk
/// (`mark_fast`): `int_expr`, an integer built from integer literals, integer parameters,
/// `rank`, `numel`, `dim`, `imin`, `imax`, `ipow`, `+`, `-`, `*`, `%` and unary `-`;
/// `int_cmp`, a comparison of two such integers.
enum class fast_form : std::uint8_t { none, int_expr, int_cmp };

struct pnode {
  pop op = pop::lit;
  bfn fn = bfn::rank;
  fast_form fast = fast_form::none;
  std::uint8_t code_len = 0;  ///< a marked node: its `program::icode` (0: the tree walk evaluates it)
  std::uint32_t a = 0, b = 0;
  std::uint32_t first = 0, count = 0;
  std::uint32_t slot = 0;
  std::uint32_t code_at = 0;
  val lit;
};

/// One instruction of a marked node's integer code (postfix over a small stack of int64).
struct icode {
  enum class op : std::uint8_t {
    lit,
    param,
    rank,
    numel,
    dim,
    imin,
    imax,
    ipow,
    add,
    sub,
    mul,
    mod,
    neg,
    eq,
    ne,
    lt,
    le,
    gt,
    ge
  };
  op o = op::lit;
  std::uint32_t slot = 0;  ///< param: parameter slot; rank, numel, dim: value slot
  std::int64_t v = 0;      ///< lit
};
/// The deepest stack an integer code may use (deeper expressions keep the recursive path).
inline constexpr std::size_t icode_stack = 16;

/// An operand of a decoded comparison: a literal, a one-argument built-in over a value
/// (`f(%v)`), or any other node (evaluated as a tree from `node`).
struct operand {
  enum class form : std::uint8_t { node, lit, call1 };
  form f = form::node;
  bfn fn = bfn::rank;
  std::uint32_t node = 0;
  std::uint32_t slot = 0;  ///< call1: value slot of the argument
};

/// One conjunct of a program's top-level `&&` chain, with the common shapes pre-decoded so
/// that `holds` evaluates them without walking the node tree (see `flatten`):
///  * `node`: any other expression (evaluated as a tree, from `node`);
///  * `truth` / `negated`: `f(%v)` / `!f(%v)` for a one-argument built-in (`x`);
///  * `binary`: `x op y`, op a comparison or `in`;
///  * `in_lits`: `f(%v) in {lit, ...}` (the literal items are kids[first .. first+count)).
struct conjunct {
  enum class form : std::uint8_t { node, truth, negated, binary, in_lits };
  form f = form::node;
  pop op = pop::lit;
  std::uint32_t node = 0;  ///< the conjunct's root node
  operand x, y;
  std::uint32_t first = 0, count = 0;
  /// Reads nothing but metadata (see `reads_metadata_only`): decidable on inferred states.
  bool metadata_only = false;
};

/// Whether built-in `f` reads only what shape and dtype inference gives for a value that has
/// not run yet (rank, sizes, dtype, device, layout), the graph, or nothing at all. Strides,
/// aliasing, gradient state and the numbers are not inferred.
[[nodiscard]] constexpr bool reads_metadata_only(bfn f) noexcept {
  switch (f) {
    case bfn::rank:
    case bfn::shape:
    case bfn::dim:
    case bfn::numel:
    case bfn::dtype:
    case bfn::is_floating:
    case bfn::device:
    case bfn::layout:
    case bfn::broadcastable:
    case bfn::any_record:
    case bfn::uses:
    case bfn::consumers:
    case bfn::op:
    case bfn::is_input:
    case bfn::is_output:
    case bfn::same_args:
    case bfn::is_none:
    case bfn::len:
    case bfn::prod:
    case bfn::repeat:
    case bfn::imin:
    case bfn::imax:
    case bfn::ipow:
    case bfn::abs:
    case bfn::pow2:
    case bfn::dtype_max:
    case bfn::dtype_tiny: return true;
    default: return false;
  }
}

/// A compiled boolean (or value) expression.
struct program {
  std::vector<pnode> nodes;
  std::vector<std::uint32_t> kids;
  std::uint32_t root = 0;
  std::vector<std::uint32_t> slots;                  ///< value slots mentioned (sorted, unique)
  bool reads_state = false;                          ///< some state built-in or extern is called
  bool needs_probe = false;                          ///< mentions a replacement value (deferred to the probe)
  bool reads_sampled = false;                        ///< mentions a sampled parameter (a redraw may change it)
  std::shared_ptr<std::deque<std::string>> strings;  ///< string literals (stable storage)
  std::vector<std::shared_ptr<const extern_fn>> externs;
  std::string text;  ///< source position, for reports ("file:line:col")
  /// The top-level `&&` chain of `root`, in evaluation order (filled by `flatten`; empty:
  /// evaluate `root` as a tree). Evaluating the conjuncts left to right, stopping at the
  /// first that is false, visits exactly what the tree evaluation visits.
  std::vector<conjunct> conjuncts;
  /// The integer code of marked nodes (`mark_fast`), each node's at [code_at, code_at + code_len).
  std::vector<icode> icodes;
};

/// Whether the subtree of `p` rooted at node `root` calls only metadata built-ins and no
/// extern (`reads_metadata_only`).
[[nodiscard]] inline bool metadata_only(const program& p, std::uint32_t root) {
  std::vector<std::uint32_t> todo{root};
  while (!todo.empty()) {
    const auto i = todo.back();
    todo.pop_back();
    const auto& n = p.nodes[i];
    switch (n.op) {
      case pop::lit:
      case pop::value:
      case pop::param: break;
      case pop::ext: return false;
      case pop::call:
        if (!reads_metadata_only(n.fn)) return false;
        [[fallthrough]];
      case pop::list:
        for (std::uint32_t k = 0; k < n.count; ++k) todo.push_back(p.kids[n.first + k]);
        break;
      case pop::lnot:
      case pop::neg: todo.push_back(n.a); break;
      default: todo.push_back(n.a), todo.push_back(n.b); break;
    }
  }
  return true;
}

/// Sets `pnode::fast` on every node of `p` (called by the compiler once the program is
/// emitted; kids precede their parents in `p.nodes`). `int_param(slot)` says whether a
/// parameter holds an integer. A marked node evaluates to exactly what the tree walk gives:
/// the interpreter falls back to the walk when a value at run time is not what the mark
/// assumed (a parameter holding a float, a value slot bound to a list).
template <class IntParam>
void mark_fast(program& p, IntParam&& int_param) {
  auto is_int = [&](std::uint32_t i) { return p.nodes[i].fast == fast_form::int_expr; };
  auto kid = [&](const pnode& n, std::uint32_t k) { return p.kids[n.first + k]; };
  for (std::uint32_t i = 0; i < p.nodes.size(); ++i) {
    auto& n = p.nodes[i];
    bool in = false, cmp = false;
    switch (n.op) {
      case pop::lit: in = n.lit.k == vk::integer; break;
      case pop::param: in = int_param(n.slot); break;
      case pop::call:
        switch (n.fn) {
          case bfn::rank:
          case bfn::numel: in = n.count == 1 && p.nodes[kid(n, 0)].op == pop::value; break;
          case bfn::dim: in = n.count == 2 && p.nodes[kid(n, 0)].op == pop::value && is_int(kid(n, 1)); break;
          case bfn::imin:
          case bfn::imax:
          case bfn::ipow: in = n.count == 2 && is_int(kid(n, 0)) && is_int(kid(n, 1)); break;
          default: break;
        }
        break;
      case pop::neg: in = is_int(n.a); break;
      case pop::add:
      case pop::sub:
      case pop::mul:
      case pop::mod: in = is_int(n.a) && is_int(n.b); break;
      case pop::eq:
      case pop::ne:
      case pop::lt:
      case pop::le:
      case pop::gt:
      case pop::ge: cmp = is_int(n.a) && is_int(n.b); break;
      default: break;
    }
    n.fast = in ? fast_form::int_expr : cmp ? fast_form::int_cmp : fast_form::none;
  }
  // Postfix code for each marked node that no integer expression contains (the top of an
  // integer subtree, a comparison, and each side of a comparison, which `holds` may evaluate
  // on its own); the nodes inside are reached only through it. A node whose code would be too
  // deep gets none, and the tree walk evaluates it.
  std::vector<char> inner(p.nodes.size(), 0);
  for (const auto& n : p.nodes) {
    if (n.fast != fast_form::int_expr) continue;
    if (n.op == pop::call)
      for (std::uint32_t k = 0; k < n.count; ++k) inner[kid(n, k)] = 1;
    else if (n.op == pop::neg) inner[n.a] = 1;
    else if (n.op != pop::lit && n.op != pop::param) inner[n.a] = inner[n.b] = 1;
  }
  p.icodes.clear();
  for (std::uint32_t i = 0; i < p.nodes.size(); ++i) {
    if (p.nodes[i].fast == fast_form::none || inner[i]) continue;
    std::vector<icode> code;
    std::size_t depth = 0, deepest = 0;
    auto push = [&](icode c, int effect) {
      code.push_back(c);
      depth = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(depth) + effect);
      deepest = std::max(deepest, depth);
    };
    auto emit = [&](auto&& self, std::uint32_t j) -> void {
      auto const& n = p.nodes[j];
      auto binop = [&](icode::op o) {
        self(self, n.a);
        self(self, n.b);
        push({o, 0, 0}, -1);
      };
      switch (n.op) {
        case pop::lit: push({icode::op::lit, 0, n.lit.i}, 1); return;
        case pop::param: push({icode::op::param, n.slot, 0}, 1); return;
        case pop::neg:
          self(self, n.a);
          push({icode::op::neg, 0, 0}, 0);
          return;
        case pop::add: binop(icode::op::add); return;
        case pop::sub: binop(icode::op::sub); return;
        case pop::mul: binop(icode::op::mul); return;
        case pop::mod: binop(icode::op::mod); return;
        case pop::eq: binop(icode::op::eq); return;
        case pop::ne: binop(icode::op::ne); return;
        case pop::lt: binop(icode::op::lt); return;
        case pop::le: binop(icode::op::le); return;
        case pop::gt: binop(icode::op::gt); return;
        case pop::ge: binop(icode::op::ge); return;
        case pop::call: {
          auto const slot0 = p.nodes[kid(n, 0)].slot;
          switch (n.fn) {
            case bfn::rank: push({icode::op::rank, slot0, 0}, 1); return;
            case bfn::numel: push({icode::op::numel, slot0, 0}, 1); return;
            case bfn::dim:
              self(self, kid(n, 1));
              push({icode::op::dim, slot0, 0}, 0);
              return;
            default: break;
          }
          self(self, kid(n, 0));
          self(self, kid(n, 1));
          push({n.fn == bfn::imin ? icode::op::imin : n.fn == bfn::imax ? icode::op::imax : icode::op::ipow, 0, 0}, -1);
          return;
        }
        default: return;
      }
    };
    emit(emit, i);
    if (deepest > icode_stack || code.size() > 255) continue;
    p.nodes[i].code_at = static_cast<std::uint32_t>(p.icodes.size());
    p.nodes[i].code_len = static_cast<std::uint8_t>(code.size());
    p.icodes.insert(p.icodes.end(), code.begin(), code.end());
  }
}

/// Fills `p.conjuncts` from `p.nodes` (called by the compiler once the program is emitted).
inline void flatten(program& p) {
  p.conjuncts.clear();
  if (p.nodes.empty()) return;
  auto is_call1 = [&](std::uint32_t i) {
    auto const& n = p.nodes[i];
    return n.op == pop::call && n.count == 1 && p.nodes[p.kids[n.first]].op == pop::value;
  };
  auto is_lit = [&](std::uint32_t i) { return p.nodes[i].op == pop::lit && p.nodes[i].lit.k != vk::list; };
  auto operand_of = [&](std::uint32_t i) {
    operand o;
    o.node = i;
    if (is_call1(i)) {
      o.f = operand::form::call1;
      o.fn = p.nodes[i].fn;
      o.slot = p.nodes[p.kids[p.nodes[i].first]].slot;
    } else if (is_lit(i)) {
      o.f = operand::form::lit;
    }
    return o;
  };
  auto decode = [&](std::uint32_t i) {
    conjunct c;
    c.node = i;
    auto const& n = p.nodes[i];
    if (is_call1(i)) {
      c.f = conjunct::form::truth;
      c.x = operand_of(i);
    } else if (n.op == pop::lnot && is_call1(n.a)) {
      c.f = conjunct::form::negated;
      c.x = operand_of(n.a);
    } else if (n.op == pop::eq || n.op == pop::ne || n.op == pop::lt || n.op == pop::le || n.op == pop::gt ||
               n.op == pop::ge || n.op == pop::in) {
      c.op = n.op;
      c.f = conjunct::form::binary;
      c.x = operand_of(n.a);
      c.y = operand_of(n.b);
      if (n.op == pop::in && c.x.f == operand::form::call1 && p.nodes[n.b].op == pop::list) {
        auto const& l = p.nodes[n.b];
        bool lits = true;
        for (std::uint32_t k = 0; k < l.count; ++k) lits = lits && is_lit(p.kids[l.first + k]);
        if (lits) {
          c.f = conjunct::form::in_lits;
          c.first = l.first;
          c.count = l.count;
        }
      }
    }
    c.metadata_only = metadata_only(p, i);
    p.conjuncts.push_back(c);
  };
  // In-order walk of the `&&` tree (left before right).
  std::vector<std::uint32_t> todo{p.root};
  while (!todo.empty()) {
    const auto i = todo.back();
    todo.pop_back();
    if (p.nodes[i].op == pop::land) {
      todo.push_back(p.nodes[i].b);
      todo.push_back(p.nodes[i].a);
    } else {
      decode(i);
    }
  }
}

}  // namespace tfg::match
