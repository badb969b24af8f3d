#pragma once
/// \file
/// The runtime-trace novelty reward of FlowMuT (flowmut-method.md, "Reward after execution"):
///
///   r_t = 1/2 ( |E_t \ E_<t| / |E_t| + |Q_t \ Q_<t| / |Q_t| )
///
/// where E_t is the set of distinct control-flow labels of the mutant's runtime trace and Q_t
/// the set of its distinct adjacent transitions (pairs of consecutive labels). A trace with a
/// single label has no transitions: the reward is then the label term alone. An empty trace
/// (no complete execution) gives 0 and records nothing. The caller removes failure labels
/// before calling; labels are strings because they come from another process.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tfg::campaign {

/// The reward of one trace and the counts it was computed from.
struct novelty {
  double reward = 0;                ///< in [0, 1]
  std::size_t labels = 0;           ///< |E_t|
  std::size_t transitions = 0;      ///< |Q_t|
  std::size_t new_labels = 0;       ///< |E_t \ E_<t|
  std::size_t new_transitions = 0;  ///< |Q_t \ Q_<t|
};

/// The label and transition histories E_<t and Q_<t of a campaign.
class trace_novelty {
 public:
  /// The reward `trace` would get now; the history is not changed.
  [[nodiscard]] novelty peek(std::span<const std::string> trace) const { return evaluate(trace, nullptr); }

  /// The reward of `trace` against the history; then its labels and transitions join it.
  novelty observe(std::span<const std::string> trace) { return evaluate(trace, this); }

  /// The reward of a trace given as its distinct labels and distinct transitions (what a
  /// worker returns) rather than as a sequence; then they join the history. Same formula as
  /// observe(): each transition counts as a two-label trace.
  novelty observe_sets(std::span<const std::string> labels,
                       std::span<const std::pair<std::string, std::string>> transitions) {
    novelty n;
    n.labels = labels.size();
    n.transitions = transitions.size();
    if (labels.empty()) return n;
    for (const auto& l : labels)
      if (find(l) == unknown) ++n.new_labels;
    for (const auto& [a, b] : transitions) {
      const auto ia = find(a), ib = find(b);
      if (ia == unknown || ib == unknown || !transitions_.contains(pack(ia, ib))) ++n.new_transitions;
    }
    for (const auto& l : labels) (void)intern(l);
    for (const auto& [a, b] : transitions) transitions_.insert(pack(intern(a), intern(b)));
    const double e = static_cast<double>(n.new_labels) / static_cast<double>(n.labels);
    n.reward =
        n.transitions ? 0.5 * (e + static_cast<double>(n.new_transitions) / static_cast<double>(n.transitions)) : e;
    return n;
  }

  [[nodiscard]] std::size_t known_labels() const noexcept { return labels_.size(); }
  [[nodiscard]] std::size_t known_transitions() const noexcept { return transitions_.size(); }

  /// {"version":1,"labels":[...],"transitions":[[i,j],...]} with indices into "labels"
  /// (labels in first-seen order, transitions sorted): deterministic for a given history.
  [[nodiscard]] nlohmann::json to_json() const {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ts;
    ts.reserve(transitions_.size());
    for (std::uint64_t t : transitions_)
      ts.emplace_back(static_cast<std::uint32_t>(t >> 32), static_cast<std::uint32_t>(t));
    std::sort(ts.begin(), ts.end());
    nlohmann::json tj = nlohmann::json::array();
    for (const auto& [a, b] : ts) tj.push_back({a, b});
    return {{"version", 1}, {"labels", labels_}, {"transitions", std::move(tj)}};
  }

