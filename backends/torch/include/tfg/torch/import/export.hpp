#pragma once
/// Export back to TorchScript: a `model` (the seed or a mutant) becomes a TorchScript graph and
/// a `.pt` file that `torch.jit.load` and `torch::jit::load` read.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/model.hpp"

#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <cctype>
#include <cstdint>
#include <memory>
#include <string_view>
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

  /// Gives every emitted node a source range in a synthetic file (`position_file`) whose line N
  /// names the node at topological position N: the TorchScript interpreter's traceback of a
  /// failing node then says which node of the model raised, whatever passes ran before
  /// (failed_position_of reads it back).
  void tag_positions() {
    namespace jit = ::torch::jit;
    const auto& tg = m_.graph;
    std::string text;
    std::vector<std::size_t> starts;
    std::size_t p = 0;
    for (auto n : tg.topological_order()) {
      starts.push_back(text.size());
      text += std::to_string(p++) + ": " + tg.data(n).name() + "\n";
    }
    starts.push_back(text.size());
    source_ = std::make_shared<jit::Source>(text, std::string(position_file), 0);
    line_starts_ = std::move(starts);
  }

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
    std::size_t p = 0;
    for (auto n : tg.topological_order()) emit(n, p++);
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

  void emit(graph::node_id n, std::size_t position) {
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
    if (source_ && position + 1 < line_starts_.size())
      node->setSourceRange(::torch::jit::SourceRange(source_, line_starts_[position], line_starts_[position + 1] - 1));
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
  std::shared_ptr<::torch::jit::Source> source_;  ///< tag_positions(): one line per position
  std::vector<std::size_t> line_starts_;

 public:
  static constexpr std::string_view position_file = "<tfg model>";
};

}  // namespace detail

/// Builds a TorchScript module whose `forward` computes `m`. Throws model_error naming the node
/// when a node cannot be expressed (no matching schema). `tag_positions`: each node's source
/// range names its topological position (for the configurations' error messages; a saved file
/// is better off without).
[[nodiscard]] TFG_TORCH_DECL ::torch::jit::Module to_module(const model& m,
                                                            const std::string& class_name = "__torch__.tfg.Mutant",
                                                            bool tag_positions = false);

/// The topological position of the node a TorchScript error names, for a module built with
/// `to_module(m, ..., true)` (its interpreter traceback's `File "<tfg model>", line N`; the
/// innermost frame when there are several), and the message without the traceback. -1 when the
/// error names none.
struct failed_node {
  std::int64_t position = -1;
  std::string message;
};
[[nodiscard]] TFG_TORCH_DECL failed_node failed_position_of(const std::string& what);

/// Saves `m` as a TorchScript `.pt` file.
TFG_TORCH_DECL void save(const model& m, const std::string& path);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/export.ipp"
#endif
