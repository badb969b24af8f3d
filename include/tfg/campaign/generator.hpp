#pragma once
/// \file
/// Mutation generation for one round, everything a campaign does before executing a mutant:
/// candidate construction over the current seed, the context features (L, T, M, P, I) of every
/// untried candidate, selection with the policy, and instantiation of the chosen replacement.
/// Generic over the backend (tfg/campaign/backend.hpp) and the selection policy; the campaign
/// loop (loop.hpp) owns one, the generation-cost benchmark (bench/bench_round.cpp) drives one
/// without any execution.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/backend.hpp"
#include "tfg/match/candidates.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/select/features.hpp"
#include "tfg/select/impact.hpp"
#include "tfg/select/policies.hpp"
#include "tfg/select/registry.hpp"
#include "tfg/util/clock.hpp"

namespace tfg::campaign {

/// A constant parameter value as the round log shows it (`3`, `[1,2]`, `aten::gelu`, `_`).
[[nodiscard]] inline std::string attr_text(const match::attr_value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "_";
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
          std::ostringstream s;
          s << x;
          return s.str();
        } else if constexpr (std::is_same_v<T, std::string>) return x;
        else {
          std::ostringstream s;
          s << "[";
          for (std::size_t i = 0; i < x.size(); ++i) s << (i ? "," : "") << x[i];
          s << "]";
          return s.str();
        }
      },
      v);
}

/// The candidate a round chose, with its feature sets (for the coverage counts) and context.
struct chosen_candidate {
  std::size_t index = 0;  ///< in the round's candidate_set
  match::candidate c;
  select::feature_set l{select::feature::site_context}, t{select::feature::tensor_state}, m{select::feature::mutation};
  select::context x;
  /// The candidate's site class (operator, producer kind of the anchor, its dtype and rank): the
  /// arm of class-aware policies, the key of the reward's repetition decay (docs/campaign.md).
  std::uint64_t cls = 0;

  /// The feature elements of l, t and m (what the coverage counts record).
  [[nodiscard]] std::vector<std::uint64_t> elements() const {
    std::vector<std::uint64_t> out;
    for (const auto* s : {&l, &t, &m})
      for (auto e : s->elements()) out.push_back(e);
    return out;
  }
};

/// Options of generator.
struct generator_options {
  std::vector<std::filesystem::path> op_dirs;
  std::uint64_t seed = 1;
  select::ablation features = select::ablation::all();
  bool influence = true;  ///< compute I (the backend's influence per seed); false: I = 0.5 for all
};

/// One round's mutation generation over a seed with backend `Backend` and selection policy
/// `Policy` (select::any_policy by default: one instantiation for every policy). Owns the
/// operator pool, the current seed with its profile, and the coverage counts.
template <class Backend, class Policy = select::any_policy>
class generator {
  static_assert(check_backend<Backend>());
  static_assert(select::check_selection_policy<Policy>());

 public:
  using model_type = typename Backend::model_type;
  using profile_type = typename Backend::profile_type;
  using inputs_type = typename Backend::inputs_type;
  using mutant_type = typename Backend::mutant_type;
  using failure_type = typename Backend::failure_type;
  using adapter_type = typename Backend::adapter_type;

  /// What one call of next() produced.
  struct generated {
    std::size_t candidates = 0;  ///< untried candidates this round
    bool selected = false;       ///< false: no candidate left on this seed
    chosen_candidate pick;
    match::bindings bindings;
    std::string op, site;
    std::variant<std::monostate, mutant_type, failure_type> result;  ///< monostate: not selected
    std::map<std::string, double> phase_ms;                          ///< construct, features, select, apply
  };

  /// Loads the operator pool; throws std::runtime_error with the diagnostics on errors.
  /// `backend` must outlive the generator.
  generator(Backend& backend, generator_options opt, Policy policy)
      : b_(backend), opt_(std::move(opt)), policy_(std::move(policy)) {
    pool_ = load_pool(opt_.op_dirs, symbols_, b_);
    rng_.seed(opt_.seed);
  }

