#pragma once
// The definitions of compare.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/oracle/compare.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL oracle::dtype_class class_of(c10::ScalarType s) {
  switch (s) {
    case c10::kHalf: return oracle::dtype_class::f16;
    case c10::kBFloat16: return oracle::dtype_class::bf16;
    case c10::kFloat: return oracle::dtype_class::f32;
    case c10::kDouble: return oracle::dtype_class::f64;
    case c10::kBool: return oracle::dtype_class::boolean;
    default:
      return c10::isIntegralType(s, /*includeBool=*/false) ? oracle::dtype_class::integer : oracle::dtype_class::other;
  }
}

[[nodiscard]] TFG_TORCH_DECL bool is_tie_dependent_op(std::string_view kind) {
  static constexpr std::array<std::string_view, 13> ops = {
      "aten::argmax",   "aten::argmin", "aten::topk",   "aten::sort",      "aten::argsort", "aten::max",   "aten::min",
      "aten::kthvalue", "aten::mode",   "aten::median", "aten::nanmedian", "aten::cummax",  "aten::cummin"};
  for (auto op : ops)
    if (kind == op) return true;
  return false;
}

[[nodiscard]] TFG_TORCH_DECL int precision_rank(oracle::dtype_class c) noexcept {
  switch (c) {
    case oracle::dtype_class::bf16: return 0;
    case oracle::dtype_class::f16: return 1;
    case oracle::dtype_class::f32: return 2;
    case oracle::dtype_class::f64: return 3;
    default: return 4;
  }
}

[[nodiscard]] TFG_TORCH_DECL double machine_epsilon(oracle::dtype_class c) noexcept {
  switch (c) {
    case oracle::dtype_class::bf16: return 0x1p-7;
    case oracle::dtype_class::f16: return 0x1p-10;
    case oracle::dtype_class::f32: return 0x1p-23;
    case oracle::dtype_class::f64: return 0x1p-52;
    default: return 0;
  }
}

[[nodiscard]] TFG_TORCH_DECL bool reads_fixed_geometry(const node_data& d) {
  if (d.kind != c10::Symbol::fromQualString("aten::as_strided") &&
      d.kind != c10::Symbol::fromQualString("aten::as_strided_"))
    return false;
  for (std::size_t i = 2; i < d.args.size() && i < 4; ++i) {
    const auto& a = d.args[i];
    if (a.how == argument::form::constant && !a.constant.isNone()) return true;
    if (a.how == argument::form::list)
      for (const auto& it : a.items)
        if (!it.is_edge) return true;
  }
  return false;
}

