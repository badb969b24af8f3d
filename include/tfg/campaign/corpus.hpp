#pragma once
/// \file
/// The corpus of a campaign (docs/campaign.md, "Seeds, acceptance and the corpus"): the
/// accepted seeds it can continue from, the original always among them, each with the
/// disagreements it carries (roots: the seed's own findings, localised to its nodes, that its
/// mutants inherit instead of reporting again); which member is current; the schedule that
/// switches members; and what makes a mutant healthy enough to become a seed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/signature_json.hpp"
#include "tfg/campaign/backend.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/settings.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/state/tensor_state.hpp"

namespace tfg::campaign {

/// The largest finite |value| of any floating tensor edge of a profiled model.
template <class Backend>
[[nodiscard]] double max_magnitude(const typename Backend::model_type& m, const typename Backend::profile_type& p) {
  double x = 0;
  for (auto e : Backend::graph(m).edges())
    if (const auto* ep = Backend::edge_profile(p, e))
      for (const auto& s : ep->runs)
        if (s.kind == state::value_kind::tensor && state::is_floating(s.type) && s.numel > 0 &&
            s.numbers.max == s.numbers.max)
          x = std::max(x, s.numbers.max_abs());
  return x;
}

/// NaN and Inf elements over the graph outputs of a profiled model.
template <class Backend>
[[nodiscard]] std::uint64_t special_outputs(const typename Backend::model_type& m,
                                            const typename Backend::profile_type& p) {
  std::uint64_t n = 0;
  for (auto e : Backend::graph(m).graph_outputs())
    if (const auto* ep = Backend::edge_profile(p, e))
      for (const auto& s : ep->runs) n += s.numbers.nan_count + s.numbers.inf_count;
  return n;
}

/// Roots of a seed: finding root key -> the signature its mutants inherit.
using root_map = std::map<std::string, oracle::finding_signature>;

/// A finding's root key by kind, pair and node id.
[[nodiscard]] inline std::string root_key(oracle::finding_kind k, const std::string& a, const std::string& b,
                                          graph::node_id n) {
  return std::string(oracle::to_string(k)) + "|" + a + "|" + b + "|" + std::to_string(graph::index(n));
}
/// A finding's root key: by its node, or "…|model" for a whole-model finding.
[[nodiscard]] inline std::string root_key(const observed_finding& f) {
  if (f.where.whole_model)
    return std::string(oracle::to_string(f.signature.kind)) + "|" + f.signature.config_a + "|" + f.signature.config_b +
           "|model";
  return root_key(f.signature.kind, f.signature.config_a, f.signature.config_b, f.where.node);
}

template <class Backend>
class corpus {
 public:
  using model_type = typename Backend::model_type;
  using profile_type = typename Backend::profile_type;

  /// One accepted seed the campaign can continue from, with the disagreements it carries.
  struct member {
    std::filesystem::path file;  ///< relative to the campaign folder
    model_type model;
    profile_type profile;
    root_map roots;
  };

  /// How the corpus is kept (options of the campaign).
  struct rules {
    std::size_t size = 8;           ///< members kept (the original always)
    std::size_t return_every = 25;  ///< every N rounds the next member; 0: never
    double min_legal_rate = 0.5;    ///< below it over the window: back to the original
    std::size_t legal_window = 10;
    double magnitude_limit = 100;  ///< healthy: values within this many times the original's largest
    std::size_t max_seed_nodes = 4000;
    bool accept_any = false;  ///< every legal mutant is healthy

    /// The rules a campaign's options give.
    [[nodiscard]] static rules of(const options& o) {
      return {o.corpus_size,     o.return_every,   o.min_legal_rate, o.legal_window,
              o.magnitude_limit, o.max_seed_nodes, o.accept_any};
    }
  };

  corpus(layout files, rules r) : files_(std::move(files)), rules_(r) {}

  [[nodiscard]] bool empty() const noexcept { return members_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return members_.size(); }
  [[nodiscard]] std::size_t current_index() const noexcept { return current_; }
  [[nodiscard]] const member& current() const { return members_.at(current_); }
  [[nodiscard]] const member& original() const { return members_.at(0); }

  /// Adds a member and makes it current; when full, the oldest member but the original makes
  /// room (its file is removed by remove_evicted(), after the checkpoint no longer names it).
  void admit(member m) {
    if (members_.size() >= std::max<std::size_t>(rules_.size, 2)) {
      const std::size_t victim = members_.size() > 1 ? 1 : 0;
      if (victim != 0) {
        evicted_.push_back(members_[victim].file);
        members_.erase(members_.begin() + static_cast<std::ptrdiff_t>(victim));
      }
    }
    members_.push_back(std::move(m));
    current_ = members_.size() - 1;
  }

