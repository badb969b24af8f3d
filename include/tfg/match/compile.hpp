#pragma once
/// \file
/// The matcher compiler: checked DSL modules in, `compiled_operator`s and a
/// `requirement_table` out. Operators are run-time data: nothing is instantiated per
/// operator. See dsl/spec.md sections 7-10, 14 and 15 for the semantics implemented here.
///
///     tfg::match::symbol_table syms;
///     tfg::match::extern_registry ext;
///     auto parsed = tfg::dsl::parse(text, "ops/x.tfg");
///     auto r = tfg::match::compile(parsed.ast, syms, ext);   // never throws
///     // r.operators, r.requirements, r.diagnostics

#include <algorithm>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tfg/dsl/ast.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/dsl/diagnostic.hpp"
#include "tfg/match/adapter.hpp"
#include "tfg/match/program.hpp"

namespace tfg::match {

// ---- parameters ----------------------------------------------------------------------------

/// A declared parameter. Values are `attr_value`s: ints, doubles, bools, strings (dtype,
/// device, layout and memory-format words such as "f32"); op-typed parameters hold the op's
/// symbol id as an int64.
struct compiled_param {
  std::string name;
  dsl::type type;
  dsl::domain_kind domain = dsl::domain_kind::none;
  attr_value lo, hi;                ///< range domains
  std::vector<attr_value> members;  ///< set domains (bool without domain: {false, true})
  bool bound_by_match = false;      ///< appears as a pattern argument or op spec
  /// Range bounds computed from the site (dsl/spec.md section 6): when set, `lo` / `hi` are
  /// ignored and the bounds are evaluated on the candidate's pattern values and matched
  /// parameters, on every profiling record (the range is the intersection over records).
  std::shared_ptr<const program> lo_expr, hi_expr;
  /// `param $n : int = e`: one value derived from the site (`lo_expr == hi_expr`), the same
  /// on every record. Not sampled: no redraw changes it, so conditions that read it are
  /// decided once per candidate.
  bool derived = false;
  [[nodiscard]] bool computed_bounds() const noexcept { return lo_expr || hi_expr; }
};

// ---- pattern -------------------------------------------------------------------------------

/// One argument of a pattern node.
struct pattern_arg {
  enum class kind : std::uint8_t { value, wildcard, ellipsis, param, literal, list };
  kind k = kind::wildcard;
  std::uint32_t slot = 0;                                 ///< value or parameter slot
  attr_value literal;                                     ///< literal: the constant it must equal
  dsl::type_kind literal_kind = dsl::type_kind::unknown;  ///< dtype/layout/... words
  std::vector<pattern_arg> items;                         ///< list
};

struct pattern_node {
  enum class op_kind : std::uint8_t { names, any, param };
  op_kind how = op_kind::names;
  std::vector<std::uint32_t> symbols;  ///< names: the alternatives
  std::uint32_t param = 0;             ///< param: parameter slot
  std::vector<pattern_arg> args;
  bool ellipsis = false;               ///< last argument is `...`
  std::vector<std::uint32_t> results;  ///< value slots
};

/// The search order: node `node` is reached through `value` (already bound) as its producer
/// (`via_producer`) or as one of its consumers.
struct match_step {
  std::uint32_t node = 0;
  std::uint32_t value = 0;
  bool via_producer = true;
};

/// Necessary conditions on the anchor, checked against its `edge_summary` before the
/// pattern. Each test knows the stage it was derived from.
struct prefilter {
  bool need_producer = false;                    ///< pattern: the anchor is produced by a pattern node
  bool any_producer = true;                      ///< no restriction on the producer's kind
  std::array<std::uint64_t, 4> producer_mask{};  ///< bit (symbol & 255)
  std::uint16_t min_uses = 0;                    ///< pattern
  std::uint64_t rank_mask = ~std::uint64_t{0};   ///< input: allowed ranks of run 0 (bit r; 63 = >= 63)
  std::uint32_t dtype_mask = ~std::uint32_t{0};  ///< input: allowed dtypes of run 0
  bool need_aliased = false;                     ///< input
  bool need_state = false;                       ///< input: some input condition reads the anchor's state
};

/// Per-edge facts read by the prefilter; built once per graph (`summarize`).
struct edge_summary {
  std::uint32_t producer_symbol = 0;  ///< 0: a graph input
  std::uint16_t uses = 0;             ///< saturating
  std::uint8_t rank = 0;              ///< run 0 (saturating at 63)
  std::uint8_t dtype = 0;             ///< run 0 (state::dtype)
  std::uint8_t flags = 0;             ///< see below
  static constexpr std::uint8_t live = 1, has_runs = 2, non_tensor = 4, aliased = 8;
};

// ---- replacement ---------------------------------------------------------------------------

/// An argument of a replacement node (or the `which` of a rewire): a bound value, a
/// parameter, a constant, or an expression the backend evaluates with `evaluate_value`
/// (for example `pow2($k)` or `shape(%x)`), or `forward`: `arg(%y, i)`, the i-th argument of
/// the pattern node that produces the value in `slot`, copied as the seed has it.
struct template_arg {
  enum class kind : std::uint8_t { value, param, constant, expr, forward };
  kind k = kind::constant;
  std::uint32_t slot = 0;
  std::uint32_t index = 0;  ///< forward: the argument's position
  attr_value constant;      ///< for dtype/device/... words: the word
  dsl::type type;           ///< the checked type of the argument
  std::optional<program> expr;
};

struct replacement_node {
  std::string op;                         ///< "aten::clone", or "tfg::reshape_like" (a helper)
  std::uint32_t op_symbol = 0;            ///< 0 when `op_param` is used
  std::optional<std::uint32_t> op_param;  ///< `%z = $act(...)`: parameter slot holding the op
  bool helper = false;                    ///< a `tfg::` shape-adaptation helper (dsl::helpers)
  std::vector<template_arg> args;
  std::vector<std::uint32_t> outputs;  ///< value slots of the new values
};

struct rewire_directive {
  std::uint32_t source = 0;           ///< pattern value slot
  bool all = true;                    ///< consumers(%x) vs consumer(%x, which)
  std::optional<template_arg> which;  ///< int expression, or a value (the consumer's result)
  std::uint32_t target = 0;           ///< value slot
};

/// The replacement, applied as: insert `nodes` in order, then `rewires`, then `deletes`
/// (dsl/spec.md section 8). Value slots index `compiled_operator::values`.
struct replacement_template {
  std::vector<replacement_node> nodes;
  std::vector<rewire_directive> rewires;
  std::vector<std::uint32_t> deletes;  ///< value slots whose producing pattern node is removed
};

// ---- operators -----------------------------------------------------------------------------

struct compiled_operator {
  std::string name;
  std::string file;
  dsl::object_kind object = dsl::object_kind::tensor;
  dsl::primitive_kind primitive = dsl::primitive_kind::update;
  bool preserves_values = false;
  std::optional<double> atol, rtol;
  std::string requires_device;  ///< "cuda" for `requires cuda`; "" when any machine will do