  /// The operators the requirement files of the pool folders `dirs` describe (requirements/
  /// of each), sorted and without repeats: the metrics' test space.
  [[nodiscard]] static std::vector<std::string> requirement_universe(const std::vector<std::filesystem::path>& dirs,
                                                                     Backend& backend) {
    std::vector<std::string> u;
    for (const auto& dir : dirs)
      if (std::filesystem::is_directory(dir / "requirements"))
        for (auto& op : backend.requirement_universe(dir / "requirements")) u.push_back(op);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    return u;
  }

  /// The operator pool of `dirs` with `backend`'s externs; throws std::runtime_error with the
  /// diagnostics when it has errors.
  static match::pool load_pool(const std::vector<std::filesystem::path>& dirs, match::symbol_table& symbols,
                               Backend& backend) {
    auto pool = match::load_pool(dirs, symbols, backend.externs());
    if (!pool.ok()) {
      std::string msg = std::to_string(pool.errors) + " error(s) in the operator files:\n";
      for (const auto& d : pool.diagnostics) msg += d;
      throw std::runtime_error(msg);
    }
    // Operators whose device is absent are skipped, not executed (`requires cuda`).
    match::keep_available(pool, [&](std::string_view d) { return std::as_const(backend).device_available(d); });
    return pool;
  }
  generator(const generator&) = delete;
  generator& operator=(const generator&) = delete;

  /// Makes `m` (profiled as `p` on `inputs`) the current seed: rebuilds the adapter, the
  /// downstream-impact cache and the influence of every edge, and forgets which candidates
  /// were tried. `inputs` must outlive the generator.
  void set_seed(model_type m, profile_type p, const inputs_type& inputs) {
    const auto t0 = std::chrono::steady_clock::now();
    current_ = std::move(m);
    profile_ = std::move(p);
    inputs_ = &inputs;
    adapter_.emplace(b_.adapter(current_, profile_, symbols_));
    b_.bind_externs(current_, profile_);
    const auto& g = Backend::graph(current_);
    std::vector<std::vector<graph::node_id>> executed(input_count(inputs));
    for (auto n : g.nodes())
      if (Backend::executes(current_, n))
        for (auto& x : executed) x.push_back(n);
    impact_.emplace(g, executed);
    const auto ti = std::chrono::steady_clock::now();
    if (opt_.influence) influence_ = b_.influence(current_, inputs);
    else influence_.clear();
    influence_ms_ = ms_since(ti);
    seed_hash_ = model_hash(current_);
    node_hash_.assign(g.node_capacity(), 0);
    for (auto n : g.nodes()) node_hash_[graph::index(n)] = select::hash_string(Backend::kind(current_, n));
    tried_.clear();
    excluded_.clear();
    seed_ms_ = ms_since(t0);
  }

  /// Profiles `m` on `inputs` (op by op, in this process) and makes it the current seed.
  void profile_and_set_seed(model_type m, const inputs_type& inputs) {
    const auto t0 = std::chrono::steady_clock::now();
    auto p = b_.profile(m, inputs);
    const double ms = ms_since(t0);
    set_seed(std::move(m), std::move(p), inputs);
    profile_ms_ = ms;
  }

