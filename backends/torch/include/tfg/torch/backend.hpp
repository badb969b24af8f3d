#pragma once
/// The LibTorch backend of a campaign: `tfg::torch::backend` models `tfg::campaign::backend`
/// (tfg/campaign/backend.hpp), so `tfg::campaign::loop<tfg::torch::backend>` runs campaigns on
/// TorchScript models. Each member forwards to the LibTorch piece that does the work (import,
/// profile, influence, match adapter, instantiate, mutate, export, observe, configs).
///
///     tfg::torch::backend b;
///     tfg::campaign::loop<tfg::torch::backend> c(b, options, *tfg::select::make_policy("ucb1"));
#include "tfg/campaign/backend.hpp"
#include "tfg/torch/import/seed_check.hpp"
#include "tfg/torch/execute/configs.hpp"
#include "tfg/torch/import/export.hpp"
#include "tfg/torch/import/externs.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/pt2.hpp"
#include "tfg/torch/oracle/influence.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/oracle/localise.hpp"
#include "tfg/torch/mutate/match_adapter.hpp"
#include "tfg/torch/mutate/infer.hpp"
#include "tfg/torch/mutate/mutate.hpp"
#include "tfg/torch/execute/observe.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/util/atomic_file.hpp"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <string_view>
#include <vector>

namespace tfg::torch {

class backend {
 public:
  using model_type = model;
  using profile_type = tfg::torch::profile;
  using inputs_type = input_set;
  using mutant_type = mutant;
  using failure_type = mutation_failure;
  using adapter_type = torch_match_adapter;

  /// Models, mutants and inputs are saved as TorchScript archives (`.pt2` seeds included).
  static constexpr std::string_view model_extension = ".pt";
  /// A worker's environment: LibTorch's glog warnings off (they flood the worker's log).
  [[nodiscard]] static std::vector<std::string> worker_environment() { return {"GLOG_minloglevel=2"}; }

  /// Influence per accepted seed: one input, and a tight cap on the edges estimated by
  /// perturbation (accepted mutations such as an inserted detach cut the gradient; unbounded
  /// perturbation then costs seconds per round).
  influence_options influence_opt = {1, true, 24, 1e-3, 1, false, 0};

  // ---- models and inputs ---------------------------------------------------------------------

  [[nodiscard]] model load(const std::filesystem::path& p) const { return load_any(p.string()); }
  /// The seed, whose scripted control flow is specialised on `inputs` (or on MODEL.inputs.pt
  /// when `inputs` is empty).
  [[nodiscard]] model load_seed(const std::filesystem::path& p, const std::filesystem::path& inputs) const {
    return load_any(p.string(), inputs.string());
  }

  /// Exports `m` to `p` through a temporary file and a rename; an export failure throws
  /// model_error with the framework's message (backtrace trimmed).
  void save(const model& m, const std::filesystem::path& p) const {
    const auto tmp = p.string() + ".tmp";
    try {
      tfg::torch::save(m, tmp);
    } catch (const model_error&) {
      throw;
    } catch (const std::exception& e) {
      throw model_error(clean_error(e.what()));
    }
    std::filesystem::rename(tmp, p);
  }

  /// The inputs file if given, else MODEL.inputs.pt beside the model, else default_inputs: a
  /// `.pt2` program's sample inputs and two variants, or 3 random inputs from the traced types.
  [[nodiscard]] input_set seed_inputs(const model& m, const std::filesystem::path& model_path,
                                      const std::filesystem::path& inputs_path) const {
    if (!inputs_path.empty()) return tfg::torch::load_inputs(inputs_path.string(), m);
    const auto conventional = inputs_path_for(model_path.string());
    if (std::filesystem::exists(conventional)) return tfg::torch::load_inputs(conventional, m);
    return default_inputs(m, 3);
  }
  [[nodiscard]] input_set load_inputs(const std::filesystem::path& p) const {
    return tfg::torch::load_inputs(p.string());
  }
  /// "" when op-by-op execution of the seed reproduces TorchScript's forward (seed_check.hpp).
  [[nodiscard]] std::string check_seed(const model& m, const std::filesystem::path& p, const input_set& in) const {
    return tfg::torch::check_seed(m, p.string(), in);
  }
  void save_inputs(const input_set& in, const std::filesystem::path& p) const { tfg::torch::save_inputs(in, p); }

  // ---- the graph -----------------------------------------------------------------------------

