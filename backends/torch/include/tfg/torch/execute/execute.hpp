#pragma once
/// Op-by-op execution of a `model`: every node is called on its own, in topological order,
/// and every edge's value stays observable. Device-neutral: tensors live on `options::device`.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/import/model.hpp"

#include <ATen/core/ivalue.h>

#include <span>
#include <string>
#include <vector>

namespace tfg::torch {

struct execute_options {
  c10::Device device = c10::Device(c10::kCPU);
  /// Release each intermediate after its last consumer ran (a plain run); keep every value
  /// when observing or profiling.
  bool free_dead_values = false;
};

/// "1x3x48x48 Float, 1x16 Long": the shapes and dtypes of one input's arguments, for messages.
[[nodiscard]] TFG_TORCH_DECL std::string describe_arguments(const std::vector<c10::IValue>& args);

/// The error of running profiling input `k` (0-based) of `inputs`, with which input it was and,
/// when its shapes are not the first input's, why a traced seed can refuse them.
[[nodiscard]] TFG_TORCH_DECL model_error input_error(const std::exception& e,
                                                     const std::vector<std::vector<c10::IValue>>& inputs,
                                                     std::size_t k);

/// Runs one model op by op. Holds per-edge values of the last run. Not thread-safe.
class executor {
 public:
  explicit executor(const model& m, execute_options opt = {}) : m_(m), opt_(opt) {
    const auto& g = m_.graph;
    order_ = g.topological_order();
    values_.resize(g.edge_capacity());
    if (opt_.free_dead_values) compute_release_points();
  }

  /// Runs `inputs` (the forward's positional arguments) and returns what forward returns.
  /// `observe(node_id, std::span<const graph::edge_id> edges)` is called once with `no_node`
  /// and the graph inputs before the first node, then after each node with its outputs.
  /// Throws model_error naming the node when an operator fails.
  template <class Observer>
  c10::IValue run(const std::vector<c10::IValue>& inputs, Observer&& observe) {
    const auto& g = m_.graph;
    const auto& in = g.graph_inputs();
    if (inputs.size() != in.size())
      throw model_error(m_.source + ": forward takes " + std::to_string(in.size()) + " inputs, got " +
                        std::to_string(inputs.size()));
    for (std::size_t i = 0; i < in.size(); ++i) check_input(i, inputs[i]);
    for (auto& v : values_) v = c10::IValue();
    for (std::size_t i = 0; i < in.size(); ++i) values_[graph::index(in[i])] = to_device(inputs[i]);
    observe(graph::no_node, in);
    return run_from(0, observe);
  }

  /// Throws model_error naming argument `i` when `v` is not of the type forward declares for
  /// it (tensors: any tensor; a traced shape is not a requirement).
  void check_input(std::size_t i, const c10::IValue& v) const {
    const auto& d = m_.graph.data(m_.graph.graph_inputs()[i]);
    if (!d.type) return;
    const bool ok =
        d.type->kind() == c10::TypeKind::TensorType ? v.isTensor() : v.type()->isSubtypeOf(*c10::unshapedType(d.type));
    if (!ok)
      throw model_error(m_.source + ": forward argument " + std::to_string(i + 1) + " (%" + d.name + ") is " +
                        c10::unshapedType(d.type)->annotation_str() + ", the input gives " +
                        v.type()->annotation_str());
  }

  /// Resumes execution at position `from` of order() on the values the last run left (or that
  /// value_mut() put there) and returns what forward returns; `observe` is called after each
  /// node as in run(), but not for the graph inputs. run_from(0) after setting every graph
  /// input is a run. Precondition: the values read by nodes at positions >= from are present
  /// (free_dead_values is false) and were not modified in place by the nodes being re-run.
  /// Used by influence.hpp to re-run the part of a model downstream of a perturbed edge.
  template <class Observer>
  c10::IValue run_from(std::size_t from, Observer&& observe) {
    const auto& g = m_.graph;
    ::torch::jit::Stack stack;
    stack.reserve(16);
    for (std::size_t pos = from; pos < order_.size(); ++pos) {
      const graph::node_id n = order_[pos];
      run_node(n, stack);
      observe(n, g.outputs(n));
      if (opt_.free_dead_values) release_after(pos);
    }
    return assemble(m_.output);
  }

  c10::IValue run(const std::vector<c10::IValue>& inputs) {
    return run(inputs, [](graph::node_id, std::span<const graph::edge_id>) {});
  }

  /// Value of an edge after the last run (None when released or never computed).
  [[nodiscard]] const c10::IValue& value(graph::edge_id e) const { return values_[graph::index(e)]; }
  /// Mutable value of an edge: an observer may substitute the value consumers will read (same
  /// type expected); between runs, together with run_from(), it injects a value mid-model.
  [[nodiscard]] c10::IValue& value_mut(graph::edge_id e) { return values_[graph::index(e)]; }
  [[nodiscard]] const std::vector<graph::node_id>& order() const noexcept { return order_; }
  [[nodiscard]] const model& target() const noexcept { return m_; }

 private:
  c10::IValue to_device(const c10::IValue& v) const {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().device() != opt_.device)
      return v.toTensor().to(opt_.device);
    if (v.isDevice()) return c10::IValue(opt_.device);
    return v;
  }