  std::vector<std::string> values;  ///< value slots: pattern values first, then replacement
  std::uint32_t pattern_value_count = 0;
  std::uint32_t anchor = 0;  ///< value slot of the anchor
  std::vector<compiled_param> params;
  /// Some parameter is sampled (not bound by matching): `evaluate_constraints` may redraw.
  bool sampled_params = false;
  /// A replacement expression (a node argument or a rewire's consumer index) reads a sampled
  /// parameter, so whether it is the same on every record (`same_on_every_run`) can change
  /// with a redraw.
  bool replacement_reads_sampled = false;
  /// Something in the replacement may differ between profiling records: an expression that
  /// reads state, or a `tfg::reshape_like` (which bakes a shape). False: `same_on_every_run`
  /// holds without looking.
  bool replacement_reads_state = false;

  prefilter pre;
  std::vector<pattern_node> pattern;  ///< nodes; empty: the anchor edge alone
  std::vector<match_step> steps;      ///< search order (anchor outwards)
  std::vector<program> pattern_conditions;
  std::vector<program> input, internal, output;
  replacement_template replacement;

  std::shared_ptr<const dsl::operator_decl> ast;  ///< the source (examples, docs)
};

/// Bindings of a candidate: value slot -> edge (`no_edge` for replacement slots), pattern
/// node -> graph node, parameter slot -> value (monostate until bound or sampled).
struct bindings {
  std::vector<edge_id> values;
  std::vector<node_id> nodes;
  std::vector<attr_value> params;
};

// ---- requirements R(v) ---------------------------------------------------------------------

struct compiled_requirement {
  std::string op;
  std::vector<dsl::req_arg_kind> args;  ///< positional
  std::vector<std::uint32_t> arg_slot;  ///< per arg: value or constant slot (UINT32_MAX: none)
  std::uint32_t value_slots = 0, const_slots = 0;
  bool rest = false;
  std::vector<program> conditions;
  std::string where;     ///< "file:line:col"
  std::string nan_rule;  ///< `propagates nan RULE` ("" none); "RULE@K" with `from` (operand K)
};

/// Requirements by op symbol; alternatives in declaration order.
struct requirement_table {
  std::unordered_map<std::uint32_t, std::vector<compiled_requirement>> by_op;
  /// Op kind -> its NaN-propagation rule (the first declaration of the kind that states one).
  std::map<std::string, std::string, std::less<>> nan_rules;
  [[nodiscard]] const std::vector<compiled_requirement>* find(std::uint32_t op) const {
    const auto it = by_op.find(op);
    return it == by_op.end() ? nullptr : &it->second;
  }
};

struct compile_result {
  std::vector<compiled_operator> operators;
  requirement_table requirements;
  std::vector<dsl::diagnostic> diagnostics;
  [[nodiscard]] bool ok() const noexcept { return !dsl::has_errors(diagnostics); }
};

// ---- literal vocabularies ------------------------------------------------------------------

namespace detail {

/// A literal word as a run-time value (true, none, f32, cuda, strided, channels_last_format).
inline val word_value(std::string_view w) {
  if (w == "true") return val::boolean(true);
  if (w == "false") return val::boolean(false);
  if (w == "none") {
    val v;
    v.k = vk::none;
    return v;
  }
  if (const auto d = state::parse_dtype(w)) return val::code(vk::dtype, static_cast<std::int64_t>(*d));
  if (w == "cpu") return val::code(vk::device, static_cast<std::int64_t>(state::device_kind::cpu));
  if (w == "cuda") return val::code(vk::device, static_cast<std::int64_t>(state::device_kind::cuda));
  if (w == "strided") return val::code(vk::layout, static_cast<std::int64_t>(state::layout::strided));
  if (w == "sparse_coo" || w == "sparse_csr")
    return val::code(vk::layout, static_cast<std::int64_t>(state::layout::sparse));
  if (w == "mkldnn") return val::code(vk::layout, static_cast<std::int64_t>(state::layout::mkldnn));
  constexpr std::string_view fmts[] = {"contiguous_format", "channels_last_format", "channels_last_3d_format",
                                       "preserve_format"};
  for (std::size_t i = 0; i < 4; ++i)
    if (fmts[i] == w) return val::code(vk::memfmt, static_cast<std::int64_t>(i));
  return val::fault();
}

// ---- the compiler --------------------------------------------------------------------------

class compiler {
 public:
  compiler(symbol_table& syms, const extern_registry& ext, std::string file)
      : syms_(syms), ext_(ext), file_(std::move(file)) {}

