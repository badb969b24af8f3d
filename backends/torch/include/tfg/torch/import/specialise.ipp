#pragma once
// The definitions of specialise.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/specialise.hpp"

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL std::string where_of(const ::torch::jit::Node* n) {
  auto fl = n->sourceRange().file_line_col();
  if (!fl) return {};
  auto [file, line, col] = *fl;
  (void)col;
  auto slash = file.find_last_of('/');
  return (slash == std::string::npos ? file : file.substr(slash + 1)) + ":" + std::to_string(line);
}

[[nodiscard]] TFG_TORCH_DECL std::string scope_of(const ::torch::jit::Node* n) {
  auto s = const_cast<::torch::jit::Node*>(n)->scope();
  if (!s || s->isBlank()) return {};
  return s->namesFromRoot();
}

[[nodiscard]] TFG_TORCH_DECL std::string describe_node(const ::torch::jit::Node* n) {
  std::string s = "node `" + std::string(n->kind().toQualString()) + "`";
  if (auto w = where_of(n); !w.empty()) s += " at " + w;
  if (auto sc = scope_of(n); !sc.empty()) s += " in " + sc;
  return s;
}

}  // namespace tfg::torch::detail

namespace tfg::torch::specialise_detail {

[[nodiscard]] TFG_TORCH_DECL std::string text_of(const c10::IValue& v) {
  if (v.isBool()) return v.toBool() ? "true" : "false";
  if (v.isInt()) return std::to_string(v.toInt());
  std::ostringstream os;
  os << v;
  return os.str();
}

[[nodiscard]] TFG_TORCH_DECL std::vector<std::vector<c10::IValue>> evaluate(const std::shared_ptr<jit::Graph>& g,
                                                                            const std::vector<jit::Value*>& vals,
                                                                            const input_set& inputs) {
  const auto n_out = g->outputs().size();
  for (auto* v : vals) g->registerOutput(v);
  auto probe = g->copy();
  for (std::size_t i = 0; i < vals.size(); ++i) g->eraseOutput(g->outputs().size() - 1);
  for (std::size_t i = 0; i < n_out; ++i) probe->eraseOutput(0);
  const bool self = !probe->inputs().empty() && probe->inputs()[0]->type()->kind() == c10::TypeKind::ClassType;
  if (self) {
    if (probe->inputs()[0]->hasUses()) {
      std::string names;
      for (const auto& u : probe->inputs()[0]->uses())
        if (u.user->kind() == c10::prim::GetAttr)
          names += (names.empty() ? "`" : ", `") + u.user->s(c10::attr::name) + "`";
      throw std::runtime_error("forward still reads module attributes after freezing (" + names + ")");
    }
    probe->eraseInput(0);
  }
  jit::EliminateDeadCode(probe);
  jit::Code code(probe, "tfg_specialise");
  at::NoGradGuard no_grad;
  std::vector<std::vector<c10::IValue>> out;
  for (const auto& in : inputs) {
    if (in.size() != probe->inputs().size()) {
      std::string names;
      for (const auto* v : probe->inputs()) names += (names.empty() ? "" : ", ") + v->debugName();
      throw model_error("forward takes " + std::to_string(probe->inputs().size()) + " arguments (" + names +
                        "), an input gives " + std::to_string(in.size()) +
                        ": give every argument in the inputs file (None for an optional one left out)");
    }
    jit::Stack stack;
    for (const auto& v : in) stack.push_back(ivalue::deep_clone(v, [](const at::Tensor& t) { return t.clone(); }));
    jit::InterpreterState(code).run(stack);
    if (stack.size() != vals.size())
      throw std::runtime_error("the interpreter returned " + std::to_string(stack.size()) + " values");
    out.push_back(std::move(stack));
  }
  return out;
}

TFG_TORCH_DECL std::vector<jit::Value*> clone_block(jit::Graph& g, jit::Block* b,
                                                    std::unordered_map<jit::Value*, jit::Value*>& map) {
  auto env = [&](jit::Value* v) {
    auto it = map.find(v);
    return it == map.end() ? v : it->second;
  };
  for (auto* inner : b->nodes()) {
    auto* c = g.insertNode(g.createClone(inner, env));
    for (std::size_t i = 0; i < inner->outputs().size(); ++i) {
      c->outputs()[i]->copyMetadata(inner->outputs()[i]);
      map[inner->outputs()[i]] = c->outputs()[i];
    }
  }
  std::vector<jit::Value*> outs;
  for (auto* v : b->outputs()) outs.push_back(env(v));
  return outs;
}

TFG_TORCH_DECL void inline_block(jit::Graph& g, jit::Node* n, jit::Block* b) {
  jit::WithInsertPoint guard(n);
  std::unordered_map<jit::Value*, jit::Value*> map;
  const auto outs = clone_block(g, b, map);
  for (std::size_t i = 0; i < n->outputs().size(); ++i) n->outputs()[i]->replaceAllUsesWith(outs[i]);
  n->destroy();
}

TFG_TORCH_DECL void unroll(jit::Graph& g, jit::Node* n, std::int64_t count) {
  jit::WithInsertPoint guard(n);
  auto* body = n->blocks()[0];
  std::vector<jit::Value*> carried(n->inputs().begin() + 2, n->inputs().end());
  for (std::int64_t i = 0; i < count; ++i) {
    std::unordered_map<jit::Value*, jit::Value*> map;
    map[body->inputs()[0]] = g.insertConstant(i);
    for (std::size_t j = 0; j < carried.size(); ++j) map[body->inputs()[j + 1]] = carried[j];
    const auto outs = clone_block(g, body, map);  // the continue condition, then the carried values
    carried.assign(outs.begin() + 1, outs.end());
  }
  for (std::size_t j = 0; j < n->outputs().size(); ++j) n->outputs()[j]->replaceAllUsesWith(carried[j]);
  n->destroy();
}

TFG_TORCH_DECL void fold_attributes(jit::Graph& g, const c10::IValue& self_object) {
  if (g.inputs().empty() || !self_object.isObject()) return;
  std::unordered_map<jit::Value*, c10::IValue> object_of{{g.inputs()[0], self_object}};
  std::function<void(jit::Block*)> walk = [&](jit::Block* b) {
    for (auto it = b->nodes().begin(); it != b->nodes().end();) {
      auto* n = *it;
      ++it;
      if (n->kind() == c10::prim::GetAttr) {
        const auto o = object_of.find(n->input());
        if (o == object_of.end()) continue;
        const auto& obj = o->second.toObjectRef();
        const auto& name = n->s(c10::attr::name);
        if (!obj.type()->hasAttribute(name)) continue;
        auto v = obj.getAttr(name);
        if (v.isObject()) {
          object_of[n->output()] = std::move(v);
          continue;
        }
        // A parameter requires grad, which a constant may not (an inference graph reads it).
        if (v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad()) v = v.toTensor().detach();
        jit::WithInsertPoint at(n);
        if (auto c = jit::tryInsertConstant(g, v)) {
          n->output()->replaceAllUsesWith(*c);
          n->destroy();
        }
        continue;
      }
      for (auto* sub : n->blocks()) walk(sub);
    }
  };
  walk(g.block());
}

TFG_TORCH_DECL void lists_as_values(jit::Graph& g) {
  std::vector<jit::Node*> lists;
  for (auto* n : g.nodes())
    if (n->kind() == c10::prim::ListConstruct) lists.push_back(n);
  for (auto* ln : lists) {
    auto* list = ln->output();
    auto uses = list->uses();
    bool appends = false, simple = true;
    for (const auto& u : uses) {
      auto* n = u.user;
      if (n->owningBlock() != g.block()) simple = false;
      else if (n->kind() == c10::aten::append) {
        appends = true;
        simple = simple && u.offset == 0 && !n->output()->hasUses();
      } else if (n->kind() == c10::prim::ListUnpack || n == g.return_node()) {
      } else if (const auto* s = n->maybeSchema(); s && u.offset < s->arguments().size()) {
        const auto* alias = s->arguments()[u.offset].alias_info();
        simple = simple && !(alias && alias->isWrite());
      } else {
        simple = false;
      }
    }
    if (!appends || !simple) continue;
    std::sort(uses.begin(), uses.end(), [&](const jit::Use& a, const jit::Use& b) {
      if (a.user == g.return_node()) return false;
      if (b.user == g.return_node()) return true;
      return a.user->isBefore(b.user);
    });
    const auto elem = list->type()->castRaw<c10::ListType>()->getElementType();
    std::vector<jit::Value*> items(ln->inputs().begin(), ln->inputs().end());
    jit::Value* current = list;
    bool grown = false;
    for (const auto& u : uses) {
      auto* n = u.user;
      if (n->kind() == c10::aten::append) {
        items.push_back(n->input(1));
        grown = true;
        n->destroy();
        continue;
      }
      if (grown) {
        jit::WithInsertPoint at(n);
        current = g.insertNode(g.createList(elem, items))->output();
        grown = false;
      }
      n->replaceInput(u.offset, current);
    }
  }
}

}  // namespace tfg::torch::specialise_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::function<input_set()> profile_inputs(const std::string& model_path,
                                                                       const std::string& inputs_path) {
  const auto given = inputs_path.empty() ? inputs_path_for(model_path) : inputs_path;
  if (inputs_path.empty() && !std::filesystem::exists(given)) return {};
  return [given] { return load_inputs(given); };
}

