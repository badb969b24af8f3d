#pragma once
/// torch.export programs in and out: `.pt2` archives as `torch.export.save` writes them.
///
/// Import reads the archive with LibTorch's own zip reader (`caffe2::serialize`) and its own
/// C++ types of the export schema (`torch/csrc/utils/generated_serialization_types.h`, the types
/// `torch.export.save` serialises to `models/<name>.json`), then builds a TorchScript graph of
/// the program's ATen calls (every parameter, buffer and tensor constant a graph constant, each
/// node's operator the schema overload the program names) and hands it to the same translator
/// as TorchScript files, so that everything downstream (matching, mutation, execution under
/// every configuration) is unchanged. The program itself is kept on the model (`model::pt2`).
///
/// Export writes a `model` (the seed or a mutant) back as an archive that `torch.export.load`
/// reads and runs: one ATen node per TFG node, the seed's parameters and buffers under their
/// names, new tensors as tensor constants, every value's meta data (shape, dtype, strides) from
/// one op-by-op run. Values that the program computes from shapes (an `aten::size` in a mutant)
/// are written as the constants that run gave: a `.pt2` program has static shapes, as the seed's.
///
/// Needs LibTorch 2.x with the export schema's C++ types (2.6 and later); with Debian's 1.13,
/// `looks_like_pt2` still recognises an archive, so that the user is told why it is refused.
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/compat.hpp"
#include "tfg/torch/import/model.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/util/atomic_file.hpp"

#if TFG_TORCH_AT_LEAST(2, 6) && __has_include(<torch/csrc/utils/generated_serialization_types.h>)
#define TFG_HAS_PT2 1
#include "tfg/torch/execute/execute.hpp"
#include "tfg/torch/import/export.hpp"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/export/pt2_archive_constants.h>
#include <torch/csrc/jit/frontend/source_range.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/csrc/utils/generated_serialization_types.h>

#include <map>
#include <set>
#include <unordered_map>
#else
#define TFG_HAS_PT2 0
#endif

namespace tfg::torch {

/// Whether `path` is a torch.export archive: a zip whose central directory names an
/// `archive_format` record (what `torch.export.save` writes first). Reads only the file's tail.
[[nodiscard]] TFG_TORCH_DECL bool looks_like_pt2(const std::string& path);

#if TFG_HAS_PT2

namespace ser = ::torch::_export;

namespace pt2_detail {
/// `s` as a Python identifier, which FX names and forward's argument names must be: every other
/// character an underscore, `prefix` put before a leading digit (or an empty name).
[[nodiscard]] TFG_TORCH_DECL std::string identifier(std::string s, const char* prefix = "v_");

[[nodiscard]] TFG_TORCH_DECL ser::F64 f64(double d);
}  // namespace pt2_detail

/// What the importer keeps of a `.pt2` seed, to write the seed or its mutants back.
struct pt2_program {
  ser::ExportedProgram program;  ///< models/<name>.json as read
  std::string model_name = "model";
  struct state {
    enum class kind : std::uint8_t { parameter, buffer, constant };
    kind what = kind::constant;
    std::string fqn;
    bool persistent = true;
    bool requires_grad = false;
  };
  /// The seed's weights by tensor identity: a mutant that still reads one reads it under its name.
  std::unordered_map<const c10::TensorImpl*, state> states;
  std::vector<at::Tensor> weights;       ///< keeps the tensors (and so the keys) alive
  std::vector<c10::IValue> sample_args;  ///< data/sample_inputs/<name>.pt's positional args, if any
};

namespace pt2_detail {

[[nodiscard]] TFG_TORCH_DECL c10::ScalarType c10_scalar_type(ser::ScalarType t, const std::string& where);

[[nodiscard]] TFG_TORCH_DECL ser::ScalarType ser_scalar_type(c10::ScalarType t);

[[nodiscard]] TFG_TORCH_DECL c10::MemoryFormat c10_memory_format(ser::MemoryFormat f);

[[nodiscard]] TFG_TORCH_DECL ser::MemoryFormat ser_memory_format(c10::MemoryFormat f);

[[nodiscard]] TFG_TORCH_DECL c10::Layout c10_layout(ser::Layout l);

[[nodiscard]] TFG_TORCH_DECL ser::Layout ser_layout(c10::Layout l);

[[nodiscard]] TFG_TORCH_DECL std::vector<std::int64_t> ints_of(const std::vector<ser::SymInt>& v,
                                                               const std::string& where);

[[nodiscard]] TFG_TORCH_DECL std::vector<ser::SymInt> sym_ints(c10::IntArrayRef v);

[[nodiscard]] TFG_TORCH_DECL ser::TensorMeta tensor_meta(const at::Tensor& t);

/// The archive's `name` record as a string; throws model_error naming the archive.
[[nodiscard]] TFG_TORCH_DECL std::string record(caffe2::serialize::PyTorchStreamReader& r, const std::string& path,
                                                const std::string& name);

/// `file.py:LINE` of the last frame of an FX stack trace (the model's own code).
[[nodiscard]] TFG_TORCH_DECL std::pair<std::string, std::size_t> last_frame(const std::string& trace);

/// `__module.layer1.0.conv1` from FX's nn_module_stack (`key,path,class;...`; the innermost last).
[[nodiscard]] TFG_TORCH_DECL std::string module_path(const std::string& stack);

/// Builds the TorchScript graph of one exported program.
class program_reader {
 public:
  program_reader(std::string source, const pt2_program& p, std::unordered_map<std::string, at::Tensor> weights)
      : source_(std::move(source)), p_(p), weights_(std::move(weights)) {}

  std::shared_ptr<::torch::jit::Graph> build() {
    namespace jit = ::torch::jit;
    g_ = std::make_shared<jit::Graph>();
    const auto& gm = p_.program.get_graph_module();
    const auto& graph = gm.get_graph();
    metas_ = &graph.get_tensor_values();
    // Placeholders: weights become constants, user inputs graph inputs (typed from their meta).
    for (const auto& spec : gm.get_signature().get_input_specs()) {
      using T = ser::InputSpec::Tag;
      switch (spec.tag()) {
        case T::USER_INPUT: {
          const auto& a = spec.get_user_input().get_arg();
          if (a.tag() != ser::Argument::Tag::AS_TENSOR)
            fail(
                "the forward takes a non-tensor argument (a constant export specialised); only tensor "
                "arguments are supported");
          const auto& name = a.get_as_tensor().get_name();
          auto* v = g_->addInput(pt2_detail::identifier(name));
          v->setType(input_type(name));
          value_[name] = v;
          break;
        }
        case T::PARAMETER:
          constant(spec.get_parameter().get_arg().get_name(), spec.get_parameter().get_parameter_name());
          break;
        case T::BUFFER: constant(spec.get_buffer().get_arg().get_name(), spec.get_buffer().get_buffer_name()); break;
        case T::TENSOR_CONSTANT:
          constant(spec.get_tensor_constant().get_arg().get_name(),
                   spec.get_tensor_constant().get_tensor_constant_name());
          break;
        case T::CUSTOM_OBJ: fail("the program holds a script object (a custom class), which is not supported");
        case T::TOKEN: fail("the program threads effect tokens (side-effecting operators), which are not supported");
        case T::CONSTANT_INPUT: fail("the forward takes a non-tensor argument; only tensor arguments are supported");
      }
    }
    for (const auto& n : graph.get_nodes()) node(n);
    std::vector<jit::Value*> outs;
    for (const auto& spec : gm.get_signature().get_output_specs()) {
      if (spec.tag() != ser::OutputSpec::Tag::USER_OUTPUT)
        fail(
            "the program mutates a buffer, parameter or input (exported in training mode?); export the model in "
            "eval mode");
      outs.push_back(argument_value(spec.get_user_output().get_arg(), c10::AnyType::get(), "output"));
    }
    if (outs.size() == 1) g_->registerOutput(outs[0]);
    else g_->registerOutput(g_->insertNode(g_->createTuple(outs))->output());
    return g_;
  }