  std::vector<dsl::diagnostic> diags;

  compiled_operator compile_operator(const dsl::operator_decl& op) {
    compiled_operator c;
    c.name = op.name.text;
    c.file = file_;
    c.object = op.object.value_or(dsl::object_kind::tensor);
    c.primitive = op.primitive.value_or(dsl::primitive_kind::update);
    c.preserves_values = op.values.preserves;
    c.atol = op.values.atol;
    c.rtol = op.values.rtol;
    if (op.requires_device) c.requires_device = op.requires_device->text;
    c.ast = std::make_shared<dsl::operator_decl>(op);
    values_.clear();
    params_.clear();
    op_ = &c;

    for (const auto& p : op.params) {
      compiled_param cp;
      cp.name = p.name.text;
      cp.type = p.resolved;
      cp.domain = p.domain;
      cp.derived = p.derived;
      if (p.domain == dsl::domain_kind::range && p.domain_values.size() == 2) {
        // Computed bounds are compiled below, once the pattern values have slots.
        if (dsl::is_number_literal(p.domain_values[0])) cp.lo = literal_attr(p.domain_values[0], p.resolved.kind);
        if (dsl::is_number_literal(p.domain_values[1])) cp.hi = literal_attr(p.domain_values[1], p.resolved.kind);
      } else if (p.domain == dsl::domain_kind::set) {
        for (const auto& m : p.domain_values) cp.members.push_back(literal_attr(m, p.resolved.kind));
      } else if (p.resolved.kind == dsl::type_kind::boolean) {
        cp.domain = dsl::domain_kind::set;
        cp.members = {false, true};
      }
      params_[cp.name] = static_cast<std::uint32_t>(c.params.size());
      c.params.push_back(std::move(cp));
    }

    // Pattern values: anchor first, then in order of appearance.
    if (op.anchor) slot_of(op.anchor->text);
    if (op.pattern) {
      for (const auto& n : op.pattern->nodes) {
        for (const auto& r : n.results) slot_of(r.text);
        for (const auto& a : n.args) collect_values(a);
      }
    }
    c.pattern_value_count = static_cast<std::uint32_t>(c.values.size());
    c.anchor = 0;

    if (op.pattern) {
      for (const auto& n : op.pattern->nodes) c.pattern.push_back(compile_pattern_node(n));
      for (const auto& e : op.pattern->conditions) c.pattern_conditions.push_back(compile_expr(e));
    }
    order_steps(c);

    // Replacement values get slots after the pattern values.
    if (op.replace) {
      for (const auto& n : op.replace->nodes)
        for (const auto& r : n.results) slot_of(r.text);
      compile_replacement(*op.replace, c.replacement);
    }
    // Computed parameter bounds (after the pattern's slots; they read pattern values only).
    // Both bounds become programs, a literal side too: one code path when sampling.
    for (std::size_t i = 0; i < op.params.size(); ++i) {
      const auto& p = op.params[i];
      if (p.domain != dsl::domain_kind::range || p.domain_values.size() != 2 ||
          std::all_of(p.domain_values.begin(), p.domain_values.end(), dsl::is_number_literal))
        continue;
      c.params[i].lo_expr = std::make_shared<const program>(compile_expr(p.domain_values[0]));
      c.params[i].hi_expr =
          p.derived ? c.params[i].lo_expr : std::make_shared<const program>(compile_expr(p.domain_values[1]));
    }
    if (op.require_input)
      for (const auto& e : op.require_input->conditions) c.input.push_back(compile_expr(e));
    if (op.require_internal)
      for (const auto& e : op.require_internal->conditions) c.internal.push_back(compile_expr(e));
    if (op.require_output)
      for (const auto& e : op.require_output->conditions) c.output.push_back(compile_expr(e));
    build_prefilter(op, c);
    for (const auto& p : c.params)
      c.sampled_params = c.sampled_params || (!p.bound_by_match && !p.derived && p.domain != dsl::domain_kind::none);
    // Which constraints and replacement expressions a redraw of the sampled parameters can
    // change (evaluate_constraints re-evaluates only those per draw).
    const auto program_reads_sampled = [&](const program& p) {
      for (auto const& n : p.nodes)
        if (n.op == pop::param && n.slot < c.params.size() && !c.params[n.slot].bound_by_match &&
            !c.params[n.slot].derived)
          return true;
      return false;
    };
    for (auto* progs : {&c.input, &c.internal, &c.output})
      for (auto& prog : *progs) prog.reads_sampled = program_reads_sampled(prog);
    for (const auto& rn : c.replacement.nodes)
      for (const auto& t : rn.args)
        if (t.k == template_arg::kind::expr && t.expr && program_reads_sampled(*t.expr))
          c.replacement_reads_sampled = true;
    for (const auto& rw : c.replacement.rewires)
      if (rw.which && rw.which->k == template_arg::kind::expr && rw.which->expr &&
          program_reads_sampled(*rw.which->expr))
        c.replacement_reads_sampled = true;
    for (const auto& rn : c.replacement.nodes) {
      if (rn.helper && rn.op == "tfg::reshape_like") c.replacement_reads_state = true;
      for (const auto& t : rn.args)
        if (t.k == template_arg::kind::expr && t.expr && t.expr->reads_state) c.replacement_reads_state = true;
    }
    for (const auto& rw : c.replacement.rewires)
      if (rw.which && rw.which->k == template_arg::kind::expr && rw.which->expr && rw.which->expr->reads_state)
        c.replacement_reads_state = true;
    op_ = nullptr;
    return c;
  }