  /// Construct, features, select, instantiate. Never executes the mutant.
  generated next(std::uint64_t round) {
    using clk = std::chrono::steady_clock;
    generated out;
    auto t = clk::now();
    match::construct_options co;
    co.seed = select::hash_combine(opt_.seed, round);
    match::construct_into(set_, *adapter_, std::span<const match::compiled_operator>(pool_.operators), co);
    out.phase_ms["construct"] = ms_since(t);

    t = clk::now();
    std::vector<std::size_t> index;  // candidates not tried on this seed yet
    std::vector<select::context> xs;
    std::vector<std::uint32_t> arms;
    std::vector<std::uint64_t> classes;
    std::vector<double> g;
    for (std::size_t i = 0; i < set_.candidates.size(); ++i) {
      const auto& c = set_.candidates[i];
      if (tried_.count(candidate_key(set_, c))) continue;
      if (!excluded_.empty() && excluded_.count(site_key(set_, c))) continue;
      if (!banned_.empty() && banned_.count(class_key(c))) continue;
      index.push_back(i);
      arms.push_back(set_.candidates[i].op);
      classes.push_back(class_key(c));
      const auto a = graph::index(set_.candidates[i].anchor);
      g.push_back(a < influence_.size() ? influence_[a] : std::numeric_limits<double>::quiet_NaN());
    }
    select::normalise_influence(g);
    chosen_candidate& pick = out.pick;
    xs.reserve(index.size());
    for (std::size_t k = 0; k < index.size(); ++k) {
      features(set_, set_.candidates[index[k]], pick.l, pick.t, pick.m);
      const double p = (*impact_)(boundary(set_, set_.candidates[index[k]]));
      xs.push_back(opt_.features.apply(select::make_context(coverage_, pick.l, pick.t, pick.m, p, g[k])));
    }
    out.candidates = index.size();
    out.phase_ms["features"] = ms_since(t);
    t = clk::now();
    std::size_t k = select::no_candidate;
    if constexpr (select::class_aware_policy<Policy>)
      k = policy_.select(std::span<const select::context>(xs), std::span<const std::uint32_t>(arms),
                         std::span<const std::uint64_t>(classes), rng_);
    else k = policy_.select(std::span<const select::context>(xs), std::span<const std::uint32_t>(arms), rng_);
    out.phase_ms["select"] = ms_since(t);
    if (k == select::no_candidate) return out;
    out.selected = true;
    pick.index = index[k];
    pick.c = set_.candidates[index[k]];
    pick.x = xs[k];
    pick.cls = classes[k];
    features(set_, pick.c, pick.l, pick.t, pick.m);
    const auto& op = pool_.operators[pick.c.op];
    tried_.insert(candidate_key(set_, pick.c));
    out.op = op.name;
    out.site = site_text(set_, pick.c);

    t = clk::now();
    out.bindings = set_.bound(pick.c);
    auto made = b_.instantiate(current_, *adapter_, op, out.bindings, symbols_, ws_, *inputs_);
    if (auto* f = std::get_if<failure_type>(&made)) {
      out.result = std::move(*f);
    } else {
      // A backend that can infer the mutant's shapes and dtypes without running it decides the
      // conditions they refute here, before any worker executes the mutant (optional hook).
      if constexpr (requires(mutant_type & mu) {
                      {
                        b_.check_before_execution(mu, *adapter_, op, out.bindings, symbols_, pool_.requirements, ws_)
                        } -> std::convertible_to<std::optional<failure_type>>;
                    }) {
        auto& mu = std::get<mutant_type>(made);
        if (auto f = b_.check_before_execution(mu, *adapter_, op, out.bindings, symbols_, pool_.requirements, ws_)) {
          out.result = std::move(*f);
          out.phase_ms["apply"] = ms_since(t);
          return out;
        }
      }
      out.result = std::move(std::get<mutant_type>(made));
    }
    out.phase_ms["apply"] = ms_since(t);
    return out;
  }

  /// The chosen candidate was executed and earned `reward`: its feature elements count as
  /// seen (n(b) += 1) and the policy learns.
  void feedback(const chosen_candidate& pick, double reward) {
    coverage_.record(pick.l, pick.t, pick.m);
    learn(pick.x, pick.c.op, pick.cls, reward);
  }

  /// The chosen candidate could not be instantiated or exported: it leaves this seed's
  /// candidate set whatever parameters are sampled for it, its operator is banned for the
  /// candidate's site class (producer kind, anchor dtype and rank) after `reject_limit`
  /// rejections there, and the policy learns reward 0 for it (coverage is not counted: nothing
  /// was executed).
  void reject(const chosen_candidate& pick) {
    excluded_.insert(site_key(set_, pick.c));
    if (++rejections_[class_key(pick.c)] >= reject_limit) banned_.insert(class_key(pick.c));
    learn(pick.x, pick.c.op, pick.cls, 0.0);
  }
  static constexpr int reject_limit = 2;