 private:
  /// wrap_with_set_grad_enabled(enabled, graph, *args) or wrap_with_autocast(device, dtype,
  /// enabled, cache, graph, *args): the region's nodes, in a scope of their own names, with its
  /// inputs bound to the arguments and its outputs to the node's.
  void inline_region(const ser::Node& n, bool autocast) {
    const auto& in = n.get_inputs();
    std::size_t g = 0;
    while (g < in.size() && in[g].get_arg().tag() != ser::Argument::Tag::AS_GRAPH) ++g;
    if (g == in.size()) fail("a region without its graph", &n);
    if (autocast && g >= 3 && in[2].get_arg().tag() == ser::Argument::Tag::AS_BOOL && in[2].get_arg().get_as_bool())
      fail("an autocast region (mixed precision) is not supported; export the model without autocast", &n);
    const auto& sub = *in[g].get_arg().get_as_graph().get_graph();
    const auto& formals = sub.get_inputs();
    if (formals.size() != in.size() - g - 1) fail("the region's graph takes another number of arguments", &n);
    std::unordered_map<std::string, ::torch::jit::Value*> scope;
    std::unordered_map<std::string, std::string> weights;
    for (std::size_t i = 0; i < formals.size(); ++i) {
      const auto& actual = in[g + 1 + i].get_arg();
      if (formals[i].tag() != ser::Argument::Tag::AS_TENSOR || actual.tag() != ser::Argument::Tag::AS_TENSOR)
        fail("a region argument that is not a tensor", &n);
      const auto& outer = actual.get_as_tensor().get_name();
      const auto& inner = formals[i].get_as_tensor().get_name();
      scope[inner] = tensor(outer, &n);
      if (auto w = weight_of_.find(outer); w != weight_of_.end()) weights[inner] = w->second;
    }
    std::swap(scope, value_);
    std::swap(weights, weight_of_);
    for (const auto& inner : sub.get_nodes()) node(inner);
    std::vector<::torch::jit::Value*> results;
    for (const auto& o : sub.get_outputs()) {
      if (o.tag() != ser::Argument::Tag::AS_TENSOR) fail("a region result that is not a tensor", &n);
      results.push_back(tensor(o.get_as_tensor().get_name(), &n));
    }
    std::swap(scope, value_);
    std::swap(weights, weight_of_);
    const auto& outs = n.get_outputs();
    if (outs.size() != results.size()) fail("the region returns another number of results", &n);
    for (std::size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].tag() != ser::Argument::Tag::AS_TENSOR) fail("a region result that is not a tensor", &n);
      value_[outs[i].get_as_tensor().get_name()] = results[i];
    }
  }

  [[noreturn]] void fail(const std::string& what, const ser::Node* n = nullptr) const {
    std::string msg = source_ + ": ";
    if (n) msg += "node `" + (n->get_name() ? *n->get_name() : std::string("?")) + "` (" + n->get_target() + "): ";
    throw model_error(msg + what);
  }

  c10::TypePtr input_type(const std::string& name) const {
    auto it = metas_->find(name);
    if (it == metas_->end()) return c10::TensorType::get();
    const auto& m = it->second;
    const auto where = source_ + ": input " + name;
    const auto dtype = c10_scalar_type(m.get_dtype(), where);
    return c10::TensorType::create(dtype, c10::Device(c10::kCPU),
                                   c10::VaryingShape<int64_t>(ints_of(m.get_sizes(), where)),
                                   c10::VaryingShape<int64_t>(ints_of(m.get_strides(), where)), false);
  }

  void constant(const std::string& placeholder, const std::string& fqn) {
    auto it = weights_.find(fqn);
    if (it == weights_.end())
      fail("the weight or constant `" + fqn + "` (placeholder " + placeholder + ") is not in the archive");
    auto* v = g_->insertConstant(c10::IValue(it->second));
    v->setDebugName(pt2_detail::identifier(placeholder));
    value_[placeholder] = v;
    weight_of_[placeholder] = fqn;
  }

  ::torch::jit::Value* tensor(const std::string& name, const ser::Node* n) {
    auto it = value_.find(name);
    if (it == value_.end()) fail("reads `" + name + "`, which no earlier node produces", n);
    return it->second;
  }

  ::torch::jit::Value* constant_value(c10::IValue v) { return g_->insertConstant(std::move(v)); }