  compiled_requirement compile_requirement(const dsl::requirement_decl& rq) {
    compiled_requirement r;
    r.op = rq.op.text;
    r.where = file_ + ":" + std::to_string(rq.loc.line) + ":" + std::to_string(rq.loc.col);
    req_values_.clear();
    req_consts_.clear();
    for (const auto& a : rq.args) {
      r.args.push_back(a.kind);
      std::uint32_t slot = UINT32_MAX;
      switch (a.kind) {
        case dsl::req_arg_kind::tensor:
        case dsl::req_arg_kind::optional_tensor:
        case dsl::req_arg_kind::tensor_list:
          slot = r.value_slots++;
          req_values_[a.name.text] = slot;
          break;
        case dsl::req_arg_kind::constant:
          slot = r.const_slots++;
          req_consts_[a.name.text] = slot;
          break;
        case dsl::req_arg_kind::rest: r.rest = true; break;
        case dsl::req_arg_kind::ignore: break;
      }
      r.arg_slot.push_back(slot);
    }
    if (r.rest) {
      r.args.pop_back();
      r.arg_slot.pop_back();
    }
    in_requirement_ = true;
    for (const auto& e : rq.conditions) r.conditions.push_back(compile_expr(e));
    in_requirement_ = false;
    return r;
  }

  /// Compiles `e`; value and parameter names resolve against the current operator or
  /// requirement.
  program compile_expr(const dsl::expr& e) {
    program p;
    p.strings = std::make_shared<std::deque<std::string>>();
    p.text = file_ + ":" + std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col);
    prog_ = &p;
    p.root = emit(e);
    std::sort(p.slots.begin(), p.slots.end());
    p.slots.erase(std::unique(p.slots.begin(), p.slots.end()), p.slots.end());
    if (op_)
      for (const auto s : p.slots)
        if (s >= op_->pattern_value_count) p.needs_probe = true;
    mark_fast(p, [&](std::uint32_t slot) {
      return op_ && !in_requirement_ && slot < op_->params.size() &&
             op_->params[slot].type.kind == dsl::type_kind::integer;
    });
    flatten(p);
    prog_ = nullptr;
    return p;
  }

 private:
  symbol_table& syms_;
  const extern_registry& ext_;
  std::string file_;
  compiled_operator* op_ = nullptr;
  program* prog_ = nullptr;
  std::map<std::string, std::uint32_t> values_, params_;
  bool in_requirement_ = false;
  std::map<std::string, std::uint32_t> req_values_, req_consts_;

  void error(dsl::errc code, dsl::source_loc loc, std::string msg) {
    diags.push_back(dsl::make_error(code, loc, std::move(msg)));
  }

  std::uint32_t slot_of(const std::string& name) {
    const auto [it, fresh] = values_.emplace(name, static_cast<std::uint32_t>(op_->values.size()));
    if (fresh) op_->values.push_back(name);
    return it->second;
  }
  void collect_values(const dsl::expr& a) {
    if (a.kind == dsl::expr_kind::value) slot_of(a.text);
    if (a.kind == dsl::expr_kind::list)
      for (const auto& x : a.args) collect_values(x);
  }

  /// A literal expression as an attr_value (dtype and other words stay words).
  attr_value literal_attr(const dsl::expr& e, dsl::type_kind want) {
    switch (e.kind) {
      case dsl::expr_kind::int_literal:
        if (want == dsl::type_kind::floating) return static_cast<double>(e.int_value);
        return e.int_value;
      case dsl::expr_kind::float_literal: return e.float_value;
      case dsl::expr_kind::string_literal: return e.text;
      case dsl::expr_kind::op_name: return static_cast<std::int64_t>(syms_.intern(e.text));
      case dsl::expr_kind::name:
        if (e.text == "true") return true;
        if (e.text == "false") return false;
        if (e.text == "none") return std::monostate{};
        return e.text;
      case dsl::expr_kind::list: {
        bool any_float = false;
        for (const auto& x : e.args) any_float = any_float || x.kind == dsl::expr_kind::float_literal;
        if (any_float) {
          std::vector<double> v;
          for (const auto& x : e.args)
            v.push_back(x.kind == dsl::expr_kind::float_literal ? x.float_value : static_cast<double>(x.int_value));
          return v;
        }
        std::vector<std::int64_t> v;
        for (const auto& x : e.args) v.push_back(x.int_value);
        return v;
      }
      default: return std::monostate{};
    }
  }

