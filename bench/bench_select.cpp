// Selection policies: the per-round cost of choosing among the retained candidates.
//
//   tfg_bench_select [--benchmark_filter=...]
//
// BM_linucb_select/N: LinUCB select over N random contexts, after 1000 updates so A^-1 is
// dense. items_per_second = candidates scored per second. Target: N = 10^5 under 10 ms.
// BM_linucb_update: one Sherman-Morrison update (items = updates).
// BM_ucb1_select/N/K: UCB1 select over N candidates spread over K arms (all arms played).
// BM_linucb_op_select/N/K: LinUCB with one model per operator (the default policy) over N
// candidates of K operators, each model trained. BM_queue_select/N/K: the queue over N
// candidates of K operators in 40 site classes each (all played).
// BM_coverage_diversity: d(B) of a 16-element set against a counter holding 10^5 elements.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tfg/select/features.hpp"
#include "tfg/select/policies.hpp"

namespace {

namespace sel = tfg::select;

std::vector<sel::context> random_contexts(std::size_t n, std::uint64_t seed) {
  sel::rng r(seed);
  std::vector<sel::context> cs(n);
  for (auto& c : cs)
    for (double& v : c.x) v = static_cast<double>(r() >> 11) * 0x1.0p-53;
  return cs;
}

/// n arm ids uniform in [0, k).
std::vector<std::uint32_t> random_arms(std::size_t n, std::uint32_t k, sel::rng& r) {
  std::vector<std::uint32_t> arms(n);
  for (auto& a : arms) a = static_cast<std::uint32_t>(sel::uniform_index(r, k));
  return arms;
}

sel::linucb trained_linucb() {
  sel::linucb p;
  const auto xs = random_contexts(1000, 2);
  for (std::size_t i = 0; i < xs.size(); ++i) p.update(xs[i], 0, xs[i].x[3] * 0.5 + 0.1 * xs[i].x[0]);
  return p;
}

void BM_linucb_select(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto cs = random_contexts(n, 1);
  const sel::linucb p = trained_linucb();
  sel::rng r(3);
  for (auto _ : state) benchmark::DoNotOptimize(p.select(cs, {}, r));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_linucb_select)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_linucb_update(benchmark::State& state) {
  const auto xs = random_contexts(1024, 4);
  sel::linucb p;
  std::size_t i = 0;
  for (auto _ : state) {
    p.update(xs[i & 1023], 0, 0.5);
    ++i;
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(p.theta());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_linucb_update);

void BM_ucb1_select(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto k = static_cast<std::uint32_t>(state.range(1));
  const auto cs = random_contexts(n, 5);
  sel::rng r(6);
  const auto arms = random_arms(n, k, r);
  sel::ucb1 p(k);
  for (std::uint32_t a = 0; a < k; ++a)
    for (std::uint32_t t = 0; t <= a % 7; ++t) p.update(cs[0], a, static_cast<double>(a % 5) * 0.2);
  for (auto _ : state) benchmark::DoNotOptimize(p.select(cs, arms, r));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_ucb1_select)->Args({100000, 150})->Unit(benchmark::kMicrosecond);

void BM_linucb_op_select(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto k = static_cast<std::uint32_t>(state.range(1));
  const auto cs = random_contexts(n, 5);
  sel::rng r(6);
  const auto arms = random_arms(n, k, r);
  sel::linucb_per_arm p;
  const auto xs = random_contexts(1000, 2);
  for (std::size_t i = 0; i < xs.size(); ++i) p.update(xs[i], static_cast<std::uint32_t>(i % k), xs[i].x[3] * 0.5);
  for (auto _ : state) benchmark::DoNotOptimize(p.select(cs, arms, r));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_linucb_op_select)->Args({100000, 150})->Unit(benchmark::kMicrosecond);

void BM_queue_select(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto k = static_cast<std::uint32_t>(state.range(1));
  const auto cs = random_contexts(n, 5);
  sel::rng r(6);
  std::vector<std::uint32_t> arms(n);
  std::vector<std::uint64_t> classes(n);
  for (std::size_t i = 0; i < n; ++i) {
    arms[i] = static_cast<std::uint32_t>(sel::uniform_index(r, k));
    classes[i] = sel::uniform_index(r, 40);
  }
  sel::queue_scheduler p;
  for (std::size_t i = 0; i < n; i += 7) p.update(cs[i], arms[i], classes[i], static_cast<double>(i % 3) * 0.3);
  for (auto _ : state) benchmark::DoNotOptimize(p.select(cs, arms, classes, r));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_queue_select)->Args({100000, 150})->Unit(benchmark::kMicrosecond);

void BM_coverage_diversity(benchmark::State& state) {
  sel::coverage_counter cov;
  sel::rng r(7);
  std::vector<std::uint64_t> batch(10);
  for (int i = 0; i < 10000; ++i) {
    for (auto& b : batch) b = r() % 100000;
    std::sort(batch.begin(), batch.end());
    batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
    cov.record(batch);
    batch.resize(10);
  }
  std::vector<std::uint64_t> set(16);
  for (auto& b : set) b = r() % 200000;  // about half seen
  for (auto _ : state) benchmark::DoNotOptimize(cov.diversity(set));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_coverage_diversity);

}  // namespace
