#pragma once
/// The example graphs of operator files (`example match { graph(%a: f32[2,3]): ... }`) as
/// runnable models, and random inputs that honour their declared types and attributes
/// (dsl/spec.md section 11).
#include "tfg/torch/linkage.hpp"
#include "tfg/dsl/ast.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/mutate/instantiate.hpp"

#include <random>
#include <string>
#include <unordered_map>

namespace tfg::torch {

namespace detail {

class example_builder {
 public:
  explicit example_builder(std::string source) { m_.source = std::move(source); }

  model build(const dsl::example_graph& eg) {
    for (const auto& in : eg.inputs) {
      edge_data d;
      if (in.tensor) {
        d.type = c10::TensorType::get();
        d.kind = state::value_kind::tensor;
      } else if (in.type_name.text == "int") {
        d.type = c10::IntType::get(), d.kind = state::value_kind::integer;
      } else if (in.type_name.text == "float") {
        d.type = c10::FloatType::get(), d.kind = state::value_kind::floating;
      } else {
        d.type = c10::BoolType::get(), d.kind = state::value_kind::boolean;
      }
      d.name = in.name.text;
      values_[in.name.text] = m_.graph.add_input(std::move(d));
      m_.input_names.push_back(in.name.text);
    }
    for (const auto& n : eg.nodes) add(n);
    output_tree t;
    t.how = output_tree::form::tuple;
    for (const auto& o : eg.outputs) {
      output_tree item;
      item.how = output_tree::form::edge;
      item.edge = lookup(o.text, o.loc);
      item.type = m_.graph.data(item.edge).type;
      t.items.push_back(item);
      m_.graph.add_output(item.edge);
    }
    if (t.items.size() == 1) t = t.items[0];
    m_.output = std::move(t);
    return std::move(m_);
  }

 private:
  graph::edge_id lookup(const std::string& name, const dsl::source_loc& loc) const {
    auto it = values_.find(name);
    if (it == values_.end())
      throw model_error(m_.source + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) + ": %" + name +
                        " is not defined");
    return it->second;
  }

  proto_arg arg_of(const dsl::expr& e, std::vector<graph::edge_id>& inputs) const {
    switch (e.kind) {
      case dsl::expr_kind::value: {
        if (auto l = lists_.find(e.text); l != lists_.end()) {
          std::vector<proto_arg> items;
          for (const auto& item : l->second) items.push_back(arg_of(item, inputs));
          return {std::move(items)};
        }
        auto edge = lookup(e.text, e.loc);
        inputs.push_back(edge);
        return {proto_arg::edge_ref{static_cast<std::uint32_t>(inputs.size() - 1), m_.graph.data(edge).kind}};
      }
      case dsl::expr_kind::int_literal: return {match::attr_value{e.int_value}};
      case dsl::expr_kind::float_literal: return {match::attr_value{e.float_value}};
      case dsl::expr_kind::string_literal: return {match::attr_value{e.text}};
      case dsl::expr_kind::unary:
        if (e.op == dsl::op_code::neg && e.args.size() == 1) {
          if (e.args[0].kind == dsl::expr_kind::int_literal) return {match::attr_value{-e.args[0].int_value}};
          if (e.args[0].kind == dsl::expr_kind::float_literal) return {match::attr_value{-e.args[0].float_value}};
        }
        break;
      case dsl::expr_kind::name:
        if (e.text == "true" || e.text == "false") return {match::attr_value{e.text == "true"}};
        if (e.text == "none") return {match::attr_value{std::monostate{}}};
        return {match::attr_value{e.text}};  // dtype / device / layout / memory-format word
      case dsl::expr_kind::list: {
        std::vector<proto_arg> items;
        bool all_int = true;
        for (const auto& a : e.args) {
          items.push_back(arg_of(a, inputs));
          all_int &= std::holds_alternative<match::attr_value>(items.back().v) &&
                     std::holds_alternative<std::int64_t>(std::get<match::attr_value>(items.back().v));
        }
        if (all_int) {  // a constant int list is one attribute, as TorchScript folds it
          std::vector<std::int64_t> ints;
          for (const auto& i : items) ints.push_back(std::get<std::int64_t>(std::get<match::attr_value>(i.v)));
          return {match::attr_value{std::move(ints)}};
        }
        return {std::move(items)};
      }
      default: break;
    }
    throw model_error(m_.source + ":" + std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col) +
                      ": unsupported argument in an example graph");
  }

  void add(const dsl::ir_node& n) {
    if (n.op.kind != dsl::op_spec_kind::names || n.op.names.size() != 1)
      throw model_error(m_.source + ": example nodes need one op name");
    if (n.op.names[0].text == "prim::ListConstruct" && n.results.size() == 1) {
      lists_[n.results[0].text] = n.args;  // folded into its consumers, as the importer does
      return;
    }
    std::vector<graph::edge_id> inputs;
    std::vector<proto_arg> args;
    for (const auto& a : n.args) args.push_back(arg_of(a, inputs));
    built_node b;
    try {
      b = build_node(n.op.names[0].text, args);
    } catch (const model_error& e) {
      throw model_error(m_.source + ":" + std::to_string(n.loc.line) + ":" + std::to_string(n.loc.col) + ": " +
                        e.what());
    }
    b.data.where = m_.source + ":" + std::to_string(n.loc.line);
    if (b.outputs.size() != n.results.size()) {
      // `%a, %b = aten::chunk(...)`: one list result unpacked into several edges.
      if (b.outputs.size() == 1 && b.data.results.size() == 1 && b.outputs[0].kind == state::value_kind::tensor_list) {
        b.data.results[0].how = result_slot::form::list;
        b.data.results[0].count = static_cast<std::uint32_t>(n.results.size());
        b.outputs.assign(n.results.size(), edge_data{c10::TensorType::get(), state::value_kind::tensor, ""});
      } else {
        throw model_error(m_.source + ":" + std::to_string(n.loc.line) + ": " + n.op.names[0].text + " has " +
                          std::to_string(b.outputs.size()) + " results, the example names " +
                          std::to_string(n.results.size()));
      }
    }
    for (std::size_t i = 0; i < n.results.size(); ++i) b.outputs[i].name = n.results[i].text;
    auto id = m_.graph.add_node(std::move(b.data), inputs, std::move(b.outputs));
    for (std::size_t i = 0; i < n.results.size(); ++i) values_[n.results[i].text] = m_.graph.outputs(id)[i];
  }

  model m_;
  std::unordered_map<std::string, graph::edge_id> values_;
  std::unordered_map<std::string, std::vector<dsl::expr>> lists_;
};

}  // namespace detail

/// Builds the model of an example graph. Throws model_error with `source:line:col`.
[[nodiscard]] inline model build_example(const dsl::example_graph& eg, const std::string& source) {
  return detail::example_builder(source).build(eg);
}

/// `count` random inputs for an example graph's declared inputs and attributes.
[[nodiscard]] TFG_TORCH_DECL input_set example_inputs(const dsl::example_graph& eg, std::size_t count,
                                                      std::uint64_t seed = 0);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/example_graph.ipp"
#endif
