#pragma once
// The definitions of ivalue.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/ivalue.hpp"

namespace tfg::torch::ivalue {

TFG_TORCH_DECL void flatten_into(const c10::IValue& v, const std::string& path, output_list& out) {
  if (v.isTuple()) {
    const auto& elems = v.toTupleRef().elements();
    for (std::size_t i = 0; i < elems.size(); ++i) flatten_into(elems[i], child_path(path, i), out);
  } else if (v.isList()) {
    const auto list = v.toList();
    for (std::size_t i = 0; i < list.size(); ++i) flatten_into(list.get(i), child_path(path, i), out);
  } else if (v.isGenericDict()) {  // values in insertion order, named by string keys
    std::size_t i = 0;
    for (const auto& e : v.toGenericDict()) {
      const auto& k = e.key();
      flatten_into(e.value(), k.isString() ? (path.empty() ? "" : path + ".") + k.toStringRef() : child_path(path, i),
                   out);
      ++i;
    }
  } else if (v.isTensor()) {
    auto t = v.toTensor();
    if (t.defined()) {
      t = t.detach();
      if (!t.device().is_cpu()) t = t.to(c10::kCPU);
    }
    out.push_back({path, c10::IValue(t)});
  } else {
    out.push_back({path, v});
  }
}

[[nodiscard]] TFG_TORCH_DECL output_list flatten(const c10::IValue& v) {
  output_list out;
  flatten_into(v, "", out);
  return out;
}

[[nodiscard]] TFG_TORCH_DECL c10::IValue deep_clone(const c10::IValue& v, const tensor_transform& f) {
  if (v.isTensor()) {
    const auto& t = v.toTensor();
    return t.defined() ? c10::IValue(f ? f(t) : t.clone()) : v;
  }
  if (v.isTensorList()) {
    auto list = v.toTensorList();
    c10::List<at::Tensor> copy;
    for (std::size_t i = 0; i < list.size(); ++i) {
      at::Tensor t = list.get(i);
      copy.push_back(!t.defined() ? t : f ? f(t) : t.clone());
    }
    return c10::IValue(copy);
  }
  if (v.isTuple()) {
    std::vector<c10::IValue> elems;
    for (const auto& e : v.toTupleRef().elements()) elems.push_back(deep_clone(e, f));
    return c10::ivalue::Tuple::create(std::move(elems));
  }
  if (v.isList()) {
    c10::impl::GenericList copy(v.toList().elementType());
    for (const auto& e : v.toListRef()) copy.push_back(deep_clone(e, f));
    return c10::IValue(copy);
  }
  if (v.isGenericDict()) {
    const auto d = v.toGenericDict();
    c10::impl::GenericDict copy(d.keyType(), d.valueType());
    for (const auto& e : d) copy.insert(e.key(), deep_clone(e.value(), f));
    return c10::IValue(copy);
  }
  return v;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<c10::IValue> deep_clone(const std::vector<c10::IValue>& in,
                                                                 const tensor_transform& f) {
  std::vector<c10::IValue> out;
  out.reserve(in.size());
  for (const auto& v : in) out.push_back(deep_clone(v, f));
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<at::Tensor> floating_tensors(const c10::IValue& v) {
  std::vector<at::Tensor> out;
  for_each_tensor(v, [&](const at::Tensor& t) {
    if (t.is_floating_point()) out.push_back(t);
  });
  return out;
}

[[nodiscard]] TFG_TORCH_DECL bool all_finite(const c10::IValue& v) {
  bool ok = true;
  for_each_tensor(v, [&](const at::Tensor& t) {
    if (ok && t.is_floating_point() && t.numel() > 0 && !t.isfinite().all().item<bool>()) ok = false;
  });
  return ok;
}

[[nodiscard]] TFG_TORCH_DECL bool all_finite(const std::vector<c10::IValue>& vs) {
  for (const auto& v : vs)
    if (!all_finite(v)) return false;
  return true;
}

[[nodiscard]] TFG_TORCH_DECL double excess(const c10::IValue& a, const c10::IValue& b, double atol, double rtol,
                                           bool same_dtype) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (a.isTensor() && b.isTensor()) {
    const auto& x = a.toTensor();
    const auto& y = b.toTensor();
    if (!x.defined() || !y.defined()) return x.defined() == y.defined() ? 0.0 : inf;
    if (x.sizes() != y.sizes() || x.is_floating_point() != y.is_floating_point()) return inf;
    if ((same_dtype || !x.is_floating_point()) && x.scalar_type() != y.scalar_type()) return inf;
    if (x.numel() == 0) return 0.0;
    const auto xc = x.to(c10::kCPU), yc = y.to(c10::kCPU);
    if (!x.is_floating_point()) return at::equal(xc, yc) ? 0.0 : inf;
    auto xd = xc.to(c10::kDouble), yd = yc.to(c10::kDouble);
    auto both_nan = xd.isnan().logical_and(yd.isnan());
    auto same_inf = xd.isinf().logical_and(xd.eq(yd));
    auto diff = (xd - yd).abs() - (yd.abs() * rtol + atol);
    diff = diff.masked_fill(both_nan.logical_or(same_inf), -1.0).nan_to_num(inf, inf, -inf);
    return diff.max().item<double>();
  }
  // Containers (a dict's values by key: DeepLab's {"out": ...}) leaf by leaf; `==` on a
  // container of tensors would ask a tensor for its truth value.
  const bool seq_a = a.isTuple() || a.isList() || a.isGenericDict(),
             seq_b = b.isTuple() || b.isList() || b.isGenericDict();
  if (seq_a && seq_b) {
    const auto x = flatten(a), y = flatten(b);
    if (x.size() != y.size()) return inf;
    double worst = -inf;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (x[i].path != y[i].path) return inf;
      worst = std::max(worst, excess(x[i].value, y[i].value, atol, rtol, same_dtype));
    }
    return x.empty() ? 0.0 : worst;
  }
  if (a.isDouble() && b.isDouble()) {
    const double x = a.toDouble(), y = b.toDouble();
    if ((std::isnan(x) && std::isnan(y)) || x == y) return 0.0;
    const double d = std::abs(x - y) - (std::abs(y) * rtol + atol);
    return std::isnan(d) ? inf : d;
  }
  return a == b ? 0.0 : inf;
}

}  // namespace tfg::torch::ivalue
