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
#include "tfg/campaign/layout.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/compare.hpp"
#include "tfg/torch/model.hpp"
#include "tfg/torch/schema.hpp"

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

[[nodiscard]] inline std::string py_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "'";
}

[[nodiscard]] inline std::string py_float(double v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  // The shortest decimal that reads back as v (as Python's repr writes it).
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

[[nodiscard]] inline std::string py_dtype(std::int64_t code) {
  switch (static_cast<c10::ScalarType>(code)) {
    case c10::kHalf: return "torch.float16";
    case c10::kBFloat16: return "torch.bfloat16";
    case c10::kFloat: return "torch.float32";
    case c10::kDouble: return "torch.float64";
    case c10::kChar: return "torch.int8";
    case c10::kByte: return "torch.uint8";
    case c10::kShort: return "torch.int16";
    case c10::kInt: return "torch.int32";
    case c10::kLong: return "torch.int64";
    case c10::kBool: return "torch.bool";
    case c10::kComplexFloat: return "torch.complex64";
    case c10::kComplexDouble: return "torch.complex128";
    default: return std::to_string(code);
  }
}

[[nodiscard]] inline std::string py_memory_format(std::int64_t code) {
  switch (static_cast<c10::MemoryFormat>(code)) {
    case c10::MemoryFormat::Contiguous: return "torch.contiguous_format";
    case c10::MemoryFormat::Preserve: return "torch.preserve_format";
    case c10::MemoryFormat::ChannelsLast: return "torch.channels_last";
    case c10::MemoryFormat::ChannelsLast3d: return "torch.channels_last_3d";
    default: return std::to_string(code);
  }
}

[[nodiscard]] inline std::string py_layout(std::int64_t code) {
  if (code == static_cast<std::int64_t>(c10::kStrided)) return "torch.strided";
  if (code == static_cast<std::int64_t>(c10::kSparse)) return "torch.sparse_coo";
  if (code == static_cast<std::int64_t>(c10::kMkldnn)) return "torch._mkldnn";
  return std::to_string(code);
}

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

/// The reproducer's fixed part: configurations and the judge (tolerances filled in by
/// write_python_repro from compare_options, so the script judges as the tool does).
inline constexpr const char* python_driver = R"PY(
def mapped(v, f):
    """v with f applied to every tensor in it (lists, tuples and dicts copied)."""
    if isinstance(v, torch.Tensor):
        return f(v)
    if isinstance(v, (list, tuple)):
        return type(v)(mapped(x, f) for x in v)
    if isinstance(v, dict):
        return {k: mapped(x, f) for k, x in v.items()}
    return v


def clone(v):
    return mapped(v, lambda t: t.clone())


def widen(v):
    return mapped(v, lambda t: t.double() if t.is_floating_point() else t.clone())


def to_channels_last(v):
    if isinstance(v, torch.Tensor) and v.dim() == 4 and v.is_floating_point():
        return v.contiguous(memory_format=torch.channels_last)
    return clone(v)


def leaves(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in leaves(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in leaves(x)]
    return []


def gradients(fn, args):
    args = [a.detach().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
            for a in args]
    wrt = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    with torch.enable_grad():
        outs = [o for o in leaves(fn(*args)) if o.is_floating_point() and o.requires_grad]
        if not outs or not wrt:
            return []
        total = sum(o.sum() for o in outs)
        grads = torch.autograd.grad(total, wrt, allow_unused=True)
    return [torch.zeros_like(w) if g is None else g for g, w in zip(grads, wrt)]


_ONNX = {}  # input shapes and dtypes -> the exported model's path (one export per shape)


def onnx_model(args):
    """Repro exported as flowmut's worker exports it: torch.export, then torch.onnx.export (dynamo),
    then the ONNX checker; the model's path."""
    import tempfile
    key = tuple((tuple(t.shape), str(t.dtype)) for t in leaves(list(args)))
    if key in _ONNX:
        return _ONNX[key]
    m = Repro(CONSTANTS).eval()
    ep = torch.export.export(m, tuple(clone(args)))
    # As flowmut's worker does: TorchScript's aten._convolution (kept by tfg's import of traced
    # models), which the ONNX exporter does not translate, as the aten.convolution it computes.
    for n in ep.graph.nodes:
        if n.op == "call_function" and n.target is torch.ops.aten._convolution.default:
            n.target, n.args = torch.ops.aten.convolution.default, tuple(n.args[:9])
    ep.graph_module.recompile()
    path = os.path.join(tempfile.mkdtemp(), "model.onnx")
    torch.onnx.export(ep, tuple(clone(args)), dynamo=True, verbose=False, report=False).save(path)
    # As the worker does: a model the ONNX checker refuses is the exporter's defect, worded as
    # the worker words it (the error's type, then its first six lines), so the message matches
    # the recorded one whether the checker wrote one line or several.
    import onnx
    try:
        onnx.checker.check_model(path, full_check=True)
    except Exception as e:
        text = "\n".join(("%s: %s" % (type(e).__name__, e)).splitlines()[:6]).strip()
        raise RuntimeError("the exporter wrote an invalid ONNX model: " + text) from e
    _ONNX[key] = path
    return path


def run(config, args):
    """One configuration on one input, as flowmut runs it: a list of tensors (outputs or gradients)."""
    torch.set_num_threads(1)
    args = clone(list(args))
    if config in ("eager_op_by_op", "threads_1_vs_n"):
        if config == "threads_1_vs_n":
            torch.set_num_threads(max(2, os.cpu_count() or 2))
        with torch.no_grad():
            return leaves(Repro(CONSTANTS)(*args))
    if config == "channels_last":
        with torch.no_grad():
            return leaves(Repro(CONSTANTS)(*[to_channels_last(a) for a in args]))
    if config in ("float64_reference", "autograd_float64"):
        m = Repro64(widen(CONSTANTS))
        if config == "autograd_float64":
            return gradients(m, widen(args))
        with torch.no_grad():
            return leaves(m(*widen(args)))
    if config == "autograd_eager":
        return gradients(Repro(CONSTANTS), args)
    if config in ("graph_executor", "frozen_optimized", "autograd"):
        s = torch.jit.script(Repro(CONSTANTS).eval())
        if config == "frozen_optimized":
            s = torch.jit.optimize_for_inference(torch.jit.freeze(s))
        if config == "autograd":
            for _ in range(2):
                gradients(s, clone(args))
            return gradients(s, args)
        with torch.no_grad():
            for _ in range(2):
                s(*clone(args))
            return leaves(s(*args))
    if config == "aoti":
        # As flowmut runs it: AOTInductor's package of the exported program (C++ runner).
        import tempfile
        import torch._inductor.config as inductor_config
        inductor_config.fallback_random = True
        m = Repro(CONSTANTS).eval()
        ep = torch.export.export(m, tuple(clone(args)))
        path = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tempfile.mkdtemp(), "aoti.pt2"))
        fn = torch._inductor.aoti_load_package(path)
        with torch.no_grad():
            for _ in range(2):
                fn(*clone(args))
            return leaves(fn(*args))
    if config in ("onnxruntime", "onnxruntime_noopt"):
        # As flowmut runs them: torch.onnx.export of the exported program (dynamo exporter), then
        # ONNX Runtime's CPU provider with its graph optimisations at the default level (ALL) or
        # off. Triage by flowmut (docs/reproducers.md): TFG_ORT_LEVEL (disable, basic, extended,
        # layout, all) and TFG_ORT_DISABLED (optimiser names, comma-separated) change the session,
        # and `--ort-triage` runs several such settings on one export; neither is set when you
        # run this file.
        import onnxruntime as ort
        path = onnx_model(args)
        levels = {"disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                  "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                  "layout": getattr(ort.GraphOptimizationLevel, "ORT_ENABLE_LAYOUT", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                  "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}
        so = ort.SessionOptions()
        so.graph_optimization_level = levels[os.environ.get("TFG_ORT_LEVEL") or
                                             ("disable" if config == "onnxruntime_noopt" else "all")]
        so.intra_op_num_threads = 1
        disabled = [d for d in (os.environ.get("TFG_ORT_DISABLED") or "").split(",") if d]
        session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
        feeds = {i.name: t.detach().contiguous().numpy()
                 for i, t in zip(session.get_inputs(), [a for a in leaves(list(args))])}
        return [torch.from_numpy(o.copy()) for o in session.run(None, feeds)]
    if config in ("aot_eager", "inductor", "inductor_freezing", "inductor_dynamic", "inductor_autograd",
                  "export_decomposed"):
        # As flowmut's compiled worker runs them (backends/torch/python/tfg_compiled_worker.py).
        import torch._inductor.config as inductor_config
        inductor_config.fallback_random = True
        if config == "inductor_freezing":
            inductor_config.freezing = True
        # Triage by flowmut (docs/reproducers.md): TFG_INDUCTOR_FLAGS sets Inductor config flags
        # (JSON, dotted names), TORCH_COMPILE_BACKEND is the backend torch's compiler bisector
        # tries. Neither is set when you run this file.
        for name, value in json.loads(os.environ.get("TFG_INDUCTOR_FLAGS") or "{}").items():
            *path, leaf = name.split(".")
            owner = inductor_config
            for part in path:
                owner = getattr(owner, part, None)
            if owner is None or not hasattr(owner, leaf):
                raise SystemExit("TFG_INDUCTOR_FLAGS: torch._inductor.config has no " + name)
            setattr(owner, leaf, value)
        backend = os.environ.get("TORCH_COMPILE_BACKEND") or "inductor"
        torch._dynamo.reset()
        m = Repro(CONSTANTS).eval()
        if config == "export_decomposed":
            fn = torch.export.export(m, tuple(clone(args))).run_decompositions().module()
        elif config == "aot_eager":
            fn = torch.compile(m, backend="aot_eager")
        else:
            fn = torch.compile(m, backend=backend, dynamic=True if config == "inductor_dynamic" else None)
        if config == "inductor_autograd":
            return gradients(fn, args)
        with torch.no_grad():
            for _ in range(2):
                fn(*clone(args))
            return leaves(fn(*args))
    raise SystemExit("unknown configuration " + config)


EPS = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -23, torch.float64: 2.0 ** -52}


def rms(t):
    return float(t.double().pow(2).mean().sqrt()) if t.numel() else 0.0


def bad_elements(a, b, r, peers, gradient):
    """How many elements of b are wrong against a (flowmut's numeric rule, docs/oracle.md)."""
    tol = TOL.get(a.dtype, (0.0, 0.0))
    rtol, atol = tol
    ulps = ULPS * (GRAD_SCALE if gradient else 1.0)
    if gradient:
        rtol, atol = rtol * GRAD_SCALE, atol * GRAD_SCALE
    eps = EPS.get(a.dtype, 0.0)
    A, B = a.double(), b.double()
    if gradient:  # norm-wise
        d_ab = rms(A - B)
        bad = d_ab > atol + rtol * rms(A) + ulps * eps * rms(A)
        if r is not None and bad:
            R = r.double()
            if B_IS_REFERENCE:
                return int(rms(A - R) > GRAD_REF_RTOL * rms(R) + atol + ulps * eps * rms(R))
            bad = rms(B - R) > SLACK * rms(A - R) + atol + rtol * rms(R) + ulps * eps * rms(R)
        return int(bad)
    floor_a = atol + rtol * A.abs() + ulps * eps * rms(A)
    bad = (A - B).abs() > floor_a
    if r is not None:
        R = r.double()
        floor_r = atol + rtol * R.abs() + ulps * eps * rms(R)
        if B_IS_REFERENCE:
            spread = max([float((p.double() - A).abs().max()) for p in peers if p.shape == A.shape] + [0.0])
            bad = (A - R).abs() > floor_r + SLACK * spread
        else:
            bad = bad & ((B - R).abs() > SLACK * float((A - R).abs().max()) + floor_r)
    return int(bad.sum())


def nan_inf_mismatch(a, b):
    if not a.is_floating_point():
        return 0
    m = (a.isnan() != b.isnan()) | (a.isinf() != b.isinf()) | (a.isinf() & b.isinf() & (a.sign() != b.sign()))
    return int(m.sum())


def show(name, outs):
    for i, t in enumerate(outs):
        f = t.double().flatten()
        head = ", ".join("%.6g" % x for x in f[:4].tolist())
        print("  %-18s out%d %s %s [%s%s]" % (name, i, str(t.dtype).replace("torch.", ""), list(t.shape), head,
                                             ", ..." if f.numel() > 4 else ""))


def child(config, index):
    out = run(config, INPUTS[index])
    print("ran", config, "outputs", len(out))


BISECT = False


def main():
    global BISECT
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--ort-triage":
        # flowmut's ONNX Runtime triage: each setting LEVEL or LEVEL:OPTIMISER (disabled), separated
        # by ';', judged in this process on one export; one "TRIAGE SETTING RESULT" line each.
        print("finding:", TITLE)
        for setting in [x for x in sys.argv[2].split(";") if x]:
            level, _, disabled = setting.partition(":")
            os.environ["TFG_ORT_LEVEL"], os.environ["TFG_ORT_DISABLED"] = level, disabled
            print("setting", setting)
            print("TRIAGE", setting, "REPRODUCED" if judge() else "NOT REPRODUCED", flush=True)
        return 0
    BISECT = sys.argv[1:] == ["--bisect"]
    print("finding:", TITLE)
    print("torch", torch.__version__, "| configurations:", CONFIG_A, "vs", CONFIG_B)
    reproduced = judge()
    print("REPRODUCED" if reproduced else "NOT REPRODUCED")
    if BISECT:  # torch's compiler bisector reads exit 0 as good (not reproduced), else bad
        return 1 if reproduced else 0
    return 0 if reproduced else 1


def judge():
    """Runs the configurations on every input and judges them as flowmut does: True when the
    finding shows."""
    reproduced = False
    for index, args in enumerate(INPUTS):
        print("input %d:" % index)
        if KIND in ("crash", "abort", "hang"):
            for config in (CONFIG_A, CONFIG_B):
                try:
                    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", config, str(index)],
                                       capture_output=True, text=True, timeout=TIMEOUT_S)
                    died = p.returncode < 0 or p.returncode == 134
                    what = ("killed by signal %d" % -p.returncode) if p.returncode < 0 else ("exit %d" % p.returncode)
                except subprocess.TimeoutExpired:
                    died, what = KIND == "hang", "no answer in %d s" % TIMEOUT_S
                print("  %-18s %s" % (config, what))
                if config == CONFIG_B and died:
                    reproduced = True
            continue
        results, errors = {}, {}
        for config in (CONFIG_A, CONFIG_B, REFERENCE) + PEERS:
            if config is None or config in results or config in errors:
                continue
            try:
                results[config] = run(config, args)
            except Exception as e:  # noqa: BLE001 - a configuration's error is a result here
                errors[config] = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        for config, outs in results.items():
            if config in (CONFIG_A, CONFIG_B, REFERENCE):
                show(config, outs)
        for config, e in errors.items():
            print("  %-18s raised: %s" % (config, e))
        if KIND in ("exception", "export_failure"):
            failed = [c for c in (CONFIG_A, CONFIG_B) if c in errors]
            if len(failed) == 1 and (not EXPECT or EXPECT in errors[failed[0]] or errors[failed[0]] in EXPECT):
                reproduced = True
            continue
        if CONFIG_A not in results or CONFIG_B not in results:
            continue
        a, b = results[CONFIG_A], results[CONFIG_B]
        r = results.get(REFERENCE) if REFERENCE else None
        gradient = CONFIG_A.startswith("autograd")
        for i, (ta, tb) in enumerate(zip(a, b)):
            if ta.shape != tb.shape:
                print("  out%d: shapes differ: %s vs %s" % (i, list(ta.shape), list(tb.shape)))
                reproduced = reproduced or KIND in ("numeric", "state")
                continue
            if not ta.is_floating_point():
                n = int((ta != tb).sum())
                print("  out%d: %d elements differ (exact dtype)" % (i, n))
                reproduced = reproduced or (n > 0 and KIND == "numeric")
                continue
            nan = nan_inf_mismatch(ta, tb)
            finite = ~(ta.isnan() | tb.isnan() | ta.isinf() | tb.isinf())
            diff = float((ta.double() - tb.double())[finite].abs().max()) if finite.any() else 0.0
            rt = r[i] if r is not None and i < len(r) and r[i].shape == ta.shape else None
            peers = [results[p][i] for p in PEERS if p in results and i < len(results[p])]
            tol = TOL.get(ta.dtype, (0.0, 0.0))
            if KIND == "nan_inf":
                print("  out%d: NaN/Inf in one configuration only at %d elements; max abs diff elsewhere %.3g" % (i, nan, diff))
                reproduced = reproduced or nan > 0
            else:
                ta_f, tb_f = ta.masked_fill(~finite, 0), tb.masked_fill(~finite, 0)
                rt_f = rt.masked_fill(~finite, 0) if rt is not None else None
                n = bad_elements(ta_f, tb_f, rt_f, peers, gradient)
                ref = "" if rt is None else "; float64 baseline: |a-r| max %.3g, |b-r| max %.3g" % (
                    float((ta.double() - rt)[finite].abs().max()) if finite.any() else 0.0,
                    float((tb.double() - rt)[finite].abs().max()) if finite.any() else 0.0)
                print("  out%d: max abs diff %.3g (rtol %g, atol %g, floor %g ulps of RMS%s); %d bad%s" % (
                    i, diff, tol[0], tol[1], ULPS, ", gradients norm-wise x%g" % GRAD_SCALE if gradient else "", n,
                    ref))
                reproduced = reproduced or n > 0
    return reproduced


