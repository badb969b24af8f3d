#pragma once
/// \file
/// The abstract syntax tree of a `.tfg` file (see dsl/spec.md). Plain C++: no parser type
/// leaks here, so the matcher compiler and tools can build, walk and rewrite it freely.
/// Every node carries the `source_loc` of its text; `check()` fills the `resolved` types.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tfg/dsl/source.hpp"

namespace tfg::dsl {

// ---- types of the constraint language ----------------------------------------------------

/// Scalar kinds of the constraint language. `tensor` is the type of every `%value`.
enum class type_kind : std::uint8_t {
  unknown,  ///< not yet resolved, or an error was already reported (suppresses cascades)
  boolean,
  integer,
  floating,
  string,
  none,
  dtype,
  device,
  layout,
  memory_format,
  op,  ///< an op kind such as aten::relu
  tensor,
};

/// A type: a kind, or a list of that kind (`ints` is `{integer, true}`).
struct type {
  type_kind kind = type_kind::unknown;
  bool list = false;
  friend constexpr bool operator==(type, type) = default;
};

// ---- expressions ---------------------------------------------------------------------------

enum class expr_kind : std::uint8_t {
  int_literal,     ///< int_value
  float_literal,   ///< float_value
  string_literal,  ///< text (escapes decoded)
  name,            ///< text: a bare identifier; a literal keyword (f32, cuda, true, none, ...)
  value,           ///< text: `%x` without the '%'
  param,           ///< text: `$k` without the '$'
  op_name,         ///< text: "aten::relu"
  wildcard,        ///< `_`
  ellipsis,        ///< `...`
  list,            ///< args: `[a, b]`
  set,             ///< args: `{a, b}`
  call,            ///< text: callee; args: arguments
  index,           ///< args: {base, index}
  unary,           ///< op; args: {operand}
  binary,          ///< op; args: {lhs, rhs}
};

enum class op_code : std::uint8_t {
  none,
  logical_or,
  logical_and,
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
  logical_not,
  neg,
};

/// One expression node. A single node type (a kind tag plus payload) keeps tree walks in the
/// compiler to one recursive function.
struct expr {
  expr_kind kind = expr_kind::name;
  op_code op = op_code::none;
  std::int64_t int_value = 0;
  double float_value = 0.0;
  std::string text;
  std::vector<expr> args;
  source_loc loc;
  type resolved;  ///< filled by check()
  /// Levels of the tree from this node down (a leaf is 1). The parser keeps it at most
  /// `max_expression_height` (E007), so every recursive walk of a parsed tree is bounded.
  std::uint32_t height = 1;
};

/// The deepest expression tree the parser builds: longer `&&`/`||`/arithmetic chains are
/// E007 (one condition per line in a `require` block has no such limit).
inline constexpr std::uint32_t max_expression_height = 512;

/// An int or float literal (a literal range bound, a plain literal list element).
[[nodiscard]] inline bool is_number_literal(const expr& e) noexcept {
  return e.kind == expr_kind::int_literal || e.kind == expr_kind::float_literal;
}

/// A name with its position: operator names, `%values` and `$params` (without sigil),
/// op names, header words.
struct symbol {
  std::string text;
  source_loc loc;
};

// ---- IR-shaped lines -----------------------------------------------------------------------

enum class op_spec_kind : std::uint8_t {
  names,  ///< one op kind, or alternatives `aten::relu|aten::gelu`
  any,    ///< `*` (patterns only)
  param,  ///< `$act`: the op kind held by an op-typed parameter
};

struct op_spec {
  op_spec_kind kind = op_spec_kind::names;
  std::vector<symbol> names;  ///< for `names`: the alternatives, "ns::name"
  symbol param;               ///< for `param`
  source_loc loc;
};

/// `%a, %b = op(args)`: a node of a pattern, a replacement or an example graph.
struct ir_node {
  std::vector<symbol> results;
  op_spec op;
  std::vector<expr> args;
  source_loc loc;
};

// ---- operator blocks -----------------------------------------------------------------------

/// `pattern { ... }`: nodes around the anchor plus structural conditions (`uses(%x) >= 2`).
struct pattern_block {
  std::vector<ir_node> nodes;
  std::vector<expr> conditions;
  source_loc loc;
};

/// `rewire consumers(%x) -> %c` (all) or `rewire consumer(%x, i) -> %c` (one); `which` is
/// an int expression (i-th consumer in topological order) or a `%value` naming the pattern
/// node that consumes `source`.
struct rewire_stmt {
  symbol source;
  bool all = true;
  std::optional<expr> which;
  symbol target;
  source_loc loc;
};

/// `delete %y`: removes the pattern node producing `%y`.
struct delete_stmt {
  symbol target;
  source_loc loc;
};

/// `replace { ... }`. Applied as: insert `nodes` in order, then all rewires, then deletes.
struct replace_block {
  std::vector<ir_node> nodes;
  std::vector<rewire_stmt> rewires;
  std::vector<delete_stmt> deletes;
  source_loc loc;
};

/// Stages at which a candidate is checked, in order; also the `rejected_by(...)` words.
enum class stage : std::uint8_t { pattern, input, internal, output };

/// `require input|internal|output { ... }`: a conjunction of boolean conditions.
struct constraint_block {
  stage which = stage::input;
  std::vector<expr> conditions;
  source_loc loc;
};

enum class domain_kind : std::uint8_t { none, range, set };

/// `param $k : int in [1, 8]`, `param $act in {aten::relu, aten::gelu}`, `param $f : bool`.
struct param_decl {
  symbol name;
  std::optional<symbol> type_name;
  domain_kind domain = domain_kind::none;
  std::vector<expr> domain_values;  ///< range: {lo, hi}; set: the members
  /// Declared `param $n : int = e` (a value derived from the site): a range whose two
  /// bounds are `e` (domain_values holds it twice).
  bool derived = false;
  std::string doc;  ///< `///` lines directly above
  source_loc loc;
  type resolved;  ///< filled by check()
};

// ---- examples ------------------------------------------------------------------------------

/// `%a: f32[2,3]{cuda, min=-1.0}` (tensor) or `%n: int` (scalar).
struct graph_attr {
  symbol key;
  std::optional<expr> value;
  source_loc loc;
};

struct graph_input {
  symbol name;
  symbol type_name;        ///< a dtype literal (tensor) or int/float/bool (scalar)
  bool tensor = false;     ///< a `[dims]` part was written
  std::vector<expr> dims;  ///< int literals
  std::vector<graph_attr> attrs;
  source_loc loc;
};

/// `graph(%a: f32[2,3]): %x = aten::view(%a, [3, 2]) return (%x)`
struct example_graph {
  std::vector<graph_input> inputs;
  std::vector<ir_node> nodes;
  std::vector<symbol> outputs;
  source_loc loc;
};

/// `example match { ... }` or `example no_match rejected_by(stage) { ... }`.
struct example_block {
  bool match = true;
  stage rejected_by = stage::pattern;  ///< no_match only
  example_graph graph;
  std::optional<symbol> anchor;  ///< restrict the example to this edge
  bool has_expect = false;
  std::vector<expr> expect;  ///< `expect { count(aten::clone) == 1 }` (match only)
  source_loc expect_loc;
  source_loc loc;
};

// ---- operators and modules -----------------------------------------------------------------

enum class object_kind : std::uint8_t { tensor, operator_, relation, subgraph };
enum class primitive_kind : std::uint8_t { update, insertion, deletion, rewiring };

/// `origin cg lemon "L-ARep"` or `origin tfg "DF-T07"`.
struct origin_info {
  bool from_cg = false;
  std::string study;    ///< cg only
  std::string rule_id;  ///< optional string
  source_loc loc;
};

/// `preserves values [within atol=..., rtol=...]`. Without `within` the claim is exact
/// equality; absent entirely, the operator is not value-preserving.
struct value_claim {
  bool preserves = false;
  std::optional<double> atol;
  std::optional<double> rtol;
  source_loc loc;
};

struct operator_decl {
  symbol name;
  std::string doc;  ///< `///` lines directly above `operator`
  source_loc loc;   ///< the `operator` keyword through the name