  /// What a resumed campaign needs beyond the policy (replayed from the rounds) and the RNG:
  /// the candidates tried and the sites rejected on the current seed, and the per-class
  /// rejection counts and bans of the whole campaign. Keys of the first two are node ids of
  /// the current seed: restore after set_seed() of the same (re-imported) model.
  [[nodiscard]] nlohmann::json state() const {
    auto sorted = [](const auto& set) {
      std::vector<std::uint64_t> v(set.begin(), set.end());
      std::sort(v.begin(), v.end());
      return v;
    };
    std::vector<std::pair<std::uint64_t, int>> rej(rejections_.begin(), rejections_.end());
    std::sort(rej.begin(), rej.end());
    return {
        {"tried", sorted(tried_)}, {"excluded", sorted(excluded_)}, {"banned", sorted(banned_)}, {"rejections", rej}};
  }
  void restore_state(const nlohmann::json& st) {
    auto fill = [&](auto& set, const char* key) {
      set.clear();
      if (st.contains(key))
        for (const auto& v : st.at(key)) set.insert(v.template get<std::uint64_t>());
    };
    fill(tried_, "tried");
    fill(excluded_, "excluded");
    fill(banned_, "banned");
    rejections_.clear();
    if (st.contains("rejections"))
      for (const auto& r : st.at("rejections")) rejections_[r.at(0).get<std::uint64_t>()] = r.at(1).get<int>();
  }

  /// Replays a recorded round's feedback (resume); `cls` is the site class it recorded.
  void replay(const select::context& x, std::uint32_t arm, std::uint64_t cls, double reward,
              std::span<const std::uint64_t> elements) {
    coverage_.record(elements);
    learn(x, arm, cls, reward);
  }

  /// The legality checks of a mutant of the current seed (probe, deferred constraints, R(v)).
  [[nodiscard]] std::optional<failure_type> check(mutant_type& mu, const chosen_candidate& pick,
                                                  const match::bindings& b) {
    return b_.check(mu, *adapter_, pool_.operators[pick.c.op], b, symbols_, pool_.requirements, *inputs_, ws_);
  }

  [[nodiscard]] const match::pool& pool() const noexcept { return pool_; }
  [[nodiscard]] const model_type& current() const noexcept { return current_; }
  [[nodiscard]] const profile_type& current_profile() const noexcept { return profile_; }
  [[nodiscard]] const std::string& seed_hash() const noexcept { return seed_hash_; }
  [[nodiscard]] select::rng& random() noexcept { return rng_; }
  [[nodiscard]] const std::vector<double>& influences() const noexcept { return influence_; }
  /// (profile + set-up ms, influence ms) spent on the current seed since the last call.
  std::pair<double, double> take_seed_times() {
    auto r = std::make_pair(profile_ms_ + seed_ms_ - influence_ms_, influence_ms_);
    profile_ms_ = seed_ms_ = influence_ms_ = 0;
    return r;
  }

