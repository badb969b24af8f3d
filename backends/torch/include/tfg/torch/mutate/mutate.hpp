#pragma once
/// Applying a mutation to a LibTorch model: a retained candidate's replacement template is
/// instantiated (overloads resolved, DSL words converted, shape helpers expanded), committed
/// as one rewrite transaction, and the mutant is probed — profiled on the profiling inputs —
/// so the constraints deferred to the probe and the requirements R(v) of every node that now
/// reads a replacement value can be checked (dsl/spec.md section 10).
#include "tfg/torch/linkage.hpp"
#include "tfg/dsl/builtins.hpp"
#include "tfg/match/candidates.hpp"
#include "tfg/torch/mutate/instantiate.hpp"
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/mutate/match_adapter.hpp"
#include "tfg/torch/execute/profile.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace tfg::torch {

/// Why a candidate did not become a legal mutant.
struct mutation_failure {
  match::reject_stage stage = match::reject_stage::internal;
  std::string message;
};

struct mutant {
  model graph_model;                                              ///< the mutated model
  std::vector<graph::node_id> added;                              ///< nodes the replacement added
  std::unordered_map<std::uint32_t, graph::edge_id> value_edges;  ///< replacement slot -> edge
  profile probe;                                                  ///< the mutant profiled on the inputs
};

namespace detail {

/// F of replacement values, read from the probe run of the mutant.
class mutant_probe final : public match::probe_source {
 public:
  mutant_probe(const mutant& m) : m_(m) {}
  [[nodiscard]] const state::edge_profile* profile(std::uint32_t slot) const override {
    auto it = m_.value_edges.find(slot);
    if (it == m_.value_edges.end() || graph::index(it->second) >= m_.probe.edges.size()) return nullptr;
    return &m_.probe.edges[graph::index(it->second)];
  }

 private:
  const mutant& m_;
};

[[nodiscard]] inline std::string dtype_word_of(state::dtype d) { return std::string(state::name(d)); }

}  // namespace detail

/// Instantiates a candidate of `op` over `source` (seen through `adapter`) with bindings `b`
/// (`candidate_set::bound(c)`) into a copy of the model. Returns the mutant, or why the replacement cannot be built or
/// committed (no overload fits, an unsupported helper, a rewrite that would dangle or cycle).
namespace detail {

/// The first node of `g` that writes, in place, a tensor constant of the model or a view of
/// one (an argument its schema marks written, `Tensor(a!)`, bound to an edge that aliases a
/// `prim::Constant`'s tensor through view-returning ops), or no_node. Such a model is not a
/// function of its inputs: every call changes its parameters.
[[nodiscard]] TFG_TORCH_DECL graph::node_id constant_writer(const graph_type& g);

}  // namespace detail