  pattern_arg compile_pattern_arg(const dsl::expr& a) {
    pattern_arg pa;
    switch (a.kind) {
      case dsl::expr_kind::value:
        pa.k = pattern_arg::kind::value;
        pa.slot = slot_of(a.text);
        break;
      case dsl::expr_kind::wildcard: pa.k = pattern_arg::kind::wildcard; break;
      case dsl::expr_kind::ellipsis: pa.k = pattern_arg::kind::ellipsis; break;
      case dsl::expr_kind::param: {
        pa.k = pattern_arg::kind::param;
        pa.slot = params_.at(a.text);
        op_->params[pa.slot].bound_by_match = true;
        break;
      }
      case dsl::expr_kind::list: {
        bool plain = true;
        for (const auto& x : a.args) plain = plain && dsl::is_number_literal(x);
        if (plain) {
          pa.k = pattern_arg::kind::literal;
          pa.literal = literal_attr(a, dsl::type_kind::unknown);
        } else {
          pa.k = pattern_arg::kind::list;
          for (const auto& x : a.args) pa.items.push_back(compile_pattern_arg(x));
        }
        break;
      }
      default:
        pa.k = pattern_arg::kind::literal;
        pa.literal = literal_attr(a, dsl::type_kind::unknown);
        if (a.kind == dsl::expr_kind::name) pa.literal_kind = a.resolved.kind;
        if (a.kind == dsl::expr_kind::op_name) pa.literal_kind = dsl::type_kind::op;
        break;
    }
    return pa;
  }

  pattern_node compile_pattern_node(const dsl::ir_node& n) {
    pattern_node pn;
    switch (n.op.kind) {
      case dsl::op_spec_kind::any: pn.how = pattern_node::op_kind::any; break;
      case dsl::op_spec_kind::param:
        pn.how = pattern_node::op_kind::param;
        pn.param = params_.at(n.op.param.text);
        op_->params[pn.param].bound_by_match = true;
        break;
      case dsl::op_spec_kind::names:
        pn.how = pattern_node::op_kind::names;
        for (const auto& s : n.op.names) pn.symbols.push_back(syms_.intern(s.text));
        break;
    }
    for (const auto& a : n.args) {
      if (a.kind == dsl::expr_kind::ellipsis) {
        pn.ellipsis = true;
        continue;
      }
      pn.args.push_back(compile_pattern_arg(a));
    }
    for (const auto& r : n.results) pn.results.push_back(slot_of(r.text));
    return pn;
  }

  static void arg_slots(const pattern_arg& a, std::vector<std::uint32_t>& out) {
    if (a.k == pattern_arg::kind::value) out.push_back(a.slot);
    for (const auto& x : a.items) arg_slots(x, out);
  }

  /// Orders pattern nodes from the anchor outwards; prefers producer steps.
  static void order_steps(compiled_operator& c) {
    std::vector<bool> bound(c.pattern_value_count, false), placed(c.pattern.size(), false);
    if (c.pattern_value_count) bound[c.anchor] = true;
    for (std::size_t done = 0; done < c.pattern.size();) {
      std::optional<match_step> best;
      for (std::uint32_t i = 0; i < c.pattern.size() && !best; ++i) {
        if (placed[i]) continue;
        for (const auto r : c.pattern[i].results)
          if (bound[r]) {
            best = match_step{i, r, true};
            break;
          }
      }
      for (std::uint32_t i = 0; i < c.pattern.size() && !best; ++i) {
        if (placed[i]) continue;
        std::vector<std::uint32_t> s;
        for (const auto& a : c.pattern[i].args) arg_slots(a, s);
        for (const auto v : s)
          if (bound[v]) {
            best = match_step{i, v, false};
            break;
          }
      }
      if (!best) break;  // not connected (E043 was reported by check)
      placed[best->node] = true;
      ++done;
      c.steps.push_back(*best);
      const auto& pn = c.pattern[best->node];
      for (const auto r : pn.results) bound[r] = true;
      std::vector<std::uint32_t> s;
      for (const auto& a : pn.args) arg_slots(a, s);
      for (const auto v : s) bound[v] = true;
    }
  }

  template_arg compile_template_arg(const dsl::expr& e) {
    template_arg t;
    t.type = e.resolved;
    switch (e.kind) {
      case dsl::expr_kind::value:
        t.k = template_arg::kind::value;
        t.slot = slot_of(e.text);
        return t;
      case dsl::expr_kind::param:
        t.k = template_arg::kind::param;
        t.slot = params_.at(e.text);
        return t;
      case dsl::expr_kind::int_literal:
      case dsl::expr_kind::float_literal:
      case dsl::expr_kind::string_literal:
      case dsl::expr_kind::name:
      case dsl::expr_kind::op_name:
        t.k = template_arg::kind::constant;
        t.constant = literal_attr(e, dsl::type_kind::unknown);
        return t;
      case dsl::expr_kind::list: {
        bool plain = true;
        for (const auto& x : e.args) plain = plain && dsl::is_number_literal(x);
        if (plain) {
          t.k = template_arg::kind::constant;
          t.constant = literal_attr(e, dsl::type_kind::unknown);
          return t;
        }
        break;
      }
      case dsl::expr_kind::call:
        if (e.text == "arg" && e.args.size() == 2 && e.args[1].kind == dsl::expr_kind::int_literal) {
          t.k = template_arg::kind::forward;
          t.slot = slot_of(e.args[0].text);
          t.index = static_cast<std::uint32_t>(e.args[1].int_value);
          return t;
        }
        break;
      default: break;
    }
    t.k = template_arg::kind::expr;
    t.expr = compile_expr(e);
    return t;
  }