  c10::IValue argument_value(std::span<const graph::edge_id> inputs, const argument& a) {
    switch (a.how) {
      case argument::form::edge: return values_[graph::index(inputs[a.input])];
      case argument::form::constant: return opt_.device.is_cpu() ? a.constant : to_device(a.constant);
      case argument::form::list: {
        c10::impl::GenericList list(a.type->castRaw<c10::ListType>()->getElementType());
        list.reserve(a.items.size());
        for (const auto& item : a.items)
          list.push_back(item.is_edge ? values_[graph::index(inputs[item.input])] : item.constant);
        return c10::IValue(std::move(list));
      }
      case argument::form::tuple: {
        std::vector<c10::IValue> elems;
        elems.reserve(a.items.size());
        for (const auto& item : a.items)
          elems.push_back(item.is_edge ? values_[graph::index(inputs[item.input])] : item.constant);
        return c10::ivalue::Tuple::create(std::move(elems));
      }
    }
    return {};
  }

  void run_node(graph::node_id n, ::torch::jit::Stack& stack) {
    const auto& g = m_.graph;
    const auto& d = g.data(n);
    const auto inputs = g.inputs(n);
    const auto outputs = g.outputs(n);
    stack.clear();
    try {
      if (d.kind == c10::prim::Constant) {
        values_[graph::index(outputs[0])] = to_device(d.constant);
        return;
      }
      for (const auto& a : d.args) stack.push_back(argument_value(inputs, a));
      if (d.op) {
        (*d.op)(stack);
      } else if (d.kind == c10::prim::ListUnpack) {
        auto list = stack.at(0).toList();
        stack.clear();
        stack.push_back(c10::IValue(list));
        unpack_into(d, outputs, stack);
        return;
      } else if (d.kind == c10::prim::TupleUnpack) {
        unpack_into(d, outputs, stack);
        return;
      } else {
        throw model_error("no kernel");
      }
      if (stack.size() != d.results.size())
        throw model_error("returned " + std::to_string(stack.size()) + " values, expected " +
                          std::to_string(d.results.size()));
      for (std::size_t i = 0; i < d.results.size(); ++i) {
        const auto& r = d.results[i];
        auto& v = stack[i];
        if (r.how == result_slot::form::value) {
          values_[graph::index(outputs[r.first_output])] = std::move(v);
        } else if (r.how == result_slot::form::list) {
          auto list = v.toList();
          if (list.size() != r.count)
            throw model_error("unpacked a list of " + std::to_string(list.size()) + " elements, expected " +
                              std::to_string(r.count));
          for (std::uint32_t j = 0; j < r.count; ++j) values_[graph::index(outputs[r.first_output + j])] = list.get(j);
        } else {
          const auto& elems = v.toTupleRef().elements();
          for (std::uint32_t j = 0; j < r.count; ++j) values_[graph::index(outputs[r.first_output + j])] = elems.at(j);
        }
      }
    } catch (const model_error& e) {
      throw model_error(m_.source + ": " + describe(g, n) + ": " + e.what());
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (auto nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
      throw model_error(m_.source + ": " + describe(g, n) + " failed: " + what);
    }
  }

  /// A natively executed prim::ListUnpack / prim::TupleUnpack (one whose input is a list edge).
  void unpack_into(const node_data&, std::span<const graph::edge_id> outputs, ::torch::jit::Stack& stack) {
    auto& v = stack.at(0);
    if (v.isList()) {
      auto list = v.toList();
      if (list.size() != outputs.size()) throw model_error("list length does not match the unpack");
      for (std::size_t j = 0; j < outputs.size(); ++j) values_[graph::index(outputs[j])] = list.get(j);
    } else {
      const auto& elems = v.toTupleRef().elements();
      for (std::size_t j = 0; j < outputs.size(); ++j) values_[graph::index(outputs[j])] = elems.at(j);
    }
  }

  c10::IValue assemble(const output_tree& t) const {
    switch (t.how) {
      case output_tree::form::edge: return values_[graph::index(t.edge)];
      case output_tree::form::constant: return t.constant;
      case output_tree::form::list: {
        c10::impl::GenericList list(t.type->castRaw<c10::ListType>()->getElementType());
        for (const auto& i : t.items) list.push_back(assemble(i));
        return c10::IValue(std::move(list));
      }
      case output_tree::form::tuple: {
        std::vector<c10::IValue> elems;
        for (const auto& i : t.items) elems.push_back(assemble(i));
        return c10::ivalue::Tuple::create(std::move(elems));
      }
    }
    return {};
  }

  /// release_at_[p]: edges whose last reader is the node at position p (graph outputs never).
  void compute_release_points() {
    const auto& g = m_.graph;
    std::vector<std::size_t> pos_of(g.node_capacity());
    for (std::size_t p = 0; p < order_.size(); ++p) pos_of[graph::index(order_[p])] = p;
    release_at_.assign(order_.size(), {});
    for (auto e : g.edges()) {
      if (g.is_graph_output(e)) continue;
      std::size_t last = g.producer(e) == graph::no_node ? 0 : pos_of[graph::index(g.producer(e))];
      for (const auto& u : g.consumers(e)) last = std::max(last, pos_of[graph::index(u.node)]);
      release_at_[last].push_back(e);
    }
  }

  void release_after(std::size_t pos) {
    for (auto e : release_at_[pos]) values_[graph::index(e)] = c10::IValue();
  }

  const model& m_;
  execute_options opt_;
  std::vector<graph::node_id> order_;
  std::vector<c10::IValue> values_;
  std::vector<std::vector<graph::edge_id>> release_at_;
};

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/execute/execute.ipp"
#endif
