#pragma once
/// Model importers: a file in, a Tensor Flow Graph out.
///
/// `importer` is the interface; `torchscript_importer` implements it for TorchScript `.pt`
/// files (load, freeze without numeric folding, inline, translate). TorchScript is deprecated
/// upstream in favour of `torch.export`; an ExportedProgram importer implements the same
/// interface and feeds the same `model`.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/pickle_compat.hpp"
#include "tfg/torch/import/specialise.hpp"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <ATen/EmptyTensor.h>
#include <torch/script.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace tfg::torch {

class importer {
 public:
  virtual ~importer() = default;
  /// Loads `path`. Throws model_error naming the file (and the node, when one is at fault).
  [[nodiscard]] virtual model load(const std::string& path) const = 0;
  [[nodiscard]] virtual std::string_view format() const = 0;
};

namespace detail {

/// Translates an inlined, frozen TorchScript graph into a `model`.
class graph_translator {
 public:
  explicit graph_translator(std::string source) { m_.source = std::move(source); }

  model run(const ::torch::jit::Graph& g) {
    namespace jit = ::torch::jit;
    auto inputs = g.inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const jit::Value* v = inputs[i];
      if (i == 0 && v->type()->kind() == c10::TypeKind::ClassType) {
        if (v->hasUses()) fail(nullptr, "forward still reads module attributes after freezing (`self` is used)");
        continue;
      }
      edge_of_[v] = m_.graph.add_input(edge_data{v->type(), kind_of(v->type()), v->debugName()});
      m_.input_names.push_back(v->debugName());
    }
    for (const jit::Node* n : g.nodes()) translate(n);
    if (g.outputs().size() != 1) fail(nullptr, "forward must return exactly one value");
    m_.output = output_of(g.outputs()[0]);
    add_outputs(m_.output);
    return std::move(m_);
  }

 private:
  using value_ptr = const ::torch::jit::Value*;

  [[noreturn]] void fail(const ::torch::jit::Node* n, const std::string& what) const {
    throw model_error(m_.source + ": " + (n ? describe_node(n) + ": " : std::string()) + what);
  }

  void translate(const ::torch::jit::Node* n) {
    namespace jit = ::torch::jit;
    const auto kind = n->kind();
    if (!n->blocks().empty())
      fail(n, TFG_TORCH_AT_LEAST(2, 6)
                  ? "control flow, and no profiling inputs to specialise it on: give an inputs file (--inputs, or "
                    "MODEL.inputs.pt beside the model), export the model with torch.export (a .pt2 takes the "
                    "branches of its example inputs) or trace it with torch.jit.trace"
                  : "control flow, and no profiling inputs to specialise it on: give an inputs file (--inputs, or "
                    "MODEL.inputs.pt beside the model) or trace the model with torch.jit.trace");
    if (kind == c10::prim::Constant) {
      auto v = n->output();
      auto iv = jit::toIValue(v);
      if (!iv) fail(n, "constant without a value");
      if (v->type()->kind() == c10::TypeKind::TensorType) {
        node_data d;
        d.kind = kind;
        d.constant = *iv;
        d.results.push_back({result_slot::form::value, 0, 1, v->type()});
        d.where = where_of(n);
        d.scope = scope_of(n);
        auto id =
            m_.graph.add_node(std::move(d), {}, {edge_data{v->type(), state::value_kind::tensor, v->debugName()}});
        edge_of_[v] = m_.graph.outputs(id)[0];
      } else {
        constant_of_[v] = *iv;
      }
      return;
    }
    if (kind == c10::prim::ListConstruct || kind == c10::prim::TupleConstruct) {
      aggregate_of_[n->output()] = n;
      return;
    }
    if (kind == c10::prim::ListUnpack || kind == c10::prim::TupleUnpack) {
      value_ptr in = n->input(0);
      if (absorbed_.count(n)) return;
      if (auto it = aggregate_of_.find(in); it != aggregate_of_.end()) {
        // Unpacking a list/tuple built in this graph: the outputs are its elements.
        for (std::size_t i = 0; i < n->outputs().size(); ++i) alias(n->output(i), it->second->input(i));
        return;
      }
    }
    translate_op(n);
  }

  void alias(value_ptr to, value_ptr from) {
    if (auto e = edge_of_.find(from); e != edge_of_.end()) edge_of_[to] = e->second;
    else if (auto c = constant_of_.find(from); c != constant_of_.end()) constant_of_[to] = c->second;
    else if (auto a = aggregate_of_.find(from); a != aggregate_of_.end()) aggregate_of_[to] = a->second;
  }