  void compile_replacement(const dsl::replace_block& rb, replacement_template& out) {
    for (const auto& n : rb.nodes) {
      replacement_node rn;
      if (n.op.kind == dsl::op_spec_kind::param) {
        rn.op_param = params_.at(n.op.param.text);
      } else if (!n.op.names.empty()) {
        rn.op = n.op.names.front().text;
        rn.op_symbol = syms_.intern(rn.op);
        rn.helper = dsl::find_helper(rn.op) != nullptr;
      }
      for (const auto& a : n.args) rn.args.push_back(compile_template_arg(a));
      for (const auto& r : n.results) rn.outputs.push_back(slot_of(r.text));
      out.nodes.push_back(std::move(rn));
    }
    for (const auto& rw : rb.rewires) {
      rewire_directive d;
      d.source = slot_of(rw.source.text);
      d.all = rw.all;
      if (rw.which) d.which = compile_template_arg(*rw.which);
      d.target = slot_of(rw.target.text);
      out.rewires.push_back(std::move(d));
    }
    for (const auto& d : rb.deletes) out.deletes.push_back(slot_of(d.target.text));
  }

  // ---- expressions ---------------------------------------------------------------------------

  std::uint32_t push(pnode n) {
    prog_->nodes.push_back(n);
    return static_cast<std::uint32_t>(prog_->nodes.size() - 1);
  }
  std::uint32_t emit_kids(const std::vector<dsl::expr>& args, pnode& n) {
    std::vector<std::uint32_t> ks;
    for (const auto& a : args) ks.push_back(emit(a));
    n.first = static_cast<std::uint32_t>(prog_->kids.size());
    n.count = static_cast<std::uint32_t>(ks.size());
    prog_->kids.insert(prog_->kids.end(), ks.begin(), ks.end());
    return n.first;
  }

  std::uint32_t emit(const dsl::expr& e) {
    pnode n;
    switch (e.kind) {
      case dsl::expr_kind::int_literal: n.lit = val::integer(e.int_value); return push(n);
      case dsl::expr_kind::float_literal: n.lit = val::floating(e.float_value); return push(n);
      case dsl::expr_kind::string_literal: {
        prog_->strings->push_back(e.text);
        n.lit.k = vk::string;
        n.lit.s = prog_->strings->back();
        return push(n);
      }
      case dsl::expr_kind::name: n.lit = word_value(e.text); return push(n);
      case dsl::expr_kind::op_name: n.lit = val::code(vk::op, syms_.intern(e.text)); return push(n);
      case dsl::expr_kind::value: {
        n.op = pop::value;
        if (in_requirement_) {
          const auto it = req_values_.find(e.text);
          n.slot = it == req_values_.end() ? 0 : it->second;
        } else {
          n.slot = slot_of(e.text);
        }
        prog_->slots.push_back(n.slot);
        return push(n);
      }
      case dsl::expr_kind::param: {
        n.op = pop::param;
        if (in_requirement_) {
          const auto it = req_consts_.find(e.text);
          n.slot = it == req_consts_.end() ? 0 : it->second;
        } else {
          const auto it = params_.find(e.text);
          n.slot = it == params_.end() ? 0 : it->second;
        }
        return push(n);
      }
      case dsl::expr_kind::list:
      case dsl::expr_kind::set:
        n.op = pop::list;
        emit_kids(e.args, n);
        return push(n);
      case dsl::expr_kind::call: {
        if (const auto* b = dsl::find_builtin(e.text)) {
          n.op = pop::call;
          n.fn = static_cast<bfn>(b - dsl::builtins.data());
          if (b->use == dsl::builtin_use::state) prog_->reads_state = true;
          emit_kids(e.args, n);
          return push(n);
        }
        n.op = pop::ext;
        auto fn = ext_.find(e.text);
        if (!fn) error(dsl::errc::unknown_builtin, e.loc, "extern '" + e.text + "' is not registered with the matcher");
        prog_->reads_state = true;
        n.slot = static_cast<std::uint32_t>(prog_->externs.size());
        prog_->externs.push_back(std::move(fn));
        emit_kids(e.args, n);
        return push(n);
      }
      case dsl::expr_kind::index:
        n.op = pop::index;
        n.a = emit(e.args[0]);
        n.b = emit(e.args[1]);
        return push(n);
      case dsl::expr_kind::unary:
        n.op = e.op == dsl::op_code::logical_not ? pop::lnot : pop::neg;
        n.a = emit(e.args[0]);
        return push(n);
      case dsl::expr_kind::binary: {
        switch (e.op) {
          case dsl::op_code::logical_or: n.op = pop::lor; break;
          case dsl::op_code::logical_and: n.op = pop::land; break;
          case dsl::op_code::eq: n.op = pop::eq; break;
          case dsl::op_code::ne: n.op = pop::ne; break;
          case dsl::op_code::lt: n.op = pop::lt; break;
          case dsl::op_code::le: n.op = pop::le; break;
          case dsl::op_code::gt: n.op = pop::gt; break;
          case dsl::op_code::ge: n.op = pop::ge; break;
          case dsl::op_code::in: n.op = pop::in; break;
          case dsl::op_code::add: n.op = pop::add; break;
          case dsl::op_code::sub: n.op = pop::sub; break;
          case dsl::op_code::mul: n.op = pop::mul; break;
          case dsl::op_code::div: n.op = pop::div; break;
          case dsl::op_code::mod: n.op = pop::mod; break;
          default: n.op = pop::lit; return push(n);
        }
        n.a = emit(e.args[0]);
        n.b = emit(e.args[1]);
        return push(n);
      }
      case dsl::expr_kind::wildcard:
      case dsl::expr_kind::ellipsis: return push(n);  // fault literal (rejected by check)
    }
    return push(n);
  }

