#pragma once
// The definitions of seed_check.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/seed_check.hpp"

namespace tfg::torch::seed_check_detail {

[[nodiscard]] TFG_TORCH_DECL std::string number(double d) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", d);
  return b;
}

}  // namespace tfg::torch::seed_check_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::string check_seed(const model& m, const std::string& path, const input_set& inputs) {
  // A torch.export program has no TorchScript module of its own: its graph, as the importer
  // built it from the program, is the one TorchScript's executor runs.
  auto module = m.pt2 ? to_module(m) : load_module(path);
  module.eval();
  // Inference, as the forward configurations run: a scripted forward's control flow was
  // specialised without grad (MultiheadAttention takes its fast path only then).
  at::NoGradGuard no_grad;
  // `self` is the frozen module the graph was taken from (freezing keeps an attribute it cannot
  // fold, such as MultiheadAttention's in_proj_weight, which the graph reads by the frozen
  // object's slots; the loaded module's slots are others).
  c10::IValue self_object;
  auto graph = frozen_forward_graph(module, &self_object, forward_method(module, path));
  std::vector<::torch::jit::Value*> inner;  // every tensor a node produces, in node order
  for (auto* n : graph->nodes())
    for (auto* v : n->outputs())
      if (v->type()->kind() == c10::TypeKind::TensorType) inner.push_back(v);
  // One tuple output (a function returns one value): the forward's outputs, then every tensor.
  const std::size_t n_out = graph->outputs().size();
  std::vector<::torch::jit::Value*> all_values(graph->outputs().begin(), graph->outputs().end());
  all_values.insert(all_values.end(), inner.begin(), inner.end());
  auto* tuple = graph->insertNode(graph->createTuple(all_values));
  while (!graph->outputs().empty()) graph->eraseOutput(0);
  graph->registerOutput(tuple->output());
  const bool has_self = !graph->inputs().empty() && graph->inputs()[0]->type()->kind() == c10::TypeKind::ClassType;
  ::torch::jit::GraphFunction fn("tfg_seed_check", graph, nullptr);

  std::map<std::string, graph::edge_id> by_name;
  for (auto e : m.graph.edges()) by_name.emplace(m.graph.data(e).name, e);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    executor ex(m, execute_options{});
    c10::IValue ours;
    try {
      ours = ex.run(ivalue::deep_clone(inputs[k]));
    } catch (const model_error& e) {
      throw input_error(e, inputs, k);
    }
    ::torch::jit::Stack stack;
    if (has_self) stack.push_back(self_object);
    for (const auto& v : ivalue::deep_clone(inputs[k])) stack.push_back(v);
    c10::InferenceMode guard(false);  // sets grad mode on: no grad again below it
    at::NoGradGuard no_grad_here;
    try {
      fn.run(stack);
    } catch (const std::exception& e) {
      throw model_error(path + ": the seed check cannot run TorchScript's forward on input " + std::to_string(k + 1) +
                        ": " + clean_error(e.what()));
    }
    const auto& all = stack.back().toTupleRef().elements();
    const auto where = " (input " + std::to_string(k + 1) + ")";
    for (std::size_t i = 0; i < inner.size(); ++i) {
      const auto it = by_name.find(inner[i]->debugName());
      if (it == by_name.end()) continue;  // not a value of the imported graph (folded away)
      const auto& mine = ex.value(it->second);
      if (!mine.isTensor()) continue;
      const auto node = m.graph.producer(it->second);
      if (node != graph::no_node && is_uninitialised_op(m.graph.data(node).name())) continue;  // arbitrary bytes
      const double d = ivalue::max_abs_diff(all[n_out + i], mine);
      if (d != 0) {
        const std::string what = node == graph::no_node
                                     ? "input %" + inner[i]->debugName()
                                     : describe(m.graph, node) + ", output %" + inner[i]->debugName();
        return what + where + ": op by op gives another value than TorchScript's forward (max abs diff " +
               seed_check_detail::number(d) +
               "): a nondeterministic operator (random values) or an import defect of flowmut (please report "
               "that); findings on this seed would not be the framework's";
      }
    }
    c10::IValue theirs;
    if (n_out == 1) theirs = all[0];
    else
      theirs = c10::ivalue::Tuple::create(
          std::vector<c10::IValue>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_out)));
    if (const double d = ivalue::max_abs_diff(theirs, ours); d != 0)
      return "the output" + where + " differs from TorchScript's forward (max abs diff " +
             seed_check_detail::number(d) + ") although every node agrees: please report it";
  }
  return "";
}

}  // namespace tfg::torch