[[nodiscard]] TFG_TORCH_DECL oracle::dtype_class introduced_precision(const graph_type& g, graph::node_id n) {
  const auto& d = g.data(n);
  auto cls = oracle::dtype_class::f64;
  if (d.constant.isTensor() && d.constant.toTensor().defined() && d.constant.toTensor().is_floating_point())
    cls = lower_precision(cls, class_of(d.constant.toTensor().scalar_type()));
  if (d.kind.is_prim()) return cls;
  const auto* schema = schema_of(g, n);
  if (!schema) return cls;
  for (std::size_t i = 0; i < d.args.size() && i < schema->arguments().size(); ++i) {
    if (real_kind(schema->arguments()[i]) != c10::TypeKind::ScalarTypeType) continue;
    const auto& a = d.args[i];
    if (a.how != argument::form::constant || !a.constant.isInt()) continue;
    const auto t = static_cast<c10::ScalarType>(a.constant.toInt());
    if (t == c10::kHalf || t == c10::kBFloat16) cls = lower_precision(cls, class_of(t));
  }
  return cls;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<leaf_traits> edge_traits(const model& m) {
  const auto& g = m.graph;
  std::vector<leaf_traits> t(g.edge_capacity());
  for (auto n : g.topological_order()) {
    leaf_traits node;
    node.precision = introduced_precision(g, n);
    node.layout_dependent = reads_fixed_geometry(g.data(n));
    for (auto e : g.inputs(n)) {
      const auto& in = t[graph::index(e)];
      node.precision = lower_precision(node.precision, in.precision);
      node.layout_dependent = node.layout_dependent || in.layout_dependent;
      node.selection = node.selection || in.selection;
    }
    const bool tie = is_tie_dependent_op(g.data(n).name());
    node.selection = node.selection || selects_elements(g, n);
    const bool uninit = is_uninitialised_op(g.data(n).name());
    for (auto e : g.outputs(n)) {
      t[graph::index(e)] = node;
      t[graph::index(e)].tie = tie;
      t[graph::index(e)].uninitialised = uninit;
    }
  }
  return t;
}

[[nodiscard]] TFG_TORCH_DECL std::map<std::string, leaf_traits> output_traits(const model& m) {
  const auto edges = edge_traits(m);
  std::map<std::string, leaf_traits> out;
  std::function<void(const output_tree&, const std::string&)> walk = [&](const output_tree& t,
                                                                         const std::string& path) {
    if (t.how == output_tree::form::edge) {
      out[path] = edges[graph::index(t.edge)];
    } else if (t.how == output_tree::form::list || t.how == output_tree::form::tuple) {
      for (std::size_t i = 0; i < t.items.size(); ++i) walk(t.items[i], ivalue::child_path(path, i));
    }
  };
  walk(m.output, "");
  return out;
}

[[nodiscard]] TFG_TORCH_DECL leaf_traits traits_of(const std::map<std::string, leaf_traits>& traits,
                                                   const std::string& leaf) {
  leaf_traits best;
  std::size_t best_len = 0;
  bool found = false;
  for (const auto& [path, tr] : traits)
    if (path.empty() || leaf == path || leaf.rfind(path + ".", 0) == 0)
      if (!found || path.size() >= best_len) {
        best = tr;
        best_len = path.size();
        found = true;
      }
  return best;
}

}  // namespace tfg::torch