[[nodiscard]] TFG_TORCH_DECL bool has_control_flow(const ::torch::jit::Graph& g) {
  for (const auto* n : g.nodes())
    if (!n->blocks().empty()) return true;
  return false;
}

TFG_TORCH_DECL void specialise_control_flow(std::shared_ptr<::torch::jit::Graph> g, const input_set& inputs,
                                            const std::string& source, const c10::IValue& self_object,
                                            std::int64_t max_unrolled) {
  namespace jit = ::torch::jit;
  namespace sd = specialise_detail;
  if (inputs.empty()) throw model_error(source + ": no profiling inputs to specialise the control flow on");
  sd::fold_attributes(*g, self_object);
  jit::EliminateDeadCode(g);
  for (int round = 0; has_control_flow(*g); ++round) {
    if (round > 1000) throw model_error(source + ": control flow still left after 1000 rounds of specialisation");
    std::vector<jit::Node*> flow;
    std::vector<jit::Value*> asked;
    for (auto* n : g->nodes()) {
      if (n->blocks().empty()) continue;
      if (n->kind() == c10::prim::Loop) {
        // A for-loop: `range`, or over a list (TorchScript gives both a trip count); a while
        // loop's condition is computed in its body.
        if (!sd::is_true_constant(n->input(1)) || !sd::is_true_constant(n->blocks()[0]->outputs()[0]))
          throw model_error(source + ": " + detail::describe_node(n) +
                            ": a while loop (its condition is computed as it runs) cannot be specialised; export "
                            "the model with torch.export or trace it with torch.jit.trace");
      } else if (n->kind() != c10::prim::If) {
        throw model_error(source + ": " + detail::describe_node(n) +
                          ": a node with blocks that is neither prim::If nor prim::Loop");
      }
      flow.push_back(n);
      if (!jit::toIValue(n->input(0))) asked.push_back(n->input(0));
    }
    std::vector<std::vector<c10::IValue>> values;
    if (!asked.empty()) {
      try {
        values = sd::evaluate(g, asked, inputs);
      } catch (const model_error& e) {
        throw model_error(source + ": " + e.what());
      } catch (const std::exception& e) {
        throw model_error(source + ": running forward on the profiling inputs to specialise its control flow failed: " +
                          clean_error(e.what()));
      }
    }
    // Decided per node before any is replaced: inlining one branch replaces values another
    // node's condition may be.
    std::unordered_map<jit::Value*, c10::IValue> decided;
    for (std::size_t k = 0; k < asked.size(); ++k) {
      const auto& first = values[0][k];
      for (std::size_t i = 1; i < values.size(); ++i)
        if (values[i][k].tagKind() != first.tagKind() || sd::text_of(values[i][k]) != sd::text_of(first)) {
          const auto* n = flow.front();
          for (auto* f : flow)
            if (f->input(0) == asked[k]) n = f;
          throw model_error(source + ": " + detail::describe_node(n) + ": the profiling inputs disagree (" +
                            (n->kind() == c10::prim::If ? "condition " : "trip count ") + sd::text_of(first) +
                            " on input 0, " + sd::text_of(values[i][k]) + " on input " + std::to_string(i) +
                            "): give inputs that take the same path, or export the model with torch.export");
        }
      decided[asked[k]] = first;
    }
    std::vector<c10::IValue> choice;
    for (auto* n : flow) {
      const auto it = decided.find(n->input(0));
      choice.push_back(it != decided.end() ? it->second : *jit::toIValue(n->input(0)));
    }
    for (std::size_t f = 0; f < flow.size(); ++f) {
      auto* n = flow[f];
      const auto& v = choice[f];
      if (n->kind() == c10::prim::If) {
        if (!v.isBool())
          throw model_error(source + ": " + detail::describe_node(n) + ": a condition that is not a bool (" +
                            v.tagKind() + " " + sd::text_of(v) + ")");
        sd::inline_block(*g, n, n->blocks()[v.toBool() ? 0 : 1]);
        continue;
      }
      if (!v.isInt()) throw model_error(source + ": " + detail::describe_node(n) + ": a trip count that is not an int");
      if (v.toInt() > max_unrolled)
        throw model_error(source + ": " + detail::describe_node(n) + ": " + std::to_string(v.toInt()) +
                          " iterations, more than the " + std::to_string(max_unrolled) + " a specialisation unrolls");
      sd::unroll(*g, n, std::max<std::int64_t>(0, v.toInt()));
    }
    jit::EliminateDeadCode(g);
  }
  sd::lists_as_values(*g);
  // Warnings change no value (GoogLeNet's scripted forward warns when it returns no aux logits).
  for (auto it = g->nodes().begin(); it != g->nodes().end();) {
    auto* n = *it;
    ++it;
    if (n->kind() == c10::aten::warn) n->destroy();
  }
  jit::ConstantPropagationImmutableTypes(g);
  jit::EliminateDeadCode(g);
}

}  // namespace tfg::torch
