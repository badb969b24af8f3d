#pragma once
/// Export back to TorchScript: a `model` (the seed or a mutant) becomes a TorchScript graph and
/// a `.pt` file that `torch.jit.load` and `torch::jit::load` read.
#include <tfg/torch/model.hpp>

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace tfg::torch {

namespace detail {

/// Exported values carry unshaped types: a mutant may change shapes the trace recorded.
[[nodiscard]] inline c10::TypePtr export_type(const c10::TypePtr& t) { return c10::unshapedType(t); }

class graph_builder {
 public:
  graph_builder(const model& m, std::shared_ptr<::torch::jit::Graph> g) : m_(m), g_(std::move(g)) {}

  /// The TorchScript value of each TFG edge (by graph::index), after build().
  [[nodiscard]] const std::unordered_map<std::size_t, ::torch::jit::Value*>& values() const { return value_of_; }

  void build() {
    namespace jit = ::torch::jit;
    const auto& tg = m_.graph;
    for (std::size_t i = 0; i < tg.graph_inputs().size(); ++i) {
      auto e = tg.graph_inputs()[i];
      auto* v = g_->addInput(debug_name(tg.data(e).name, "x" + std::to_string(i)));
      v->setType(export_type(tg.data(e).type));
      value_of_[graph::index(e)] = v;
    }
    for (auto n : tg.topological_order()) emit(n);
    g_->registerOutput(materialize(m_.output));
  }

 private:
  static std::string debug_name(const std::string& name, const std::string& fallback) {
    // TorchScript rejects some debug names (pure digits, trailing `.N`); keep only safe ones.
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return fallback;
    for (char c : name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return fallback;
    return name;
  }

  ::torch::jit::Value* constant(const c10::IValue& iv) { return g_->insertConstant(iv); }

  ::torch::jit::Value* item_value(const list_item& item, std::span<const graph::edge_id> inputs) {
    return item.is_edge ? value_of_.at(graph::index(inputs[item.input])) : constant(item.constant);
  }

  void emit(graph::node_id n) {
    namespace jit = ::torch::jit;
    const auto& tg = m_.graph;
    const auto& d = tg.data(n);
    const auto inputs = tg.inputs(n);
    const auto outputs = tg.outputs(n);
    if (d.kind == c10::prim::Constant) {
      auto* v = constant(d.constant);
      v->setType(export_type(tg.data(outputs[0]).type));
      value_of_[graph::index(outputs[0])] = v;
      return;
    }
    std::vector<jit::Value*> args;
    for (const auto& a : d.args) {
      switch (a.how) {
        case argument::form::edge: args.push_back(value_of_.at(graph::index(inputs[a.input]))); break;
        case argument::form::constant: args.push_back(constant(a.constant)); break;
        case argument::form::list: {
          std::vector<jit::Value*> items;
          for (const auto& i : a.items) items.push_back(item_value(i, inputs));
          auto elem = export_type(a.type->castRaw<c10::ListType>()->getElementType());
          args.push_back(g_->insertNode(g_->createList(elem, items))->output());
          break;
        }
        case argument::form::tuple: {
          std::vector<jit::Value*> items;
          for (const auto& i : a.items) items.push_back(item_value(i, inputs));
          args.push_back(g_->insertNode(g_->createTuple(items))->output());
          break;
        }
      }
    }
    auto* node = g_->insertNode(g_->create(d.kind, args, d.results.size()));
    for (std::size_t i = 0; i < d.results.size(); ++i) {
      const auto& r = d.results[i];
      auto* out = node->output(i);
      out->setType(export_type(r.type));
      if (r.how == result_slot::form::value) {
        out->setDebugName(debug_name(tg.data(outputs[r.first_output]).name, "v" + std::to_string(next_name_++)));
        value_of_[graph::index(outputs[r.first_output])] = out;
        continue;
      }
      auto* unpack = r.how == result_slot::form::list ? g_->insertNode(g_->createListUnpack(out, r.count))
                                                       : g_->insertNode(g_->createTupleUnpack(out));
      for (std::uint32_t j = 0; j < r.count; ++j) {
        auto e = outputs[r.first_output + j];
        unpack->output(j)->setType(export_type(tg.data(e).type));
        value_of_[graph::index(e)] = unpack->output(j);
      }
    }
    if (!node->maybeSchema() && d.op)
      throw model_error(m_.source + ": export: " + describe(tg, n) + " matches no operator schema");
  }

  ::torch::jit::Value* materialize(const output_tree& t) {
    switch (t.how) {
      case output_tree::form::edge: return value_of_.at(graph::index(t.edge));
      case output_tree::form::constant: return constant(t.constant);
      case output_tree::form::list: {
        std::vector<::torch::jit::Value*> items;
        for (const auto& i : t.items) items.push_back(materialize(i));
        return g_->insertNode(g_->createList(export_type(t.type->castRaw<c10::ListType>()->getElementType()), items))
            ->output();
      }
      case output_tree::form::tuple: {
        std::vector<::torch::jit::Value*> items;
        for (const auto& i : t.items) items.push_back(materialize(i));
        return g_->insertNode(g_->createTuple(items))->output();
      }
    }
    return nullptr;
  }

  const model& m_;
  std::shared_ptr<::torch::jit::Graph> g_;
  std::unordered_map<std::size_t, ::torch::jit::Value*> value_of_;
  std::size_t next_name_ = 0;
};

}  // namespace detail

/// Builds a TorchScript module whose `forward` computes `m`. Throws model_error naming the node
/// when a node cannot be expressed (no matching schema).
[[nodiscard]] inline ::torch::jit::Module to_module(const model& m, const std::string& class_name = "__torch__.tfg.Mutant") {
  namespace jit = ::torch::jit;
  auto cu = std::make_shared<jit::CompilationUnit>();
  auto cls = c10::ClassType::create(c10::QualifiedName(class_name), cu, /*is_module=*/true);
  cu->register_type(cls);  // so that clone() (used by freeze) finds the class in its unit
  jit::Module module(cu, cls);
  auto graph = std::make_shared<jit::Graph>();
  graph->addInput("self")->setType(cls);
  detail::graph_builder(m, graph).build();
  graph->lint();
  auto* fn = cu->create_function(c10::QualifiedName(*cls->name(), "forward"), graph);
  cls->addMethod(fn);
  return module;
}

/// Saves `m` as a TorchScript `.pt` file.
inline void save(const model& m, const std::string& path) {
  auto module = to_module(m);
  try {
    module.save(path);
  } catch (const std::exception& e) {
    std::string what = first_line(e.what());
    throw model_error(path + ": cannot save the exported module: " + what);
  }
}

}  // namespace tfg::torch