  // ---- prefilter ----------------------------------------------------------------------------

  static bool is_anchor_call(const dsl::expr& e, const char* fn, const std::string& anchor) {
    return e.kind == dsl::expr_kind::call && e.text == fn && e.args.size() == 1 &&
           e.args[0].kind == dsl::expr_kind::value && e.args[0].text == anchor;
  }
  static void conjuncts(const dsl::expr& e, std::vector<const dsl::expr*>& out) {
    if (e.kind == dsl::expr_kind::binary && e.op == dsl::op_code::logical_and) {
      conjuncts(e.args[0], out);
      conjuncts(e.args[1], out);
    } else {
      out.push_back(&e);
    }
  }
  static bool mentions_only(const dsl::expr& e, const std::string& v) {
    if (e.kind == dsl::expr_kind::value) return e.text == v;
    if (e.kind == dsl::expr_kind::param) return false;
    if (e.kind == dsl::expr_kind::call && !dsl::find_builtin(e.text)) return false;
    for (const auto& a : e.args)
      if (!mentions_only(a, v)) return false;
    return true;
  }
  static bool reads_state(const dsl::expr& e) {
    if (e.kind == dsl::expr_kind::call) {
      const auto* b = dsl::find_builtin(e.text);
      if (!b || b->use == dsl::builtin_use::state) return true;
    }
    for (const auto& a : e.args)
      if (reads_state(a)) return true;
    return false;
  }
  static bool mentions(const dsl::expr& e, const std::string& v) {
    if (e.kind == dsl::expr_kind::value) return e.text == v;
    for (const auto& a : e.args)
      if (mentions(a, v)) return true;
    return false;
  }

  void build_prefilter(const dsl::operator_decl& op, compiled_operator& c) {
    auto& p = c.pre;
    std::string const anchor = c.values.empty() ? std::string() : c.values[c.anchor];
    // Pattern: the producer of the anchor, and the pattern nodes reading it.
    std::uint16_t readers = 0;
    for (const auto& pn : c.pattern) {
      for (const auto r : pn.results)
        if (r == c.anchor) {
          p.need_producer = true;
          if (pn.how == pattern_node::op_kind::names) {
            p.any_producer = false;
            for (const auto s : pn.symbols) p.producer_mask[(s & 255) >> 6] |= std::uint64_t{1} << (s & 63);
          }
        }
      std::vector<std::uint32_t> s;
      for (const auto& a : pn.args) arg_slots(a, s);
      if (std::find(s.begin(), s.end(), c.anchor) != s.end()) ++readers;
    }
    p.min_uses = readers;
    if (op.pattern)
      for (const auto& cond : op.pattern->conditions) {
        std::vector<const dsl::expr*> cs;
        conjuncts(cond, cs);
        for (const auto* x : cs) {
          if (x->kind != dsl::expr_kind::binary || x->args[1].kind != dsl::expr_kind::int_literal) continue;
          const bool lhs =
              is_anchor_call(x->args[0], "uses", anchor) || is_anchor_call(x->args[0], "consumers", anchor);
          if (!lhs) continue;
          std::int64_t k = x->args[1].int_value;
          if (x->op == dsl::op_code::gt) ++k;
          if (x->op != dsl::op_code::ge && x->op != dsl::op_code::gt && x->op != dsl::op_code::eq) continue;
          if (k > 0)
            p.min_uses =
                std::max<std::uint16_t>(p.min_uses, static_cast<std::uint16_t>(std::min<std::int64_t>(k, 65535)));
        }
      }
    // Input: conjuncts over the anchor alone.
    if (!op.require_input) return;
    for (const auto& cond : op.require_input->conditions) {
      std::vector<const dsl::expr*> cs;
      conjuncts(cond, cs);
      for (const auto* x : cs) {
        if (!mentions_only(*x, anchor) || !mentions(*x, anchor) || !reads_state(*x)) continue;
        p.need_state = true;
        if (is_anchor_call(*x, "aliased", anchor)) p.need_aliased = true;
        if (is_anchor_call(*x, "is_floating", anchor))
          p.dtype_mask &= (1u << static_cast<int>(state::dtype::f16)) | (1u << static_cast<int>(state::dtype::bf16)) |
                          (1u << static_cast<int>(state::dtype::f32)) | (1u << static_cast<int>(state::dtype::f64));
        if (x->kind != dsl::expr_kind::binary) continue;
        const auto& l = x->args[0];
        const auto& r = x->args[1];
        if (is_anchor_call(l, "rank", anchor)) {
          std::uint64_t m = 0;
          if (x->op == dsl::op_code::eq && r.kind == dsl::expr_kind::int_literal && r.int_value >= 0 &&
              r.int_value < 63)
            m = std::uint64_t{1} << r.int_value;
          else if (x->op == dsl::op_code::in && (r.kind == dsl::expr_kind::set || r.kind == dsl::expr_kind::list)) {
            for (const auto& v : r.args)
              if (v.kind == dsl::expr_kind::int_literal && v.int_value >= 0 && v.int_value < 63)
                m |= std::uint64_t{1} << v.int_value;
              else m = ~std::uint64_t{0};
          } else {
            continue;
          }
          p.rank_mask &= m;
        }
        if (is_anchor_call(l, "dtype", anchor)) {
          std::uint32_t m = 0;
          auto add = [&](const dsl::expr& v) {
            auto const d = v.kind == dsl::expr_kind::name ? state::parse_dtype(v.text) : std::nullopt;
            if (d) m |= 1u << static_cast<int>(*d);
            else m = ~0u;
          };
          if (x->op == dsl::op_code::eq) add(r);
          else if (x->op == dsl::op_code::in && (r.kind == dsl::expr_kind::set || r.kind == dsl::expr_kind::list))
            for (const auto& v : r.args) add(v);
          else continue;
          p.dtype_mask &= m;
        }
      }
    }
  }
};

}  // namespace detail

