// Loads a TorchScript model, profiles it op by op and prints the edges that share storage.
//   count_aliases MODEL.pt [SHAPE...]    e.g. count_aliases resnet.pt f32[1,3,64,64]
// Without shapes it reads MODEL.inputs.pt.
#include <tfg/torch/torch.hpp>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: count_aliases MODEL.pt [SHAPE...]\n";
    return 2;
  }
  try {
    auto model = tfg::torch::torchscript_importer().load(argv[1]);
    std::vector<tfg::torch::input_spec> shapes;
    for (int i = 2; i < argc; ++i) shapes.push_back(tfg::torch::parse_input_spec(argv[i]));
    auto inputs = shapes.empty() ? tfg::torch::load_inputs(tfg::torch::inputs_path_for(argv[1]))
                                 : tfg::torch::random_inputs(shapes, 1);
    auto profile = tfg::torch::profiler().run(model, inputs);
    std::size_t aliased = 0;
    for (auto e : model.graph.edges()) {
      const auto& runs = profile.edges[tfg::graph::index(e)].runs;
      if (!runs.empty() && runs[0].aliased()) ++aliased;
    }
    std::cout << model.graph.node_count() << " nodes, " << aliased << " edges share storage\n";
  } catch (const tfg::torch::model_error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
