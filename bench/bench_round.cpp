// Generation cost per campaign round: everything a round does except executing the model —
// candidate construction over the whole operator pool, the context features (L, T, M, P, I) of
// every untried candidate, LinUCB selection, and instantiation of the chosen replacement
// (tfg::campaign::generator<tfg::torch::backend>::next, with the policy behind
// select::any_policy as flowmut runs it). Reported separately, because they execute or
// serialise the model: profiling a new seed (op by op, F(e)), the influence pass (one
// backward), and exporting the mutant to a .pt for the worker.
//
//   tfg_bench_round --zoo=build/zoo [--seeds=swin_v2_t,resnet18] [benchmark flags]
// Default seed: swin_v2_t, the largest zoo TFG (1,620 nodes). Target (issue 4): <= 60 ms.
#include "tfg/campaign/generator.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/import/export.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/util/clock.hpp"

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using generator = tfg::campaign::generator<tfg::torch::backend>;
using tfg::ms_since;

struct seed {
  std::string name;
  tfg::torch::model model;
  tfg::torch::input_set inputs;
};

std::unique_ptr<generator> make_generator(tfg::torch::backend& b, const seed& s) {
  auto g = std::make_unique<generator>(
      b, tfg::campaign::generator_options{{TFG_SOURCE_DIR "/operators"}, 1, tfg::select::ablation::all(), true},
      tfg::select::any_policy(tfg::select::linucb()));
  g->profile_and_set_seed(s.model, s.inputs);
  return g;
}

void bm_generation(benchmark::State& state, std::shared_ptr<seed> s) {
  tfg::torch::backend b;
  auto g = make_generator(b, *s);
  std::map<std::string, double> phase;
  double candidates = 0;
  std::uint64_t round = 0, rounds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = g->next(round++);
    state.SetIterationTime(ms_since(t0) / 1e3);
    if (!r.selected) {
      state.SkipWithError("no candidate left");
      break;
    }
    for (const auto& [k, v] : r.phase_ms) phase[k] += v;
    candidates += static_cast<double>(r.candidates);
    ++rounds;
    g->feedback(r.pick, 0.1);
  }
  const double n = static_cast<double>(std::max<std::uint64_t>(rounds, 1));
  for (const auto& [k, v] : phase) state.counters[k + "_ms"] = v / n;
  state.counters["candidates"] = candidates / n;
  state.counters["nodes"] = static_cast<double>(s->model.graph.node_count());
}

void bm_profile_seed(benchmark::State& state, std::shared_ptr<seed> s) {
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto p = tfg::torch::profiler({c10::Device(c10::kCPU), true, false, false}).run(s->model, s->inputs);
    benchmark::DoNotOptimize(p.edges.data());
    state.SetIterationTime(ms_since(t0) / 1e3);
  }
}

void bm_influence(benchmark::State& state, std::shared_ptr<seed> s) {
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = tfg::torch::influence(s->model, s->inputs);
    benchmark::DoNotOptimize(r.g.data());
    state.SetIterationTime(ms_since(t0) / 1e3);
  }
}

void bm_export(benchmark::State& state, std::shared_ptr<seed> s) {
  const auto path = fs::temp_directory_path() / ("tfg_bench_round_" + s->name + ".pt");
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    tfg::torch::save(s->model, path.string());
    state.SetIterationTime(ms_since(t0) / 1e3);
  }
  fs::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  std::string zoo = "build/zoo", seeds = "swin_v2_t";
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--zoo=", 0) == 0) zoo = a.substr(6);
    else if (a.rfind("--seeds=", 0) == 0) seeds = a.substr(8);
    else rest.push_back(argv[i]);
  }
  std::stringstream ss(seeds);
  for (std::string name; std::getline(ss, name, ',');) {
    const auto path = fs::path(zoo) / (name + ".pt");
    if (!fs::exists(path)) {
      std::cerr << "tfg_bench_round: " << path << " not found (run `make zoo`)\n";
      return 2;
    }
    auto s = std::make_shared<seed>();
    s->name = name;
    s->model = tfg::torch::torchscript_importer().load(path.string());
    s->inputs = tfg::torch::load_inputs(tfg::torch::inputs_path_for(path.string()));
    benchmark::RegisterBenchmark(("generation/" + name).c_str(), bm_generation, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(30);
    benchmark::RegisterBenchmark(("profile_seed/" + name).c_str(), bm_profile_seed, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5);
    benchmark::RegisterBenchmark(("influence/" + name).c_str(), bm_influence, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5);
    benchmark::RegisterBenchmark(("export/" + name).c_str(), bm_export, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(5);
  }
  int rc = static_cast<int>(rest.size());
  benchmark::Initialize(&rc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