namespace tfg::torch::compare_detail {

[[nodiscard]] TFG_TORCH_DECL bool nonfinite_floating(const c10::IValue& v) {
  bool bad = false;
  ivalue::for_each_tensor(v, [&](const at::Tensor& t) {
    if (!bad && t.defined() && t.is_floating_point() && t.numel() > 0 && !t.isfinite().all().item<bool>()) bad = true;
  });
  return bad;
}

[[nodiscard]] TFG_TORCH_DECL bool computes_nonfinite_from_constants(const model& m) {
  const auto& g = m.graph;
  std::vector<std::optional<c10::IValue>> val(g.edge_capacity());
  ::torch::jit::Stack stack;
  for (auto n : g.topological_order()) {
    const auto& d = g.data(n);
    const auto outs = g.outputs(n);
    if (d.kind == c10::prim::Constant) {
      if (!outs.empty()) val[graph::index(outs[0])] = d.constant;
      continue;
    }
    const auto ins = g.inputs(n);
    if (!d.op || outs.empty()) continue;  // factories (no edge input) belong to the cone
    const std::string_view kind = d.kind.toQualString();
    // A division by a value computed from constants alone that holds a zero: folding passes
    // (TorchScript freezing's conv-div folding, Inductor's binary folding) fold the divisor into
    // the producer's weights, and w / 0 is +-Inf or NaN: a non-finite parameter in all but name
    // (swinir, issue 43: conv(x) / 0 is -Inf in eager and NaN once folded).
    if ((kind == "aten::div" || kind == "aten::div_") && d.args.size() >= 2) {
      const auto& a = d.args[1];
      if (a.how == argument::form::constant && a.constant.isDouble() && a.constant.toDouble() == 0) return true;
      if (a.how == argument::form::edge && a.input < ins.size())
        if (const auto& dv = val[graph::index(ins[a.input])];
            dv && dv->isTensor() && dv->toTensor().defined() && dv->toTensor().is_floating_point() &&
            dv->toTensor().numel() > 0 && dv->toTensor().eq(0).any().item<bool>())
          return true;
    }
    if (kind.ends_with('_') || kind.find("rand") != std::string_view::npos ||
        kind.find("dropout") != std::string_view::npos || kind.find("bernoulli") != std::string_view::npos ||
        kind.find("normal") != std::string_view::npos)
      continue;
    if (!std::all_of(ins.begin(), ins.end(), [&](auto e) { return val[graph::index(e)].has_value(); })) continue;
    stack.clear();
    bool ok = true;
    for (const auto& a : d.args) {
      switch (a.how) {
        case argument::form::edge: stack.push_back(*val[graph::index(ins[a.input])]); break;
        case argument::form::constant: stack.push_back(a.constant); break;
        case argument::form::list: {
          c10::impl::GenericList list(a.type->castRaw<c10::ListType>()->getElementType());
          for (const auto& it : a.items) list.push_back(it.is_edge ? *val[graph::index(ins[it.input])] : it.constant);
          stack.push_back(c10::IValue(std::move(list)));
          break;
        }
        case argument::form::tuple: ok = false; break;
      }
    }
    if (!ok) continue;
    try {
      (*d.op)(stack);
    } catch (const std::exception&) {
      continue;
    }
    if (stack.size() != d.results.size()) continue;
    for (std::size_t i = 0; i < d.results.size(); ++i) {
      const auto& rs = d.results[i];
      if (nonfinite_floating(stack[i])) return true;
      if (rs.how == result_slot::form::value && rs.first_output < outs.size()) {
        val[graph::index(outs[rs.first_output])] = stack[i];
      } else if (rs.how == result_slot::form::list && stack[i].isList()) {
        auto l = stack[i].toList();
        for (std::uint32_t j = 0; j < rs.count && j < l.size() && rs.first_output + j < outs.size(); ++j)
          val[graph::index(outs[rs.first_output + j])] = l.get(j);
      } else if (rs.how == result_slot::form::tuple && stack[i].isTuple()) {
        const auto& el = stack[i].toTupleRef().elements();
        for (std::uint32_t j = 0; j < rs.count && j < el.size() && rs.first_output + j < outs.size(); ++j)
          val[graph::index(outs[rs.first_output + j])] = el[j];
      }
    }
  }
  return false;
}

}  // namespace tfg::torch::compare_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL bool has_nonfinite_outputs(const run_result& r) {
  for (const auto& outs : r.outputs)
    for (const auto& leaf : outs)
      if (compare_detail::nonfinite_floating(leaf.value)) return true;
  return false;
}

[[nodiscard]] TFG_TORCH_DECL bool has_nonfinite_parameters(const model& m) {
  for (auto n : m.graph.nodes()) {
    const auto& d = m.graph.data(n);
    const auto& c = d.constant;
    if (c.isDouble() && !std::isfinite(c.toDouble())) return true;  // a non-finite Python float constant
    for (const auto& a : d.args)  // ... or one folded into a node's arguments (`mul(x, inf)`)
      if (a.how == argument::form::constant && a.constant.isDouble() && !std::isfinite(a.constant.toDouble()))
        return true;
    if (c.isTensor() && c.toTensor().defined() && c.toTensor().is_floating_point() && c.toTensor().numel() > 0 &&
        !c.toTensor().isfinite().all().item<bool>())
      return true;
  }
  return compare_detail::computes_nonfinite_from_constants(m);
}

[[nodiscard]] TFG_TORCH_DECL oracle::dtype_class input_precision(const std::vector<c10::IValue>& in) {
  auto cls = oracle::dtype_class::f64;
  for (const auto& v : in)
    ivalue::for_each_tensor(v, [&](const at::Tensor& t) {
      if (t.is_floating_point()) cls = lower_precision(cls, class_of(t.scalar_type()));
    });
  return cls;
}

}  // namespace tfg::torch

