#pragma once
/// \file
/// The behaviour reward: what a round taught the campaign (docs/campaign.md, "Reward").
///
/// The paper's reward (reward.hpp) pays the share of new runtime-trace labels and transitions.
/// A rewrite inserted at a new place makes new transitions between the labels it sits between
/// wherever it goes, so every instance of an always-applicable rewrite with many sites is paid
/// (an identity `as_strided` view took 35-43% of LinUCB's rounds). The behaviour reward pays
/// what a framework developer would call new, measured against everything the campaign has
/// seen (the seeds included), and decays with repetition:
///
///   r = d(k) * ( w_op  [the mutant runs an operator kind the campaign never ran]
///              + w_st  min(1, new input classes / 3)
///              + w_dis [a configuration disagreement of a class never seen]
///              + w_tr  trace novelty (the paper's reward) )
///   d(k) = 1 / sqrt(1 + k),  k = earlier executed rounds of the same (operator, site class)
///
/// An input class is an operator kind with the state classes of its tensor inputs (dtype,
/// rank, layout or memory format, NaN/Inf/all-zero, aliased storage): the kernel a framework
/// dispatches and the data it sees. A value-preserving mutation (the operator claims to keep
/// the values) that reaches no new operator, no new input class and no new disagreement gets
/// 0 whatever its trace: a view that changes no kernel teaches nothing. The weights are
/// options (behaviour_weights); docs/campaign.md gives the measurements that chose them.
///
/// Depends on the standard library and nlohmann-json only.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tfg/campaign/reward.hpp"
#include "tfg/select/features.hpp"

namespace tfg::campaign {

/// What one executed test case showed, as the reward sees it.
struct behaviour_observation {
  std::vector<std::string> kinds;            ///< operator kinds the model runs
  std::vector<std::uint64_t> input_classes;  ///< hashes of (kind, input state classes), see input_class_key
  std::vector<std::string> disagreements;    ///< "kind a|b culprit" of the findings it showed (new or inherited)
};

/// The weights of the behaviour reward; they sum to 1 so that r is in [0, 1].
struct behaviour_weights {
  double op = 0.3, state = 0.3, disagreement = 0.2, trace = 0.2;
  double state_saturation = 3;  ///< new input classes that earn the whole state term
};

/// The reward of one round and the counts behind it (kept in the round's record).
struct behaviour_reward {
  double reward = 0;
  double decay = 1;
  std::size_t new_kinds = 0, new_input_classes = 0, new_disagreements = 0;
  std::size_t repeats = 0;  ///< k: earlier executed rounds of the same (operator, site class)
  bool no_kernel = false;   ///< a value-preserving mutation that reached nothing new
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"reward", reward},
            {"decay", decay},
            {"new_kinds", new_kinds},
            {"new_input_classes", new_input_classes},
            {"new_disagreements", new_disagreements},
            {"repeats", repeats},
            {"no_kernel", no_kernel}};
  }
};

/// The hash of an operator kind with the state classes of its inputs, in input order.
[[nodiscard]] inline std::uint64_t input_class_key(std::string_view kind,
                                                   const std::vector<std::string>& input_classes) {
  std::uint64_t h = select::hash_string(kind);
  for (const auto& c : input_classes) h = select::hash_combine(h, select::hash_string(c));
  return h;
}

/// The campaign's history of behaviours: operator kinds run, input classes, disagreement
/// classes and the executed rounds per (operator, site class). Deterministic JSON for
/// checkpoints.
class behaviour_history {
 public:
  /// Adds what a seed shows without paying for it (round 0 and every accepted seed are
  /// judged against the same history).
  void seed(const behaviour_observation& o) {
    for (const auto& k : o.kinds) kinds_.insert(k);
    for (auto c : o.input_classes) classes_.insert(c);
    for (const auto& d : o.disagreements) disagreements_.insert(d);
  }

  /// The reward of a round that executed operator `arm` at site class `cls`, whose mutant
  /// showed `o`; `trace` is the paper's reward of the same round; `preserves_values` says the
  /// operator claims to keep the values. Then `o` joins the history and the class's count
  /// grows by one.
  behaviour_reward observe(std::uint32_t arm, std::uint64_t cls, bool preserves_values, const behaviour_observation& o,
                           double trace, const behaviour_weights& w = {}) {
    behaviour_reward r;
    std::set<std::string> kinds;
    for (const auto& k : o.kinds)
      if (!kinds_.count(k) && kinds.insert(k).second) ++r.new_kinds;
    std::set<std::uint64_t> classes;
    for (auto c : o.input_classes)
      if (!classes_.count(c) && classes.insert(c).second) ++r.new_input_classes;
    std::set<std::string> dis;
    for (const auto& d : o.disagreements)
      if (!disagreements_.count(d) && dis.insert(d).second) ++r.new_disagreements;
    auto& n = repeats_[select::hash_combine(0x72657065ull + arm, cls)];
    r.repeats = n++;
    r.decay = 1.0 / std::sqrt(1.0 + static_cast<double>(r.repeats));
    r.no_kernel = preserves_values && r.new_kinds == 0 && r.new_input_classes == 0 && r.new_disagreements == 0;
    if (!r.no_kernel) {
      const double sat = w.state_saturation > 0 ? w.state_saturation : 1;
      const double raw = w.op * (r.new_kinds ? 1.0 : 0.0) +
                         w.state * std::min(1.0, static_cast<double>(r.new_input_classes) / sat) +
                         w.disagreement * (r.new_disagreements ? 1.0 : 0.0) + w.trace * std::clamp(trace, 0.0, 1.0);
      r.reward = std::clamp(r.decay * raw, 0.0, 1.0);
    }
    kinds_.insert(kinds.begin(), kinds.end());
    classes_.insert(classes.begin(), classes.end());
    disagreements_.insert(dis.begin(), dis.end());
    return r;
  }

  [[nodiscard]] std::size_t kinds() const noexcept { return kinds_.size(); }
  [[nodiscard]] std::size_t input_classes() const noexcept { return classes_.size(); }
  [[nodiscard]] std::size_t disagreements() const noexcept { return disagreements_.size(); }

  [[nodiscard]] nlohmann::json to_json() const {
    nlohmann::json rep = nlohmann::json::array();
    for (const auto& [k, v] : repeats_) rep.push_back({k, v});
    return {{"version", 1},
            {"kinds", kinds_},
            {"input_classes", classes_},
            {"disagreements", disagreements_},
            {"repeats", rep}};
  }
  [[nodiscard]] static behaviour_history from_json(const nlohmann::json& j) {
    behaviour_history h;
    if (!j.is_object()) return h;
    if (j.contains("kinds")) h.kinds_ = j.at("kinds").get<std::set<std::string>>();
    if (j.contains("input_classes")) h.classes_ = j.at("input_classes").get<std::set<std::uint64_t>>();
    if (j.contains("disagreements")) h.disagreements_ = j.at("disagreements").get<std::set<std::string>>();
    if (j.contains("repeats"))
      for (const auto& r : j.at("repeats")) h.repeats_[r.at(0).get<std::uint64_t>()] = r.at(1).get<std::size_t>();
    return h;
  }

 private:
  std::set<std::string> kinds_;
  std::set<std::uint64_t> classes_;
  std::set<std::string> disagreements_;
  std::map<std::uint64_t, std::size_t> repeats_;
};

/// The rewards a campaign can run with: `behaviour` (the default) or `paper` (the trace
/// novelty of flowmut-method.md, what campaigns before it used).
inline constexpr const char* reward_names[] = {"behaviour", "paper"};

}  // namespace tfg::campaign