template <class Adapter>
[[nodiscard]] std::variant<mutant, mutation_failure> instantiate(
    const model& source, const Adapter& adapter, const match::compiled_operator& op, const match::bindings& b,
    const match::symbol_table& symbols, match::workspace& ws, const input_set* inputs_for_shapes = nullptr) {
  using match::template_arg;
  mutant out;
  out.graph_model = source;
  auto& g = out.graph_model.graph;
  auto tx = g.begin_rewrite();
  std::unordered_map<std::uint32_t, graph::value_ref> staged;  // replacement slot -> value
  std::unordered_map<std::uint32_t, state::value_kind> staged_kind;
  auto fail = [&](std::string msg) {
    return mutation_failure{match::reject_stage::internal, op.name + ": " + std::move(msg)};
  };
  auto first_state = [&](graph::edge_id e) -> const state::tensor_state* {
    const auto& runs = adapter.profile(e).runs;
    return runs.empty() ? nullptr : &runs[0];
  };

  // Shape helpers whose input is a value the replacement itself computes need its shape: the
  // replacement is executed locally on the seed's first profiling input (the execution
  // probe of dsl/spec.md section 10), node by node as it is staged.
  const bool wants_shapes = inputs_for_shapes && !inputs_for_shapes->empty() &&
                            std::any_of(op.replacement.nodes.begin(), op.replacement.nodes.end(), [](const auto& rn) {
                              return rn.helper && (rn.op == "tfg::revert_shape" || rn.op == "tfg::pad_or_crop");
                            });
  std::optional<executor> local_seed;
  std::map<std::pair<std::uint32_t, std::uint32_t>, c10::IValue> local;  // (staged node, output) -> value
  if (wants_shapes) {
    local_seed.emplace(source);
    try {
      (void)local_seed->run((*inputs_for_shapes)[0]);
    } catch (const std::exception& e) {
      return fail(std::string("the seed does not run for the local probe: ") + e.what());
    }
  }
  auto local_value = [&](const graph::value_ref& r) -> c10::IValue {
    if (r.is_edge()) return local_seed ? local_seed->value(r.edge()) : c10::IValue();
    auto it = local.find({r.node().index, r.output_index()});
    return it == local.end() ? c10::IValue() : it->second;
  };
  // Stages one node, runs it locally when shapes are wanted, and returns its first output.
  std::string local_error;  // why the local probe could not run a staged node
  auto stage = [&](built_node built, std::vector<graph::value_ref> node_inputs) -> graph::staged_node {
    std::optional<node_data> copy;
    if (wants_shapes) copy = built.data;
    auto node = tx.new_node(std::move(built.data), node_inputs, std::move(built.outputs));
    if (copy && copy->op) {
      ::torch::jit::Stack st;
      for (const auto& a : copy->args) {
        switch (a.how) {
          case argument::form::edge: st.push_back(local_value(node_inputs[a.input])); break;
          case argument::form::constant: st.push_back(a.constant); break;
          case argument::form::list: {
            c10::impl::GenericList l(a.type->castRaw<c10::ListType>()->getElementType());
            for (const auto& it : a.items) l.push_back(it.is_edge ? local_value(node_inputs[it.input]) : it.constant);
            st.push_back(c10::IValue(std::move(l)));
            break;
          }
          case argument::form::tuple: st.push_back(c10::IValue()); break;
        }
      }
      try {
        (*copy->op)(st);
        for (std::size_t i = 0; i < st.size(); ++i) local[{node.index, static_cast<std::uint32_t>(i)}] = st[i];
      } catch (const std::exception& e) {
        // leaves the outputs unknown; a helper that needs them fails with this message
        if (local_error.empty())
          local_error = copy->name() + " does not run on the first profiling input: " + first_line(e.what());
      }
    }
    return node;
  };
  auto shape_of = [&](const graph::value_ref& r) -> std::optional<std::vector<std::int64_t>> {
    if (r.is_edge()) {
      if (const auto* st = first_state(r.edge()); st && st->kind == state::value_kind::tensor) return st->shape;
      return std::nullopt;
    }
    auto v = local_value(r);
    if (!v.isTensor() || !v.toTensor().defined()) return std::nullopt;
    return std::vector<std::int64_t>(v.toTensor().sizes().begin(), v.toTensor().sizes().end());
  };

  // `%l = prim::ListConstruct(...)` in a replacement is folded into the nodes that read %l,
  // as the importer folds the seed's lists: its items are kept here by slot.
  std::unordered_map<std::uint32_t, std::vector<const template_arg*>> lists;
  // Builds and stages one node the expansion of a helper adds, reading `in`; nullopt when no
  // overload accepts the arguments, with the reason in build_error.
  std::string build_error;
  auto make_node = [&](const std::string& name, std::vector<proto_arg> a,
                       std::vector<graph::value_ref> in) -> std::optional<graph::value_ref> {
    built_node nb;
    try {
      nb = build_node(name, a);
    } catch (const model_error& e) {
      build_error = e.what();
      return std::nullopt;
    }
    nb.data.where = "mutation " + op.name;
    return tx.output(stage(std::move(nb), std::move(in)), 0);
  };

  for (const auto& rn : op.replacement.nodes) {
    std::vector<graph::value_ref> inputs;
    std::function<std::optional<proto_arg>(const template_arg&)> to_proto;
    // A seed edge as an input of the new node.
    auto edge_arg = [&](graph::edge_id e) {
      inputs.emplace_back(e);
      return proto_arg{proto_arg::edge_ref{static_cast<std::uint32_t>(inputs.size() - 1), g.data(e).kind}};
    };
    auto value_arg = [&](std::uint32_t slot) -> std::optional<proto_arg> {
      if (auto l = lists.find(slot); l != lists.end()) {
        std::vector<proto_arg> items;
        for (const auto* item : l->second) {
          auto p = to_proto(*item);
          if (!p) return std::nullopt;
          items.push_back(std::move(*p));
        }
        return proto_arg{std::move(items)};
      }
      if (slot < op.pattern_value_count) {
        auto e = b.values[slot];
        if (e == graph::no_edge) return std::nullopt;
        return edge_arg(e);
      }
      auto it = staged.find(slot);
      if (it == staged.end()) return std::nullopt;
      inputs.push_back(it->second);
      return proto_arg{proto_arg::edge_ref{static_cast<std::uint32_t>(inputs.size() - 1), staged_kind[slot]}};
    };
    to_proto = [&](const template_arg& t) -> std::optional<proto_arg> {
      switch (t.k) {
        case template_arg::kind::value: return value_arg(t.slot);
        case template_arg::kind::param: return proto_arg{b.params.at(t.slot)};
        case template_arg::kind::constant: return proto_arg{t.constant};
        case template_arg::kind::forward: {
          if (t.slot >= op.pattern_value_count || b.values[t.slot] == graph::no_edge) return std::nullopt;
          const auto n = adapter.graph().producer(b.values[t.slot]);
          if (n == graph::no_node || t.index >= adapter.arg_count(n)) return std::nullopt;
          // An edge or a constant; a list's items are one or the other (the adapter's lists are flat).
          auto scalar = [&](const match::arg_view& av) -> std::optional<proto_arg> {
            if (av.how == match::arg_view::form::edge) return edge_arg(av.edge);
            if (av.how == match::arg_view::form::constant) return proto_arg{av.value};
            return std::nullopt;
          };
          const auto& av = adapter.arg(n, t.index);
          if (av.how != match::arg_view::form::list) return scalar(av);
          std::vector<proto_arg> items;
          for (const auto& it : av.items) {
            auto p = scalar(it);
            if (!p) return std::nullopt;
            items.push_back(std::move(*p));
          }
          return proto_arg{std::move(items)};
        }
        case template_arg::kind::expr:
          if (!t.expr) return std::nullopt;
          if (auto v = match::evaluate_value(*t.expr, op, adapter, b, 0, ws)) return proto_arg{std::move(*v)};
          return std::nullopt;
      }
      return std::nullopt;
    };
    std::string op_name = rn.op;
    if (rn.op_param) {
      const auto& p = b.params.at(*rn.op_param);
      if (const auto* id = std::get_if<std::int64_t>(&p))
        op_name = std::string(symbols.name(static_cast<std::uint32_t>(*id)));
      else if (const auto* s = std::get_if<std::string>(&p)) op_name = *s;
    }
    if (op_name == "prim::ListConstruct" && rn.outputs.size() == 1) {
      auto& items = lists[rn.outputs[0]];
      for (const auto& t : rn.args) items.push_back(&t);
      continue;
    }
    std::vector<proto_arg> args;
    for (const auto& t : rn.args) {
      auto p = to_proto(t);
      if (!p) return fail("argument of " + op_name + " could not be evaluated");
      args.push_back(std::move(*p));
    }
    // Activation forms (dsl/builtins.hpp): an activation whose op needs arguments the
    // replacement cannot default, or that has no op, called directly or drawn by `$act(%x)`.
    if (const auto* form = dsl::find_helper(op_name); form && form->activation) {
      if (inputs.size() != 1 || rn.outputs.size() != 1) return fail(op_name + " takes one value and defines one");
      const graph::value_ref x = inputs[0];
      const proto_arg self{proto_arg::edge_ref{0, state::value_kind::tensor}};
      const proto_arg second{proto_arg::edge_ref{1, state::value_kind::tensor}};
      const auto constant = [](match::attr_value v) { return proto_arg{std::move(v)}; };
      std::optional<graph::value_ref> out;
      if (op_name == "tfg::threshold") {
        out = make_node("aten::threshold", {self, constant(1.0), constant(0.0)}, {x});
      } else if (op_name == "tfg::prelu") {
        if (auto w = make_node("aten::new_full", {self, constant(std::vector<std::int64_t>{1}), constant(0.25)}, {x}))
          out = make_node("aten::prelu", {self, second}, {x, *w});
      } else if (op_name == "tfg::softmax") {
        out = make_node("aten::softmax", {self, constant(std::int64_t{-1}), constant(std::monostate{})}, {x});
      } else if (op_name == "tfg::tanhshrink") {
        if (auto t = make_node("aten::tanh", {self}, {x}))
          out = make_node("aten::sub", {self, second, constant(std::int64_t{1})}, {x, *t});
      } else if (op_name == "tfg::softsign") {
        if (auto a = make_node("aten::abs", {self}, {x}))
          if (auto d = make_node("aten::add", {self, constant(1.0), constant(std::int64_t{1})}, {*a}))
            out = make_node("aten::div", {self, second}, {x, *d});
      }
      if (!out) return fail(op_name + " could not be expanded");
      staged.insert_or_assign(rn.outputs[0], *out);
      staged_kind[rn.outputs[0]] = state::value_kind::tensor;
      continue;
    }
    if (rn.helper && (op_name == "tfg::revert_shape" || op_name == "tfg::pad_or_crop")) {
      // revert_shape(%v, %like, pad): unsqueeze/squeeze at axis 1 until the ranks agree, then
      // one constant_pad_nd whose negative amounts centre-crop; pad_or_crop takes the shape.
      if (inputs.empty() || rn.outputs.size() != 1) return fail(op_name + " needs a value to adapt");
      graph::value_ref cur = inputs[0];
      auto from = shape_of(cur);
      if (!from)
        return fail(op_name + ": the shape of its input is unknown (" +
                    (local_error.empty() ? std::string("no local probe") : local_error) + ")");
      const auto pad_value = args.back().v;
      // pad_or_crop(%v, %sizes, pad) with sizes the mutant computes (a prim::ListConstruct of
      // ints, folded into this list): the amounts are read when the mutant runs, for the
      // last len(%sizes) dims, so every input size gets its own (dsl/spec.md section 8).
      if (const auto* items = std::get_if<std::vector<proto_arg>>(&args.at(1).v);
          items && op_name == "tfg::pad_or_crop") {
        if (items->empty() || items->size() > from->size())
          return fail(op_name + ": " + std::to_string(items->size()) + " sizes for a value of rank " +
                      std::to_string(from->size()));
        build_error.clear();
        // The framework's reason when a node could not be built, else `what`.
        auto not_built = [&](const std::string& what) { return fail(build_error.empty() ? what : build_error); };
        const proto_arg first_tensor{proto_arg::edge_ref{0, state::value_kind::tensor}};
        const proto_arg first_int{proto_arg::edge_ref{0, state::value_kind::integer}};
        const proto_arg second_int{proto_arg::edge_ref{1, state::value_kind::integer}};
        const auto constant = [](std::int64_t v) { return proto_arg{match::attr_value{v}}; };
        const std::size_t rank = from->size();
        const std::size_t k = items->size();
        std::vector<proto_arg> pad_items;  // constant_pad_nd: (left, right) from the last dim backwards
        std::vector<graph::value_ref> pad_inputs{cur};
        for (std::size_t d = rank; d-- > rank - k;) {
          const proto_arg& item = (*items)[d - (rank - k)];
          auto size = make_node("aten::size", {first_tensor, constant(static_cast<std::int64_t>(d))}, {cur});
          if (!size) return not_built(op_name + ": aten::size could not be built");
          std::optional<graph::value_ref> diff;
          if (const auto* e = std::get_if<proto_arg::edge_ref>(&item.v)) {
            if (e->input >= inputs.size()) return fail(op_name + ": a size is not a value");
            diff = make_node("aten::sub", {first_int, second_int}, {inputs[e->input], *size});
          } else if (const auto* c = std::get_if<match::attr_value>(&item.v);
                     c && std::holds_alternative<std::int64_t>(*c)) {
            diff = make_node("aten::sub", {constant(std::get<std::int64_t>(*c)), first_int}, {*size});
          } else {
            return fail(op_name + ": a size must be an int");
          }
          if (!diff) return not_built(op_name + ": the size difference could not be built");
          auto left = make_node("aten::floordiv", {first_int, constant(2)}, {*diff});
          if (!left) return not_built(op_name + ": aten::floordiv could not be built");
          auto right = make_node("aten::sub", {first_int, second_int}, {*diff, *left});
          if (!right) return not_built(op_name + ": aten::sub could not be built");
          pad_inputs.push_back(*left);
          pad_items.push_back(proto_arg{
              proto_arg::edge_ref{static_cast<std::uint32_t>(pad_inputs.size() - 1), state::value_kind::integer}});
          pad_inputs.push_back(*right);
          pad_items.push_back(proto_arg{
              proto_arg::edge_ref{static_cast<std::uint32_t>(pad_inputs.size() - 1), state::value_kind::integer}});
        }
        proto_arg value{match::attr_value{0.0}};
        if (const auto* v = std::get_if<match::attr_value>(&pad_value)) value = proto_arg{*v};
        auto padded = make_node("aten::constant_pad_nd", {first_tensor, proto_arg{std::move(pad_items)}, value},
                                std::move(pad_inputs));
        if (!padded) return not_built(op_name + ": aten::constant_pad_nd could not be built");
        staged.insert_or_assign(rn.outputs[0], *padded);
        staged_kind[rn.outputs[0]] = state::value_kind::tensor;
        continue;
      }
      std::vector<std::int64_t> to;
      if (op_name == "tfg::revert_shape") {
        if (inputs.size() < 2) return fail(op_name + " needs the value whose shape to restore");
        auto like = shape_of(inputs[1]);
        if (!like) return fail(op_name + ": the shape to restore is unknown");
        to = *like;
      } else if (const auto* v = std::get_if<match::attr_value>(&args.at(1).v);
                 v && std::holds_alternative<std::vector<std::int64_t>>(*v)) {
        to = std::get<std::vector<std::int64_t>>(*v);
      } else {
        return fail(op_name + " needs a constant shape or a list of sizes");
      }
      auto one_op = [&](const std::string& name, std::vector<proto_arg> a) -> std::optional<mutation_failure> {
        built_node nb;
        try {
          nb = build_node(name, a);
        } catch (const model_error& e) {
          return fail(e.what());
        }
        nb.data.where = "mutation " + op.name;
        cur = tx.output(stage(std::move(nb), {cur}), 0);
        return std::nullopt;
      };
      const proto_arg self{proto_arg::edge_ref{0, state::value_kind::tensor}};
      while (from->size() < to.size() && op_name == "tfg::revert_shape") {
        if (auto f = one_op("aten::unsqueeze", {self, proto_arg{match::attr_value{std::int64_t{1}}}})) return *f;
        from->insert(from->begin() + 1, 1);
      }
      while (from->size() > to.size() && op_name == "tfg::revert_shape") {
        if (from->size() < 2 || (*from)[1] != 1)
          return fail(op_name + ": cannot drop axis 1 of size " + std::to_string((*from)[1]));
        if (auto f = one_op("aten::squeeze", {self, proto_arg{match::attr_value{std::int64_t{1}}}})) return *f;
        from->erase(from->begin() + 1);
      }
      if (from->size() != to.size()) return fail(op_name + ": ranks differ");
      std::vector<std::int64_t> pads;  // constant_pad_nd: (left, right) from the last dim backwards
      bool changes = false;
      for (std::size_t d = from->size(); d-- > 1;) {
        const auto diff = to[d] - (*from)[d];
        pads.push_back(diff / 2);
        pads.push_back(diff - diff / 2);
        changes |= diff != 0;
      }
      if (changes) {
        proto_arg value{match::attr_value{0.0}};
        if (const auto* v = std::get_if<match::attr_value>(&pad_value)) value = proto_arg{*v};
        if (auto f = one_op("aten::constant_pad_nd", {self, proto_arg{match::attr_value{pads}}, value})) return *f;
      } else if (auto f = one_op("aten::clone", {self, proto_arg{match::attr_value{std::monostate{}}}})) {
        return *f;  // a node must define the helper's value even when no adaptation is needed
      }
      staged.insert_or_assign(rn.outputs[0], cur);
      staged_kind[rn.outputs[0]] = state::value_kind::tensor;
      continue;
    }
    // Shape-adaptation helpers expand into aten ops; shapes and dtypes come from F (run 0).
    if (rn.helper) {
      const auto like_state = [&](std::size_t i) -> const state::tensor_state* {
        if (i >= rn.args.size() || rn.args[i].k != template_arg::kind::value ||
            rn.args[i].slot >= op.pattern_value_count)
          return nullptr;
        return first_state(b.values[rn.args[i].slot]);
      };
      const auto* like = like_state(1);
      if (!like) return fail(op_name + " needs a profiled pattern value as its second argument");
      if (op_name == "tfg::reshape_like") {
        args.erase(args.begin() + 1, args.end());
        args.push_back(proto_arg{match::attr_value{like->shape}});
        op_name = "aten::reshape";
      } else if (op_name == "tfg::cast_like") {
        args.erase(args.begin() + 1, args.end());
        args.push_back(proto_arg{match::attr_value{detail::dtype_word_of(like->type)}});
        op_name = "aten::to";
      } else if (op_name == "tfg::to_like") {
        args.erase(args.begin() + 1, args.end());
        args.push_back(proto_arg{match::attr_value{detail::dtype_word_of(like->type)}});
        op_name = "aten::to";  // device and memory format: CPU-only profiles today
      } else {
        return fail(op_name + " is not expanded by the LibTorch backend yet");
      }
      // The input list was filled for every argument; keep only the first value.
      inputs.erase(inputs.begin() + 1, inputs.end());
    }
    built_node built;
    try {
      built = build_node(op_name, args);
    } catch (const model_error& e) {
      return fail(e.what());
    }
    built.data.where = "mutation " + op.name;
    if (built.outputs.size() < rn.outputs.size())
      return fail(op_name + " returns " + std::to_string(built.outputs.size()) + " values, the replacement names " +
                  std::to_string(rn.outputs.size()));
    std::vector<state::value_kind> kinds;
    for (const auto& o : built.outputs) kinds.push_back(o.kind);
    auto node = stage(std::move(built), std::move(inputs));
    for (std::size_t i = 0; i < rn.outputs.size(); ++i) {
      staged.insert_or_assign(rn.outputs[i], tx.output(node, static_cast<std::uint32_t>(i)));
      staged_kind[rn.outputs[i]] = kinds[i];
    }
  }

  auto target_of = [&](std::uint32_t slot) -> std::optional<graph::value_ref> {
    if (slot < op.pattern_value_count) {
      if (b.values[slot] == graph::no_edge) return std::nullopt;
      return graph::value_ref(b.values[slot]);
    }
    auto it = staged.find(slot);
    if (it == staged.end()) return std::nullopt;
    return it->second;
  };
  for (const auto& rw : op.replacement.rewires) {
    const auto src = b.values.at(rw.source);
    auto dst = target_of(rw.target);
    if (src == graph::no_edge || !dst) return fail("rewire of an unbound value");
    if (rw.all) {
      tx.replace_uses(src, *dst);
      continue;
    }
    if (!rw.which) return fail("rewire without a consumer");
    const auto uses = g.consumers(src);
    if (rw.which->k == template_arg::kind::value) {
      const auto e = b.values.at(rw.which->slot);
      const auto producer = e == graph::no_edge ? graph::no_node : g.producer(e);
      bool done = false;
      for (const auto& u : uses)
        if (u.node == producer) tx.rewire(u, *dst), done = true;
      if (!done) return fail("the named consumer does not read the rewired value");
    } else {
      std::optional<match::attr_value> idx;
      if (rw.which->k == template_arg::kind::constant) idx = rw.which->constant;
      else if (rw.which->k == template_arg::kind::param) idx = b.params.at(rw.which->slot);
      else if (rw.which->expr) idx = match::evaluate_value(*rw.which->expr, op, adapter, b, 0, ws);
      const auto* i = idx ? std::get_if<std::int64_t>(&*idx) : nullptr;
      if (!i || *i < 0 || static_cast<std::size_t>(*i) >= uses.size()) return fail("consumer index out of range");
      tx.rewire(uses[static_cast<std::size_t>(*i)], *dst);
    }
  }
  for (auto slot : op.replacement.deletes) {
    const auto e = b.values.at(slot);
    if (e == graph::no_edge || g.producer(e) == graph::no_node) return fail("delete of a value no node produces");
    tx.remove_node(g.producer(e));
  }
  auto applied = tx.commit();
  if (!applied) return fail("rewrite rejected: " + applied.error().message);
  sync_outputs(out.graph_model);
  for (auto [slot, ref] : staged) out.value_edges[slot] = applied->edge(ref);
  out.added = applied->new_nodes;
  if (const auto n = detail::constant_writer(out.graph_model.graph); n != graph::no_node)
    return fail(describe(out.graph_model.graph, n) +
                " writes a constant of the model in place: the mutant would change " +
                "its own parameters on every call (and the supervisor's copy of the seed, whose constants it shares)");
  return out;
}

