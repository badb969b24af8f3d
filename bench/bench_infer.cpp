// Constraints decided before execution (tfg/torch/mutate/infer.hpp) against the probe that runs the
// mutant: for a sample of the retained candidates of a zoo seed (every k-th of the bundled
// pool's candidates, instantiated once), the time of `static_check` (shapes and dtypes
// propagated on meta tensors, then the refutable constraints) and of `check_mutant` (the
// mutant run op by op on every profiling input, then every deferred constraint), measured in
// the same run so their ratio is what to read on a shared machine.
//
//   tfg_bench_infer --zoo=build/zoo [--seeds=swin_v2_t,resnet18] [--sample=60] [benchmark flags]
#include "tfg/match/candidates.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/torch/import/externs.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/mutate/infer.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/mutate/match_adapter.hpp"
#include "tfg/torch/mutate/mutate.hpp"
#include "tfg/torch/execute/profile.hpp"
#include "tfg/util/clock.hpp"

#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

namespace {

namespace fs = std::filesystem;
namespace tm = tfg::match;
namespace tt = tfg::torch;
using tfg::ms_since;

struct seed {
  std::string name;
  tt::model model;
  tt::input_set inputs;
  tt::profile prof;
  std::size_t sample = 60;
};

enum class what { infer, probe };

void bm_check(benchmark::State& state, std::shared_ptr<seed> s, what w) {
  tm::symbol_table symbols;
  auto ctx = std::make_shared<tt::extern_context>(tt::extern_context{&s->model, &s->prof});
  auto pool = tm::load_pool({fs::path(TFG_SOURCE_DIR) / "operators"}, symbols, tt::torch_externs(ctx));
  tt::torch_match_adapter a(s->model, s->prof, symbols);
  tm::workspace ws;
  auto set = tm::construct(a, std::span<const tm::compiled_operator>(pool.operators), {.seed = 1});
  const std::size_t step = std::max<std::size_t>(1, set.candidates.size() / s->sample);
  struct made {
    const tm::compiled_operator* op;
    tm::bindings b;
    tt::mutant mu;
  };
  std::vector<made> mutants;
  for (std::size_t i = 0; i < set.candidates.size(); i += step) {
    const auto& c = set.candidates[i];
    const auto& op = pool.operators[c.op];
    auto b = set.bound(c);
    auto r = tt::instantiate(s->model, a, op, b, symbols, ws, &s->inputs);
    if (auto* mu = std::get_if<tt::mutant>(&r)) mutants.push_back({&op, std::move(b), std::move(*mu)});
  }
  std::size_t refused = 0, checks = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    refused = 0;
    for (auto& m : mutants) {
      const auto f = w == what::infer
                         ? tt::static_check(m.mu, a, *m.op, m.b, symbols, pool.requirements, ws)
                         : tt::check_mutant(m.mu, a, *m.op, m.b, symbols, pool.requirements, s->inputs, ws);
      refused += f.has_value();
    }
    checks += mutants.size();
    state.SetIterationTime(ms_since(t0) / 1e3);
  }
  state.counters["mutants"] = static_cast<double>(mutants.size());
  state.counters["refused"] = static_cast<double>(refused);
  state.counters["ms_per_mutant"] =
      benchmark::Counter(static_cast<double>(checks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ms_per_mutant"] = state.counters["ms_per_mutant"];
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  std::string zoo = "build/zoo", seeds = "swin_v2_t,resnet18";
  std::size_t sample = 60;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--zoo=", 0) == 0) zoo = a.substr(6);
    else if (a.rfind("--seeds=", 0) == 0) seeds = a.substr(8);
    else if (a.rfind("--sample=", 0) == 0) sample = std::stoul(a.substr(9));
    else rest.push_back(argv[i]);
  }
  std::stringstream ss(seeds);
  for (std::string name; std::getline(ss, name, ',');) {
    const auto path = fs::path(zoo) / (name + ".pt");
    if (!fs::exists(path)) {
      std::cerr << "tfg_bench_infer: " << path << " not found (run `make zoo`)\n";
      return 2;
    }
    auto s = std::make_shared<seed>();
    s->name = name;
    s->sample = sample;
    s->model = tt::torchscript_importer().load(path.string());
    s->inputs = tt::load_inputs(tt::inputs_path_for(path.string()));
    s->prof = tt::profiler().run(s->model, s->inputs);
    benchmark::RegisterBenchmark(("before_execution/" + name).c_str(), bm_check, s, what::infer)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
    benchmark::RegisterBenchmark(("probe/" + name).c_str(), bm_check, s, what::probe)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
  }
  int rc = static_cast<int>(rest.size());
  benchmark::Initialize(&rc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
