// Profiling overhead per seed: time of one op-by-op run that records F(e) (shape, strides,
// storage identity, numeric summary, content hash) and dispatcher events, divided by the time of
// module.forward on the same input. Both are measured in the same iteration, so machine noise
// affects them alike; the `overhead` counter is the ratio of the sums.
//
//   tfg_bench_profile --zoo=build/zoo [--seeds=resnet18,vit] [--threads=1] [benchmark flags]
#include "tfg/torch/torch.hpp"

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

namespace {

struct seed {
  std::string name;
  torch::jit::Module module;
  std::shared_ptr<tfg::torch::model> model;
  tfg::torch::input_set inputs;
};

std::vector<std::shared_ptr<seed>> g_seeds;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

enum class mode { plain, structure, full };

void bm_profile(benchmark::State& state, std::shared_ptr<seed> s, mode how) {
  const bool with_state = how != mode::plain;
  tfg::torch::profiler prof({c10::Device(c10::kCPU), how == mode::full, how == mode::full, false});
  tfg::torch::executor plain(*s->model, {c10::Device(c10::kCPU), true});
  std::vector<std::vector<c10::IValue>> one{s->inputs[0]};
  double fwd = 0, ours = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(s->module.forward(s->inputs[0]));
    fwd += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    if (with_state) benchmark::DoNotOptimize(prof.run(*s->model, one));
    else benchmark::DoNotOptimize(plain.run(s->inputs[0]));
    const double t = seconds_since(t0);
    ours += t;
    state.SetIterationTime(t);
  }
  state.counters["forward_ms"] = benchmark::Counter(1e3 * fwd / state.iterations());
  state.counters["overhead"] = benchmark::Counter(ours / fwd);
}

}  // namespace

int main(int argc, char** argv) {
  std::string zoo = std::getenv("TFG_ZOO_DIR") ? std::getenv("TFG_ZOO_DIR") : "build/zoo";
  std::set<std::string> only;
  int threads = 1;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--zoo=", 0) == 0) zoo = a.substr(6);
    else if (a.rfind("--threads=", 0) == 0) threads = std::stoi(a.substr(10));
    else if (a.rfind("--seeds=", 0) == 0) {
      std::stringstream ss(a.substr(8));
      for (std::string x; std::getline(ss, x, ',');) only.insert(x);
    } else rest.push_back(argv[i]);
  }
  at::set_num_threads(threads);
  std::vector<std::filesystem::path> files;
  for (const auto& f : std::filesystem::directory_iterator(zoo)) {
    const auto name = f.path().filename().string();
    if (f.path().extension() == ".pt" && name.find(".inputs.") == std::string::npos) files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const auto name = f.stem().string();
    if (!only.empty() && !only.count(name)) continue;
    auto s = std::make_shared<seed>();
    s->name = name;
    s->module = torch::jit::load(f.string());
    s->module.eval();
    s->model =
        std::make_shared<tfg::torch::model>(tfg::torch::torchscript_importer::from_module(s->module, f.string()));
    s->inputs = tfg::torch::load_inputs(tfg::torch::inputs_path_for(f.string()));
    g_seeds.push_back(s);
    // full: F(e) with numeric summaries and content hashes, plus dispatcher events (what a
    // campaign round records); structure: shapes, strides, storage identity only; plain: the
    // op-by-op executor alone, freeing dead values.
    for (auto [label, how] : {std::pair{"profile_full/", mode::full}, std::pair{"profile_structure/", mode::structure},
                              std::pair{"op_by_op_plain/", mode::plain}})
      benchmark::RegisterBenchmark((label + name).c_str(), bm_profile, s, how)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
  }
  if (g_seeds.empty()) {
    std::cerr << "no seeds under " << zoo << " (run `make zoo`)\n";
    return 1;
  }
  int rargc = static_cast<int>(rest.size());
  benchmark::Initialize(&rargc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