if __name__ == "__main__":
    sys.exit(main())
)PY";

/// What both reproducers' judges take from the finding: whether b is the float64 run, the
/// float32 peers whose spread then bounds eager's error, and the last line of the recorded
/// error (exception kinds).
struct judge_settings {
  bool b_is_reference = false;
  std::vector<std::string> peers;
  std::string expect;
};

[[nodiscard]] inline judge_settings judge_settings_of(const repro_spec& spec) {
  judge_settings j;
  j.b_is_reference = spec.config_b == "float64_reference" || spec.config_b == "autograd_float64";
  if (j.b_is_reference)
    j.peers = spec.config_a.rfind("autograd", 0) == 0 ? std::vector<std::string>{"autograd"}
                                                      : std::vector<std::string>{"threads_1_vs_n", "channels_last"};
  j.expect = spec.message;
  while (!j.expect.empty() && (j.expect.back() == '\n' || j.expect.back() == ' ')) j.expect.pop_back();
  if (auto nl = j.expect.rfind('\n'); nl != std::string::npos) j.expect = j.expect.substr(nl + 1);
  return j;
}

[[nodiscard]] inline std::string py_config(const std::string& c) { return c.empty() ? "None" : py_string(c); }

/// The float64 run that anchors a pair's judgement, as the worker chooses it.
[[nodiscard]] inline std::string reference_of(const std::string& a, const std::string& b) {
  if (a.rfind("autograd", 0) == 0) return b == "autograd_float64" ? "" : "autograd_float64";
  return b == "float64_reference" ? "" : "float64_reference";
}

}  // namespace repro_detail