namespace tfg::torch::compare_detail {

[[nodiscard]] TFG_TORCH_DECL std::string fmt_double(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

[[nodiscard]] TFG_TORCH_DECL std::string shape_of(const at::Tensor& t) {
  std::string s = "[";
  for (std::size_t i = 0; i < t.sizes().size(); ++i) s += (i ? "," : "") + std::to_string(t.sizes()[i]);
  return s + "]";
}

[[nodiscard]] TFG_TORCH_DECL double rms(const at::Tensor& x) {
  const auto fin = at::isfinite(x);
  const auto n = fin.sum().item<std::int64_t>();
  if (n == 0) return 0;
  const auto z = at::where(fin, x, at::zeros({}, x.options()));
  return std::sqrt((z * z).sum().item<double>() / static_cast<double>(n));
}

TFG_TORCH_DECL void compare_scalars(oracle::verdict& v, const c10::IValue& va, const c10::IValue& vb,
                                    const compare_options& opt) {
  using oracle::verdict_kind;
  if (va.isDouble() && vb.isDouble()) {
    const double a = va.toDouble(), b = vb.toDouble();
    const auto tol = opt.tolerances.f32;
    v.max_abs = std::abs(a - b);
    v.max_rel = v.max_abs == 0 ? 0 : v.max_abs / std::max(std::abs(a), std::abs(b));
    if (a == b || (std::isnan(a) && std::isnan(b))) v.kind = verdict_kind::equal;
    else if (!std::isfinite(a) || !std::isfinite(b)) v.kind = verdict_kind::nan_inf_mismatch;
    else
      v.kind = v.max_abs <= tol.atol + tol.rtol * std::abs(a) ? verdict_kind::within_tolerance
                                                              : verdict_kind::numeric_mismatch;
    if (v.kind != verdict_kind::equal) v.message = "float " + fmt_double(a) + " vs " + fmt_double(b);
    return;
  }
  if (va.tagKind() != vb.tagKind()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = std::string("a returns a ") + va.tagKind() + ", b a " + vb.tagKind();
    return;
  }
  v.kind = va == vb ? verdict_kind::equal : verdict_kind::numeric_mismatch;
  if (v.kind != verdict_kind::equal) v.message = "scalar values differ";
}

TFG_TORCH_DECL void compare_floating(oracle::verdict& v, const at::Tensor& A, const at::Tensor& B, const at::Tensor* R,
                                     bool b_is_reference, bool gradient, const leaf_traits& tr, c10::ScalarType dtype,
                                     const compare_options& opt, double spread) {
  using oracle::verdict_kind;
  if (A.numel() == 0) {  // nothing to compare (and max() of an empty tensor throws)
    v.kind = verdict_kind::equal;
    return;
  }
  const auto fin_a = at::isfinite(A), fin_b = at::isfinite(B);
  const auto both = fin_a.logical_and(fin_b);
  const auto same_special = A.eq(B).logical_or(at::isnan(A).logical_and(at::isnan(B)));
  const auto special_bad = both.logical_not().logical_and(same_special.logical_not());
  const auto zero = at::zeros({}, A.options());
  const auto diff = at::where(both, (A - B).abs(), zero);
  v.max_abs = diff.max().item<double>();
  const auto denom = at::maximum(A.abs(), B.abs());
  v.max_rel = at::where(both.logical_and(denom.gt(0)), diff / denom, zero).max().item<double>();
  const auto numel = A.numel();
  if (const auto n = special_bad.sum().item<std::int64_t>(); n > 0) {
    if (opt.rewrites_arithmetic && opt.nonfinite_parameters) {
      v.kind = verdict_kind::within_tolerance;
      v.message = std::to_string(n) +
                  " elements are NaN/Inf on one side only: not compared, the model's parameters hold "
                  "NaN/Inf and b rewrites the arithmetic (exact only for finite parameters)";
      return;
    }
    if (gradient && opt.rewrites_arithmetic && opt.nonfinite_forward) {
      v.kind = verdict_kind::within_tolerance;
      v.message =
          std::to_string(n) +
          " gradient elements are NaN/Inf on one side only: not compared, the forward pass "
          "computes NaN/Inf and b's derivative formulas spread it differently (a mask multiplied, NaN * 0 = NaN, "
          "where the reference selects)";
      return;
    }
    v.kind = verdict_kind::nan_inf_mismatch;
    const auto nan_a = at::isnan(A).logical_and(special_bad).sum().item<std::int64_t>();
    const auto nan_b = at::isnan(B).logical_and(special_bad).sum().item<std::int64_t>();
    v.message = std::to_string(n) + " of " + std::to_string(numel) +
                " elements are NaN/Inf on one side only (a: " + std::to_string(nan_a) +
                " NaN, b: " + std::to_string(nan_b) + " NaN)";
    return;
  }
  if (v.max_abs == 0) {
    v.kind = verdict_kind::equal;
    return;
  }
  const auto cls = lower_precision(lower_precision(class_of(dtype), tr.precision), opt.input_precision);
  auto tol = opt.tolerances.for_class(cls);
  double ulps = opt.magnitude_ulps;
  if (gradient) {
    tol.atol *= opt.gradient_scale;
    tol.rtol *= opt.gradient_scale;
    ulps *= opt.gradient_scale;
  }
  const double eps = machine_epsilon(cls);
  const bool with_ref = R != nullptr;
  std::int64_t nbad = 0;
  std::string how;
  if (gradient) {
    // Norm-wise: a few elements at kinks move the norm little.
    const auto ra = rms(A);
    const double d_ab = rms(at::where(both, A - B, zero));
    bool bad = d_ab > tol.atol + tol.rtol * ra + ulps * eps * ra;
    if (with_ref) {
      const auto rr = rms(*R);
      const double d_br = rms(at::where(both, B - *R, zero)), d_ar = rms(at::where(both, A - *R, zero));
      bad = b_is_reference
                ? d_ar > opt.reference_slack * spread + tol.atol + opt.gradient_reference_rtol * rr + ulps * eps * rr
                : bad && d_br > opt.reference_slack * d_ar + tol.atol + tol.rtol * rr + ulps * eps * rr;
    }
    nbad = bad ? 1 : 0;
    how = "rms difference " + fmt_double(d_ab) + " against rms " + fmt_double(ra) + " (norm-wise, tolerance x" +
          fmt_double(opt.gradient_scale) + ")";
  } else {
    const double floor_a = ulps * eps * rms(A);
    auto bad = both.logical_and(diff.gt(tol.atol + tol.rtol * A.abs() + floor_a));
    if (with_ref) {
      const double floor_r = ulps * eps * rms(*R);
      const auto lim = tol.atol + tol.rtol * R->abs() + floor_r;
      if (b_is_reference) {
        // a against the truth: beyond what float32 rounding spreads among a's peers.
        bad = both.logical_and((A - *R).abs().gt(lim + opt.reference_slack * spread));
      } else {
        // b against the truth: beyond what a's own worst error allows (tensor-wide: an element
        // where a happens to round exactly is no stricter a test of b), and beyond the spread of
        // the other float32 configurations around a (b must be an outlier among them).
        const double err_a = at::where(both, (A - *R).abs(), zero).max().item<double>();
        bad = bad.logical_and((B - *R).abs().gt(lim + opt.reference_slack * std::max(err_a, spread)));
      }
    }
    nbad = bad.sum().item<std::int64_t>();
    how = std::to_string(nbad) + " of " + std::to_string(numel) + " " + dtype_name(dtype) + " elements beyond rtol " +
          fmt_double(tol.rtol) + " / atol " + fmt_double(tol.atol) + " + " + fmt_double(ulps) + " ulp(" +
          std::string(cls == oracle::dtype_class::f16    ? "f16"
                      : cls == oracle::dtype_class::bf16 ? "bf16"
                      : cls == oracle::dtype_class::f64  ? "f64"
                                                         : "f32") +
          ") x rms";
  }
  v.kind = nbad > 0 ? verdict_kind::numeric_mismatch : verdict_kind::within_tolerance;
  v.message =
      how +
      (with_ref ? (b_is_reference ? " (a against its float64 run)" : " (and further from the float64 reference than a)")
                : "") +
      "; max abs " + fmt_double(v.max_abs) + ", max rel " + fmt_double(v.max_rel);
}

TFG_TORCH_DECL void compare_leaf(oracle::verdict& v, const c10::IValue& va, const c10::IValue& vb,
                                 const c10::IValue* vr, bool a_widened, bool b_widened, const leaf_traits& tr,
                                 bool gradient, const compare_options& opt, double spread) {
  using oracle::verdict_kind;
  if (va.isTensor() != vb.isTensor()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = std::string("a returns a ") + va.tagKind() + ", b a " + vb.tagKind();
    return;
  }
  if (!va.isTensor()) {
    compare_scalars(v, va, vb, opt);
    return;
  }
  at::Tensor a = va.toTensor(), b = vb.toTensor();
  if (!a.defined() || !b.defined()) {
    v.kind = a.defined() == b.defined() ? verdict_kind::equal : verdict_kind::state_mismatch;
    if (v.kind != verdict_kind::equal) v.message = "an undefined tensor on one side only";
    return;
  }
  // Undo a widening to float64 (the float64_reference configuration) before judging dtypes.
  at::Tensor b_wide;  // b in float64 when it is the widened run itself (its own reference)
  if (b_widened && b.scalar_type() == c10::kDouble && a.is_floating_point() && a.scalar_type() != c10::kDouble) {
    b_wide = b;
    b = b.to(a.scalar_type());
  }
  if (a_widened && a.scalar_type() == c10::kDouble && b.is_floating_point() && b.scalar_type() != c10::kDouble)
    a = a.to(b.scalar_type());
  if (a.scalar_type() != b.scalar_type()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = "dtype " + dtype_name(a.scalar_type()) + " vs " + dtype_name(b.scalar_type());
    return;
  }
  if (a.sizes() != b.sizes()) {
    v.kind = verdict_kind::state_mismatch;
    v.message = "shape " + shape_of(a) + " vs " + shape_of(b);
    return;
  }
  if (a.numel() == 0) {
    v.kind = verdict_kind::equal;
    return;
  }
  // Downstream of a tie-dependent selection, against a float64 run: float64 breaks float32's
  // near-ties its own way and may select other elements; such values are compared between
  // float32 configurations only (docs/oracle.md, "Selections").
  if (tr.selection && (a_widened || b_widened) && a.is_floating_point()) {
    v.kind = at::equal(a, b) ? verdict_kind::equal : verdict_kind::within_tolerance;
    v.tie_dependent = true;
    if (v.kind != verdict_kind::equal)
      v.message = "downstream of a tie-dependent selection (top-k, sort, argmax): not compared against float64";
    return;
  }
  if (tr.uninitialised) {
    v.kind = verdict_kind::within_tolerance;
    v.message = "not compared: uninitialised memory (aten::empty and its kin)";
    return;
  }
  if (tr.layout_dependent && opt.layout_changes) {
    v.kind = at::equal(a, b) ? verdict_kind::equal : verdict_kind::within_tolerance;
    if (v.kind != verdict_kind::equal)
      v.message =
          "not compared: the output reads fixed storage geometry (as_strided with constant strides) and b "
          "changes the layout";
    return;
  }
  if (!a.is_floating_point()) {
    if (a.is_complex()) {
      v.kind = at::equal(a, b) ? verdict_kind::equal : verdict_kind::numeric_mismatch;
      if (v.kind != verdict_kind::equal) v.message = "complex tensors differ (compared exactly)";
      return;
    }
    if (at::equal(a, b)) {
      v.kind = verdict_kind::equal;
      return;
    }
    const auto diff = (a.to(c10::kDouble) - b.to(c10::kDouble)).abs();
    v.max_abs = diff.max().item<double>();
    const auto count = (diff > 0).sum().item<std::int64_t>();
    if (tr.tie) {
      v.kind = verdict_kind::within_tolerance;
      v.tie_dependent = true;
      v.message = "tie-dependent integer output differs at " + std::to_string(count) + " of " +
                  std::to_string(a.numel()) + " elements (not compared)";
    } else {
      v.kind = verdict_kind::numeric_mismatch;
      v.message = std::to_string(count) + " of " + std::to_string(a.numel()) + " " + dtype_name(a.scalar_type()) +
                  " elements differ (exact dtype); max abs " + fmt_double(v.max_abs);
    }
    return;
  }
  const auto A = a.to(c10::kDouble), B = b.to(c10::kDouble);
  at::Tensor R;
  bool b_is_reference = false;
  if (b_wide.defined()) {
    R = b_wide.to(c10::kDouble);
    b_is_reference = true;
  } else if (vr && vr->isTensor() && vr->toTensor().defined() && vr->toTensor().sizes() == a.sizes() &&
             vr->toTensor().is_floating_point()) {
    R = vr->toTensor().to(c10::kDouble);
  }
  compare_floating(v, A, B, R.defined() ? &R : nullptr, b_is_reference, gradient, tr, a.scalar_type(), opt, spread);
}

[[nodiscard]] TFG_TORCH_DECL double spread_of(const c10::IValue& a, const c10::IValue& p, bool gradient) {
  if (!a.isTensor() || !p.isTensor()) return 0;
  const auto& x = a.toTensor();
  const auto& y = p.toTensor();
  if (!x.defined() || !y.defined() || x.sizes() != y.sizes() || !x.is_floating_point() || !y.is_floating_point())
    return 0;
  if (x.numel() == 0) return 0;  // max() of an empty tensor throws (an empty slice on the trace)
  const auto X = x.to(c10::kDouble), Y = y.to(c10::kDouble);
  const auto both = at::isfinite(X).logical_and(at::isfinite(Y));
  const auto d = at::where(both, X - Y, at::zeros({}, X.options()));
  return gradient ? rms(d) : d.abs().max().item<double>();
}

}  // namespace tfg::torch::compare_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::vector<bool> tie_dependent_outputs(const model& m, const output_list& leaves) {
  const auto traits = output_traits(m);
  std::vector<bool> out;
  out.reserve(leaves.size());
  for (const auto& leaf : leaves) out.push_back(traits_of(traits, leaf.path).tie);
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<oracle::verdict> compare_runs(const run_result& a, const run_result& b,
                                                                       const compare_options& opt, const model* m,
                                                                       const run_result* reference64,
                                                                       std::span<const run_result* const> peers) {
  using oracle::verdict_kind;
  std::vector<oracle::verdict> out;
  oracle::verdict base;
  base.config_a = a.config;
  base.config_b = b.config;
  if (!a.ok() || !b.ok()) {
    auto v = base;
    v.kind = !a.ok() && !b.ok() ? verdict_kind::error_in_both : verdict_kind::error_in_one;
    if (!a.ok()) v.message += a.config + ": " + a.error;
    if (!b.ok()) v.message += (v.message.empty() ? "" : "\n") + b.config + ": " + b.error;
    if (v.kind == verdict_kind::error_in_one) v.failed_at = a.ok() ? b.failed_position : a.failed_position;
    out.push_back(std::move(v));
    return out;
  }
  if (a.outputs.size() != b.outputs.size()) {
    auto v = base;
    v.kind = verdict_kind::state_mismatch;
    v.message =
        "results for " + std::to_string(a.outputs.size()) + " vs " + std::to_string(b.outputs.size()) + " inputs";
    out.push_back(std::move(v));
    return out;
  }
  const auto traits = m ? output_traits(*m) : std::map<std::string, leaf_traits>{};
  // Gradients with respect to the inputs flow back through every output: a selection anywhere
  // makes them selection-dependent.
  const bool any_selection =
      std::any_of(traits.begin(), traits.end(), [](const auto& kv) { return kv.second.selection; });
  const bool use_ref = reference64 && reference64->ok() && reference64->outputs.size() == a.outputs.size();
  for (std::size_t i = 0; i < a.outputs.size(); ++i) {
    const auto& la = a.outputs[i];
    const auto& lb = b.outputs[i];
    auto v0 = base;
    v0.input_index = i;
    if (la.size() != lb.size()) {
      v0.kind = verdict_kind::state_mismatch;
      v0.message = "input " + std::to_string(i) + ": " + std::to_string(la.size()) + " vs " +
                   std::to_string(lb.size()) + " output values";
      out.push_back(std::move(v0));
      continue;
    }
    const output_list* lr = use_ref && reference64->outputs[i].size() == la.size() ? &reference64->outputs[i] : nullptr;
    for (std::size_t j = 0; j < la.size(); ++j) {
      auto v = v0;
      v.output_index = j;
      v.output_path = la[j].path;
      if (la[j].path != lb[j].path) {
        v.kind = verdict_kind::state_mismatch;
        v.message = "output structure differs: `" + la[j].path + "` vs `" + lb[j].path + "`";
      } else {
        try {
          const c10::IValue* r = lr && (*lr)[j].path == la[j].path ? &(*lr)[j].value : nullptr;
          const bool gradient = la[j].path.rfind("grad.", 0) == 0;
          double spread = 0;
          for (const auto* p : peers)
            if (p && p->ok() && i < p->outputs.size() && j < p->outputs[i].size() &&
                p->outputs[i][j].path == la[j].path)
              spread = std::max(spread, compare_detail::spread_of(la[j].value, p->outputs[i][j].value, gradient));
          auto tr = traits_of(traits, la[j].path);
          if (gradient) tr.selection = tr.selection || any_selection;
          compare_detail::compare_leaf(v, la[j].value, lb[j].value, r, a.widened, b.widened, tr, gradient, opt, spread);
        } catch (const std::exception& e) {
          v.kind = verdict_kind::state_mismatch;
          v.message = "cannot compare: " + clean_error(e.what());
        }
      }
      out.push_back(std::move(v));
    }
  }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<std::vector<c10::IValue>> perturbed_inputs(
    const std::vector<std::vector<c10::IValue>>& in, double rel, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  std::vector<std::vector<c10::IValue>> out;
  out.reserve(in.size());
  for (const auto& args : in)
    out.push_back(ivalue::deep_clone(args, [&](const at::Tensor& t) {
      if (!t.is_floating_point() || t.numel() == 0) return t.clone();
      const auto u = at::rand(t.sizes(), gen, t.options().dtype(c10::kDouble));
      return (t.to(c10::kDouble) * (1 + rel * (2 * u - 1))).to(t.scalar_type());
    }));
  return out;
}

[[nodiscard]] TFG_TORCH_DECL model perturbed_parameters(const model& m, double rel, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  model out = m;
  for (auto n : out.graph.nodes()) {
    auto& c = out.graph.data(n).constant;
    if (!c.isTensor()) continue;
    const auto t = c.toTensor();
    if (!t.defined() || !t.is_floating_point() || t.numel() == 0) continue;
    const auto u = at::rand(t.sizes(), gen, t.options().dtype(c10::kDouble));
    c = c10::IValue((t.to(c10::kDouble) * (1 + rel * (2 * u - 1))).to(t.scalar_type()));
  }
  return out;
}

}  // namespace tfg::torch