  /// An argument as a value of (schema) type `type`: ints given for floats become floats.
  ::torch::jit::Value* argument_value(const ser::Argument& a, const c10::TypePtr& type, const std::string& arg,
                                      const ser::Node* n = nullptr) {
    namespace jit = ::torch::jit;
    using T = ser::Argument::Tag;
    auto wants_float = [&] {
      auto t = type;
      if (auto o = t->castRaw<c10::OptionalType>()) t = o->getElementType();
      return t->kind() == c10::TypeKind::FloatType;
    };
    auto sym = [&](const ser::SymIntArgument& s) -> std::int64_t {
      if (s.tag() != ser::SymIntArgument::Tag::AS_INT)
        fail("argument `" + arg + "` is a symbolic integer (exported with dynamic shapes); export with static shapes",
             n);
      return s.get_as_int();
    };
    switch (a.tag()) {
      case T::AS_NONE: return constant_value(c10::IValue());
      case T::AS_TENSOR: return tensor(a.get_as_tensor().get_name(), n);
      case T::AS_OPTIONAL_TENSOR: {
        const auto& o = a.get_as_optional_tensor();
        if (o.tag() == ser::OptionalTensorArgument::Tag::AS_NONE) return constant_value(c10::IValue());
        return tensor(o.get_as_tensor().get_name(), n);
      }
      case T::AS_TENSORS: {
        std::vector<jit::Value*> items;
        for (const auto& t : a.get_as_tensors()) items.push_back(tensor(t.get_name(), n));
        return g_->insertNode(g_->createList(c10::TensorType::get(), items))->output();
      }
      case T::AS_OPTIONAL_TENSORS: {
        std::vector<jit::Value*> items;
        for (const auto& o : a.get_as_optional_tensors()) {
          if (o.tag() == ser::OptionalTensorArgument::Tag::AS_NONE) {
            auto* none = constant_value(c10::IValue());
            items.push_back(none);
          } else {
            items.push_back(tensor(o.get_as_tensor().get_name(), n));
          }
        }
        return g_->insertNode(g_->createList(c10::OptionalType::create(c10::TensorType::get()), items))->output();
      }
      case T::AS_INT:
        return wants_float() ? constant_value(static_cast<double>(a.get_as_int())) : constant_value(a.get_as_int());
      case T::AS_SYM_INT:
        return wants_float() ? constant_value(static_cast<double>(sym(a.get_as_sym_int())))
                             : constant_value(sym(a.get_as_sym_int()));
      case T::AS_INTS: return constant_value(c10::IValue(a.get_as_ints()));
      case T::AS_SYM_INTS: {
        std::vector<std::int64_t> v;
        for (const auto& s : a.get_as_sym_ints()) v.push_back(sym(s));
        return constant_value(c10::IValue(v));
      }
      case T::AS_FLOAT: return constant_value(a.get_as_float().get());
      case T::AS_FLOATS: {
        std::vector<double> v;
        for (const auto& f : a.get_as_floats()) v.push_back(f.get());
        return constant_value(c10::IValue(v));
      }
      case T::AS_BOOL: return constant_value(a.get_as_bool());
      case T::AS_BOOLS: {
        c10::List<bool> v;
        for (bool b : a.get_as_bools()) v.push_back(b);
        return constant_value(c10::IValue(v));
      }
      case T::AS_STRING: return constant_value(a.get_as_string());
      case T::AS_STRINGS: {
        c10::List<std::string> v;
        for (const auto& s : a.get_as_strings()) v.push_back(s);
        return constant_value(c10::IValue(v));
      }
      case T::AS_SCALAR_TYPE:
        return constant_value(c10::IValue(c10_scalar_type(a.get_as_scalar_type(), source_ + ": argument " + arg)));
      case T::AS_MEMORY_FORMAT: return constant_value(c10::IValue(c10_memory_format(a.get_as_memory_format())));
      case T::AS_LAYOUT: return constant_value(c10::IValue(c10_layout(a.get_as_layout())));
      case T::AS_DEVICE: {
        const auto& d = a.get_as_device();
        std::string s = d.get_type();
        if (d.get_index()) s += ":" + std::to_string(*d.get_index());
        return constant_value(c10::IValue(c10::Device(s)));
      }
      case T::AS_COMPLEX: {
        const auto& c = a.get_as_complex();
        return constant_value(c10::IValue(c10::complex<double>(c.get_real().get(), c.get_imag().get())));
      }
      case T::AS_GRAPH:
        fail("argument `" + arg + "` is a subgraph: control flow (torch.cond, while_loop, map) is not supported", n);
      default: break;
    }
    fail("argument `" + arg + "` is of a kind this importer does not read (symbolic value, custom object, nested list)",
         n);
  }

  void node(const ser::Node& n) {
    namespace jit = ::torch::jit;
    const auto& target = n.get_target();
    constexpr std::string_view prefix = "torch.ops.";
    if (target.rfind(prefix, 0) != 0) fail("a call of `" + target + "`, which is not an operator; not supported", &n);
    const auto rest = target.substr(prefix.size());
    // Export-time guards (a dtype, a size range), not computations: a mutant that changes a
    // dtype upstream must not fail an assertion the user's model never makes at run time.
    if (rest.rfind("aten._assert_", 0) == 0 || rest.rfind("aten.sym_constrain_range", 0) == 0) return;
    // A region under torch.no_grad()/enable_grad() (Llama's rotary embedding), or under a
    // disabled autocast: its graph is inlined; grad mode does not change an inference result.
    if (rest == "higher_order.wrap_with_set_grad_enabled" || rest == "higher_order.wrap_with_autocast") {
      inline_region(n, rest == "higher_order.wrap_with_autocast");
      return;
    }
    if (rest.rfind("higher_order.", 0) == 0)
      fail("control flow or a higher-order operator (" + rest.substr(13) +
               ") is not supported; export the model with the branch taken (static control flow)",
           &n);
    const auto dot1 = rest.find('.');
    const auto dot2 = rest.rfind('.');
    if (dot1 == std::string::npos || dot2 == dot1) fail("cannot read the operator name", &n);
    const auto ns = rest.substr(0, dot1);
    const auto name = rest.substr(dot1 + 1, dot2 - dot1 - 1);
    const auto overload = rest.substr(dot2 + 1);
    const auto symbol = c10::Symbol::fromQualString(ns + "::" + name);
    std::shared_ptr<jit::Operator> op;
    for (const auto& o : jit::getAllOperatorsFor(symbol))
      if (o->schema().overload_name() == (overload == "default" ? std::string() : overload)) op = o;
    if (!op) {
      if (ns != "aten" && ns != "prim")
        fail("the operator " + ns + "::" + name + " of an extension library is not registered in this LibTorch process",
             &n);
      fail("LibTorch has no operator " + ns + "::" + name + "." + overload, &n);
    }
    const auto& schema = op->schema();
    std::vector<jit::Value*> args;
    for (const auto& formal : schema.arguments()) {
      const ser::NamedArgument* given = nullptr;
      for (const auto& a : n.get_inputs())
        if (a.get_name() == formal.name()) given = &a;
      if (given) {
        // A weight written in place (batch norm's running statistics, a step counter): the
        // program was exported in training mode, and its graph would change its own constants.
        if (formal.alias_info() && formal.alias_info()->isWrite() &&
            given->get_arg().tag() == ser::Argument::Tag::AS_TENSOR)
          if (auto w = weight_of_.find(given->get_arg().get_as_tensor().get_name()); w != weight_of_.end())
            fail("writes `" + w->second +
                     "` in place (a model exported in training mode updates its buffers); "
                     "export the model in eval mode",
                 &n);
        args.push_back(argument_value(given->get_arg(), formal.type(), formal.name(), &n));
      } else if (formal.default_value()) {
        args.push_back(constant_value(*formal.default_value()));
      } else {
        fail("argument `" + formal.name() + "` of " + schema.name() + " is missing", &n);
      }
    }
    const auto& returns = schema.returns();
    auto* jn = g_->insertNode(g_->create(symbol, args, returns.size()));
    for (std::size_t i = 0; i < returns.size(); ++i) jn->output(i)->setType(returns[i].type());
    // Where the call came from: the model's own line and module, for messages and reports.
    const auto& meta = n.get_metadata();
    if (auto t = meta.find("stack_trace"); t != meta.end()) {
      auto [file, line] = last_frame(t->second);
      if (!file.empty() && line > 0) {
        auto src = std::make_shared<jit::Source>(std::string(target), file, line);
        jn->setSourceRange(jit::SourceRange(src, 0, target.size()));
      }
    }
    if (auto s = meta.find("nn_module_stack"); s != meta.end())
      if (auto path = module_path(s->second); !path.empty())
        jn->setScope(c10::make_intrusive<jit::Scope>()->push(c10::Symbol::scope(path)));
    if (!jn->maybeOperator()) fail("its arguments do not fit the schema " + c10::toString(schema), &n);
    // Results: one output per return; a Tensor[] return is unpacked into the names the program gives.
    const auto& outs = n.get_outputs();
    if (outs.size() != returns.size() && !(returns.size() == 1 && outs.size() > 1))
      fail("has " + std::to_string(outs.size()) + " outputs for " + std::to_string(returns.size()) + " returns", &n);
    if (returns.size() == 1 && outs.size() > 1) {
      // a tuple return written as several outputs is not produced by the serializer; be strict
      fail("has several outputs for a single return", &n);
    }
    for (std::size_t i = 0; i < outs.size(); ++i) {
      const auto& o = outs[i];
      using T = ser::Argument::Tag;
      if (o.tag() == T::AS_TENSOR) {
        jn->output(i)->setDebugName(pt2_detail::identifier(o.get_as_tensor().get_name()));
        value_[o.get_as_tensor().get_name()] = jn->output(i);
      } else if (o.tag() == T::AS_TENSORS) {
        const auto& names = o.get_as_tensors();
        auto* unpack = g_->insertNode(g_->createListUnpack(jn->output(i), names.size()));
        for (std::size_t j = 0; j < names.size(); ++j) {
          unpack->output(j)->setDebugName(pt2_detail::identifier(names[j].get_name()));
          value_[names[j].get_name()] = unpack->output(j);
        }
      } else if (o.tag() == T::AS_NONE) {
        // an unused optional result
      } else {
        fail("has a non-tensor result (a symbolic size?), which is not supported", &n);
      }
    }
  }