  /// The seed's finding `f` becomes a root of the current member.
  void add_root(const observed_finding& f) {
    if ((f.where.node == graph::no_node && !f.where.whole_model) || members_.empty()) return;
    members_[current_].roots.emplace(root_key(f), f.signature);
  }

  /// The root of the current seed (whose model is `seed`) a finding is inherited from: the same
  /// kind and pair, localised to the same original node (or the same whole-model finding).
  [[nodiscard]] std::optional<oracle::finding_signature> inherited_root(const observed_finding& f,
                                                                        const model_type& seed) const {
    if (members_.empty()) return std::nullopt;
    const auto& roots = members_[current_].roots;
    if (f.where.whole_model) {
      const auto it = roots.find(root_key(f));
      if (it == roots.end() || it->second.culprit_op != f.signature.culprit_op) return std::nullopt;
      return it->second;
    }
    if (!f.where.localised || f.where.node == graph::no_node) return std::nullopt;
    const auto it = roots.find(root_key(f.signature.kind, f.signature.config_a, f.signature.config_b, f.where.node));
    if (it == roots.end()) return std::nullopt;
    // The node must be the seed's own (same kind): a node the mutation added has a new id.
    const auto& g = Backend::graph(seed);
    if (graph::index(f.where.node) >= g.node_capacity() || !g.alive(f.where.node) ||
        std::string(Backend::kind(seed, f.where.node)) != f.where.culprit_op)
      return std::nullopt;
    return it->second;
  }

  /// Why a legal mutant (`mm` profiled as `mp`, with `new_findings` recorded) does not become a
  /// seed, or "" when it does. `seed` is the current seed.
  [[nodiscard]] std::string why_not_healthy(const model_type& mm, const profile_type& mp, bool new_findings,
                                            const model_type& seed, const profile_type& seed_profile) const {
    if (Backend::graph(mm).node_count() > rules_.max_seed_nodes) return "too large";
    if (rules_.accept_any) return "";
    if (new_findings) return "it produced a finding";
    if (special_outputs<Backend>(mm, mp) > special_outputs<Backend>(seed, seed_profile))
      return "its outputs carry NaN/Inf the seed's do not";
    if (!members_.empty()) {
      // Values far beyond the original's make float32 ill-conditioned: later comparisons would
      // measure rounding, not the framework.
      const double mine = max_magnitude<Backend>(mm, mp);
      const double original = max_magnitude<Backend>(members_[0].model, members_[0].profile);
      if (mine > rules_.magnitude_limit * std::max(original, 1.0))
        return "its values reach " + std::to_string(mine) + ", beyond " + std::to_string(rules_.magnitude_limit) +
               " x the original seed's largest";
    }
    return "";
  }

  /// Records whether an executed round was legal, for the legal-rate rule.
  void record_window(bool legal) {
    window_.push_back(legal);
    while (window_.size() > rules_.legal_window) window_.pop_front();
  }

  /// The schedule before round `round`: every `return_every` rounds the next member (round
  /// robin), and back to the original when the legal rate of the last `legal_window` executed
  /// rounds drops below `min_legal_rate`. On a switch, current() is the member to continue
  /// from, its file is published as the current seed, and the note says why.
  [[nodiscard]] std::optional<std::string> schedule(std::size_t round) {
    if (members_.size() < 2 && current_ == 0) return std::nullopt;
    std::optional<std::size_t> to;
    std::string why;
    if (window_.size() >= rules_.legal_window && rules_.legal_window > 0) {
      const auto legal = static_cast<double>(std::count(window_.begin(), window_.end(), true));
      if (legal / static_cast<double>(window_.size()) < rules_.min_legal_rate && current_ != 0) {
        to = 0;
        why = "legal rate " + std::to_string(static_cast<int>(100 * legal / static_cast<double>(window_.size()))) + "%";
      }
    }
    if (!to && rules_.return_every > 0 && round > 1 && (round - 1) % rules_.return_every == 0 && members_.size() > 1) {
      to = (current_ + 1) % members_.size();
      why = "schedule";
    }
    if (!to || *to == current_) return std::nullopt;
    current_ = *to;
    window_.clear();
    publish_current(files_.root() / members_[current_].file);
    return "continued from corpus member " + members_[current_].file.string() + " (" + why + ")";
  }

