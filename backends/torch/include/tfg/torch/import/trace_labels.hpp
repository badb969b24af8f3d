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
#include "tfg/torch/linkage.hpp"
#include "tfg/torch/execute/profile.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
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

[[nodiscard]] TFG_TORCH_DECL bool is_copy_like(std::string_view n);

[[nodiscard]] inline bool is_autograd(std::string_view n) {
  return n.find("Backward") != std::string_view::npos || n.rfind("autograd::", 0) == 0 ||
         n.find("AccumulateGrad") != std::string_view::npos;
}

}  // namespace label_detail

/// The label of an event named `name` whose caller is `parent` (empty at depth 0), tagged `tag`.
[[nodiscard]] TFG_TORCH_DECL std::string event_label(std::string_view tag, std::string_view parent,
                                                     std::string_view name);

/// The label sequence of one or more traces, kept as ids: a label's text is built once per
/// distinct (tag, caller, event name), not once per event (a mobilenet round has hundreds of
/// thousands of events). Consecutive repeats collapse. Ids are given in order of first
/// appearance, so they are the summary's indices.
class label_sequence {
 public:
  /// Appends the labels of `trace` (names from `names`), tagged with `tag`.
  void append(const event_trace& trace, const event_labels& names, std::string_view tag) {
    const auto tag_id = static_cast<std::uint64_t>(tag_index(tag));
    std::vector<std::uint32_t> stack;  // open events' name ids by depth
    for (const auto& e : trace) {
      if (stack.size() > e.depth) stack.resize(e.depth);
      const bool nested = e.depth > 0 && !stack.empty();
      const std::uint64_t parent = nested ? std::uint64_t{stack.back()} + 1 : 0;
      const std::uint64_t key = (tag_id << 56) ^ (parent << 28) ^ e.label;
      auto it = ids_.find(key);
      if (it == ids_.end()) {
        const std::string text = event_label(
            tag, nested ? std::string_view(names.names[stack.back()]) : std::string_view{}, names.names[e.label]);
        auto [t, fresh] = by_text_.emplace(text, static_cast<std::uint32_t>(labels_.size()));
        if (fresh) labels_.push_back(text);
        it = ids_.emplace(key, t->second).first;
      }
      stack.push_back(e.label);
      if (seq_.empty() || seq_.back() != it->second) seq_.push_back(it->second);
    }
  }
  /// The sequence's labels as text (what the summary indexes).
  [[nodiscard]] std::vector<std::string> text() const {
    std::vector<std::string> out;
    out.reserve(seq_.size());
    for (auto i : seq_) out.push_back(labels_[i]);
    return out;
  }
  /// Distinct labels (in order of first appearance) and distinct adjacent transitions.
  [[nodiscard]] label_summary summary() const {
    label_summary s;
    s.labels = labels_;
    std::set<std::pair<std::uint32_t, std::uint32_t>> tr;
    for (std::size_t i = 1; i < seq_.size(); ++i) tr.emplace(seq_[i - 1], seq_[i]);
    s.transitions.assign(tr.begin(), tr.end());
    return s;
  }

 private:
  std::size_t tag_index(std::string_view tag) {
    for (std::size_t i = 0; i < tags_.size(); ++i)
      if (tags_[i] == tag) return i;
    if (tags_.size() >= 255) throw std::length_error("label_sequence: more than 255 tags");
    tags_.emplace_back(tag);
    return tags_.size() - 1;
  }
  std::vector<std::string> tags_;
  std::vector<std::string> labels_;
  std::map<std::string, std::uint32_t, std::less<>> by_text_;
  std::unordered_map<std::uint64_t, std::uint32_t> ids_;
  std::vector<std::uint32_t> seq_;
};

/// Distinct labels and transitions of a label sequence given as text. O(n log n).
[[nodiscard]] TFG_TORCH_DECL label_summary summarise_labels(const std::vector<std::string>& sequence);

}  // namespace tfg::torch

#if !defined(TFG_TORCH_SEPARATE)
#include "tfg/torch/import/trace_labels.ipp"
#endif