  std::string source_;
  const pt2_program& p_;
  std::unordered_map<std::string, at::Tensor> weights_;
  const std::unordered_map<std::string, ser::TensorMeta>* metas_ = nullptr;
  std::shared_ptr<::torch::jit::Graph> g_;
  std::unordered_map<std::string, ::torch::jit::Value*> value_;
  std::unordered_map<std::string, std::string> weight_of_;  ///< placeholder -> the weight's name (fqn)
};

/// The tensors of one payload config (`data/weights/...` or `data/constants/...`), by FQN; raw
/// records shared by several tensors are read once, so aliasing weights stay aliases.
TFG_TORCH_DECL void read_payloads(caffe2::serialize::PyTorchStreamReader& r, const std::string& path,
                                  const std::string& dir, const std::string& config_name,
                                  std::unordered_map<std::string, at::Tensor>& out);

}  // namespace pt2_detail

/// Reads `.pt2` archives written by `torch.export.save`.
class pt2_importer final : public importer {
 public:
  [[nodiscard]] model load(const std::string& path) const override {
    std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
    try {
      reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    } catch (const std::exception& e) {
      throw model_error(path + ": cannot open the torch.export archive: " + first_line(e.what()));
    }
    auto& r = *reader;
    namespace spec = ::torch::_export::archive_spec;
    if (const auto f = pt2_detail::record(r, path, std::string(spec::ARCHIVE_FORMAT_PATH));
        f != spec::ARCHIVE_FORMAT_VALUE)
      throw model_error(path + ": archive_format is `" + f + "`, not pt2");
    // The program: models/<name>.json; "model" (torch.export.save's name) unless there is one other.
    std::vector<std::string> names;
    for (const auto& rec : r.getAllRecords())
      if (rec.rfind("models/", 0) == 0 && rec.size() > 12 && rec.substr(rec.size() - 5) == ".json")
        names.push_back(rec.substr(7, rec.size() - 12));
    if (names.empty()) {
      if (r.hasRecord("data/aotinductor/model/") || !r.getAllRecords().empty())
        for (const auto& rec : r.getAllRecords())
          if (rec.rfind("data/aotinductor/", 0) == 0)
            throw model_error(path +
                              ": an AOTInductor package (compiled code, no program graph): save the program with "
                              "torch.export.save instead");
      throw model_error(path + ": the archive holds no program (models/*.json)");
    }
    auto p = std::make_shared<pt2_program>();
    p->model_name = std::find(names.begin(), names.end(), "model") != names.end() ? "model" : names.front();
    if (names.size() > 1 && p->model_name != "model")
      throw model_error(path + ": the archive holds several programs and none is called `model`");
    const auto json_name = "models/" + p->model_name + ".json";
    try {
      p->program = nlohmann::json::parse(pt2_detail::record(r, path, json_name)).get<ser::ExportedProgram>();
    } catch (const nlohmann::json::exception& e) {
      throw model_error(path + ": " + json_name +
                        ": not an exported program this LibTorch (" TORCH_VERSION ") can read: " + e.what());
    }
    std::unordered_map<std::string, at::Tensor> weights;
    pt2_detail::read_payloads(r, path, std::string(spec::WEIGHTS_DIR),
                              "data/weights/" + p->model_name + "_weights_config.json", weights);
    pt2_detail::read_payloads(r, path, std::string(spec::CONSTANTS_DIR),
                              "data/constants/" + p->model_name + "_constants_config.json", weights);
    // Remember which tensor is which weight, so that a mutant is written back with the seed's names.
    for (const auto& s : p->program.get_graph_module().get_signature().get_input_specs()) {
      using T = ser::InputSpec::Tag;
      pt2_program::state st;
      std::string fqn;
      if (s.tag() == T::PARAMETER) {
        st.what = pt2_program::state::kind::parameter;
        fqn = s.get_parameter().get_parameter_name();
      } else if (s.tag() == T::BUFFER) {
        st.what = pt2_program::state::kind::buffer;
        fqn = s.get_buffer().get_buffer_name();
        st.persistent = s.get_buffer().get_persistent();
      } else if (s.tag() == T::TENSOR_CONSTANT) {
        fqn = s.get_tensor_constant().get_tensor_constant_name();
      } else {
        continue;
      }
      if (auto w = weights.find(fqn); w != weights.end()) {
        st.fqn = fqn;
        st.requires_grad = st.what == pt2_program::state::kind::parameter;
        p->states[w->second.unsafeGetTensorImpl()] = st;
        p->weights.push_back(w->second);
      }
    }
    // Sample inputs, when the program was saved with them: torch.save((args, kwargs)).
    const auto samples = "data/sample_inputs/" + p->model_name + ".pt";
    if (r.hasRecord(samples)) {
      try {
        auto bytes = pt2_detail::record(r, path, samples);
        auto v = ::torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
        if (v.isTuple() && v.toTupleRef().elements().size() == 2 && v.toTupleRef().elements()[0].isTuple()) {
          const auto& args = v.toTupleRef().elements()[0].toTupleRef().elements();
          p->sample_args.assign(args.begin(), args.end());
        }
      } catch (const std::exception&) {
        // sample inputs are a convenience; a program without readable ones is still a program
      }
    }
    auto graph = pt2_detail::program_reader(path, *p, std::move(weights)).build();
    auto m = torchscript_importer::from_graph(*graph, path);
    m.pt2 = p;
    return m;
  }
  [[nodiscard]] std::string_view format() const override { return "torch.export"; }
};