/// The legality checks of an instantiated mutant `mu`: the probe (run it op by op on `inputs`,
/// filling `mu.probe`), the deferred constraints, and R(v) of every node that reads a replacement
/// value. Returns nullopt when legal. A mutant that fails to run in the probe is rejected at
/// `output` with the error. Executes the mutant in this process: a campaign calls it only after
/// a supervised worker ran the mutant's reference configuration without crashing.
template <class Adapter>
[[nodiscard]] std::optional<mutation_failure> check_mutant(mutant& mu, const Adapter& adapter,
                                                           const match::compiled_operator& op, const match::bindings& b,
                                                           match::symbol_table& symbols,
                                                           const match::requirement_table& requirements,
                                                           const input_set& inputs, match::workspace& ws) {
  try {
    profiler prof({c10::Device(c10::kCPU), true, false, false});
    mu.probe = prof.run(mu.graph_model, inputs);
  } catch (const std::exception& e) {
    std::string what = first_line(e.what());
    return mutation_failure{match::reject_stage::output, op.name + ": the mutant does not run: " + what};
  }
  detail::mutant_probe probe(mu);
  if (auto st = match::evaluate_deferred(op, adapter, b, probe, ws); st != match::reject_stage::accepted)
    return mutation_failure{st, op.name + ": a constraint on the replacement's values does not hold"};
  // R(v) of every node that reads an added node's output, on the mutant's own state.
  torch_match_adapter after(mu.graph_model, mu.probe, symbols);  // interns the new nodes' kinds
  std::unordered_set<std::size_t> readers;
  for (auto n : mu.added)
    for (auto e : mu.graph_model.graph.outputs(n))
      for (const auto& u : mu.graph_model.graph.consumers(e)) readers.insert(graph::index(u.node));
  for (auto r : readers) {
    const match::compiled_requirement* failed = nullptr;
    if (match::evaluate_requirement(requirements, after, graph::node_id{static_cast<std::uint32_t>(r)}, ws,
                                    graph::no_edge, nullptr, &failed) == match::requirement_outcome::fails)
      return mutation_failure{match::reject_stage::output,
                              op.name + ": " +
                                  std::string(after.op_kind(graph::node_id{static_cast<std::uint32_t>(r)})) +
                                  " rejects its new input" + (failed ? " (" + failed->where + ")" : "")};
  }
  return std::nullopt;
}

