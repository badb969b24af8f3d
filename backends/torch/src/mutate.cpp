// tfg::torch_compiled, mutation (DSL operators over the LibTorch graph): the definitions of these headers, compiled
// once.
#include "tfg/torch/linkage.hpp"

#if !defined(TFG_TORCH_SEPARATE)
#error "tfg::torch_compiled is built with TFG_TORCH_SEPARATE"
#endif

#include "tfg/torch/mutate/mutate.ipp"
#include "tfg/torch/mutate/instantiate.ipp"
#include "tfg/torch/mutate/match_adapter.ipp"
#include "tfg/torch/mutate/infer.hpp"

template class tfg::graph::flow_graph<tfg::torch::node_data, tfg::torch::edge_data>;
template class tfg::graph::rewrite_transaction<tfg::torch::graph_type>;

namespace tfg::torch {
template std::variant<mutant, mutation_failure> instantiate<torch_match_adapter>(
    const model&, const torch_match_adapter&, const match::compiled_operator&, const match::bindings&,
    const match::symbol_table&, match::workspace&, const input_set*);
template std::optional<mutation_failure> check_mutant<torch_match_adapter>(mutant&, const torch_match_adapter&,
                                                                           const match::compiled_operator&,
                                                                           const match::bindings&, match::symbol_table&,
                                                                           const match::requirement_table&,
                                                                           const input_set&, match::workspace&);
template std::variant<mutant, mutation_failure> mutate<torch_match_adapter>(
    const model&, const torch_match_adapter&, const match::compiled_operator&, const match::bindings&,
    match::symbol_table&, const match::requirement_table&, const input_set&, match::workspace&);
template inference infer_mutant<torch_match_adapter>(const mutant&, const torch_match_adapter&);
}  // namespace tfg::torch

template void tfg::match::construct_into<tfg::torch::torch_match_adapter>(
    tfg::match::candidate_set&, const tfg::torch::torch_match_adapter&, std::span<const tfg::match::compiled_operator>,
    const tfg::match::construct_options&);