namespace pt2_detail {

/// `torch.save(v)` as bytes: the zip layout torch.save writes (data.pkl, one record per
/// storage), pickled without TorchScript's type tags, which torch.load's weights_only mode (the
/// default since PyTorch 2.6) refuses; torch::pickle_save writes them.
[[nodiscard]] TFG_TORCH_DECL std::string torch_save_bytes(const c10::IValue& v);

/// `torch.save((tuple(args), {}))` as bytes, each tensor a contiguous copy of its own.
[[nodiscard]] TFG_TORCH_DECL std::string torch_save_args(const std::vector<c10::IValue>& args);

/// Writes one model as an exported program.
class program_writer {
 public:
  program_writer(const model& m, const std::vector<c10::IValue>& args) : m_(m), args_(args) {}

  void write(const std::string& path) {
    namespace jit = ::torch::jit;
    // 1. Every value the program computes, from one op-by-op run (for the tensor meta data).
    executor ex(m_, execute_options{c10::Device(c10::kCPU), /*free_dead_values=*/false});
    {
      c10::InferenceMode guard;
      ex.run(args_);
    }
    // 2. The TorchScript graph of the model: each node with its schema, in topological order.
    auto g = std::make_shared<jit::Graph>();
    detail::graph_builder builder(m_, g);
    builder.build();
    std::unordered_map<const jit::Value*, c10::IValue> value;
    for (const auto& [edge, v] : builder.values())
      value[v] = ex.value(graph::edge_id{static_cast<std::uint32_t>(edge)});
    // `prim::NumToTensor` (a traced `x.size(0) // n` as a tensor) is TorchScript's, not ATen's: in
    // a program it is `aten.scalar_tensor` with the result's dtype, which tracers can fake (Dynamo
    // runs a prim op for real and then mixes a real tensor with fake ones).
    for (auto it = g->nodes().begin(); it != g->nodes().end();) {
      auto* n = *it;
      ++it;
      if (n->kind() != c10::prim::NumToTensor) continue;
      const auto found = value.find(n->output());
      if (found == value.end() || !found->second.isTensor()) continue;
      const c10::IValue result = found->second;
      value.erase(found);  // the node goes: its Value's address may be reused
      jit::WithInsertPoint here(n);
      auto* dtype = g->insertConstant(c10::IValue(static_cast<std::int64_t>(result.toTensor().scalar_type())));
      auto* none = g->insertConstant(c10::IValue());
      auto* st = g->insertNode(g->create(c10::aten::scalar_tensor, {n->input(0), dtype, none, none, none}, 1));
      st->output()->setType(n->output()->type());
      value[st->output()] = result;
      n->output()->replaceAllUsesWith(st->output());
      n->destroy();
    }

    ser::Graph out;
    std::vector<ser::Argument> inputs, weights_in;
    std::vector<ser::InputSpec> specs, weight_specs;
    std::unordered_map<std::string, ser::TensorMeta> metas;
    std::vector<ser::Node> nodes;
    ser::PayloadConfig weights_config, constants_config;
    std::unordered_map<std::string, ser::PayloadMeta> wconf, cconf;
    std::vector<std::pair<std::string, at::Tensor>> payloads;  // record name, tensor

    auto meta_of = [&](const jit::Value* v, const at::Tensor& t) { metas[name_of(v)] = tensor_meta(t); };
    auto tensor_arg = [&](const jit::Value* v) {
      ser::TensorArgument t;
      t.set_name(name_of(v));
      return t;
    };

    // Graph inputs (user inputs).
    for (std::size_t i = 0; i < g->inputs().size(); ++i) {
      const auto* v = g->inputs()[i];
      if (i >= args_.size() || !args_[i].isTensor())
        throw model_error(m_.source + ": export to .pt2: forward argument " + std::to_string(i) + " is not a tensor");
      meta_of(v, args_[i].toTensor());
      ser::Argument a;
      a.set_as_tensor(tensor_arg(v));
      inputs.push_back(a);
      ser::UserInputSpec u;
      u.set_arg(a);
      ser::InputSpec s;
      s.set_user_input(u);
      specs.push_back(s);
    }

    std::size_t new_constants = 0;
    std::map<const c10::TensorImpl*, std::string> written;  // a tensor read by several constants is one weight
    for (auto* n : g->nodes()) {
      if (n->kind() == c10::prim::Constant) {
        auto iv = jit::toIValue(n->output());
        if (!iv || !iv->isTensor()) continue;  // non-tensor constants are written inline as arguments
        const auto t = iv->toTensor();
        const auto* impl = t.unsafeGetTensorImpl();
        pt2_program::state st;
        if (m_.pt2)
          if (auto it = m_.pt2->states.find(impl); it != m_.pt2->states.end()) st = it->second;
        if (st.fqn.empty()) st.fqn = "_tfg_constant" + std::to_string(new_constants++);
        // The placeholder's name: FX's convention (p_ / b_ / c_ and the FQN's dots as underscores).
        const char* prefix = st.what == pt2_program::state::kind::parameter ? "p_"
                             : st.what == pt2_program::state::kind::buffer  ? "b_"
                                                                            : "c_";
        std::string base = prefix + st.fqn;
        std::replace(base.begin(), base.end(), '.', '_');
        names_[n->output()] = unique(base);
        auto stored = t.detach();
        if (st.what == pt2_program::state::kind::parameter) stored.set_requires_grad(st.requires_grad);
        meta_of(n->output(), stored);
        ser::TensorArgument ta = tensor_arg(n->output());
        ser::InputSpec s;
        if (written.count(impl) && st.what != pt2_program::state::kind::constant) {
          // the same weight read twice (a mutant duplicated its constant): one more tensor constant
          st.what = pt2_program::state::kind::constant;
          st.fqn = "_tfg_constant" + std::to_string(new_constants++);
        }
        written[impl] = st.fqn;
        ser::PayloadMeta pm;
        pm.set_is_param(st.what == pt2_program::state::kind::parameter);
        pm.set_use_pickle(false);
        const auto contiguous = t.detach().contiguous();
        auto meta = tensor_meta(contiguous);
        meta.set_requires_grad(st.what == pt2_program::state::kind::parameter && st.requires_grad);
        pm.set_tensor_meta(std::optional<ser::TensorMeta>(meta));
        // Tensor constants and non-persistent buffers are not in the state dict: torch.export
        // keeps them with the constants (its verifier refuses them among the weights).
        const bool non_persistent = st.what == pt2_program::state::kind::buffer && !st.persistent;
        if (st.what == pt2_program::state::kind::constant || non_persistent) {
          pm.set_path_name("tensor_" + std::to_string(cconf.size()));
          payloads.emplace_back("data/constants/" + pm.get_path_name(), contiguous);
          cconf[st.fqn] = pm;
          if (non_persistent) {
            ser::InputToBufferSpec bs;
            bs.set_arg(ta);
            bs.set_buffer_name(st.fqn);
            bs.set_persistent(false);
            s.set_buffer(bs);
          } else {
            ser::InputToTensorConstantSpec c;
            c.set_arg(ta);
            c.set_tensor_constant_name(st.fqn);
            s.set_tensor_constant(c);
          }
        } else {
          pm.set_path_name("weight_" + std::to_string(wconf.size()));
          payloads.emplace_back("data/weights/" + pm.get_path_name(), contiguous);
          wconf[st.fqn] = pm;
          if (st.what == pt2_program::state::kind::parameter) {
            ser::InputToParameterSpec ps;
            ps.set_arg(ta);
            ps.set_parameter_name(st.fqn);
            s.set_parameter(ps);
          } else {
            ser::InputToBufferSpec bs;
            bs.set_arg(ta);
            bs.set_buffer_name(st.fqn);
            bs.set_persistent(st.persistent);
            s.set_buffer(bs);
          }
        }
        ser::Argument a;
        a.set_as_tensor(ta);
        weights_in.push_back(a);
        weight_specs.push_back(s);
        continue;
      }
      if (n->kind() == c10::prim::ListConstruct || n->kind() == c10::prim::TupleConstruct ||
          n->kind() == c10::prim::ListUnpack || n->kind() == c10::prim::TupleUnpack)
        continue;  // folded into their consumers / producers below
      // A shape computation (aten::size, aten::Int, arithmetic on ints): a program with static
      // shapes holds its result as a constant, as torch.export writes one; consumers read it so.
      bool scalars_only = !n->outputs().empty();
      for (const auto* o : n->outputs())
        if (o->type()->kind() == c10::TypeKind::TensorType || o->type()->kind() == c10::TypeKind::ListType)
          scalars_only = false;
      if (scalars_only) continue;
      nodes.push_back(node(n, value, meta_of));
    }
    // Parameters first, then buffers, then constants, then user inputs: the order export writes.
    auto rank = [](const ser::InputSpec& s) {
      using T = ser::InputSpec::Tag;
      return s.tag() == T::PARAMETER ? 0 : s.tag() == T::BUFFER ? 1 : 2;
    };
    std::vector<std::size_t> order(weight_specs.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](auto a, auto b) { return rank(weight_specs[a]) < rank(weight_specs[b]); });
    std::vector<ser::Argument> all_inputs;
    std::vector<ser::InputSpec> all_specs;
    for (auto i : order) {
      all_inputs.push_back(weights_in[i]);
      all_specs.push_back(weight_specs[i]);
    }
    all_inputs.insert(all_inputs.end(), inputs.begin(), inputs.end());
    all_specs.insert(all_specs.end(), specs.begin(), specs.end());