  void translate_op(const ::torch::jit::Node* n) {
    namespace jit = ::torch::jit;
    node_data d;
    d.kind = n->kind();
    d.where = where_of(n);
    d.scope = scope_of(n);
    std::vector<graph::edge_id> inputs;
    auto edge_index = [&](graph::edge_id e) {
      inputs.push_back(e);
      return static_cast<std::uint32_t>(inputs.size() - 1);
    };
    for (value_ptr v : n->inputs()) {
      argument a;
      if (auto e = edge_of_.find(v); e != edge_of_.end()) {
        a.how = argument::form::edge;
        a.input = edge_index(e->second);
      } else if (auto c = constant_of_.find(v); c != constant_of_.end()) {
        a.how = argument::form::constant;
        a.constant = c->second;
      } else if (auto ag = aggregate_of_.find(v); ag != aggregate_of_.end()) {
        a.how = ag->second->kind() == c10::prim::ListConstruct ? argument::form::list : argument::form::tuple;
        a.type = v->type();
        for (value_ptr w : ag->second->inputs()) {
          list_item item;
          if (auto e2 = edge_of_.find(w); e2 != edge_of_.end()) {
            item.is_edge = true;
            item.input = edge_index(e2->second);
          } else if (auto c2 = constant_of_.find(w); c2 != constant_of_.end()) {
            item.constant = c2->second;
          } else {
            fail(n, "argument %" + v->debugName() + " is a nested list or tuple, which is not supported");
          }
          a.items.push_back(std::move(item));
        }
      } else {
        fail(n, "reads %" + v->debugName() + ", which no supported node produces");
      }
      d.args.push_back(std::move(a));
    }
    std::vector<edge_data> outs;
    std::vector<value_ptr> out_values;
    for (value_ptr o : n->outputs()) {
      const auto& uses = o->uses();
      const jit::Node* user = uses.size() == 1 ? uses[0].user : nullptr;
      const bool unpack = user && (user->kind() == c10::prim::ListUnpack || user->kind() == c10::prim::TupleUnpack);
      if (unpack) {
        absorbed_.insert(user);
        result_slot r{user->kind() == c10::prim::ListUnpack ? result_slot::form::list : result_slot::form::tuple,
                      static_cast<std::uint32_t>(outs.size()), static_cast<std::uint32_t>(user->outputs().size()),
                      o->type()};
        d.results.push_back(r);
        for (value_ptr u : user->outputs()) {
          outs.push_back(edge_data{u->type(), kind_of(u->type()), u->debugName()});
          out_values.push_back(u);
        }
      } else {
        d.results.push_back({result_slot::form::value, static_cast<std::uint32_t>(outs.size()), 1, o->type()});
        outs.push_back(edge_data{o->type(), kind_of(o->type()), o->debugName()});
        out_values.push_back(o);
      }
    }
    if (d.kind != c10::prim::ListUnpack && d.kind != c10::prim::TupleUnpack) {
      try {
        d.op = n->getOperation();
      } catch (const std::exception& e) {
        std::string what = first_line(e.what());
        if (d.kind == c10::prim::DictConstruct)
          fail(n,
               "the model builds a dict (as a return value: traced with strict=False?); dict values are not "
               "supported, return a tuple of tensors instead (" +
                   what + ")");
        fail(n, "unsupported operator (no kernel): " + what);
      }
    }
    auto id = m_.graph.add_node(std::move(d), inputs, std::move(outs));
    auto produced = m_.graph.outputs(id);
    for (std::size_t i = 0; i < out_values.size(); ++i) edge_of_[out_values[i]] = produced[i];
  }

  output_tree output_of(value_ptr v) {
    output_tree t;
    t.type = v->type();
    if (auto e = edge_of_.find(v); e != edge_of_.end()) {
      t.how = output_tree::form::edge;
      t.edge = e->second;
    } else if (auto c = constant_of_.find(v); c != constant_of_.end()) {
      t.how = output_tree::form::constant;
      t.constant = c->second;
    } else if (auto a = aggregate_of_.find(v); a != aggregate_of_.end()) {
      t.how = a->second->kind() == c10::prim::ListConstruct ? output_tree::form::list : output_tree::form::tuple;
      for (value_ptr w : a->second->inputs()) t.items.push_back(output_of(w));
    } else {
      fail(nullptr, "the returned value %" + v->debugName() + " is not produced by a supported node");
    }
    return t;
  }

  void add_outputs(const output_tree& t) {
    if (t.how == output_tree::form::edge) m_.graph.add_output(t.edge);
    for (const auto& i : t.items) add_outputs(i);
  }

  model m_;
  std::unordered_map<value_ptr, graph::edge_id> edge_of_;
  std::unordered_map<value_ptr, c10::IValue> constant_of_;
  std::unordered_map<value_ptr, const ::torch::jit::Node*> aggregate_of_;
  std::unordered_set<const ::torch::jit::Node*> absorbed_;
};

}  // namespace detail