  std::optional<object_kind> object;
  std::optional<primitive_kind> primitive;
  std::optional<origin_info> origin;
  value_claim values;
  std::optional<symbol> anchor;
  /// `requires cuda`: the operator's mutation means something only on that device (a cuDNN
  /// flag, a TF32 switch); where the device is absent it is skipped, not executed.
  std::optional<symbol> requires_device;

  std::vector<param_decl> params;
  std::optional<pattern_block> pattern;  ///< absent: the pattern is the anchor edge alone
  std::optional<replace_block> replace;
  std::optional<constraint_block> require_input;
  std::optional<constraint_block> require_internal;
  std::optional<constraint_block> require_output;
  std::vector<example_block> examples;
};

/// `extern pred my_check(tensor, int) -> bool` / `extern fn score(tensor) -> float`.
struct extern_decl {
  bool predicate = true;
  symbol name;
  std::vector<symbol> param_types;
  std::optional<symbol> result_type;
  source_loc loc;
  std::vector<type> resolved_params;  ///< filled by check()
  type resolved_result;               ///< filled by check()
};

// ---- requirements R(v) ---------------------------------------------------------------------

/// How one positional schema argument of a `requirement` is bound (dsl/spec.md section 14).
enum class req_arg_kind : std::uint8_t {
  tensor,           ///< `%x`: a tensor argument (an edge); None does not bind
  optional_tensor,  ///< `%x?`: a tensor argument or None (`is_none(%x)`)
  tensor_list,      ///< `%xs[]`: a list of tensors (`len(%xs)`, `%xs[i]`)
  constant,         ///< `$p`: a constant argument's value (int, float, bool, string, list, None)
  ignore,           ///< `_`: one argument, not bound
  rest,             ///< `...`: any further arguments (last only)
};

/// One entry of a requirement's argument list; `name` is empty for `_` and `...`.
struct requirement_arg {
  req_arg_kind kind = req_arg_kind::ignore;
  symbol name;
  source_loc loc;
};

/// `requirement aten::add(%self, %other, $alpha) { broadcastable(%self, %other) }`: R(v) for
/// one op kind. Several declarations for one op are alternatives, tried in order.
struct requirement_decl {
  symbol op;                          ///< "aten::_convolution"
  std::vector<requirement_arg> args;  ///< positional over the op's schema arguments
  std::vector<expr> conditions;       ///< each must hold on every profiling record
  /// `propagates nan RULE` after the argument list: how the op's documented semantics carry a
  /// NaN from its inputs to its outputs ("elementwise", "preserve", "any"); empty: no rule.
  std::string nan_rule;
  /// `... from %x`: the one operand the rule applies to (the others lend a shape or a type);
  /// empty: every operand.
  symbol nan_from;
  std::string doc;  ///< `///` lines directly above
  source_loc loc;
};

/// One `.tfg` file.
struct module {
  std::string file_name;
  int version = 1;
  std::vector<extern_decl> externs;
  std::vector<operator_decl> operators;
  std::vector<requirement_decl> requirements;  ///< R(v) declarations (dsl/spec.md section 14)
};

}  // namespace tfg::dsl