    // Outputs: the leaves of what forward returns.
    std::vector<ser::Argument> outputs;
    std::vector<ser::OutputSpec> out_specs;
    std::function<std::string(const jit::Value*)> leaves = [&](const jit::Value* v) -> std::string {
      const auto* p = v->node();
      if (p->kind() == c10::prim::TupleConstruct) {
        std::string children;
        for (const auto* i : p->inputs()) children += (children.empty() ? "" : ", ") + leaves(i);
        return R"({"type": "builtins.tuple", "context": "null", "children_spec": [)" + children + "]}";
      }
      if (p->kind() == c10::prim::ListConstruct) {
        std::string children;
        for (const auto* i : p->inputs()) children += (children.empty() ? "" : ", ") + leaves(i);
        return R"({"type": "builtins.list", "context": "null", "children_spec": [)" + children + "]}";
      }
      auto it = value.find(v);
      if (v->type()->kind() != c10::TypeKind::TensorType || it == value.end() || !it->second.isTensor())
        throw model_error(m_.source + ": export to .pt2: forward returns a value that is not a tensor");
      ser::Argument a;
      a.set_as_tensor(tensor_arg(v));
      outputs.push_back(a);
      ser::UserOutputSpec u;
      u.set_arg(a);
      ser::OutputSpec s;
      s.set_user_output(u);
      out_specs.push_back(s);
      return R"({"type": null, "context": null, "children_spec": []})";
    };
    const std::string out_spec = "[1, " + leaves(g->outputs()[0]) + "]";

    out.set_inputs(all_inputs);
    out.set_outputs(outputs);
    out.set_nodes(nodes);
    out.set_tensor_values(metas);
    out.set_is_single_tensor_return(false);
    ser::GraphSignature sig;
    sig.set_input_specs(all_specs);
    sig.set_output_specs(out_specs);

    // The module call graph's root entry: how forward's arguments and result are flattened.
    std::string leaf_list;
    std::vector<std::string> arg_names;
    for (std::size_t i = 0; i < args_.size(); ++i) {
      leaf_list += std::string(i ? ", " : "") + R"({"type": null, "context": null, "children_spec": []})";
      // A Python identifier, distinct from the others (a TorchScript graph names them `x.1`).
      std::string a = i < m_.input_names.size() && !m_.input_names[i].empty() ? m_.input_names[i] : "x";
      if (const auto dot = a.find('.'); dot != std::string::npos && dot > 0) a.resize(dot);
      a = pt2_detail::identifier(std::move(a), "x_");
      while (std::find(arg_names.begin(), arg_names.end(), a) != arg_names.end()) a += "_" + std::to_string(i);
      arg_names.push_back(a);
    }
    ser::ModuleCallSignature root_sig;
    root_sig.set_in_spec(
        R"([1, {"type": "builtins.tuple", "context": "null", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [)" +
        leaf_list + R"(]}, {"type": "builtins.dict", "context": "[]", "children_spec": []}]}])");
    root_sig.set_out_spec(out_spec);
    root_sig.set_forward_arg_names(std::optional<std::vector<std::string>>(arg_names));
    ser::ModuleCallEntry root;
    root.set_fqn(std::string());
    root.set_signature(std::optional<ser::ModuleCallSignature>(root_sig));

