#pragma once
// The definitions of trace_labels.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/trace_labels.hpp"

namespace tfg::torch::label_detail {

[[nodiscard]] TFG_TORCH_DECL bool is_copy_like(std::string_view n) {
  for (std::string_view c : {"aten::copy_", "aten::contiguous", "aten::to", "aten::_to_copy", "aten::clone",
                             "aten::empty_strided", "aten::as_strided", "aten::_reshape_alias", "aten::view",
                             "aten::reshape", "aten::expand", "aten::detach", "aten::alias", "aten::resize_"})
    if (n == c) return true;
  return false;
}

}  // namespace tfg::torch::label_detail

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::string event_label(std::string_view tag, std::string_view parent,
                                                     std::string_view name) {
  std::string label(tag);
  label += ':';
  if (label_detail::is_autograd(name)) {
    label += "autograd:";
    label += name;
  } else if (name.find("::") == std::string_view::npos || name.rfind("prim::", 0) == 0 ||
             name.find("fused") != std::string_view::npos) {
    label += "jit:";
    label += name;
  } else {
    label += label_detail::is_copy_like(name) ? "copy:" : (parent.empty() ? "op:" : "nested:");
    if (!parent.empty()) {
      label += parent;
      label += '>';
    }
    label += name;
  }
  return label;
}

[[nodiscard]] TFG_TORCH_DECL label_summary summarise_labels(const std::vector<std::string>& sequence) {
  label_summary s;
  std::map<std::string_view, std::uint32_t> ids;
  std::vector<std::uint32_t> seq;
  seq.reserve(sequence.size());
  for (const auto& l : sequence) {
    auto [it, fresh] = ids.emplace(l, static_cast<std::uint32_t>(s.labels.size()));
    if (fresh) s.labels.push_back(l);
    seq.push_back(it->second);
  }
  std::set<std::pair<std::uint32_t, std::uint32_t>> tr;
  for (std::size_t i = 1; i < seq.size(); ++i) tr.emplace(seq[i - 1], seq[i]);
  s.transitions.assign(tr.begin(), tr.end());
  return s;
}

}  // namespace tfg::torch