  /// Copies `file` over the current seed's file through a rename.
  void publish_current(const std::filesystem::path& file) const {
    std::filesystem::copy_file(file, files_.current_staging(), std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(files_.current_staging(), files_.current());
  }

  /// Removes the files of members evicted this round (after the checkpoint that no longer
  /// names them: a kill in between leaves a stray file, never a missing one).
  void remove_evicted() {
    std::error_code ec;
    for (const auto& f : evicted_) std::filesystem::remove(files_.root() / f, ec);
    evicted_.clear();
  }

  /// Roots (keyed by node ids of `model`) as (kind, a, b, topological position, node kind)
  /// records, for state.json and for moving them to a re-import of the model.
  [[nodiscard]] static nlohmann::json roots_json(const root_map& roots, const model_type& model) {
    const auto& g = Backend::graph(model);
    std::vector<std::size_t> pos(g.node_capacity(), 0);
    std::vector<std::string> kinds(g.node_capacity());
    std::size_t i = 0;
    for (auto n : g.topological_order()) {
      pos[graph::index(n)] = i++;
      kinds[graph::index(n)] = std::string(Backend::kind(model, n));
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [key, sig] : roots) {
      const auto bar = key.rfind('|');
      nlohmann::json rec = sig;  // signature_json.hpp
      rec["prefix"] = key.substr(0, bar + 1);
      if (key.compare(bar + 1, std::string::npos, "model") == 0) {
        rec["whole_model"] = true;
      } else {
        const auto node = static_cast<std::size_t>(std::stoull(key.substr(bar + 1)));
        if (node >= pos.size()) continue;
        rec["position"] = pos[node];
        rec["node_kind"] = kinds[node];
      }
      out.push_back(std::move(rec));
    }
    return out;
  }

  /// Roots from roots_json() records, keyed by node ids of `model` (a record whose position
  /// holds another kind of node in `model` is dropped).
  [[nodiscard]] static root_map roots_from_json(const nlohmann::json& records, const model_type& model) {
    root_map roots;
    const auto& g = Backend::graph(model);
    std::vector<graph::node_id> by_pos(g.topological_order().begin(), g.topological_order().end());
    for (const auto& r : records) {
      const bool whole = r.value("whole_model", false);
      const auto p = whole ? 0 : r.at("position").get<std::size_t>();
      if (!whole && p >= by_pos.size()) continue;
      if (!whole && r.contains("node_kind") && r.at("node_kind").get<std::string>() != Backend::kind(model, by_pos[p]))
        continue;
      oracle::finding_signature sig;
      try {
        from_json(r, sig);  // signature_json.hpp; reads the short keys of older state.json too
      } catch (const nlohmann::json::exception&) {
        continue;  // a kind this flowmut does not know: not a root it can inherit
      }
      roots.emplace(
          r.at("prefix").get<std::string>() + (whole ? std::string("model") : std::to_string(graph::index(by_pos[p]))),
          sig);
    }
    return roots;
  }

  /// The checkpoint's part: members (file, roots), the current one, the legal window.
  void checkpoint(nlohmann::json& st) const {
    nlohmann::json c = nlohmann::json::array();
    for (const auto& m : members_) c.push_back({{"file", m.file.string()}, {"roots", roots_json(m.roots, m.model)}});
    st["corpus"] = std::move(c);
    st["current"] = current_;
    st["window"] = std::vector<bool>(window_.begin(), window_.end());
  }

  /// Restores the checkpoint's part: members re-imported from their files by `load` and
  /// profiled by `profile` (node ids are new: roots move by position).
  template <class Load, class Profile>
  void restore(const nlohmann::json& st, Load&& load, Profile&& profile) {
    for (bool w : st.value("window", std::vector<bool>{})) window_.push_back(w);
    for (const auto& c : st.value("corpus", nlohmann::json::array())) {
      member m{c.at("file").get<std::string>(), {}, {}, {}};
      m.model = load(files_.root() / m.file);
      m.profile = profile(m.model);
      m.roots = roots_from_json(c.value("roots", nlohmann::json::array()), m.model);
      members_.push_back(std::move(m));
    }
    current_ = std::min<std::size_t>(st.value("current", std::size_t{0}), members_.empty() ? 0 : members_.size() - 1);
  }

 private:
  layout files_;
  rules rules_;
  std::vector<member> members_;
  std::size_t current_ = 0;
  std::deque<bool> window_;
  std::vector<std::filesystem::path> evicted_;
};

}  // namespace tfg::campaign