  /// Hash of a model's structure (op kinds in topological order and their arity).
  [[nodiscard]] static std::string model_hash(const model_type& m) {
    const auto& g = Backend::graph(m);
    std::uint64_t h = 0x6d6f64656cull;
    for (auto n : g.topological_order()) {
      h = select::hash_combine(h, select::hash_string(Backend::kind(m, n)));
      h = select::hash_combine(h, g.inputs(n).size());
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }

 private:
  template <class In>
  static std::size_t input_count(const In& inputs) {
    return static_cast<std::size_t>(std::size(inputs));
  }

  void learn(const select::context& x, std::uint32_t arm, std::uint64_t cls, double reward) {
    if constexpr (select::class_aware_policy<Policy>) policy_.update(x, arm, cls, reward);
    else policy_.update(x, arm, reward);
  }

  // ---- features ------------------------------------------------------------------------------

  /// Identity of a candidate on the current seed: operator, anchor, pattern nodes, parameter
  /// values. O(bindings), no allocation.
  [[nodiscard]] static std::uint64_t candidate_key(const match::candidate_set& set, const match::candidate& c) {
    std::uint64_t h = select::hash_combine(c.op, graph::index(c.anchor));
    for (const auto& p : set.params_of(c)) h = select::hash_combine(h, attr_hash(p));
    for (auto n : set.nodes_of(c)) h = select::hash_combine(h, graph::index(n));
    return h;
  }

  /// A candidate's site without its sampled parameters: operator, anchor, pattern nodes.
  [[nodiscard]] static std::uint64_t site_key(const match::candidate_set& set, const match::candidate& c) {
    std::uint64_t h = select::hash_combine(c.op, graph::index(c.anchor) + 0x5173);
    for (auto n : set.nodes_of(c)) h = select::hash_combine(h, graph::index(n));
    return h;
  }

  /// The site class of a candidate, valid across seeds: operator, producer kind of the anchor,
  /// the anchor's dtype and rank.
  [[nodiscard]] std::uint64_t class_key(const match::candidate& c) const {
    const auto p = Backend::graph(current_).producer(c.anchor);
    std::uint64_t h = select::hash_combine(c.op, p == graph::no_node ? 0 : node_hash_[graph::index(p)]);
    if (const auto* ep = Backend::edge_profile(profile_, c.anchor); ep && !ep->runs.empty())
      h = select::hash_combine(
          h, select::hash_combine(static_cast<std::uint64_t>(ep->runs[0].type), ep->runs[0].shape.size()));
    return h;
  }

  [[nodiscard]] static std::uint64_t attr_hash(const match::attr_value& v) {
    return std::visit(
        [&](const auto& x) -> std::uint64_t {
          using T = std::decay_t<decltype(x)>;
          std::uint64_t h = v.index();
          if constexpr (std::is_same_v<T, std::monostate>) return h;
          else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t>)
            return select::hash_combine(h, static_cast<std::uint64_t>(x));
          else if constexpr (std::is_same_v<T, double>) return select::hash_combine(h, std::bit_cast<std::uint64_t>(x));
          else if constexpr (std::is_same_v<T, std::string>) return select::hash_combine(h, select::hash_string(x));
          else {
            for (const auto& e : x) {
              if constexpr (std::is_same_v<std::decay_t<decltype(e)>, double>)
                h = select::hash_combine(h, std::bit_cast<std::uint64_t>(e));
              else h = select::hash_combine(h, static_cast<std::uint64_t>(e));
            }
            return h;
          }
        },
        v);
  }

  [[nodiscard]] std::string site_text(const match::candidate_set& set, const match::candidate& c) const {
    const auto& g = Backend::graph(current_);
    const auto p = g.producer(c.anchor);
    std::string s = "%" + std::to_string(graph::index(c.anchor)) + " from " +
                    (p == graph::no_node ? std::string("input") : std::string(Backend::kind(current_, p)));
    const auto params = set.params_of(c);
    const auto& op = pool_.operators[c.op];
    for (std::size_t i = 0; i < params.size() && i < op.params.size(); ++i) {
      // An op-typed parameter holds the op's interned id: shown by name.
      const auto value = params[i];
      const auto* id = std::get_if<std::int64_t>(&value);
      if (op.params[i].type.kind == dsl::type_kind::op && id && *id >= 0)
        s += " $" + op.params[i].name + "=" + std::string(symbols_.name(static_cast<std::uint32_t>(*id)));
      else s += " $" + op.params[i].name + "=" + attr_text(value);
    }
    return s;
  }