/// Freezes `module` without numeric folding (conv-bn folding would change values and hide the
/// seed's own operators) and returns the inlined forward graph.
///
/// A module whose inlined forward reads no attribute (what export writes: every tensor a
/// constant) is not frozen: freezing runs constant propagation, which would fold a mutation of a
/// constant (an identity view of a weight, a value injected into a bias) back into a constant,
/// so the mutant would execute as its seed.
/// The method a module is run by: `forward`, or, for a scripted module without one (nn.LSTM and
/// nn.GRU: TorchScript compiles one method per overload, forward__0 for a tensor, forward__1 for
/// a PackedSequence), the one overload whose first argument is a Tensor. Throws model_error
/// naming `source` when there is none.
[[nodiscard]] TFG_TORCH_DECL std::string forward_method(const ::torch::jit::Module& module, const std::string& source);

/// `self_object`: receives the module object the graph's `self` is (the frozen one).
/// `method`: the method to take (forward_method()).
[[nodiscard]] TFG_TORCH_DECL std::shared_ptr<::torch::jit::Graph> frozen_forward_graph(
    ::torch::jit::Module module, c10::IValue* self_object = nullptr, const std::string& method = "forward");

/// torch::jit::load with the error a user can act on: throws model_error naming the file, also
/// for a tensor record shorter than its pickle declares.
[[nodiscard]] TFG_TORCH_DECL ::torch::jit::Module load_module(const std::string& path);

/// The bytes a strided tensor reads from its storage, and whether the storage holds them.
[[nodiscard]] TFG_TORCH_DECL bool storage_holds(const at::Tensor& t, std::size_t& needed, std::size_t& held);

/// Throws model_error naming the file and the constant when a tensor constant of `graph` (the
/// forward graph the importer translates: after freezing, every parameter the forward reads is
/// one) reads beyond its storage: sizes, strides or offset inconsistent with the storage the
/// pickle declares. (A record shorter than that declaration is check_storage_records'.)
TFG_TORCH_DECL void validate_storages(const ::torch::jit::Graph& graph, const std::string& path);

class torchscript_importer final : public importer {
 public:
  [[nodiscard]] model load(const std::string& path) const override { return from_module(load_module(path), path); }
  [[nodiscard]] std::string_view format() const override { return "torchscript"; }

  /// `profile`: gives the inputs a forward with control flow is specialised on
  /// (specialise.hpp), called only for such a forward; without it such a forward is refused.
  [[nodiscard]] static model from_module(const ::torch::jit::Module& module, const std::string& source,
                                         const std::function<input_set()>& profile = {}) {
    const auto method = forward_method(module, source);
    std::shared_ptr<::torch::jit::Graph> graph;
    c10::IValue self_object;
    try {
      graph = frozen_forward_graph(module, &self_object, method);
    } catch (const model_error&) {
      throw;
    } catch (const std::exception& e) {
      std::string what = first_line(e.what());
      throw model_error(source + ": cannot freeze the module: " + what);
    }
    validate_storages(*graph, source);  // constants of the code (constants.pkl) included
    // forward's argument defaults (skipping self), for inputs that leave trailing ones out.
    std::vector<std::optional<c10::IValue>> defaults;
    try {
      for (const auto& arg : module.get_method(method).function().getSchema().arguments())
        defaults.push_back(arg.default_value());
      if (!defaults.empty()) defaults.erase(defaults.begin());
    } catch (const std::exception&) {
      defaults.clear();
    }
    if (profile && has_control_flow(*graph)) {
      auto in = profile();
      for (auto& args : in)
        while (args.size() + 1 < graph->inputs().size() && args.size() < defaults.size() && defaults[args.size()])
          args.push_back(*defaults[args.size()]);
      specialise_control_flow(graph, in, source, self_object);
    }
    auto m = from_graph(*graph, source);
    m.input_defaults = std::move(defaults);
    // Freezing drops the input types a trace recorded (shape, dtype); keep them, so inputs can
    // be synthesised for a model that comes without an inputs file.
    try {
      auto traced = module.get_method(method).graph()->inputs();
      const auto& in = m.graph.graph_inputs();
      if (traced.size() == in.size() + 1)
        for (std::size_t i = 0; i < in.size(); ++i)
          if (traced[i + 1]->type()->kind() == c10::TypeKind::TensorType)
            m.graph.data(in[i]).type = traced[i + 1]->type();
    } catch (const std::exception&) {
      // no forward method graph to read types from (not a scripted/traced module): keep Tensor
    }
    return m;
  }

  [[nodiscard]] static model from_graph(const ::torch::jit::Graph& graph, const std::string& source) {
    return detail::graph_translator(source).run(graph);
  }
};

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/import.ipp"
#endif
