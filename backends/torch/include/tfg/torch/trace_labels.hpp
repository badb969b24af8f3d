#pragma once
/// Control-flow labels of a runtime trace (the campaign's reward, flowmut-method.md "Reward after
/// execution"). A dispatcher event trace (profile.hpp) becomes a sequence of labels that name
/// *what the framework decided*, never tensor values or node identities:
///
/// | event                                       | label                                  |
/// |---------------------------------------------|----------------------------------------|
/// | operator entered by the executor (depth 0)  | `TAG:op:aten::conv2d`                  |
/// | nested call: kernel/decomposition chosen    | `TAG:nested:aten::conv2d>aten::mkldnn_convolution` |
/// | autograd node (`...Backward0`, engine)      | `TAG:autograd:ConvolutionBackward0`    |
/// | copy / layout / alias handling              | `TAG:copy:aten::contiguous` (and `>` parent when nested) |
/// | TorchScript function, fusion group          | `TAG:jit:forward`, `TAG:jit:prim::TensorExprGroup` |
///
/// TAG is the execution configuration's short tag, so the same operator chosen by the graph
/// executor and by eager execution are different behaviours. Consecutive repeats collapse into
/// one label (a loop over 64 channels is one behaviour, not 64).
#include <tfg/torch/profile.hpp>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfg::torch {

/// The distinct labels of one or more traces and their distinct adjacent transitions
/// (indices into `labels`). What a worker returns and the reward consumes.
struct label_summary {
  std::vector<std::string> labels;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> transitions;
};

namespace label_detail {

[[nodiscard]] inline bool is_copy_like(std::string_view n) {
  for (std::string_view c : {"aten::copy_", "aten::contiguous", "aten::to", "aten::_to_copy", "aten::clone",
                             "aten::empty_strided", "aten::as_strided", "aten::_reshape_alias", "aten::view",
                             "aten::reshape", "aten::expand", "aten::detach", "aten::alias", "aten::resize_"})
    if (n == c) return true;
  return false;
}

[[nodiscard]] inline bool is_autograd(std::string_view n) {
  return n.find("Backward") != std::string_view::npos || n.rfind("autograd::", 0) == 0 ||
         n.find("AccumulateGrad") != std::string_view::npos;
}

}  // namespace label_detail

/// Appends the labels of `trace` (names from `names`) to `out`, tagged with `tag`.
inline void append_labels(const event_trace& trace, const event_labels& names, std::string_view tag,
                          std::vector<std::string>& out) {
  std::vector<std::string_view> stack;  // open events by depth
  for (const auto& e : trace) {
    const std::string_view name = names.names[e.label];
    if (stack.size() > e.depth) stack.resize(e.depth);
    const std::string_view parent = e.depth > 0 && !stack.empty() ? stack.back() : std::string_view{};
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
    stack.push_back(name);
    if (out.empty() || out.back() != label) out.push_back(std::move(label));
  }
}

/// Distinct labels and transitions of a label sequence. O(n log n).
[[nodiscard]] inline label_summary summarise_labels(const std::vector<std::string>& sequence) {
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
