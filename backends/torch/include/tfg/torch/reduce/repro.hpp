#pragma once
/// Standalone reproducers: a (reduced) model written out as plain PyTorch, op by op.
///
///  - `python_forward(m, dialect, wide)`: the `forward` method of an `nn.Module` that calls
///    each operator of `m` as `torch.ops.<ns>.<op>(...)` (eager Python and torch.jit.script
///    both accept it), or, in the `torchscript` dialect for C++'s Module::define, as
///    `torch.<op>(...)` with dtype, memory-format and layout codes as ints (C++'s native
///    resolver knows neither `torch.ops` nor `torch.float32`); tensor constants are module
///    attributes `self.cK`; `wide`: float32 dtype arguments written float64 (the float64
///    baseline). Throws model_error naming the node when a node has no Python form.
///  - `write_python_repro(m, inputs, spec, dir)`: `repro.py` and `repro_data.pt` (inputs and
///    constants, `torch.load`able) in `dir`. The script runs the finding's two configurations
///    (and the float64 baseline) the way `flowmut` runs them, judges with the same tolerance
///    rule and ends with `REPRODUCED` (exit 0) or `NOT REPRODUCED` (exit 1). It imports torch
///    only.
///  - `write_cpp_repro(m, spec, dir)`: `repro.cpp`, the same in plain LibTorch (TorchScript
///    source compiled by Module::define), reading the same `repro_data.pt`.
#include "tfg/torch/linkage.hpp"
#include "tfg/util/text_template.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/oracle/compare.hpp"
#include "tfg/torch/import/model.hpp"
#include "tfg/torch/import/schema.hpp"

#include <torch/csrc/jit/serialization/pickle.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tfg::torch {

/// `m`'s forward as Python: `forward_source` is the method (4-space indented, `def forward`
/// included); `constants` are the tensors it reads as `self.c0`, `self.c1`, ...
struct python_module {
  std::string forward_source;
  std::vector<at::Tensor> constants;
  bool uses_f32_dtype = false;  ///< a float32 dtype argument occurs (the float64 baseline needs its own forward)
};

/// Who reads the forward: Python (eager and torch.jit.script) or C++'s Module::define.
enum class repro_dialect : std::uint8_t { python, torchscript };

namespace repro_detail {

[[nodiscard]] TFG_TORCH_DECL std::string py_string(const std::string& s);

[[nodiscard]] TFG_TORCH_DECL std::string py_float(double v);

[[nodiscard]] TFG_TORCH_DECL std::string py_dtype(std::int64_t code);

[[nodiscard]] TFG_TORCH_DECL std::string py_memory_format(std::int64_t code);

[[nodiscard]] TFG_TORCH_DECL std::string py_layout(std::int64_t code);

class writer {
 public:
  writer(const model& m, repro_dialect d, bool wide)
      : m_(m), ts_(d == repro_dialect::torchscript), wide_(wide), indent_(ts_ ? "    " : "        ") {}

  python_module run() {
    const auto& g = m_.graph;
    std::ostringstream body;
    const auto ins = g.graph_inputs();
    std::string sig = std::string(ts_ ? "" : "    ") + "def forward(self";
    for (std::size_t i = 0; i < ins.size(); ++i) {
      name_[graph::index(ins[i])] = "x" + std::to_string(i);
      const auto& t = g.data(ins[i]).type;
      sig += ", x" + std::to_string(i) + ": " + (t ? annotation(c10::unshapedType(t)) : tensor_type());
    }
    sig += "):\n";
    for (auto n : g.topological_order()) body << statement(n);
    body << indent_ << "return " << output(m_.output) << "\n";
    out_.forward_source = sig + body.str();
    return std::move(out_);
  }

 private:
  [[nodiscard]] std::string tensor_type() const { return ts_ ? "Tensor" : "torch.Tensor"; }

