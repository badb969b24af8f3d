#pragma once
/// \file
/// Semantic checks of example blocks.
#include "tfg/dsl/detail/checker.hpp"

namespace tfg::dsl::detail {

// ---- examples ----------------------------------------------------------------------------------

inline void checker::check_example(example_block& ex) {
  example_values_.clear();
  auto define = [&](const symbol& s) {
    if (!example_values_.insert(s.text).second)
      error(errc::bad_example_graph, s.loc, "value '%" + s.text + "' is defined twice in the example graph");
  };
  for (auto& in : ex.graph.inputs) {
    define(in.name);
    const auto lit = find_literal(in.type_name.text);
    const bool is_dtype = lit && *lit == type_kind::dtype;
    const bool is_scalar = in.type_name.text == "int" || in.type_name.text == "float" || in.type_name.text == "bool";
    if (in.tensor && !is_dtype) {
      error(errc::bad_example_input, in.type_name.loc, "unknown dtype '" + in.type_name.text + "'",
            {{"dtypes: f32 f64 f16 bf16 i64 i32 i16 i8 u8 bool", std::nullopt}});
    } else if (!in.tensor && !is_scalar) {
      error(errc::bad_example_input, in.type_name.loc,
            is_dtype ? "tensor input '%" + in.name.text + "' needs a shape, e.g. " + in.type_name.text + "[2,3]"
                     : "unknown input type '" + in.type_name.text + "'",
            {{"inputs are tensors 'f32[2,3]' or scalars 'int', 'float', 'bool'", std::nullopt}});
    }
    for (auto& d : in.dims)
      if (d.kind != expr_kind::int_literal || d.int_value < 0)
        error(errc::bad_example_input, d.loc, "dimension sizes must be non-negative int literals");
    for (auto& a : in.attrs) {
      const auto* info = find_input_attr(a.key.text);
      if (!info) {
        std::string known = "attributes:";
        for (const auto& x : input_attrs) known += std::string(" ") + std::string(x.name);
        error(errc::bad_example_input, a.key.loc, "unknown input attribute '" + a.key.text + "'",
              {{known, std::nullopt}});
        continue;
      }
      if (!in.tensor) error(errc::bad_example_input, a.key.loc, "attributes apply to tensor inputs only");
      if (info->takes_value && !a.value)
        error(errc::bad_example_input, a.key.loc,
              "attribute '" + a.key.text + "' needs a value, e.g. " + a.key.text + "=0.5");
      if (!info->takes_value && a.value)
        error(errc::bad_example_input, a.value->loc, "attribute '" + a.key.text + "' takes no value");
      if (info->takes_value && a.value && a.value->kind != expr_kind::int_literal &&
          a.value->kind != expr_kind::float_literal)
        error(errc::bad_example_input, a.value->loc, "attribute '" + a.key.text + "' needs a number");
    }
  }
  for (auto& n : ex.graph.nodes) {
    switch (n.op.kind) {
      case op_spec_kind::any:
        error(errc::wildcard_outside_pattern, n.op.loc, "'*' (any op) is only valid in a pattern");
        break;
      case op_spec_kind::param: error(errc::bad_example_graph, n.op.loc, "example graphs cannot use parameters"); break;
      case op_spec_kind::names:
        if (n.op.names.size() > 1)
          error(errc::wildcard_outside_pattern, n.op.loc, "op alternatives 'a|b' are only valid in a pattern");
        for (const auto& nm : n.op.names)
          if (check_op_name(nm.text, nm.loc, true) && nm.text.rfind("tfg::", 0) == 0)
            error(errc::bad_helper, nm.loc, "shape-adaptation helper '" + nm.text + "' is only valid in 'replace'");
        break;
    }
    for (auto& a : n.args) check_expr(a, expr_site::example_arg);
    for (const auto& r : n.results) define(r);
  }
  for (const auto& o : ex.graph.outputs)
    if (!example_values_.count(o.text))
      error(errc::bad_example_graph, o.loc, "returned value '%" + o.text + "' is not defined in the example graph");
  if (ex.anchor && !example_values_.count(ex.anchor->text))
    error(errc::bad_example_graph, ex.anchor->loc,
          "example anchor '%" + ex.anchor->text + "' is not defined in the example graph");
  if (ex.has_expect && !ex.match)
    error(errc::bad_expect, ex.expect_loc, "'expect' is only allowed in 'example match'",
          {{"a no_match example applies nothing, so there is nothing to count", std::nullopt}});
  else check_conditions(ex.expect, expr_site::expect);
}

}  // namespace tfg::dsl::detail