    ser::GraphModule gm;
    if (m_.pt2) gm = m_.pt2->program.get_graph_module();
    gm.set_graph(out);
    gm.set_signature(sig);
    gm.set_module_call_graph(std::vector<ser::ModuleCallEntry>{root});

    ser::ExportedProgram ep;
    if (m_.pt2) {
      ep = m_.pt2->program;
    } else {
      ser::SchemaVersion v;
      v.set_major(8);
      v.set_minor(0);
      ep.set_schema_version(v);
      ep.set_opset_version(std::unordered_map<std::string, std::int64_t>{{"aten", 10}});
      ep.set_verifiers(std::vector<std::string>{"TRAINING"});
      ep.set_torch_version(std::string(TORCH_VERSION));
    }
    ep.set_graph_module(gm);
    ep.set_range_constraints(std::unordered_map<std::string, ser::RangeConstraint>{});
    weights_config.set_config(wconf);
    constants_config.set_config(cconf);

    // 3. The archive, with LibTorch's own zip writer (as torch.export.save).
    namespace spec = ::torch::_export::archive_spec;
    const std::string name = m_.pt2 ? m_.pt2->model_name : "model";
    try {
      caffe2::serialize::PyTorchStreamWriter w(path);
      auto put = [&](const std::string& rec, const std::string& s) { w.writeRecord(rec, s.data(), s.size()); };
      put(std::string(spec::ARCHIVE_FORMAT_PATH), std::string(spec::ARCHIVE_FORMAT_VALUE));
      put(std::string(spec::ARCHIVE_VERSION_PATH), std::string(spec::ARCHIVE_VERSION_VALUE));
      put("models/" + name + ".json", nlohmann::json(ep).dump());
      for (const auto& [rec, t] : payloads) w.writeRecord(rec, t.data_ptr(), t.nbytes());
      put("data/weights/" + name + "_weights_config.json", nlohmann::json(weights_config).dump());
      put("data/constants/" + name + "_constants_config.json", nlohmann::json(constants_config).dump());
      // The sample inputs torch.export.load expects: torch.save((args, kwargs)).
      const auto sample = torch_save_args(args_);
      w.writeRecord("data/sample_inputs/" + name + ".pt", sample.data(), sample.size());
      w.writeEndOfFile();
    } catch (const model_error&) {
      throw;
    } catch (const std::exception& e) {
      throw model_error(path + ": cannot write the archive: " + first_line(e.what()));
    }
  }

 private:
  /// The program's name of `v`: the one given before, else a new one from its debug name.
  const std::string& name_of(const ::torch::jit::Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    return names_[v] = unique(v->debugNameBase().empty() ? "v" : v->debugNameBase());
  }

