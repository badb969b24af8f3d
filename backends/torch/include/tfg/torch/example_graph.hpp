#pragma once
/// The example graphs of operator files (`example match { graph(%a: f32[2,3]): ... }`) as
/// runnable models, and random inputs that honour their declared types and attributes
/// (dsl/spec.md section 11).
#include "tfg/dsl/ast.hpp"
#include "tfg/torch/inputs.hpp"
#include "tfg/torch/instantiate.hpp"

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
[[nodiscard]] inline input_set example_inputs(const dsl::example_graph& eg, std::size_t count, std::uint64_t seed = 0) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  input_set out(count);
  for (const auto& in : eg.inputs) {
    for (std::size_t k = 0; k < count; ++k) {
      if (!in.tensor) {
        if (in.type_name.text == "int") out[k].emplace_back(static_cast<std::int64_t>(k + 2));
        else if (in.type_name.text == "float") out[k].emplace_back(0.5 + static_cast<double>(k));
        else out[k].emplace_back(k % 2 == 0);
        continue;
      }
      std::vector<std::int64_t> dims;
      for (const auto& d : in.dims) dims.push_back(d.int_value);
      const auto dtype = scalar_type_of_word(in.type_name.text).value_or(c10::kFloat);
      double lo = -1, hi = 1;
      bool channels_last = false, requires_grad = false, nan = false, inf = false;
      for (const auto& a : in.attrs) {
        const auto& key = a.key.text;
        auto number = [&] {
          if (!a.value) return 0.0;
          if (a.value->kind == dsl::expr_kind::int_literal) return static_cast<double>(a.value->int_value);
          if (a.value->kind == dsl::expr_kind::float_literal) return a.value->float_value;
          if (a.value->kind == dsl::expr_kind::unary && !a.value->args.empty())
            return -(a.value->args[0].kind == dsl::expr_kind::int_literal
                         ? static_cast<double>(a.value->args[0].int_value)
                         : a.value->args[0].float_value);
          return 0.0;
        };
        if (key == "min") lo = number();
        else if (key == "max") hi = number();
        else if (key == "channels_last") channels_last = true;
        else if (key == "requires_grad") requires_grad = true;
        else if (key == "nan") nan = true;
        else if (key == "inf") inf = true;
      }
      at::Tensor t;
      if (at::isFloatingType(dtype)) {
        t = at::rand(dims, gen, at::TensorOptions().dtype(at::kDouble)).mul(hi - lo).add(lo).to(dtype);
        if (nan && t.numel() > 0) t.view(-1)[0] = NAN;
        if (inf && t.numel() > 0) t.view(-1)[t.numel() - 1] = INFINITY;
      } else if (dtype == c10::kBool) {
        t = at::randint(0, 2, dims, gen, at::TensorOptions().dtype(dtype));
      } else {
        t = at::randint(static_cast<std::int64_t>(lo < 0 ? 0 : lo), static_cast<std::int64_t>(hi <= 1 ? 8 : hi), dims,
                        gen, at::TensorOptions().dtype(dtype));
      }
      if (channels_last && (t.dim() == 4)) t = t.contiguous(c10::MemoryFormat::ChannelsLast);
      if (requires_grad && t.is_floating_point()) t.requires_grad_(true);
      out[k].emplace_back(t);
    }
  }
  return out;
}

}  // namespace tfg::torch
