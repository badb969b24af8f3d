#pragma once
/// \file
/// The vocabulary of the DSL: built-in functions over the tensor state F(e) and the graph G,
/// literal keywords, type names, shape-adaptation helpers and example-input attributes.
/// `check()` type-checks against these tables; the matcher compiler binds each built-in to
/// the C++ function of the same name (`max_abs` <-> `tfg::state::max_abs`). dsl/spec.md
/// documents every entry (a test enforces it).

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/dsl/ast.hpp"

namespace tfg::dsl {

/// Parameter kinds in built-in signatures.
enum class sig : std::uint8_t {
  tensor,  ///< a %value
  integer,
  number,  ///< int or float
  dtype,
  op,
  ints,      ///< list of int
  any_list,  ///< a list of anything
  boolean,   ///< a condition
  shape,     ///< a list of int, or a %value holding one when the mutant runs (prim::ListConstruct of sizes)
};

/// Where a built-in may be used.
enum class builtin_use : std::uint8_t {
  state,       ///< reads F(e): constraint blocks only (not in patterns)
  structural,  ///< reads only G: anywhere, including pattern conditions
  pure,        ///< no graph access: anywhere
  expect,      ///< example `expect` blocks only
};

struct builtin_info {
  std::string_view name;
  std::uint8_t arity;
  std::array<sig, 2> params;
  type result;
  builtin_use use;
  std::string_view signature;  ///< as written in dsl/spec.md
  std::string_view meaning;
};

namespace detail {
inline constexpr type t_int{type_kind::integer, false};
inline constexpr type t_float{type_kind::floating, false};
inline constexpr type t_bool{type_kind::boolean, false};
inline constexpr type t_ints{type_kind::integer, true};
}  // namespace detail

/// Every built-in function. A constraint "holds" only if it holds for every profiling record
/// (input x device) that F keeps for the edges it mentions.
inline constexpr std::array<builtin_info, 46> builtins{{
    {"rank", 1, {sig::tensor}, detail::t_int, builtin_use::state, "rank(v) -> int", "number of dimensions"},
    {"shape", 1, {sig::tensor}, detail::t_ints, builtin_use::state, "shape(v) -> ints", "sizes of all dimensions"},
    {"dim",
     2,
     {sig::tensor, sig::integer},
     detail::t_int,
     builtin_use::state,
     "dim(v, i) -> int",
     "size of dimension i (negative i counts from the end)"},
    {"numel", 1, {sig::tensor}, detail::t_int, builtin_use::state, "numel(v) -> int", "number of elements"},
    {"dtype", 1, {sig::tensor}, {type_kind::dtype, false}, builtin_use::state, "dtype(v) -> dtype", "element type"},
    {"is_floating",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "is_floating(v) -> bool",
     "dtype is f16, bf16, f32 or f64"},
    {"device",
     1,
     {sig::tensor},
     {type_kind::device, false},
     builtin_use::state,
     "device(v) -> device",
     "device kind (cpu or cuda)"},
    {"layout",
     1,
     {sig::tensor},
     {type_kind::layout, false},
     builtin_use::state,
     "layout(v) -> layout",
     "tensor layout (strided, sparse_coo, ...)"},
    {"contiguous",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "contiguous(v) -> bool",
     "row-major contiguous"},
    {"channels_last",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "channels_last(v) -> bool",
     "contiguous in channels_last (rank 4) or channels_last_3d (rank 5) format"},
    {"strides", 1, {sig::tensor}, detail::t_ints, builtin_use::state, "strides(v) -> ints", "strides in elements"},
    {"storage_offset",
     1,
     {sig::tensor},
     detail::t_int,
     builtin_use::state,
     "storage_offset(v) -> int",
     "offset into the storage, in elements"},
    {"aliased",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "aliased(v) -> bool",
     "shares storage with another live edge"},
    {"same_storage",
     2,
     {sig::tensor, sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "same_storage(a, b) -> bool",
     "a and b share storage"},
    {"finite", 1, {sig::tensor}, detail::t_bool, builtin_use::state, "finite(v) -> bool", "no NaN and no Inf"},
    {"has_nan", 1, {sig::tensor}, detail::t_bool, builtin_use::state, "has_nan(v) -> bool", "some element is NaN"},
    {"has_inf", 1, {sig::tensor}, detail::t_bool, builtin_use::state, "has_inf(v) -> bool", "some element is +-Inf"},
    {"min", 1, {sig::tensor}, detail::t_float, builtin_use::state, "min(v) -> float", "smallest element"},
    {"max", 1, {sig::tensor}, detail::t_float, builtin_use::state, "max(v) -> float", "largest element"},
    {"mean", 1, {sig::tensor}, detail::t_float, builtin_use::state, "mean(v) -> float", "mean of the elements"},
    {"max_abs", 1, {sig::tensor}, detail::t_float, builtin_use::state, "max_abs(v) -> float", "largest absolute value"},
    // Checked as a float (a Scalar argument, arithmetic, comparisons); an int at run time for
    // an integer or bool tensor, so `aten::mul(%x, scalar(%c))` keeps an integer x integer.
    {"scalar",
     1,
     {sig::tensor},
     detail::t_float,
     builtin_use::state,
     "scalar(v) -> number",
     "the one value of a tensor whose elements are all equal (a 0-dim tensor, a uniform constant): an int for an "
     "integer or bool dtype, a float otherwise; fails when they differ"},
    {"zeros",
     1,
     {sig::tensor},
     detail::t_int,
     builtin_use::state,
     "zeros(v) -> int",
     "number of elements equal to zero"},
    {"equal_values",
     2,
     {sig::tensor, sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "equal_values(a, b) -> bool",
     "same shape and element-wise equal values (content hash, then exact compare)"},
    {"requires_grad",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "requires_grad(v) -> bool",
     "the tensor requires grad"},
    {"broadcastable",
     2,
     {sig::tensor, sig::tensor},
     detail::t_bool,
     builtin_use::state,
     "broadcastable(a, b) -> bool",
     "the shapes broadcast together"},
    {"any_record",
     1,
     {sig::boolean},
     detail::t_bool,
     builtin_use::state,
     "any_record(c) -> bool",
     "c holds on some profiling record (every other condition must hold on every record)"},
    {"uses",
     1,
     {sig::tensor},
     detail::t_int,
     builtin_use::structural,
     "uses(v) -> int",
     "number of uses (argument slots reading v)"},
    {"consumers",
     1,
     {sig::tensor},
     detail::t_int,
     builtin_use::structural,
     "consumers(v) -> int",
     "number of distinct consumer nodes"},
    {"op",
     1,
     {sig::tensor},
     {type_kind::op, false},
     builtin_use::structural,
     "op(v) -> op",
     "kind of the node producing v"},
    {"is_input",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::structural,
     "is_input(v) -> bool",
     "v is a graph input"},
    {"is_output",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::structural,
     "is_output(v) -> bool",
     "v is a graph output"},
    {"same_args",
     2,
     {sig::tensor, sig::tensor},
     detail::t_bool,
     builtin_use::structural,
     "same_args(a, b) -> bool",
     "a and b come from two nodes of the same kind reading the same arguments (the same edges, equal constants)"},
    {"is_none",
     1,
     {sig::tensor},
     detail::t_bool,
     builtin_use::structural,
     "is_none(v) -> bool",
     "the optional requirement argument v is None (requirements only)"},
    {"len", 1, {sig::any_list}, detail::t_int, builtin_use::pure, "len(list) -> int", "number of list elements"},
    {"prod",
     1,
     {sig::ints},
     detail::t_int,
     builtin_use::pure,
     "prod(ints) -> int",
     "product of the elements (1 for [])"},
    {"repeat",
     2,
     {sig::integer, sig::integer},
     detail::t_ints,
     builtin_use::pure,
     "repeat(x, n) -> ints",
     "the list of n copies of x ([] for n = 0; at most 64)"},
    {"imin",
     2,
     {sig::integer, sig::integer},
     detail::t_int,
     builtin_use::pure,
     "imin(a, b) -> int",
     "the smaller of two ints"},
    {"imax",
     2,
     {sig::integer, sig::integer},
     detail::t_int,
     builtin_use::pure,
     "imax(a, b) -> int",
     "the larger of two ints"},
    {"ipow",
     2,
     {sig::integer, sig::integer},
     detail::t_int,
     builtin_use::pure,
     "ipow(b, e) -> int",
     "b to the power e (fails for e < 0 or beyond 2^62 in magnitude)"},
    {"abs", 1, {sig::number}, detail::t_float, builtin_use::pure, "abs(x) -> float", "absolute value"},
    {"pow2", 1, {sig::integer}, detail::t_float, builtin_use::pure, "pow2(k) -> float", "2 to the power k"},
    {"dtype_max",
     1,
     {sig::dtype},
     detail::t_float,
     builtin_use::pure,
     "dtype_max(t) -> float",
     "largest finite value of dtype t"},
    {"dtype_tiny",
     1,
     {sig::dtype},
     detail::t_float,
     builtin_use::pure,
     "dtype_tiny(t) -> float",
     "smallest positive normal value of dtype t"},
    {"count",
     1,
     {sig::op},
     detail::t_int,
     builtin_use::expect,
     "count(k) -> int",
     "number of nodes of kind k in the mutated example graph"},
    {"nodes",
     0,
     {},
     detail::t_int,
     builtin_use::expect,
     "nodes() -> int",
     "number of nodes in the mutated example graph"},
}};

[[nodiscard]] inline const builtin_info* find_builtin(std::string_view name) noexcept {
  for (const auto& b : builtins)
    if (b.name == name) return &b;
  return nullptr;
}

/// A literal keyword usable as a bare name in expressions and arguments.
struct literal_info {
  std::string_view name;
  type_kind kind;
};

inline constexpr std::array<literal_info, 23> literals{{
    {"true", type_kind::boolean},
    {"false", type_kind::boolean},
    {"none", type_kind::none},
    {"f32", type_kind::dtype},
    {"f64", type_kind::dtype},
    {"f16", type_kind::dtype},
    {"bf16", type_kind::dtype},
    {"i64", type_kind::dtype},
    {"i32", type_kind::dtype},
    {"i16", type_kind::dtype},
    {"i8", type_kind::dtype},
    {"u8", type_kind::dtype},
    {"bool", type_kind::dtype},
    {"cpu", type_kind::device},
    {"cuda", type_kind::device},
    {"strided", type_kind::layout},
    {"sparse_coo", type_kind::layout},
    {"sparse_csr", type_kind::layout},
    {"mkldnn", type_kind::layout},
    {"contiguous_format", type_kind::memory_format},
    {"channels_last_format", type_kind::memory_format},
    {"channels_last_3d_format", type_kind::memory_format},
    {"preserve_format", type_kind::memory_format},
}};

[[nodiscard]] inline std::optional<type_kind> find_literal(std::string_view name) noexcept {
  for (const auto& l : literals)
    if (l.name == name) return l.kind;
  return std::nullopt;
}

/// Type names for `param $x : T` and extern signatures.
struct type_name_info {
  std::string_view name;
  type t;
  bool param_ok;  ///< usable as a parameter type
};

inline constexpr std::array<type_name_info, 12> type_names{{
    {"int", {type_kind::integer, false}, true},
    {"float", {type_kind::floating, false}, true},
    {"bool", {type_kind::boolean, false}, true},
    {"string", {type_kind::string, false}, true},
    {"dtype", {type_kind::dtype, false}, true},
    {"device", {type_kind::device, false}, true},
    {"layout", {type_kind::layout, false}, true},
    {"memory_format", {type_kind::memory_format, false}, true},
    {"op", {type_kind::op, false}, true},
    {"tensor", {type_kind::tensor, false}, false},
    {"ints", {type_kind::integer, true}, false},
    {"floats", {type_kind::floating, true}, false},
}};

[[nodiscard]] inline const type_name_info* find_type_name(std::string_view name) noexcept {
  for (const auto& t : type_names)
    if (t.name == name) return &t;
  return nullptr;
}

/// Shape-adaptation helpers: pseudo-ops in the `tfg::` namespace, valid only in `replace`,
/// expanded into aten ops by the matcher compiler. *Activation forms* (`activation` set) are
/// helpers of one tensor that stand for an activation whose framework op needs arguments a
/// replacement cannot default (a threshold, a PReLU weight, a softmax dim) or that has no op
/// of its own (tanhshrink, softsign); besides being called in `replace`, they are valid values
/// of op-typed parameters, so `%z = $act(%x)` draws them like any aten activation.
struct helper_info {
  std::string_view name;  ///< "tfg::reshape_like"
  std::uint8_t arity;
  std::array<sig, 3> params;
  std::string_view signature;
  std::string_view meaning;
  bool activation = false;
};

inline constexpr std::array<helper_info, 10> helpers{{
    {"tfg::reshape_like",
     2,
     {sig::tensor, sig::tensor},
     "tfg::reshape_like(%v, %like)",
     "aten::reshape(%v, shape(%like)); requires numel(%v) == numel(%like)"},
    {"tfg::revert_shape",
     3,
     {sig::tensor, sig::tensor, sig::number},
     "tfg::revert_shape(%v, %like, pad)",
     "insert or drop size-1 dims at axis 1 until ranks agree, then pad with `pad` or centre-crop every non-batch dim "
     "to shape(%like) (COMET's shape revert)"},
    {"tfg::pad_or_crop",
     3,
     {sig::tensor, sig::shape, sig::number},
     "tfg::pad_or_crop(%v, shape, pad)",
     "pad with `pad` or centre-crop each dim of %v to `shape` (same rank); with a %value list of sizes (ints the "
     "mutant computes), its last dims, read when the mutant runs"},
    {"tfg::cast_like", 2, {sig::tensor, sig::tensor}, "tfg::cast_like(%v, %like)", "aten::to(%v, dtype(%like))"},
    {"tfg::to_like",
     2,
     {sig::tensor, sig::tensor},
     "tfg::to_like(%v, %like)",
     "convert %v to the dtype, device and memory format of %like"},
    {"tfg::threshold",
     1,
     {sig::tensor},
     "tfg::threshold(%v)",
     "aten::threshold(%v, 1.0, 0.0): LEMON's ThresholdedReLU (theta = 1)",
     true},
    {"tfg::prelu",
     1,
     {sig::tensor},
     "tfg::prelu(%v)",
     "aten::prelu(%v, w) with one slope w = 0.25 of %v's dtype (PyTorch's PReLU initialisation)",
     true},
    {"tfg::softmax", 1, {sig::tensor}, "tfg::softmax(%v)", "aten::softmax(%v, -1, none)", true},
    {"tfg::tanhshrink", 1, {sig::tensor}, "tfg::tanhshrink(%v)", "%v - tanh(%v) (no aten op of its own)", true},
    {"tfg::softsign", 1, {sig::tensor}, "tfg::softsign(%v)", "%v / (1 + |%v|) (no aten op of its own)", true},
}};

[[nodiscard]] inline const helper_info* find_helper(std::string_view name) noexcept {
  for (const auto& h : helpers)
    if (h.name == name) return &h;
  return nullptr;
}

/// Op namespaces accepted in op names (`tfg` only for helpers).
inline constexpr std::array<std::string_view, 4> op_namespaces{{"aten", "prim", "quantized", "tfg"}};

/// Further op namespaces a backend knows, e.g. those of custom operator libraries registered
/// with TORCH_LIBRARY in this process (tfg::torch::register_custom_op_namespaces fills it).
/// Process-wide; set it before loading operator files. Not thread-safe against concurrent loads.
[[nodiscard]] inline std::vector<std::string>& extra_op_namespaces() {
  static std::vector<std::string> extra;
  return extra;
}

/// Attributes of example graph inputs: `%a: f32[2,3]{cuda, min=-1.0}`.
struct input_attr_info {
  std::string_view name;
  bool takes_value;  ///< `min=-1.0` vs a flag
  std::string_view meaning;
};

inline constexpr std::array<input_attr_info, 8> input_attrs{{
    {"cpu", false, "place the input on the CPU (default)"},
    {"cuda", false, "place the input on a CUDA device (the example is skipped without one)"},
    {"channels_last", false, "channels_last memory format (rank 4 or 5)"},
    {"requires_grad", false, "the input requires grad"},
    {"nan", false, "one element is NaN"},
    {"inf", false, "one element is +Inf"},
    {"min", true, "lower bound of the random values (default -1)"},
    {"max", true, "upper bound of the random values (default 1)"},
}};

[[nodiscard]] inline const input_attr_info* find_input_attr(std::string_view name) noexcept {
  for (const auto& a : input_attrs)
    if (a.name == name) return &a;
  return nullptr;
}

/// The spelling of a type, for messages: "int", "ints", "dtype", ...
[[nodiscard]] inline std::string_view spell(type t) noexcept {
  if (t.list) {
    switch (t.kind) {
      case type_kind::integer: return "ints";
      case type_kind::floating: return "floats";
      case type_kind::unknown: return "list";
      case type_kind::boolean: return "list of bool";
      case type_kind::string: return "list of string";
      case type_kind::dtype: return "list of dtype";
      case type_kind::device: return "list of device";
      case type_kind::layout: return "list of layout";
      case type_kind::memory_format: return "list of memory_format";
      case type_kind::op: return "list of op";
      case type_kind::tensor: return "list of tensor";
      case type_kind::none: return "list of none";
    }
  }
  switch (t.kind) {
    case type_kind::unknown: return "unknown";
    case type_kind::boolean: return "bool";
    case type_kind::integer: return "int";
    case type_kind::floating: return "float";
    case type_kind::string: return "string";
    case type_kind::none: return "none";
    case type_kind::dtype: return "dtype";
    case type_kind::device: return "device";
    case type_kind::layout: return "layout";
    case type_kind::memory_format: return "memory_format";
    case type_kind::op: return "op";
    case type_kind::tensor: return "tensor";
  }
  return "unknown";
}

}  // namespace tfg::dsl