  /// The replacement's output boundary before it exists: the anchor and the outputs of the
  /// pattern's nodes.
  [[nodiscard]] std::vector<graph::edge_id> boundary(const match::candidate_set& set, const match::candidate& c) const {
    std::vector<graph::edge_id> out{c.anchor};
    for (auto n : set.nodes_of(c))
      if (n != graph::no_node)
        for (auto e : Backend::graph(current_).outputs(n)) out.push_back(e);
    return out;
  }

  void features(const match::candidate_set& set, const match::candidate& c, select::feature_set& l,
                select::feature_set& t, select::feature_set& m) const {
    const auto& g = Backend::graph(current_);
    l.clear();
    t.clear();
    m.clear();
    auto kind = [&](graph::node_id n) {
      return n == graph::no_node ? select::hash_string("input") : node_hash_[graph::index(n)];
    };
    const auto prod = kind(g.producer(c.anchor));
    l.add(prod);
    for (const auto& u : g.consumers(c.anchor)) {
      l.add(kind(u.node));
      l.add_tuple(prod, kind(u.node));
    }
    for (auto n : set.nodes_of(c))
      if (n != graph::no_node) l.add_tuple(std::uint64_t{1}, kind(n));
    const state::edge_profile* ep = Backend::edge_profile(profile_, c.anchor);
    if (ep && !ep->runs.empty()) {
      const auto& s = ep->runs[0];
      t.add_tuple(std::uint64_t{1}, s.shape.size());
      t.add_tuple(std::uint64_t{2}, static_cast<std::uint64_t>(s.type));
      t.add_tuple(std::uint64_t{3}, static_cast<std::uint64_t>(s.device.kind));
      t.add_tuple(std::uint64_t{4}, static_cast<std::uint64_t>(s.format), s.contiguous);
      t.add_tuple(std::uint64_t{5}, s.storage_sharers > 1, s.requires_grad);
      const auto& nmb = s.numbers;
      const std::uint64_t value_class = nmb.nan_count || nmb.inf_count                          ? 0
                                        : nmb.zero_count == static_cast<std::uint64_t>(s.numel) ? 1
                                        : nmb.min >= 0                                          ? 2
                                        : nmb.max <= 0                                          ? 3
                                                                                                : 4;
      t.add_tuple(std::uint64_t{6}, value_class);
      t.add_tuple(
          std::uint64_t{7},
          static_cast<std::uint64_t>(std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(s.numel, 0)))));
    }
    const auto& op = pool_.operators[c.op];
    const auto name = select::hash_string(op.name);
    m.add(name);
    m.add_tuple(std::uint64_t{2}, static_cast<std::uint64_t>(op.object), static_cast<std::uint64_t>(op.primitive));
    const auto params = set.params_of(c);
    for (std::size_t i = 0; i < params.size(); ++i) m.add_tuple(name, i, select::hash_string(attr_text(params[i])));
  }

  Backend& b_;
  generator_options opt_;
  Policy policy_;
  match::symbol_table symbols_;
  match::pool pool_;
  model_type current_;
  profile_type profile_;
  const inputs_type* inputs_ = nullptr;
  std::optional<adapter_type> adapter_;
  std::optional<
      select::downstream_impact_cache<std::remove_cvref_t<decltype(Backend::graph(std::declval<const model_type&>()))>>>
      impact_;
  std::vector<double> influence_;
  select::coverage_counter coverage_;
  select::rng rng_;
  match::workspace ws_;
  match::candidate_set set_;
  std::unordered_set<std::uint64_t> tried_;
  std::unordered_set<std::uint64_t> excluded_;         ///< sites rejected at instantiation (this seed)
  std::unordered_map<std::uint64_t, int> rejections_;  ///< per site class, over the campaign
  std::unordered_set<std::uint64_t> banned_;           ///< site classes an operator is banned from
  std::vector<std::uint64_t> node_hash_;               ///< hash of each node's kind name (current seed)
  std::string seed_hash_;
  double profile_ms_ = 0, seed_ms_ = 0, influence_ms_ = 0;
};

}  // namespace tfg::campaign