/// Writes `repro.py` and `repro_data.pt` into `dir` (created). Throws model_error when a node
/// of `m` has no plain-PyTorch form.
inline void write_python_repro(const model& m, const input_set& inputs, const repro_spec& spec,
                               const std::filesystem::path& dir, const compare_options& co = {}) {
  using namespace repro_detail;
  const auto mod = python_forward(m);
  std::filesystem::create_directories(dir);
  // Data: (inputs as a list of tuples, constants as a list of tensors).
  {
    c10::impl::GenericList ins(c10::AnyType::get());
    for (const auto& in : inputs) ins.push_back(c10::ivalue::Tuple::create(in));
    c10::List<at::Tensor> consts;
    for (const auto& t : mod.constants) consts.push_back(t);
    const auto bytes = ::torch::jit::pickle_save(c10::ivalue::Tuple::create({c10::IValue(ins), c10::IValue(consts)}));
    std::ofstream f(campaign::finding_layout::of<backend>(dir).repro_data(), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw model_error(campaign::finding_layout::of<backend>(dir).repro_data().string() + ": cannot write");
  }
  const auto js = judge_settings_of(spec);
  std::string peers = "(";
  for (const auto& p : js.peers) peers += py_string(p) + ", ";
  peers += ")";
  const auto& t = co.tolerances;
  std::ostringstream py;
  py << "#!/usr/bin/env python3\n"
     << "\"\"\"Standalone reproducer of flowmut finding " << spec.id << ".\n\n"
     << spec.title << "\n\n"
     << "Plain PyTorch (imports torch only): the finding's reduced graph written out op by op, its\n"
     << "inputs and constants in repro_data.pt beside this file. It runs " << spec.config_a << " and " << spec.config_b
     << "\nas flowmut runs them, judges with flowmut's tolerance rule and ends with REPRODUCED\n"
     << "(exit 0) or NOT REPRODUCED (exit 1).\n\n    python3 repro.py\n"
     << (spec.versions.empty() ? "" : "\nFound with: " + spec.versions + "\n") << "\"\"\"\n"
     << "import json\nimport os\nimport subprocess\nimport sys\nfrom typing import Dict, List, Optional, Tuple  # "
        "noqa: F401\n\n"
     << "import torch\n\n"
     << "HERE = os.path.dirname(os.path.abspath(__file__))\n"
     << "TITLE = " << py_string(spec.title) << "\n"
     << "KIND = " << py_string(spec.kind) << "\n"
     << "CONFIG_A, CONFIG_B = " << py_string(spec.config_a) << ", " << py_string(spec.config_b) << "\n"
     << "REFERENCE = " << py_config(reference_of(spec.config_a, spec.config_b)) << "\n"
     << "B_IS_REFERENCE = " << (js.b_is_reference ? "True" : "False") << "\n"
     << "PEERS = " << peers << "\n"
     << "EXPECT = " << py_string(js.expect) << "\n"
     << "TOL = {torch.float16: (" << t.f16.rtol << ", " << t.f16.atol << "), torch.bfloat16: (" << t.bf16.rtol << ", "
     << t.bf16.atol << "),\n       torch.float32: (" << t.f32.rtol << ", " << t.f32.atol << "), torch.float64: ("
     << t.f64.rtol << ", " << t.f64.atol << ")}\n"
     << "SLACK, ULPS, GRAD_SCALE, GRAD_REF_RTOL = " << co.reference_slack << ", " << co.magnitude_ulps << ", "
     << co.gradient_scale << ", " << co.gradient_reference_rtol << "\n"
     << "TIMEOUT_S = 60\n\n"
     << "INPUTS, CONSTANTS = torch.load(os.path.join(HERE, 'repro_data.pt'), weights_only=False)\n\n\n"
     << "class Repro(torch.nn.Module):\n"
     << "    def __init__(self, constants: List[torch.Tensor]):\n"
     << "        super().__init__()\n"
     << "        for i, c in enumerate(constants):\n"
     << "            setattr(self, 'c%d' % i, c)\n\n"
     << mod.forward_source << "\n\n";
  if (mod.uses_f32_dtype)
    py << "class Repro64(Repro):\n    \"\"\"The float64 baseline: float32 dtype arguments widened too.\"\"\"\n\n"
       << python_forward(m, repro_dialect::python, /*wide=*/true).forward_source << "\n";
  else py << "Repro64 = Repro  # the float64 baseline: same code, widened constants and inputs\n";
  py << "\n" << python_driver;
  std::ofstream f(campaign::finding_layout(dir).repro_py());
  f << py.str();
  if (!f) throw model_error(campaign::finding_layout(dir).repro_py().string() + ": cannot write");
}

namespace repro_detail {

/// repro.cpp's fixed part after the generated sources (the judge mirrors repro.py's).
inline constexpr const char* cpp_driver = R"CPP(
  using namespace torch::jit;
  using IVs = std::vector<c10::IValue>;

  static c10::IValue data_;
  static std::vector<at::Tensor> constants_;

  static IVs clone_all(const IVs& v, bool widen = false, bool channels_last = false) {
    IVs out;
    for (const auto& x : v) {
      if (!x.isTensor()) {
        out.push_back(x);
        continue;
      }
      auto t = x.toTensor().clone();
      if (widen && t.is_floating_point()) t = t.to(at::kDouble);
      if (channels_last && t.dim() == 4 && t.is_floating_point()) t = t.contiguous(at::MemoryFormat::ChannelsLast);
      out.push_back(t);
    }
    return out;
  }

  static void leaves(const c10::IValue& v, std::vector<at::Tensor>& out) {
    if (v.isTensor()) out.push_back(v.toTensor());
    else if (v.isTuple())
      for (const auto& x : v.toTupleRef().elements()) leaves(x, out);
    else if (v.isList())
      for (const auto& x : v.toListRef()) leaves(x, out);
  }

  static Module make_module(bool wide) {
    Module m("Repro");
    for (std::size_t i = 0; i < constants_.size(); ++i) {
      auto t = constants_[i];
      if (wide && t.is_floating_point()) t = t.to(at::kDouble);
      m.register_attribute("c" + std::to_string(i), c10::TensorType::get(), t);
    }
    m.define(wide ? FORWARD64 : FORWARD32);
    m.eval();
    return m;
  }

  static std::vector<at::Tensor> gradients(Module& m, IVs args) {
    std::vector<at::Tensor> wrt;
    for (auto& a : args)
      if (a.isTensor() && a.toTensor().is_floating_point()) {
        auto t = a.toTensor().detach().requires_grad_(true);
        a = t;
        wrt.push_back(t);
      }
    std::vector<at::Tensor> outs, fl;
    leaves(m.forward(args), outs);
    for (auto& o : outs)
      if (o.is_floating_point() && o.requires_grad()) fl.push_back(o);
    if (fl.empty() || wrt.empty()) return {};
    at::Tensor total = fl[0].sum();
    for (std::size_t i = 1; i < fl.size(); ++i) total = total + fl[i].sum();
    auto g = torch::autograd::grad({total}, wrt, {}, false, false, /*allow_unused=*/true);
    for (std::size_t i = 0; i < g.size(); ++i)
      if (!g[i].defined()) g[i] = at::zeros_like(wrt[i]);
    return g;
  }

  /// One configuration on one input, as flowmut runs it.
  static std::vector<at::Tensor> run(const std::string& config, const IVs& input) {
    at::set_num_threads(1);
    const bool graph = config == "graph_executor" || config == "frozen_optimized" || config == "autograd";
    // Op by op: the interpreter without graph optimisation runs each operator as written.
    GraphOptimizerEnabledGuard optimise(graph);
    const bool wide = config == "float64_reference" || config == "autograd_float64";
    Module m = make_module(wide);
    if (config == "frozen_optimized") {
      Module frozen = freeze(m);
      m = optimize_for_inference(frozen);
    }
    if (config == "threads_1_vs_n")
      at::set_num_threads(std::max(2, static_cast<int>(std::thread::hardware_concurrency())));
    const IVs args = clone_all(input, wide, config == "channels_last");
    std::vector<at::Tensor> out;
    if (config.rfind("autograd", 0) == 0) {
      if (config == "autograd")
        for (int w = 0; w < 2; ++w) (void)gradients(m, clone_all(args));
      return gradients(m, args);
    }
    torch::NoGradGuard no_grad;
    if (graph)
      for (int w = 0; w < 2; ++w) (void)m.forward(clone_all(args));
    leaves(m.forward(args), out);
    return out;
  }

  static double eps_of(at::ScalarType t) {
    switch (t) {
      case at::kHalf: return std::ldexp(1.0, -10);
      case at::kBFloat16: return std::ldexp(1.0, -7);
      case at::kFloat: return std::ldexp(1.0, -23);
      case at::kDouble: return std::ldexp(1.0, -52);
      default: return 0;
    }
  }

  static std::pair<double, double> tol_of(at::ScalarType t) {
    switch (t) {
      case at::kHalf: return TOL_F16;
      case at::kBFloat16: return TOL_BF16;
      case at::kFloat: return TOL_F32;
      case at::kDouble: return TOL_F64;
      default: return {0, 0};
    }
  }

  static double rms(const at::Tensor& t) {
    return t.numel() ? t.to(at::kDouble).pow(2).mean().sqrt().item<double>() : 0.0;
  }

  /// flowmut's numeric rule (docs/oracle.md): elements of b wrong against a.
  static long bad_elements(const at::Tensor& a, const at::Tensor& b, const at::Tensor* r,
                           const std::vector<at::Tensor>& peers, bool gradient) {
    auto [rtol, atol] = tol_of(a.scalar_type());
    double ulps = ULPS * (gradient ? GRAD_SCALE : 1.0);
    if (gradient) rtol *= GRAD_SCALE, atol *= GRAD_SCALE;
    const double eps = eps_of(a.scalar_type());
    const auto A = a.to(at::kDouble), B = b.to(at::kDouble);
    if (gradient) {
      bool bad = rms(A - B) > atol + rtol * rms(A) + ulps * eps * rms(A);
      if (r && bad) {
        const auto R = r->to(at::kDouble);
        if (B_IS_REFERENCE) return rms(A - R) > GRAD_REF_RTOL * rms(R) + atol + ulps * eps * rms(R);
        bad = rms(B - R) > SLACK * rms(A - R) + atol + rtol * rms(R) + ulps * eps * rms(R);
      }
      return bad;
    }
    auto bad = (A - B).abs() > (A.abs() * rtol + atol + ulps * eps * rms(A));
    if (r) {
      const auto R = r->to(at::kDouble);
      const auto floor_r = R.abs() * rtol + atol + ulps * eps * rms(R);
      if (B_IS_REFERENCE) {
        double spread = 0;
        for (const auto& p : peers)
          if (p.sizes() == A.sizes()) spread = std::max(spread, (p.to(at::kDouble) - A).abs().max().item<double>());
        bad = (A - R).abs() > floor_r + SLACK * spread;
      } else {
        bad = bad.logical_and((B - R).abs() > floor_r + SLACK * (A - R).abs().max().item<double>());
      }
    }
    return bad.sum().item<long>();
  }

  /// The line of an error that says what failed: the last `...Error: ...` line (a runtime error
  /// in the interpreter), else the first line (a compilation error, before the source excerpt).
  static std::string last_line(const std::string& s) {
    std::vector<std::string> lines;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);)
      if (!l.empty()) lines.push_back(l);
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (it->find("Error: ") != std::string::npos && (*it)[0] != ' ') return *it;
    return lines.empty() ? s : lines.front();
  }

  int main(int argc, char** argv) {
    std::string dir = argc > 0 ? std::string(argv[0]) : std::string(".");
    dir = dir.find('/') == std::string::npos ? "." : dir.substr(0, dir.rfind('/'));
    std::ifstream in(dir + "/repro_data.pt", std::ios::binary);
    if (!in) {
      std::cerr << "cannot open " << dir << "/repro_data.pt\n";
      return 2;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    data_ = torch::jit::pickle_load(bytes);
    const auto& top = data_.toTupleRef().elements();
    for (const auto& c : top[1].toListRef()) constants_.push_back(c.toTensor());
    std::vector<IVs> inputs;
    for (const auto& x : top[0].toListRef()) {
      const auto& e = x.toTupleRef().elements();
      inputs.emplace_back(e.begin(), e.end());
    }
    if (argc == 4 && std::string(argv[1]) == "--child") {
      (void)run(argv[2], inputs.at(std::stoul(argv[3])));
      return 0;
    }
    std::printf("finding: %s\nLibTorch %s | configurations: %s vs %s\n", TITLE, TORCH_VERSION, CONFIG_A, CONFIG_B);
    bool reproduced = false;
    const std::vector<std::string> peers_names = PEERS;
    for (std::size_t index = 0; index < inputs.size(); ++index) {
      std::printf("input %zu:\n", index);
      if (std::string(KIND) == "crash" || std::string(KIND) == "abort") {
        for (const char* config : {CONFIG_A, CONFIG_B}) {
          const pid_t pid = fork();
          if (pid == 0) {
            try {
              (void)run(config, inputs[index]);
            } catch (...) {
              _exit(1);
            }
            _exit(0);
          }
          int status = 0;
          waitpid(pid, &status, 0);
          const bool died = WIFSIGNALED(status);
          std::printf("  %-18s %s\n", config,
                      died ? ("killed by signal " + std::to_string(WTERMSIG(status))).c_str()
                           : ("exit " + std::to_string(WEXITSTATUS(status))).c_str());
          if (died && std::string(config) == CONFIG_B) reproduced = true;
        }
        continue;
      }
      std::map<std::string, std::vector<at::Tensor>> results;
      std::map<std::string, std::string> errors;
      std::vector<std::string> configs = {CONFIG_A, CONFIG_B};
      if (std::string(REFERENCE) != "") configs.push_back(REFERENCE);
      for (const auto& p : peers_names) configs.push_back(p);
      for (const auto& c : configs) {
        if (results.count(c) || errors.count(c)) continue;
        try {
          results[c] = run(c, inputs[index]);
        } catch (const std::exception& e) {
          std::string what = e.what();
          if (auto p = what.find("\nException raised from"); p != std::string::npos) what.resize(p);
          errors[c] = last_line(what);
        }
      }
      for (const auto& [c, outs] : results)
        for (std::size_t i = 0; i < outs.size(); ++i) {
          const auto f = outs[i].to(at::kDouble).flatten();
          std::printf("  %-18s out%zu %s [", c.c_str(), i, std::string(c10::toString(outs[i].scalar_type())).c_str());
          for (std::int64_t k = 0; k < std::min<std::int64_t>(4, f.numel()); ++k)
            std::printf("%s%.6g", k ? ", " : "", f[k].item<double>());
          std::printf("%s]\n", f.numel() > 4 ? ", ..." : "");
        }
      for (const auto& [c, e] : errors) std::printf("  %-18s raised: %s\n", c.c_str(), e.c_str());
      if (std::string(KIND) == "exception") {
        const bool fa = errors.count(CONFIG_A), fb = errors.count(CONFIG_B);
        if (fa != fb) {
          const auto& e = errors[fa ? CONFIG_A : CONFIG_B];
          const std::string expect = EXPECT;
          if (expect.empty() || e.find(expect) != std::string::npos || expect.find(e) != std::string::npos)
            reproduced = true;
        }
        continue;
      }
      if (!results.count(CONFIG_A) || !results.count(CONFIG_B)) continue;
      const auto& a = results[CONFIG_A];
      const auto& b = results[CONFIG_B];
      const std::vector<at::Tensor>* r =
          std::string(REFERENCE) != "" && results.count(REFERENCE) ? &results[REFERENCE] : nullptr;
      const bool gradient = std::string(CONFIG_A).rfind("autograd", 0) == 0;
      for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        if (a[i].sizes() != b[i].sizes()) {
          std::printf("  out%zu: shapes differ\n", i);
          reproduced = true;
          continue;
        }
        if (!a[i].is_floating_point()) {
          const long n = a[i].ne(b[i]).sum().item<long>();
          std::printf("  out%zu: %ld elements differ (exact dtype)\n", i, n);
          reproduced = reproduced || n > 0;
          continue;
        }
        const auto nan_a = a[i].isnan(), nan_b = b[i].isnan(), inf_a = a[i].isinf(), inf_b = b[i].isinf();
        const long nan = (nan_a.ne(nan_b).logical_or(inf_a.ne(inf_b))).sum().item<long>();
        const auto finite = nan_a.logical_or(nan_b).logical_or(inf_a).logical_or(inf_b).logical_not();
        const auto fa = a[i].masked_fill(finite.logical_not(), 0), fb = b[i].masked_fill(finite.logical_not(), 0);
        const double diff = (fa.to(at::kDouble) - fb.to(at::kDouble)).abs().max().item<double>();
        if (std::string(KIND) == "nan_inf") {
          std::printf("  out%zu: NaN/Inf in one configuration only at %ld elements; max abs diff elsewhere %.3g\n", i,
                      nan, diff);
          reproduced = reproduced || nan > 0;
          continue;
        }
        std::optional<at::Tensor> rt;
        if (r && i < r->size() && (*r)[i].sizes() == a[i].sizes()) rt = (*r)[i].masked_fill(finite.logical_not(), 0);
        std::vector<at::Tensor> peers;
        for (const auto& p : peers_names)
          if (results.count(p) && i < results[p].size()) peers.push_back(results[p][i]);
        const long n = bad_elements(fa, fb, rt ? &*rt : nullptr, peers, gradient);
        const auto t = tol_of(a[i].scalar_type());
        std::printf("  out%zu: max abs diff %.3g (rtol %g, atol %g, floor %g ulps of RMS); %ld bad\n", i, diff, t.first,
                    t.second, ULPS, n);
        reproduced = reproduced || n > 0;
      }
    }
    std::printf("%s\n", reproduced ? "REPRODUCED" : "NOT REPRODUCED");
    return reproduced ? 0 : 1;
  }
)CPP";

}  // namespace repro_detail

