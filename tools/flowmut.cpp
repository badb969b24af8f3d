// flowmut: the command-line tool. The only place in the project that parses argv.
#include <tfg/torch/torch.hpp>

#include <CLI/CLI.hpp>

#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace {

using clock_type = std::chrono::steady_clock;

struct profile_args {
  std::string model_path;
  std::string inputs_path;
  std::size_t random_inputs = 0;
  std::vector<std::string> shapes;
  std::string json_path;
  std::string dot_path;
  std::string device = "cpu";
  int threads = 1;
  bool no_numbers = false;
  bool no_check = false;
};

tfg::torch::input_set inputs_for(const tfg::torch::model& m, const std::string& model_path,
                                 const std::string& inputs_path, std::size_t random,
                                 const std::vector<std::string>& shapes) {
  if (!inputs_path.empty()) return tfg::torch::load_inputs(inputs_path);
  if (!shapes.empty()) {
    std::vector<tfg::torch::input_spec> specs;
    for (const auto& s : shapes) specs.push_back(tfg::torch::parse_input_spec(s));
    return tfg::torch::random_inputs(specs, random ? random : 3);
  }
  if (random > 0) return tfg::torch::random_inputs(m, random);
  auto conventional = tfg::torch::inputs_path_for(model_path);
  if (std::ifstream(conventional).good()) return tfg::torch::load_inputs(conventional);
  return tfg::torch::random_inputs(m, 3);
}

double max_abs_diff(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTensor() && b.isTensor()) {
    const auto& x = a.toTensor();
    const auto& y = b.toTensor();
    if (!x.defined() || !y.defined()) return x.defined() == y.defined() ? 0.0 : INFINITY;
    if (x.sizes() != y.sizes() || x.scalar_type() != y.scalar_type()) return INFINITY;
    if (x.numel() == 0) return 0.0;
    if (x.is_floating_point())
      return (x.to(c10::kCPU).to(c10::kDouble) - y.to(c10::kCPU).to(c10::kDouble)).abs().nan_to_num(INFINITY).max().item<double>();
    return at::equal(x.to(c10::kCPU), y.to(c10::kCPU)) ? 0.0 : INFINITY;
  }
  if (a.isTuple() && b.isTuple()) {
    const auto& x = a.toTupleRef().elements();
    const auto& y = b.toTupleRef().elements();
    if (x.size() != y.size()) return INFINITY;
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, max_abs_diff(x[i], y[i]));
    return d;
  }
  if (a.isList() && b.isList()) {
    auto x = a.toListRef();
    auto y = b.toListRef();
    if (x.size() != y.size()) return INFINITY;
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, max_abs_diff(x[i], y[i]));
    return d;
  }
  return a == b ? 0.0 : INFINITY;
}

int run_profile(const profile_args& a) {
  at::set_num_threads(a.threads);
  const c10::Device device(a.device);
  auto t0 = clock_type::now();
  auto module = tfg::torch::load_module(a.model_path);
  auto m = tfg::torch::torchscript_importer::from_module(module, a.model_path);
  auto t1 = clock_type::now();
  auto inputs = inputs_for(m, a.model_path, a.inputs_path, a.random_inputs, a.shapes);
  tfg::torch::profiler prof({device, !a.no_numbers, true, true});
  auto p = prof.run(m, inputs);
  auto t2 = clock_type::now();

  std::cout << "flowmut profile " << a.model_path << "  (torchscript, " << inputs.size() << " profiling inputs, "
            << device << ", " << at::get_num_threads() << " thread" << (at::get_num_threads() == 1 ? "" : "s") << ")\n";
  std::printf("import   %.1f ms (load, freeze, inline, translate); profiling %.1f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  tfg::torch::print_summary(std::cout, m, p);
  std::size_t events = 0;
  for (const auto& t : p.traces) events += t.size();
  std::cout << "events   " << events / std::max<std::size_t>(1, p.traces.size()) << " dispatcher events per input, "
            << prof.labels().names.size() << " distinct labels\n";

  int rc = 0;
  if (!a.no_check) {
    module.eval();
    module.to(device);
    double worst = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      std::vector<c10::IValue> args;
      for (const auto& v : inputs[i]) args.push_back(v.isTensor() ? c10::IValue(v.toTensor().to(device)) : v);
      c10::IValue ref;
      {
        c10::InferenceMode guard(false);
        ref = module.forward(args);
      }
      worst = std::max(worst, max_abs_diff(ref, p.outputs[i]));
    }
    std::printf("check    op-by-op outputs vs module.forward: max abs diff %g %s\n", worst,
                worst == 0 ? "(equal)" : "(DIFFERENT)");
    if (worst != 0 && device.is_cpu()) rc = 3;
  }
  if (!a.json_path.empty()) {
    std::ofstream out(a.json_path);
    tfg::torch::write_json(out, m, &p);
    if (!out) throw tfg::torch::model_error(a.json_path + ": cannot write");
    std::cout << "wrote    " << a.json_path << "\n";
  }
  if (!a.dot_path.empty()) {
    std::ofstream out(a.dot_path);
    tfg::torch::write_dot(out, m, &p);
    if (!out) throw tfg::torch::model_error(a.dot_path + ": cannot write");
    std::cout << "wrote    " << a.dot_path << "\n";
  }
  return rc;
}

int run_export(const std::string& in, const std::string& out) {
  auto m = tfg::torch::torchscript_importer().load(in);
  tfg::torch::save(m, out);
  std::cout << "exported " << in << " -> " << out << " (" << m.graph.node_count() << " nodes)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flowmut: data-flow mutation testing of deep learning frameworks"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("flowmut ") + "0.1.0 (LibTorch " + TORCH_VERSION + ")");

  profile_args pa;
  auto* profile = app.add_subcommand("profile", "import a TorchScript model, run it op by op and print its TFG summary");
  profile->add_option("model", pa.model_path, "TorchScript .pt file")->required()->check(CLI::ExistingFile);
  profile->add_option("--inputs", pa.inputs_path, "profiling inputs (torch.save'd list of argument tuples); default MODEL.inputs.pt")
      ->check(CLI::ExistingFile);
  profile->add_option("--random", pa.random_inputs, "synthesise N random inputs (default 3 with --shape)");
  profile->add_option("--shape", pa.shapes, "shape of each forward argument for random inputs, e.g. f32[1,3,64,64] (repeat per argument)");
  profile->add_option("--json", pa.json_path, "write the TFG with F(e) as JSON");
  profile->add_option("--dot", pa.dot_path, "write the TFG as Graphviz DOT");
  profile->add_option("--device", pa.device, "cpu or cuda")->default_val("cpu");
  profile->add_option("--threads", pa.threads, "intra-op threads")->default_val(1);
  profile->add_flag("--no-numbers", pa.no_numbers, "skip numeric summaries (min/max/mean/counts/hash)");
  profile->add_flag("--no-check", pa.no_check, "do not compare op-by-op outputs with module.forward");

  std::string export_in, export_out;
  auto* exp = app.add_subcommand("export", "import a model and write it back as TorchScript (round trip)");
  exp->add_option("model", export_in, "TorchScript .pt file")->required()->check(CLI::ExistingFile);
  exp->add_option("output", export_out, "output .pt file")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*profile) return run_profile(pa);
    if (*exp) return run_export(export_in, export_out);
  } catch (const tfg::torch::model_error& e) {
    std::cerr << "flowmut: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find("\nException raised from"); nl != std::string::npos) what.resize(nl);
    std::cerr << "flowmut: error: " << what << "\n";
    return 2;
  }
  return 0;
}