/// The full legality check of a candidate: instantiate, then check_mutant.
template <class Adapter>
[[nodiscard]] std::variant<mutant, mutation_failure> mutate(const model& source, const Adapter& adapter,
                                                            const match::compiled_operator& op,
                                                            const match::bindings& b, match::symbol_table& symbols,
                                                            const match::requirement_table& requirements,
                                                            const input_set& inputs, match::workspace& ws) {
  auto made = instantiate(source, adapter, op, b, symbols, ws, &inputs);
  if (auto* f = std::get_if<mutation_failure>(&made)) return *f;
  auto& mu = std::get<mutant>(made);
  if (auto f = check_mutant(mu, adapter, op, b, symbols, requirements, inputs, ws)) return *f;
  return std::move(mu);
}

}  // namespace tfg::torch

// With TFG_TORCH_SEPARATE, construction and legality over the backend's own adapter are
// instantiated once, in tfg::torch_compiled (src/mutate.cpp).
#if defined(TFG_TORCH_SEPARATE)
namespace tfg::torch {
extern template std::variant<mutant, mutation_failure> instantiate<torch_match_adapter>(
    const model&, const torch_match_adapter&, const match::compiled_operator&, const match::bindings&,
    const match::symbol_table&, match::workspace&, const input_set*);
extern template std::optional<mutation_failure> check_mutant<torch_match_adapter>(
    mutant&, const torch_match_adapter&, const match::compiled_operator&, const match::bindings&, match::symbol_table&,
    const match::requirement_table&, const input_set&, match::workspace&);
extern template std::variant<mutant, mutation_failure> mutate<torch_match_adapter>(
    const model&, const torch_match_adapter&, const match::compiled_operator&, const match::bindings&,
    match::symbol_table&, const match::requirement_table&, const input_set&, match::workspace&);
}  // namespace tfg::torch
extern template void tfg::match::construct_into<tfg::torch::torch_match_adapter>(
    tfg::match::candidate_set&, const tfg::torch::torch_match_adapter&, std::span<const tfg::match::compiled_operator>,
    const tfg::match::construct_options&);
#endif

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/mutate/mutate.ipp"
#endif