/// Writes `repro.cpp` into `dir` beside the `repro_data.pt` write_python_repro wrote: the same
/// graph as TorchScript source compiled by `Module::define`, the same configurations (op by op
/// = the interpreter with graph optimisation off) and judge. Plain LibTorch; the build command
/// is in its first lines.
inline void write_cpp_repro(const model& m, const repro_spec& spec, const std::filesystem::path& dir,
                            const compare_options& co = {}) {
  using namespace repro_detail;
  const auto js = judge_settings_of(spec);
  const auto ts32 = python_forward(m, repro_dialect::torchscript, false);
  const auto ts64 =
      ts32.uses_f32_dtype ? python_forward(m, repro_dialect::torchscript, true).forward_source : ts32.forward_source;
  auto cstr = [](const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      if (c == '\n') {
        o += "\\n";
        continue;
      }
      o += c;
    }
    return o + "\"";
  };
  const auto& t = co.tolerances;
  std::ostringstream c;
  c << "// Standalone reproducer of flowmut finding " << spec.id << " (plain LibTorch, nothing of flowmut).\n"
    << "// " << spec.title << "\n"
    << "// Build and run (Debian's libtorch-dev; repro_data.pt beside the binary):\n"
    << "//   g++ -std=c++17 -O1 repro.cpp -o repro -I/usr/include/torch/csrc/api/include -ltorch -ltorch_cpu -lc10\n"
    << "//   ./repro        # last line REPRODUCED (exit 0) or NOT REPRODUCED (exit 1)\n"
    << "#include <torch/script.h>\n#include <torch/csrc/autograd/autograd.h>\n#include "
       "<torch/csrc/jit/runtime/graph_executor.h>\n#include <ATen/Parallel.h>\n#include <torch/version.h>\n\n"
    << "#include <sys/wait.h>\n#include <unistd.h>\n\n"
    << "#include <cmath>\n#include <cstdio>\n#include <fstream>\n#include <iostream>\n#include <map>\n#include "
       "<optional>\n"
    << "#include <sstream>\n#include <string>\n#include <thread>\n#include <vector>\n\n"
    << "static const char* TITLE = " << cstr(spec.title) << ";\n"
    << "static const char* KIND = " << cstr(spec.kind) << ";\n"
    << "static const char* CONFIG_A = " << cstr(spec.config_a) << ";\n"
    << "static const char* CONFIG_B = " << cstr(spec.config_b) << ";\n"
    << "static const char* REFERENCE = " << cstr(reference_of(spec.config_a, spec.config_b)) << ";\n"
    << "static const bool B_IS_REFERENCE = " << (js.b_is_reference ? "true" : "false") << ";\n"
    << "#define PEERS std::vector<std::string>{";
  for (std::size_t i = 0; i < js.peers.size(); ++i) c << (i ? ", " : "") << cstr(js.peers[i]);
  c << "}\n"
    << "static const char* EXPECT = " << cstr(js.expect) << ";\n"
    << "static const std::pair<double, double> TOL_F16{" << t.f16.rtol << ", " << t.f16.atol << "}, TOL_BF16{"
    << t.bf16.rtol << ", " << t.bf16.atol << "}, TOL_F32{" << t.f32.rtol << ", " << t.f32.atol << "}, TOL_F64{"
    << t.f64.rtol << ", " << t.f64.atol << "};\n"
    << "static const double SLACK = " << co.reference_slack << ", ULPS = " << co.magnitude_ulps
    << ", GRAD_SCALE = " << co.gradient_scale << ", GRAD_REF_RTOL = " << co.gradient_reference_rtol << ";\n\n"
    << "// The reduced graph, op by op (TorchScript source; the constants are attributes c0, c1, ...).\n"
    << "static const char* FORWARD32 = R\"TS(\n"
    << ts32.forward_source << ")TS\";\n"
    << "// The float64 baseline: float32 dtype arguments widened too.\n"
    << "static const char* FORWARD64 = R\"TS(\n"
    << ts64 << ")TS\";\n"
    << cpp_driver;
  std::ofstream f(campaign::finding_layout(dir).repro_cpp());
  f << c.str();
  if (!f) throw model_error(campaign::finding_layout(dir).repro_cpp().string() + ": cannot write");
}

}  // namespace tfg::torch
