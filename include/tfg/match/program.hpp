#pragma once
/// \file
/// Constraint programs: DSL expressions compiled once into a flat vector of small nodes with
/// resolved built-ins, and the run-time values they compute. The evaluator lives in
/// evaluate.hpp; the compiler (compile.hpp) builds programs from `dsl::expr` trees.

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
  rank, shape, dim, numel, dtype, is_floating, device, layout, contiguous, channels_last, strides,
  storage_offset, aliased, same_storage, finite, has_nan, has_inf, min, max, mean, max_abs, scalar, zeros,
  equal_values, requires_grad, broadcastable, any_record, uses, consumers, op, is_input, is_output, same_args, is_none,
  len, prod, repeat, imin, imax, ipow, abs, pow2, dtype_max, dtype_tiny, count, nodes,
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
  state::tensor_state const* state = nullptr;
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
    auto const it = fns_.find(std::string(name));
    return it == fns_.end() ? nullptr : it->second;
  }

 private:
  std::map<std::string, std::shared_ptr<const extern_fn>> fns_;
};

/// Program node opcodes.
enum class pop : std::uint8_t {
  lit,         ///< `lit` (strings point into `program::strings`)
  value,       ///< `%v`: slot
  param,       ///< `$p`: slot (operator parameter or requirement constant)
  list,        ///< kids[first .. first+count)
  call,        ///< built-in `fn` over kids
  ext,         ///< extern `slot` (index into program::externs) over kids
  index,       ///< a[b]
  lnot, neg,   ///< unary on a
  lor, land,   ///< short-circuit on a, b
  eq, ne, lt, le, gt, ge, in, add, sub, mul, div, mod,
};

struct pnode {
  pop op = pop::lit;
  bfn fn = bfn::rank;
  std::uint32_t a = 0, b = 0;
  std::uint32_t first = 0, count = 0;
  std::uint32_t slot = 0;
  val lit;
};

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
    case bfn::rank: case bfn::shape: case bfn::dim: case bfn::numel: case bfn::dtype: case bfn::is_floating:
    case bfn::device: case bfn::layout: case bfn::broadcastable: case bfn::any_record: case bfn::uses: case bfn::consumers:
    case bfn::op: case bfn::is_input: case bfn::is_output: case bfn::same_args: case bfn::is_none: case bfn::len: case bfn::prod: case bfn::repeat:
    case bfn::imin: case bfn::imax: case bfn::ipow:
    case bfn::abs: case bfn::pow2: case bfn::dtype_max: case bfn::dtype_tiny: return true;
    default: return false;
  }
}

/// A compiled boolean (or value) expression.
struct program {
  std::vector<pnode> nodes;
  std::vector<std::uint32_t> kids;
  std::uint32_t root = 0;
  std::vector<std::uint32_t> slots;  ///< value slots mentioned (sorted, unique)
  bool reads_state = false;          ///< some state built-in or extern is called
  bool needs_probe = false;          ///< mentions a replacement value (deferred to the probe)
  bool reads_sampled = false;        ///< mentions a sampled parameter (a redraw may change it)
  std::shared_ptr<std::deque<std::string>> strings;  ///< string literals (stable storage)
  std::vector<std::shared_ptr<const extern_fn>> externs;
  std::string text;                  ///< source position, for reports ("file:line:col")
  /// The top-level `&&` chain of `root`, in evaluation order (filled by `flatten`; empty:
  /// evaluate `root` as a tree). Evaluating the conjuncts left to right, stopping at the
  /// first that is false, visits exactly what the tree evaluation visits.
  std::vector<conjunct> conjuncts;
};

/// Whether the subtree of `p` rooted at node `root` calls only metadata built-ins and no
/// extern (`reads_metadata_only`).
[[nodiscard]] inline bool metadata_only(program const& p, std::uint32_t root) {
  std::vector<std::uint32_t> todo{root};
  while (!todo.empty()) {
    auto const i = todo.back();
    todo.pop_back();
    auto const& n = p.nodes[i];
    switch (n.op) {
      case pop::lit: case pop::value: case pop::param: break;
      case pop::ext: return false;
      case pop::call:
        if (!reads_metadata_only(n.fn)) return false;
        [[fallthrough]];
      case pop::list:
        for (std::uint32_t k = 0; k < n.count; ++k) todo.push_back(p.kids[n.first + k]);
        break;
      case pop::lnot: case pop::neg: todo.push_back(n.a); break;
      default: todo.push_back(n.a), todo.push_back(n.b); break;
    }
  }
  return true;
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
    auto const i = todo.back();
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