  std::string annotation(const c10::TypePtr& t) const {
    auto s = t->annotation_str();
    if (ts_) return s;
    // TorchScript's spelling is Python's with `Tensor` for torch.Tensor.
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
      if (s.compare(i, 6, "Tensor") == 0 && (i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1])))) {
        out += "torch.Tensor";
        i += 6;
      } else {
        out += s[i++];
      }
    }
    return out;
  }

  std::string tensor_constant(const at::Tensor& t) {
    out_.constants.push_back(t);
    return "self.c" + std::to_string(out_.constants.size() - 1);
  }

  /// A constant as Python, typed by the schema argument it binds to (ScalarType, MemoryFormat
  /// and Layout ints become torch.* names).
  std::string literal(const c10::IValue& v, c10::TypeKind as) {
    if (v.isNone()) return "None";
    if (v.isBool()) return v.toBool() ? "True" : "False";
    if (v.isInt()) {
      const auto x = v.toInt();
      if (as == c10::TypeKind::ScalarTypeType) {
        auto code = x;
        if (static_cast<c10::ScalarType>(x) == c10::kFloat) {
          out_.uses_f32_dtype = true;
          if (wide_) code = static_cast<std::int64_t>(c10::kDouble);
        }
        return ts_ ? std::to_string(code) : py_dtype(code);
      }
      if (ts_) return std::to_string(x);  // Module::define resolves no torch.* dtype or format names
      if (as == c10::TypeKind::MemoryFormatType) return py_memory_format(x);
      if (as == c10::TypeKind::LayoutType) return py_layout(x);
      return std::to_string(x);
    }
    if (v.isDouble()) return py_float(v.toDouble());
    if (v.isString()) return py_string(v.toStringRef());
    if (v.isDevice()) return "torch.device(" + py_string(v.toDevice().str()) + ")";
    if (v.isTensor()) return tensor_constant(v.toTensor());
    if (v.isIntList() || v.isDoubleList() || v.isBoolList() || v.isTensorList() || v.isList()) {
      std::string s = "[";
      bool first = true;
      for (const auto& x : v.toListRef()) {
        if (!first) s += ", ";
        first = false;
        s += literal(x, c10::TypeKind::AnyType);
      }
      return s + "]";
    }
    if (v.isTuple()) {
      std::string s = "(";
      for (const auto& x : v.toTupleRef().elements()) s += literal(x, c10::TypeKind::AnyType) + ", ";
      return s + ")";
    }
    throw model_error(m_.source + ": repro.py: a constant of type " + v.tagKind() + " has no Python form");
  }

  std::string argument_text(graph::node_id n, const argument& a, c10::TypeKind as) {
    const auto ins = m_.graph.inputs(n);
    switch (a.how) {
      case argument::form::edge: return name_of(ins[a.input]);
      case argument::form::constant: return literal(a.constant, as);
      case argument::form::list:
      case argument::form::tuple: {
        std::string s = a.how == argument::form::list ? "[" : "(";
        for (std::size_t i = 0; i < a.items.size(); ++i) {
          if (i) s += ", ";
          const auto& it = a.items[i];
          s += it.is_edge ? name_of(ins[it.input]) : literal(it.constant, c10::TypeKind::AnyType);
        }
        if (a.how == argument::form::tuple && a.items.size() == 1) s += ",";
        return s + (a.how == argument::form::list ? "]" : ")");
      }
    }
    return "None";
  }

  std::string name_of(graph::edge_id e) {
    auto it = name_.find(graph::index(e));
    if (it != name_.end()) return it->second;
    auto s = "v" + std::to_string(graph::index(e));
    name_[graph::index(e)] = s;
    return s;
  }

  std::string targets(graph::node_id n) {
    const auto& d = m_.graph.data(n);
    const auto outs = m_.graph.outputs(n);
    std::string s;
    for (std::size_t i = 0; i < d.results.size(); ++i) {
      const auto& r = d.results[i];
      if (i) s += ", ";
      if (r.how == result_slot::form::value) {
        s += name_of(outs[r.first_output]);
        continue;
      }
      std::string unpack;
      for (std::uint32_t j = 0; j < r.count; ++j) unpack += name_of(outs[r.first_output + j]) + ", ";
      s += d.results.size() == 1 ? unpack.substr(0, unpack.size() - 2) + (r.count == 1 ? "," : "") : "(" + unpack + ")";
    }
    return s;
  }

  /// The Python operator of an ATen operator on numbers only (`aten::add.int`,
  /// `aten::floordiv.int`, `aten::lt.float`, `aten::neg.int`, ...), empty for any other: every
  /// argument and the one result are int, float, bool or number, and the operator means the same
  /// in Python and TorchScript.
  [[nodiscard]] static std::string_view scalar_operator(const c10::FunctionSchema& s) {
    auto number = [](const c10::TypePtr& t) {
      const auto k = t->kind();
      return k == c10::TypeKind::IntType || k == c10::TypeKind::FloatType || k == c10::TypeKind::BoolType ||
             k == c10::TypeKind::NumberType;
    };
    if (s.returns().size() != 1 || !number(s.returns()[0].type())) return {};
    for (const auto& a : s.arguments())
      if (!number(a.type())) return {};
    const auto& name = s.operator_name().name;
    static const std::pair<std::string_view, std::string_view> binary[] = {
        {"aten::add", "+"}, {"aten::sub", "-"},       {"aten::mul", "*"}, {"aten::floordiv", "//"},
        {"aten::div", "/"}, {"aten::remainder", "%"}, {"aten::eq", "=="}, {"aten::ne", "!="},
        {"aten::lt", "<"},  {"aten::gt", ">"},        {"aten::le", "<="}, {"aten::ge", ">="}};
    if (s.arguments().size() == 2)
      for (const auto& [k, op] : binary)
        if (name == k) return op;
    if (s.arguments().size() == 1 && name == "aten::neg") return "-";
    return {};
  }

  std::string statement(graph::node_id n) {
    const auto& g = m_.graph;
    const auto& d = g.data(n);
    const auto outs = g.outputs(n);
    if (d.kind == c10::prim::Constant) {
      if (outs.empty()) return {};
      name_[graph::index(outs[0])] =
          d.constant.isTensor() ? tensor_constant(d.constant.toTensor()) : literal(d.constant, c10::TypeKind::AnyType);
      return {};
    }
    const auto* schema = schema_of(g, n);
    std::string call;
    if (const auto op = schema ? scalar_operator(*schema) : std::string_view{}; !op.empty()) {
      // Arithmetic on numbers (sizes, indices) as Python's operators: `torch.ops.aten.add(n, 1)`
      // resolves to add.Tensor in eager Python and returns a tensor where the graph has an int.
      const auto x = argument_text(n, d.args[0], real_kind(schema->arguments()[0]));
      call = d.args.size() == 1 ? "(" + std::string(op) + x + ")"
                                : "(" + x + " " + std::string(op) + " " +
                                      argument_text(n, d.args[1], real_kind(schema->arguments()[1])) + ")";
    } else if (schema) {
      const auto& name = schema->operator_name().name;  // "aten::gelu"
      const auto sep = name.find("::");
      const auto ns = name.substr(0, sep);
      call = (ts_ && ns == "aten" ? std::string("torch.") : "torch.ops." + ns + ".") + name.substr(sep + 2) + "(";
      bool first = true;
      for (std::size_t i = 0; i < d.args.size(); ++i) {
        const auto& f = schema->arguments()[i];
        auto text = argument_text(n, d.args[i], real_kind(f));
        // A keyword-only argument at its default None is left out: Python's overload packet
        // refuses `torch.ops.aten.arange(0, n, 1, dtype=..., layout=None, pin_memory=None)`
        // (PyTorch 2.15: "expected at most 2 argument(s)"), which torch.export programs carry.
        if (f.kwarg_only() && text == "None" && f.default_value() && f.default_value()->isNone()) continue;
        if (!first) call += ", ";
        first = false;
        if (f.kwarg_only()) call += f.name() + "=";
        call += text;
      }
      call += ")";
    } else if (d.kind == c10::prim::TupleConstruct || d.kind == c10::prim::ListConstruct) {
      const bool tuple = d.kind == c10::prim::TupleConstruct;
      call = tuple ? "(" : "[";
      for (std::size_t i = 0; i < d.args.size(); ++i) {
        if (i) call += ", ";
        call += argument_text(n, d.args[i], c10::TypeKind::AnyType);
      }
      if (tuple && d.args.size() == 1) call += ",";
      call += tuple ? ")" : "]";
    } else if ((d.kind == c10::prim::TupleUnpack || d.kind == c10::prim::ListUnpack) && d.args.size() == 1) {
      call = argument_text(n, d.args[0], c10::TypeKind::AnyType);
    } else {
      throw model_error(m_.source + ": repro.py: node " + std::string(d.kind.toQualString()) +
                        (d.where.empty() ? "" : " at " + d.where) + " has no plain-PyTorch form");
    }
    if (d.results.empty()) return indent_ + call + "\n";
    return indent_ + targets(n) + " = " + call + "\n";
  }

  std::string output(const output_tree& t) {
    switch (t.how) {
      case output_tree::form::edge: return name_of(t.edge);
      case output_tree::form::constant: return literal(t.constant, c10::TypeKind::AnyType);
      case output_tree::form::list:
      case output_tree::form::tuple: {
        std::string s = t.how == output_tree::form::list ? "[" : "(";
        for (const auto& i : t.items) s += output(i) + ", ";
        return s + (t.how == output_tree::form::list ? "]" : ")");
      }
    }
    return "None";
  }

  const model& m_;
  const bool ts_, wide_;
  const std::string indent_;
  python_module out_;
  std::unordered_map<std::size_t, std::string> name_;
};

}  // namespace repro_detail

