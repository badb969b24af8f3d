#pragma once
/// \file
/// What a campaign needs from a framework backend (DESIGN.md section 3): the `backend`
/// concept lists exactly the operations `tfg::campaign::generator` and `tfg::campaign::loop`
/// call, so that a second backend (an ONNX runtime, a LibTorch 2.x CUDA build) plugs in without
/// touching either. `tfg::torch::backend` (tfg/torch/backend.hpp) is the LibTorch model.
///
/// Types: `model_type` (a model the backend can run and save; its graph is a
/// `graph::tensor_graph`), `profile_type` (F(e) of every edge from one op-by-op run on the
/// profiling inputs, plus the outputs), `inputs_type` (a set of profiling inputs), `mutant_type`
/// (a mutated copy of a model with the nodes the mutation added and, after `check`, its probe
/// profile), `failure_type` (why a candidate did not become a legal mutant: `stage`, `message`),
/// `adapter_type` (the model seen by the matcher: `match::match_adapter`).
///
/// Execution of mutants never happens through this interface: the loop sends the exported
/// model to a supervised worker process (tfg/campaign/protocol.hpp). Everything here runs in the
/// supervisor and is called on models a worker already survived (except `profile` of the seed).
#include <concepts>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/graph/concepts.hpp"
#include "tfg/match/adapter.hpp"
#include "tfg/match/candidates.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/metrics/metrics.hpp"
#include "tfg/state/tensor_state.hpp"

namespace tfg::campaign {

/// One execution configuration as a backend describes it (`flowmut configs`).
struct config_desc {
  std::string name;
  std::string reference;  ///< the configuration it is compared with; empty for a reference
  bool available = true;
  bool default_on = true;  ///< part of a campaign's default set (false: device-specific or compiled, opt-in)
  bool op_by_op = false;   ///< runs the model op by op (disagreements localise edge by edge)
};

template <class B>
concept backend = requires(B& b, const B& cb, const typename B::model_type& m, typename B::mutant_type& mu,
                           const typename B::mutant_type& cmu, const typename B::profile_type& p,
                           const typename B::inputs_type& in, const typename B::adapter_type& ad,
                           const std::filesystem::path& path, graph::node_id n, graph::edge_id e,
                           const match::compiled_operator& op, const match::bindings& bind,
                           match::symbol_table& symbols, match::workspace& ws, const match::requirement_table& req,
                           std::span<const std::string> universe) {
  typename B::model_type;
  typename B::profile_type;
  typename B::inputs_type;
  typename B::mutant_type;
  typename B::failure_type;
  typename B::adapter_type;
  requires match::match_adapter<typename B::adapter_type>;
  // models and inputs
  { b.load(path) } -> std::same_as<typename B::model_type>;  ///< throws on a bad file
  {b.save(m, path)};                                         ///< atomically
  {
    b.seed_inputs(m, path, path)
    } -> std::same_as<typename B::inputs_type>;  ///< (model, model file, inputs file or "")
  { b.load_inputs(path) } -> std::same_as<typename B::inputs_type>;
  {b.save_inputs(in, path)};
  // the graph
  { B::graph(m) } -> graph::tensor_graph;
  { B::kind(m, n) } -> std::convertible_to<std::string_view>;  ///< "aten::relu"
  { B::executes(m, n) } -> std::convertible_to<bool>;          ///< false for constants
  { B::is_tensor_edge(m, e) } -> std::convertible_to<bool>;
  { B::output_edges(m, std::string()) } -> std::same_as<std::vector<graph::edge_id>>;  ///< edges under an output path
  // F(e) and influence
  { b.profile(m, in) } -> std::same_as<typename B::profile_type>;
  { B::edge_profile(p, e) } -> std::convertible_to<const state::edge_profile*>;  ///< nullptr: not profiled
  { B::outputs_finite(p) } -> std::convertible_to<bool>;
  { B::output_excess(p, p, 0.0, 0.0) } -> std::convertible_to<double>;  ///< > 0: outputs differ beyond atol/rtol
  { b.influence(m, in) } -> std::same_as<std::vector<double>>;          ///< raw g(e) by edge index, NaN unknown
  // mutation through the match adapter
  { b.externs() } -> std::same_as<match::extern_registry>;
  {b.bind_externs(m, p)};  ///< the model the externs of later matcher calls read
  { b.adapter(m, p, symbols) } -> std::same_as<typename B::adapter_type>;
  {b.instantiate(m, ad, op, bind, symbols, ws, in)};  ///< variant<mutant_type, failure_type>
  {b.check(mu, ad, op, bind, symbols, req, in, ws)};  ///< optional<failure_type>; fills the probe
  { B::mutant_model(mu) } -> std::same_as<typename B::model_type&>;
  { B::mutant_profile(mu) } -> std::same_as<typename B::profile_type&>;
  { B::added_nodes(cmu) } -> std::convertible_to<std::span<const graph::node_id>>;
  // metrics and execution configurations
  { b.observe(m, p) } -> std::same_as<metrics::observation>;
  { b.metrics_space(universe) } -> std::same_as<metrics::test_space>;
  { b.requirement_universe(path) } -> std::same_as<std::vector<std::string>>;
  { cb.configs() } -> std::same_as<std::vector<config_desc>>;
  { cb.device_available(std::string_view()) } -> std::convertible_to<bool>;  ///< "cuda": operators that require it run
};

/// Compile-time check with one line naming the concept.
template <class B>
consteval bool check_backend() {
  static_assert(backend<B>,
                "tfg: B is not a tfg::campaign::backend (see tfg/campaign/backend.hpp for the operations a "
                "campaign uses)");
  return true;
}

}  // namespace tfg::campaign