  /// Inverse of to_json. Throws std::invalid_argument on a malformed document (unknown
  /// version, duplicate label, index out of range).
  [[nodiscard]] static trace_novelty from_json(const nlohmann::json& j) {
    if (!j.is_object() || j.value("version", 0) != 1)
      throw std::invalid_argument("trace_novelty: unsupported or missing version");
    trace_novelty t;
    for (const auto& l : j.at("labels")) {
      const auto s = l.get<std::string>();
      if (!t.index_.emplace(s, static_cast<std::uint32_t>(t.labels_.size())).second)
        throw std::invalid_argument("trace_novelty: duplicate label '" + s + "'");
      t.labels_.push_back(s);
    }
    for (const auto& p : j.at("transitions")) {
      if (!p.is_array() || p.size() != 2) throw std::invalid_argument("trace_novelty: a transition is not a pair");
      const auto a = p[0].get<std::uint64_t>(), b = p[1].get<std::uint64_t>();
      if (a >= t.labels_.size() || b >= t.labels_.size())
        throw std::invalid_argument("trace_novelty: transition index out of range");
      t.transitions_.insert(pack(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b)));
    }
    return t;
  }

  friend bool operator==(const trace_novelty& x, const trace_novelty& y) {
    return x.labels_ == y.labels_ && x.transitions_ == y.transitions_;
  }

 private:
  static constexpr std::uint32_t unknown = 0xFFFFFFFFu;

  static std::uint64_t pack(std::uint32_t a, std::uint32_t b) noexcept {
    return (static_cast<std::uint64_t>(a) << 32) | b;
  }

  std::uint32_t find(const std::string& s) const {
    const auto it = index_.find(s);
    return it == index_.end() ? unknown : it->second;
  }

  std::uint32_t intern(const std::string& s) {
    const auto [it, fresh] = index_.emplace(s, static_cast<std::uint32_t>(labels_.size()));
    if (fresh) labels_.push_back(s);
    return it->second;
  }

  /// Computes the novelty; when `record` is set, adds the trace to its history afterwards.
  novelty evaluate(std::span<const std::string> trace, trace_novelty* record) const {
    novelty n;
    if (trace.empty()) return n;
    // Distinct labels of this trace, with their history id (unknown when new). New labels get
    // provisional ids past the history so that new transitions are distinct pairs too.
    std::unordered_map<std::string_view, std::uint64_t> ids;
    std::uint64_t next_new = std::uint64_t{1} << 32;
    std::vector<std::uint64_t> seq;
    seq.reserve(trace.size());
    for (const std::string& l : trace) {
      auto [it, fresh] = ids.emplace(l, 0);
      if (fresh) {
        const std::uint32_t known = find(l);
        it->second = known == unknown ? next_new++ : known;
        if (known == unknown) ++n.new_labels;
      }
      seq.push_back(it->second);
    }
    n.labels = ids.size();
    std::unordered_set<std::pair<std::uint64_t, std::uint64_t>, pair_hash> pairs;
    for (std::size_t i = 0; i + 1 < seq.size(); ++i) {
      const auto p = std::make_pair(seq[i], seq[i + 1]);
      if (!pairs.insert(p).second) continue;
      const bool known =
          p.first <= unknown && p.second <= unknown &&
          transitions_.contains(pack(static_cast<std::uint32_t>(p.first), static_cast<std::uint32_t>(p.second)));
      if (!known) ++n.new_transitions;
    }
    n.transitions = pairs.size();
    const double label_term = static_cast<double>(n.new_labels) / static_cast<double>(n.labels);
    n.reward = n.transitions == 0
                   ? label_term
                   : 0.5 * (label_term + static_cast<double>(n.new_transitions) / static_cast<double>(n.transitions));
    if (record != nullptr) {
      for (std::size_t i = 0; i < trace.size(); ++i) {
        const std::uint32_t a = record->intern(trace[i]);
        if (i + 1 < trace.size()) record->transitions_.insert(pack(a, record->intern(trace[i + 1])));
      }
    }
    return n;
  }

  struct pair_hash {
    std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& p) const noexcept {
      return std::hash<std::uint64_t>{}(p.first * 0x9E3779B97F4A7C15ull ^ p.second);
    }
  };

  std::vector<std::string> labels_;                       ///< E_<t in first-seen order
  std::unordered_map<std::string, std::uint32_t> index_;  ///< label -> position in labels_
  std::unordered_set<std::uint64_t> transitions_;         ///< Q_<t as packed (from, to) ids
};

}  // namespace tfg::campaign