[[nodiscard]] inline python_module python_forward(const model& m, repro_dialect d = repro_dialect::python,
                                                  bool wide = false) {
  return repro_detail::writer(m, d, wide).run();
}

/// What the reproducer checks: the finding's kind and configuration pair, and for exceptions
/// the message the failing configuration raised.
struct repro_spec {
  std::string id, title, kind, config_a, config_b;
  std::string message;   ///< exception/crash kinds: the recorded message (its last line is matched)
  std::string versions;  ///< where the finding was made (LibTorch version, ...), for the header
};

namespace repro_detail {

/// repro.py as a template file (repro.py.inc beside this header; placeholders `@NAME@`, see
/// tfg/util/text_template.hpp): the header, the configurations and the judge, with the tolerances
/// filled in by write_python_repro from compare_options, so the script judges as the tool does.
inline constexpr const char* repro_py_template =
#include "tfg/torch/reduce/repro.py.inc"
    ;

/// What both reproducers' judges take from the finding: whether b is the float64 run, the
/// float32 peers whose spread then bounds eager's error, and the last line of the recorded
/// error (exception kinds).
struct judge_settings {
  bool b_is_reference = false;
  std::vector<std::string> peers;
  std::string expect;
};

[[nodiscard]] TFG_TORCH_DECL judge_settings judge_settings_of(const repro_spec& spec);

[[nodiscard]] inline std::string py_config(const std::string& c) { return c.empty() ? "None" : py_string(c); }

/// The judge's tolerances, as both reproducer templates spell them (`@F32_RTOL@`, `@SLACK@`, ...;
/// numbers as an ostream writes a double).
[[nodiscard]] inline template_values tolerance_values(const compare_options& co) {
  auto num = [](double x) {
    std::ostringstream o;
    o << x;
    return o.str();
  };
  const auto& t = co.tolerances;
  return {{"F16_RTOL", num(t.f16.rtol)},          {"F16_ATOL", num(t.f16.atol)},
          {"BF16_RTOL", num(t.bf16.rtol)},        {"BF16_ATOL", num(t.bf16.atol)},
          {"F32_RTOL", num(t.f32.rtol)},          {"F32_ATOL", num(t.f32.atol)},
          {"F64_RTOL", num(t.f64.rtol)},          {"F64_ATOL", num(t.f64.atol)},
          {"SLACK", num(co.reference_slack)},     {"ULPS", num(co.magnitude_ulps)},
          {"GRAD_SCALE", num(co.gradient_scale)}, {"GRAD_REF_RTOL", num(co.gradient_reference_rtol)}};
}

/// The float64 run that anchors a pair's judgement, as the worker chooses it.
[[nodiscard]] inline std::string reference_of(const std::string& a, const std::string& b) {
  if (a.rfind("autograd", 0) == 0) return b == "autograd_float64" ? "" : "autograd_float64";
  return b == "float64_reference" ? "" : "float64_reference";
}

}  // namespace repro_detail

/// Writes `repro.py` and `repro_data.pt` into `dir` (created). Throws model_error when a node
/// of `m` has no plain-PyTorch form.
TFG_TORCH_DECL void write_python_repro(const model& m, const input_set& inputs, const repro_spec& spec,
                                       const std::filesystem::path& dir, const compare_options& co = {});

namespace repro_detail {

/// repro.cpp as a template file (repro.cpp.inc beside this header): the judge mirrors repro.py's.
inline constexpr const char* repro_cpp_template =
#include "tfg/torch/reduce/repro.cpp.inc"
    ;

}  // namespace repro_detail

/// Writes `repro.cpp` into `dir` beside the `repro_data.pt` write_python_repro wrote: the same
/// graph as TorchScript source compiled by `Module::define`, the same configurations (op by op
/// = the interpreter with graph optimisation off) and judge. Plain LibTorch; the build command
/// is in its first lines.
TFG_TORCH_DECL void write_cpp_repro(const model& m, const repro_spec& spec, const std::filesystem::path& dir,
                                    const compare_options& co = {});

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/reduce/repro.ipp"
#endif
