// Execution cost per campaign round against the configurations' own work. One iteration is
// what a round's execution does in-process: export the mutant to a .pt (as the campaign loop
// does) and the worker's handle_request on it (import of the file, every configuration, the
// judge, trace labels). The configurations' own compile-and-run time is the sum of each
// configuration's preparation (export to a module, freeze, conversion, warm-up runs) and its
// timed runs, measured inside the same call, and once more without trace recording (the
// runtime-trace labels of the reward hook every dispatcher call). Counters, in ms per round:
// export, load, configs (traced), configs_untraced, labels (recording beyond the runs, and the
// summary), judge, cfg.NAME; `ratio` = round / configs_untraced (issue 14 asks for at most 2),
// `ratio_traced` = round / configs. The mutant is the seed itself: the same work as a mutant of
// its size.
//
//   tfg_bench_execute --zoo=build/zoo [--seeds=mobilenet_v3_small,resnet18] [--configs=a,b]
#include "tfg/torch/backend.hpp"
#include "tfg/torch/execute/configs.hpp"
#include "tfg/torch/import/export.hpp"
#include "tfg/torch/import/import.hpp"
#include "tfg/torch/import/inputs.hpp"
#include "tfg/torch/execute/worker.hpp"
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
using tfg::ms_since;

struct seed {
  std::string name;
  fs::path path;
  tfg::torch::model model;
  std::vector<std::string> configs;
};

void bm_execute(benchmark::State& state, std::shared_ptr<seed> s) {
  const auto dir = fs::temp_directory_path() / ("tfg_bench_execute_" + s->name);
  fs::create_directories(dir);
  const auto mutant = dir / "mutant.pt";
  tfg::torch::worker_state st;  // kept across rounds, as a worker keeps it (the inputs' cache)
  tfg::campaign::worker_request req;
  req.model = mutant.string();
  req.inputs = tfg::torch::inputs_path_for(s->path.string());
  req.configs = s->configs;
  std::map<std::string, double> sum;
  double rounds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    tfg::torch::save(s->model, mutant.string());
    const double export_ms = ms_since(t0);
    req.id = static_cast<std::int64_t>(rounds);
    const auto reply = tfg::torch::handle_request(req, st);
    const double round_ms = ms_since(t0);
    state.SetIterationTime(round_ms / 1e3);
    if (!reply.ok) {
      state.SkipWithError(reply.error.c_str());
      break;
    }
    sum["export"] += export_ms;
    sum["round"] += round_ms;
    for (const auto& [k, v] : reply.phases) sum[k] += v;
    for (const auto& r : reply.results) sum["cfg." + r.config] += r.prepare_ms + r.wall_ms;
    // The configurations' own times without the trace recording the campaign's reward needs
    // (untimed here): what the configurations cost by themselves.
    auto plain = req;
    plain.labels = false;
    const auto untraced = tfg::torch::handle_request(plain, st);
    if (untraced.ok) sum["configs_untraced"] += untraced.phases.at("configs");
    rounds += 1;
  }
  if (rounds == 0) return;
  for (const auto& [k, v] : sum) state.counters[k + "_ms"] = v / rounds;
  state.counters["ratio"] = sum["round"] / std::max(1e-9, sum["configs_untraced"]);
  state.counters["ratio_traced"] = sum["round"] / std::max(1e-9, sum["configs"]);
  state.counters["nodes"] = static_cast<double>(s->model.graph.node_count());
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  std::string zoo = "build/zoo", seeds = "mobilenet_v3_small,resnet18", configs;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--zoo=", 0) == 0) zoo = a.substr(6);
    else if (a.rfind("--seeds=", 0) == 0) seeds = a.substr(8);
    else if (a.rfind("--configs=", 0) == 0) configs = a.substr(10);
    else rest.push_back(argv[i]);
  }
  std::vector<std::string> config_list;
  {
    std::stringstream cs(configs);
    for (std::string c; std::getline(cs, c, ',');)
      if (!c.empty()) config_list.push_back(c);
  }
  std::stringstream ss(seeds);
  for (std::string name; std::getline(ss, name, ',');) {
    const auto path = fs::absolute(fs::path(zoo) / (name + ".pt"));
    if (!fs::exists(path)) {
      std::cerr << "tfg_bench_execute: " << path << " not found (run `make zoo`)\n";
      return 2;
    }
    auto s = std::make_shared<seed>();
    s->name = name;
    s->path = path;
    s->model = tfg::torch::torchscript_importer().load(path.string());
    s->configs = config_list;
    benchmark::RegisterBenchmark(("execute/" + name).c_str(), bm_execute, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(8);
  }
  int rc = static_cast<int>(rest.size());
  benchmark::Initialize(&rc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