/// Compiles a checked module (`dsl::parse` reported no error). Diagnostics: E009 for an
/// extern the registry lacks; E000 for an internal failure. Never throws.
/// Complexity: linear in the size of the module.
[[nodiscard]] inline compile_result compile(const dsl::module& m, symbol_table& symbols,
                                            const extern_registry& externs) noexcept {
  compile_result r;
  try {
    detail::compiler c(symbols, externs, m.file_name);
    for (const auto& op : m.operators) r.operators.push_back(c.compile_operator(op));
    for (const auto& rq : m.requirements) {
      auto cr = c.compile_requirement(rq);
      cr.nan_rule = rq.nan_rule;
      if (!rq.nan_from.text.empty()) {  // "preserve@K": K = the operand's position among the node's input edges
        int k = 0;
        for (const auto& a : rq.args) {
          if (a.name.text == rq.nan_from.text) break;
          k += a.kind == dsl::req_arg_kind::tensor;
        }
        cr.nan_rule += "@" + std::to_string(k);
      }
      if (!rq.nan_rule.empty()) r.requirements.nan_rules.emplace(cr.op, cr.nan_rule);
      r.requirements.by_op[symbols.intern(cr.op)].push_back(std::move(cr));
    }
    r.diagnostics = std::move(c.diags);
  } catch (const std::exception& e) {
    try {
      r.diagnostics.push_back(dsl::make_error(dsl::errc::internal, {}, std::string("internal error: ") + e.what()));
    } catch (...) {
    }
  } catch (...) {
  }
  return r;
}

// ---- parameter sampling ----------------------------------------------------------------------

/// A small, fast generator (SplitMix64) for per-candidate parameter samples: seeding is O(1),
/// unlike std::mt19937_64. Satisfies UniformRandomBitGenerator.
struct splitmix64 {
  using result_type = std::uint64_t;
  std::uint64_t state = 0;
  explicit splitmix64(std::uint64_t seed = 0) noexcept : state(seed) {}
  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return ~result_type{0}; }
  result_type operator()() noexcept {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

/// Draws every parameter of `op` that is not bound by matching, uniformly from its domain,
/// into `params[i]` (which must have `op.params.size()` entries). Parameters bound by
/// matching are left as they are. Allocation-free for int/float/bool/op parameters and for
/// short words (small-string optimisation).
template <class URBG>
void sample_params(const compiled_operator& op, URBG& rng, std::vector<attr_value>& params) {
  for (std::size_t i = 0; i < op.params.size(); ++i) {
    const auto& p = op.params[i];
    if (p.bound_by_match || p.computed_bounds()) continue;  // computed: `sample_site_params`
    if (p.domain == dsl::domain_kind::set && !p.members.empty()) {
      std::uniform_int_distribution<std::size_t> d(0, p.members.size() - 1);
      params[i] = p.members[d(rng)];
    } else if (p.domain == dsl::domain_kind::range) {
      if (p.type.kind == dsl::type_kind::integer && std::holds_alternative<std::int64_t>(p.lo)) {
        std::uniform_int_distribution<std::int64_t> d(std::get<std::int64_t>(p.lo), std::get<std::int64_t>(p.hi));
        params[i] = d(rng);
      } else {
        auto num = [](const attr_value& v) {
          if (auto const* x = std::get_if<double>(&v)) return *x;
          if (auto const* x = std::get_if<std::int64_t>(&v)) return static_cast<double>(*x);
          return 0.0;
        };
        std::uniform_real_distribution<double> d(num(p.lo), num(p.hi));
        params[i] = d(rng);
      }
    }
  }
}

/// Convenience: a fresh parameter vector with the sampled parameters drawn.
template <class URBG>
[[nodiscard]] std::vector<attr_value> sample_params(const compiled_operator& op, URBG& rng) {
  std::vector<attr_value> params(op.params.size());
  sample_params(op, rng, params);
  return params;
}

}  // namespace tfg::match