  [[nodiscard]] static const graph_type& graph(const model& m) noexcept { return m.graph; }
  [[nodiscard]] static std::string kind(const model& m, graph::node_id n) { return m.graph.data(n).name(); }
  [[nodiscard]] static bool executes(const model& m, graph::node_id n) {
    return m.graph.data(n).kind != c10::prim::Constant;
  }
  [[nodiscard]] static bool is_tensor_edge(const model& m, graph::edge_id e) {
    const auto k = m.graph.data(e).kind;
    return k == state::value_kind::tensor || k == state::value_kind::tensor_list;
  }
  /// The graph output edges under output path `path` ("1.0": element 0 of element 1 of the
  /// returned tuple); every output for "" and for gradients ("grad.K").
  [[nodiscard]] static std::vector<graph::edge_id> output_edges(const model& m, const std::string& path) {
    std::vector<graph::edge_id> out;
    const output_tree* t = &m.output;
    if (!path.empty() && path.rfind("grad", 0) != 0) {
      std::size_t at = 0;
      while (at < path.size() && t) {
        const auto dot = path.find('.', at);
        const auto k = std::stoul(path.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
        t = k < t->items.size() ? &t->items[k] : nullptr;
        at = dot == std::string::npos ? path.size() : dot + 1;
      }
    }
    if (!t) t = &m.output;
    auto walk = [&](auto&& self, const output_tree& x) -> void {
      if (x.how == output_tree::form::edge) out.push_back(x.edge);
      for (const auto& i : x.items) self(self, i);
    };
    walk(walk, *t);
    return out;
  }

  // ---- F(e) and influence --------------------------------------------------------------------

  [[nodiscard]] profile_type profile(const model& m, const input_set& in) const {
    return profiler({c10::Device(c10::kCPU), true, false, false}).run(m, in);
  }
  [[nodiscard]] static const state::edge_profile* edge_profile(const profile_type& p, graph::edge_id e) noexcept {
    return graph::index(e) < p.edges.size() ? &p.edges[graph::index(e)] : nullptr;
  }
  [[nodiscard]] static bool outputs_finite(const profile_type& p) { return ivalue::all_finite(p.outputs); }
  /// The largest excess of `a`'s outputs over `b`'s (per profiling input), see ivalue::excess.
  [[nodiscard]] static double output_excess(const profile_type& a, const profile_type& b, double atol, double rtol) {
    double worst = -1;
    for (std::size_t i = 0; i < a.outputs.size() && i < b.outputs.size(); ++i)
      worst = std::max(worst, ivalue::excess(a.outputs[i], b.outputs[i], atol, rtol));
    return worst;
  }
  [[nodiscard]] std::vector<double> influence(const model& m, const input_set& in) const {
    return tfg::torch::influence(m, in, influence_opt).g;
  }

  // ---- mutation ------------------------------------------------------------------------------

  /// The externs (no_inplace_writer, ...) of operator files; they read the model bind_externs
  /// pointed them at.
  [[nodiscard]] match::extern_registry externs() const { return torch_externs(context_); }
  void bind_externs(const model& m, const profile_type& p) { *context_ = {&m, &p}; }
  [[nodiscard]] torch_match_adapter adapter(const model& m, const profile_type& p, match::symbol_table& s) const {
    return torch_match_adapter(m, p, s);
  }
  [[nodiscard]] std::variant<mutant, mutation_failure> instantiate(const model& m, const torch_match_adapter& a,
                                                                   const match::compiled_operator& op,
                                                                   const match::bindings& b, match::symbol_table& s,
                                                                   match::workspace& ws, const input_set& in) const {
    return tfg::torch::instantiate(m, a, op, b, s, ws, &in);
  }
  /// The checks that need no execution (infer.hpp): shapes and dtypes inferred on meta tensors
  /// refute a deferred constraint or a reader's R(v), or a kernel rejects them.
  [[nodiscard]] std::optional<mutation_failure> check_before_execution(const mutant& mu, const torch_match_adapter& a,
                                                                       const match::compiled_operator& op,
                                                                       const match::bindings& b, match::symbol_table& s,
                                                                       const match::requirement_table& req,
                                                                       match::workspace& ws) const {
    return static_check(mu, a, op, b, s, req, ws);
  }
  [[nodiscard]] std::optional<mutation_failure> check(mutant& mu, const torch_match_adapter& a,
                                                      const match::compiled_operator& op, const match::bindings& b,
                                                      match::symbol_table& s, const match::requirement_table& req,
                                                      const input_set& in, match::workspace& ws) const {
    return check_mutant(mu, a, op, b, s, req, in, ws);
  }
  [[nodiscard]] static model& mutant_model(mutant& mu) noexcept { return mu.graph_model; }
  [[nodiscard]] static profile_type& mutant_profile(mutant& mu) noexcept { return mu.probe; }
  [[nodiscard]] static std::span<const graph::node_id> added_nodes(const mutant& mu) noexcept { return mu.added; }

  // ---- metrics and configurations ------------------------------------------------------------

  [[nodiscard]] metrics::observation observe(const model& m, const profile_type& p) const {
    return tfg::torch::observe(m, p);
  }
  [[nodiscard]] metrics::test_space metrics_space(std::span<const std::string> universe) const {
    return tfg::torch::metrics_space(universe);
  }
  [[nodiscard]] std::vector<std::string> requirement_universe(const std::filesystem::path& dir) const {
    return universe_from_requirements(dir);
  }
  /// Whether operators that `require` device `d` can run here: cpu always, cuda when LibTorch
  /// sees a device.
  [[nodiscard]] bool device_available(std::string_view d) const { return compat::device_available(d); }
  [[nodiscard]] std::vector<campaign::config_desc> configs() const {
    std::vector<campaign::config_desc> out;
    for (const auto& c : list_configs())
      out.push_back({c.name, c.reference, c.available, on_by_default(c.name), is_op_by_op_config(c.name)});
    return out;
  }

 private:
  std::shared_ptr<extern_context> context_ = std::make_shared<extern_context>();
};

static_assert(campaign::check_backend<backend>());

}  // namespace tfg::torch