  std::string unique(std::string base) {
    base = pt2_detail::identifier(std::move(base));
    std::string name = base;
    for (std::size_t i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
    used_.insert(name);
    return name;
  }

  template <class MetaOf>
  ser::Node node(const ::torch::jit::Node* n, const std::unordered_map<const ::torch::jit::Value*, c10::IValue>& value,
                 MetaOf&& meta_of) {
    namespace jit = ::torch::jit;
    const auto* schema = n->maybeSchema();
    if (!schema)
      throw model_error(m_.source + ": export to .pt2: node " + std::string(n->kind().toQualString()) +
                        " is not an operator call (no schema)");
    const auto ns = std::string(n->kind().ns().toUnqualString());
    const auto overload = schema->overload_name().empty() ? std::string("default") : schema->overload_name();
    ser::Node out;
    out.set_target("torch.ops." + ns + "." + std::string(n->kind().toUnqualString()) + "." + overload);
    std::vector<ser::NamedArgument> args;
    for (std::size_t i = 0; i < schema->arguments().size() && i < n->inputs().size(); ++i) {
      const auto& formal = schema->arguments()[i];
      ser::NamedArgument na;
      na.set_name(formal.name());
      na.set_arg(argument(n->inputs()[i], formal.type(), value, *n));
      na.set_kind(std::optional<std::int64_t>(formal.kwarg_only() ? 2 : 1));
      args.push_back(na);
    }
    out.set_inputs(args);
    std::vector<ser::Argument> outs;
    for (const auto* o : n->outputs()) {
      ser::Argument a;
      const auto& uses = o->uses();
      if (o->type()->kind() == c10::TypeKind::ListType && uses.size() == 1 &&
          uses[0].user->kind() == c10::prim::ListUnpack) {
        std::vector<ser::TensorArgument> items;
        for (const auto* u : uses[0].user->outputs()) {
          auto it = value.find(u);
          if (it != value.end() && it->second.isTensor()) meta_of(u, it->second.toTensor());
          ser::TensorArgument t;
          t.set_name(name_of(u));
          items.push_back(t);
        }
        a.set_as_tensors(items);
      } else if (o->type()->kind() == c10::TypeKind::TensorType) {
        auto it = value.find(o);
        if (it == value.end() || !it->second.isTensor()) {
          ser::Argument none;
          none.set_as_none(true);
          outs.push_back(none);
          continue;
        }
        meta_of(o, it->second.toTensor());
        ser::TensorArgument t;
        t.set_name(name_of(o));
        a.set_as_tensor(t);
      } else {
        throw model_error(m_.source + ": export to .pt2: " + std::string(n->kind().toQualString()) +
                          " returns a tensor and a " + o->type()->str() + ", which the writer cannot express");
      }
      outs.push_back(a);
    }
    out.set_outputs(outs);
    out.set_metadata(std::unordered_map<std::string, std::string>{});
    return out;
  }

  ser::Argument argument(const ::torch::jit::Value* v, const c10::TypePtr& formal,
                         const std::unordered_map<const ::torch::jit::Value*, c10::IValue>& value,
                         const ::torch::jit::Node& user) {
    namespace jit = ::torch::jit;
    ser::Argument a;
    const auto* p = v->node();
    if (p->kind() == c10::prim::ListConstruct) {
      // a list of tensors (cat), of optional tensors (index), or of ints / floats
      auto elem = v->type()->castRaw<c10::ListType>()->getElementType();
      if (elem->kind() == c10::TypeKind::TensorType) {
        std::vector<ser::TensorArgument> items;
        for (const auto* i : p->inputs()) {
          ser::TensorArgument t;
          t.set_name(names_.at(i));
          items.push_back(t);
        }
        a.set_as_tensors(items);
        return a;
      }
      if (elem->kind() == c10::TypeKind::OptionalType) {
        std::vector<ser::OptionalTensorArgument> items;
        for (const auto* i : p->inputs()) {
          ser::OptionalTensorArgument o;
          if (i->type()->kind() == c10::TypeKind::NoneType) {
            o.set_as_none(true);
          } else {
            ser::TensorArgument t;
            t.set_name(names_.at(i));
            o.set_as_tensor(t);
          }
          items.push_back(o);
        }
        a.set_as_optional_tensors(items);
        return a;
      }
      // ints / floats / bools assembled from constants and run-time scalars: their values
      c10::impl::GenericList l(elem);
      for (const auto* i : p->inputs()) l.push_back(scalar(i, value, user));
      return constant(c10::IValue(l), formal, user);
    }
    if (v->type()->kind() == c10::TypeKind::TensorType) {
      ser::TensorArgument t;
      auto it = names_.find(v);
      if (it == names_.end())
        throw model_error(m_.source + ": export to .pt2: " + std::string(user.kind().toQualString()) +
                          " reads a tensor no earlier node wrote");
      t.set_name(it->second);
      a.set_as_tensor(t);
      return a;
    }
    return constant(scalar(v, value, user), formal, user);
  }

  c10::IValue scalar(const ::torch::jit::Value* v,
                     const std::unordered_map<const ::torch::jit::Value*, c10::IValue>& value,
                     const ::torch::jit::Node& user) {
    if (auto c = ::torch::jit::toIValue(v)) return *c;
    if (auto it = value.find(v); it != value.end()) return it->second;
    throw model_error(m_.source + ": export to .pt2: an argument of " + std::string(user.kind().toQualString()) +
                      " has no value");
  }

  ser::Argument constant(const c10::IValue& v, const c10::TypePtr& formal, const ::torch::jit::Node& user) {
    ser::Argument a;
    auto base = formal;
    if (auto o = base->castRaw<c10::OptionalType>()) base = o->getElementType();
    const auto k = base->kind();
    if (v.isNone()) {
      a.set_as_none(true);
    } else if (k == c10::TypeKind::ScalarTypeType || (v.isInt() && base->str() == "ScalarType")) {
      a.set_as_scalar_type(ser_scalar_type(static_cast<c10::ScalarType>(v.toInt())));
    } else if (k == c10::TypeKind::MemoryFormatType || base->str() == "MemoryFormat") {
      a.set_as_memory_format(ser_memory_format(static_cast<c10::MemoryFormat>(v.toInt())));
    } else if (k == c10::TypeKind::LayoutType || base->str() == "Layout") {
      a.set_as_layout(ser_layout(static_cast<c10::Layout>(v.toInt())));
    } else if (v.isDevice()) {
      ser::Device d;
      d.set_type(c10::DeviceTypeName(v.toDevice().type(), true));
      if (v.toDevice().has_index()) d.set_index(std::optional<std::int64_t>(v.toDevice().index()));
      a.set_as_device(d);
    } else if (v.isBool()) {
      a.set_as_bool(v.toBool());
    } else if (v.isInt()) {
      a.set_as_int(v.toInt());
    } else if (v.isDouble()) {
      a.set_as_float(f64(v.toDouble()));
    } else if (v.isString()) {
      a.set_as_string(v.toStringRef());
    } else if (v.isIntList()) {
      a.set_as_ints(v.toIntVector());
    } else if (v.isDoubleList()) {
      std::vector<ser::F64> fs;
      for (double d : v.toDoubleVector()) fs.push_back(f64(d));
      a.set_as_floats(fs);
    } else if (v.isBoolList()) {
      std::vector<bool> bs;
      for (bool b : v.toBoolList()) bs.push_back(b);
      a.set_as_bools(bs);
    } else if (v.isList()) {
      // a generic list of ints or doubles (assembled above)
      const auto& l = v.toListRef();
      if (!l.empty() && l[0].isDouble()) {
        std::vector<ser::F64> fs;
        for (const auto& x : l) {
          ser::F64 f;
          f.set(x.isDouble() ? x.toDouble() : static_cast<double>(x.toInt()));
          fs.push_back(f);
        }
        a.set_as_floats(fs);
      } else {
        std::vector<std::int64_t> is;
        for (const auto& x : l) is.push_back(x.toInt());
        a.set_as_ints(is);
      }
    } else if (v.isComplexDouble()) {
      ser::ComplexValue c;
      ser::F64 re, im;
      re.set(v.toComplexDouble().real());
      im.set(v.toComplexDouble().imag());
      c.set_real(re);
      c.set_imag(im);
      a.set_as_complex(c);
    } else {
      throw model_error(m_.source + ": export to .pt2: an argument of " + std::string(user.kind().toQualString()) +
                        " is a " + v.tagKind() + ", which the export schema has no form for");
    }
    return a;
  }

  const model& m_;
  const std::vector<c10::IValue>& args_;
  std::unordered_map<const ::torch::jit::Value*, std::string> names_;
  std::set<std::string> used_;
};

}  // namespace pt2_detail

/// Writes `m` as a torch.export archive at `path` (`torch.export.load` reads it). `args` are one
/// set of forward arguments: the program records every value's shape, dtype and strides, which
/// one op-by-op run on them gives. Throws model_error naming the file and the node.
inline void save_pt2(const model& m, const std::vector<c10::IValue>& args, const std::string& path) {
  pt2_detail::program_writer(m, args).write(path);
}

#endif  // TFG_HAS_PT2

/// Loads a model from `path`: a torch.export archive (`.pt2`) or a TorchScript module. Throws
/// model_error naming the file (and the node, when one is at fault).
/// `inputs_path` (or, when empty, MODEL.inputs.pt beside a TorchScript model, if there is one):
/// the profiling inputs a scripted forward with control flow is specialised on.
[[nodiscard]] TFG_TORCH_DECL model load_any(const std::string& path, const std::string& inputs_path = {});

/// The inputs a model is profiled on when the user gives none. A `.pt2` program saved with sample
/// inputs (`torch.export.save` keeps the example arguments given to `torch.export.export`): those,
/// then `count - 1` variants with every floating tensor redrawn from a standard normal and every
/// integer or bool tensor kept (token ids stay inside the vocabulary, masks stay masks). Otherwise
/// `count` random inputs from the types recorded on the graph inputs (random_inputs).
[[nodiscard]] TFG_TORCH_DECL input_set default_inputs(const model& m, std::size_t count, std::uint64_t seed = 0);

/// Writes profiling inputs as `torch.save` does for a list of argument tuples (atomically). On
/// LibTorch 2.x, inputs of tensors and scalars are written without TorchScript's type tags, so
/// that plain `torch.load` (weights_only, the default since 2.6) reads a campaign's inputs.pt;
/// an input with a dict or a list keeps the tags, which type the container for forward
/// (`Dict[str, Tensor]`, not `Dict[Any, Any]`) when flowmut reads it back.
TFG_TORCH_DECL void save_inputs(const input_set& inputs, const std::filesystem::path& path);

/// "torch.export" or "torchscript": the format load_any reads `path` as.
[[nodiscard]] inline std::string_view format_of(const std::string& path) {
  return looks_like_pt2(path) ? "torch.export" : "torchscript";
}

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/pt2.ipp"
#endif
