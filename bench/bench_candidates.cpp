// Candidate construction throughput and pool parse+compile time.
//
//   tfg_bench_candidates [--benchmark_filter=...]
//
// BM_construct/N: every live edge of a synthetic mock graph with N edges (seeded; a realistic
// op mix: conv, linear, relu/gelu/sigmoid/tanh, add/mul, view/transpose (aliased), softmax,
// layer_norm, max_pool2d, cat; multi-consumer edges) paired with every operator of the
// operators/ pool. items_per_second = (edge, operator) pairs examined per second;
// candidates_per_second = retained candidates per second.
// Times are CPU times (the benchmark machine is shared).
// TFG_BENCH_DUMP_COUNTS=1 tfg_bench_candidates: instead of benchmarking, prints per operator
// and graph size the per-stage counts, candidate count and a hash of the candidates'
// bindings (diff two builds' output to check that a speed change kept the behaviour).
// TFG_BENCH_OP_COSTS=1 tfg_bench_candidates: the construction time of each operator alone on
// the 10^4-edge graph, costliest first (=<name>: that operator alone for 5 s, to profile).
// TFG_BENCH_REPEAT=N tfg_bench_candidates: N constructions of the whole pool on the 10^4-edge
// graph (for instruction counts under callgrind).
// BM_construct_into/N: the same into one candidate_set reused across calls, as the campaign's
// generator constructs round after round (no fresh arrays, no first-touch page faults).
// BM_load_pool/<which>: parse + check + compile of the operators/ folder (0), of the five
// reference operators (1), and of the folder replicated 30 times into a temp dir (2).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tfg/match/candidates.hpp"
#include "tfg/match/mock_adapter.hpp"
#include "tfg/match/pool.hpp"

// Counts heap allocations, to show that the scan allocates per call, not per pair. (GCC 12
// reports a false -Wmismatched-new-delete for replacement operators once inlined.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
std::atomic<std::uint64_t> g_allocations{0};
}  // namespace
void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

namespace match = tfg::match;
namespace state = tfg::state;
namespace fs = std::filesystem;
using match::mock_adapter;

fs::path operators_dir() { return fs::path(TFG_SOURCE_DIR) / "operators"; }

const match::extern_registry& externs() {
  static match::extern_registry const r = [] {
    match::extern_registry x;
    x.add("no_inplace_writer", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    x.add("no_geometry_reader", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    x.add("kernel_for", [](std::span<const match::extern_arg>) { return match::attr_value(true); });
    // The benchmark has no device: device_roundtrip's other device is never available.
    x.add("device_available", [](std::span<const match::extern_arg>) { return match::attr_value(false); });
    return x;
  }();
  return r;
}

struct world {
  match::symbol_table syms;
  match::pool pool;
  std::map<std::size_t, std::unique_ptr<mock_adapter>> graphs;
};

world& the_world() {
  static world w = [] {
    world x;
    x.pool = match::load_pool({operators_dir()}, x.syms, externs());
    return x;
  }();
  return w;
}

state::tensor_state tensor(state::dtype d, std::vector<std::int64_t> shape) {
  return mock_adapter::tensor(d, std::move(shape));
}

/// A seeded synthetic graph with about `edges` edges.
std::unique_ptr<mock_adapter> make_graph(match::symbol_table& syms, std::size_t edges) {
  auto m = std::make_unique<mock_adapter>(syms);
  std::mt19937_64 rng(12345 + edges);
  std::vector<match::edge_id> pool4, pool2;  // recent rank-4 and rank-2 activations
  std::vector<std::uint32_t> sharers;        // per storage group
  auto set = [&](match::edge_id e, state::tensor_state s, std::int64_t group = -1) {
    auto& p = m->profile_mut(e);
    if (group < 0) {
      s.storage_group = static_cast<std::uint32_t>(sharers.size());
      sharers.push_back(1);
    } else {
      s.storage_group = static_cast<std::uint32_t>(group);
      ++sharers[static_cast<std::size_t>(group)];
    }
    p.runs = {std::move(s)};
  };
  auto input = [&](state::dtype d, std::vector<std::int64_t> shape) {
    auto const e = m->add_input(std::vector<state::tensor_state>{});
    set(e, tensor(d, std::move(shape)));
    return e;
  };
  auto node = [&](const char* op, std::vector<match::arg_view> args, state::tensor_state s, std::int64_t group = -1) {
    auto const e = m->add_node(op, std::move(args), 1)[0];
    set(e, std::move(s), group);
    return e;
  };
  auto pick = [&](std::vector<match::edge_id>& v) {
    // Mostly the latest value, sometimes an older one (multi-consumer edges).
    std::size_t const back = std::min<std::size_t>(v.size(), 8);
    std::uniform_int_distribution<std::size_t> d(0, back - 1);
    std::size_t const k = rng() % 4 == 0 ? d(rng) : 0;
    return v[v.size() - 1 - k];
  };
  auto E = [](match::edge_id e) { return mock_adapter::edge(e); };
  auto C = [](match::attr_value v) { return mock_adapter::constant(std::move(v)); };
  auto L = [](std::vector<std::int64_t> v) { return mock_adapter::constant(std::move(v)); };
  auto group_of = [&](match::edge_id e) { return static_cast<std::int64_t>(m->profile(e).runs[0].storage_group); };

  pool4.push_back(input(state::dtype::f32, {8, 16, 32, 32}));
  pool2.push_back(input(state::dtype::f32, {8, 256}));
  while (m->graph().edge_count() < edges) {
    std::uint64_t const r = rng() % 100;
    if (r < 14) {  // conv block: weight input, conv
      const auto x = pick(pool4);
      const auto w = input(state::dtype::f32, {16, 16, 3, 3});
      pool4.push_back(node("aten::_convolution",
                           {E(x), E(w), mock_adapter::none(), L({1, 1}), L({1, 1}), L({1, 1}), C(false), L({0, 0}),
                            C(std::int64_t{1}), C(false), C(false), C(true), C(true)},
                           tensor(state::dtype::f32, {8, 16, 32, 32})));
    } else if (r < 24) {
      const auto x = pick(pool2);
      const auto w = input(state::dtype::f32, {256, 256});
      const auto b = input(state::dtype::f32, {256});
      pool2.push_back(node("aten::linear", {E(x), E(w), E(b)}, tensor(state::dtype::f32, {8, 256})));
    } else if (r < 44) {
      static const char* const acts[] = {"aten::relu", "aten::gelu", "aten::sigmoid", "aten::tanh"};
      const bool four = rng() % 2;
      auto& pl = four ? pool4 : pool2;
      const auto x = pick(pl);
      auto s = m->profile(x).runs[0];
      pl.push_back(node(acts[rng() % 4], {E(x)}, std::move(s)));
    } else if (r < 58) {
      const bool four = rng() % 2;
      auto& pl = four ? pool4 : pool2;
      const auto x = pick(pl), y = pick(pl);
      auto s = m->profile(x).runs[0];
      pl.push_back(node(rng() % 2 ? "aten::add" : "aten::mul", {E(x), E(y), C(std::int64_t{1})}, std::move(s)));
    } else if (r < 68) {  // view (aliased) then back
      const auto x = pick(pool4);
      const auto v =
          node("aten::view", {E(x), L({8, 16 * 32 * 32})}, tensor(state::dtype::f32, {8, 16384}), group_of(x));
      pool4.push_back(
          node("aten::view", {E(v), L({8, 16, 32, 32})}, tensor(state::dtype::f32, {8, 16, 32, 32}), group_of(v)));
    } else if (r < 74) {
      const auto x = pick(pool2);
      auto s = tensor(state::dtype::f32, {256, 8});
      s.contiguous = false;
      const auto t = node("aten::transpose", {E(x), C(std::int64_t{0}), C(std::int64_t{1})}, std::move(s), group_of(x));
      pool2.push_back(node("aten::contiguous", {E(t), C(std::int64_t{0})}, tensor(state::dtype::f32, {8, 256})));
    } else if (r < 80) {
      const auto x = pick(pool2);
      pool2.push_back(node("aten::softmax", {E(x), C(std::int64_t{-1}), mock_adapter::none()},
                           tensor(state::dtype::f32, {8, 256})));
    } else if (r < 86) {
      const auto x = pick(pool2);
      const auto w = input(state::dtype::f32, {256});
      const auto b = input(state::dtype::f32, {256});
      pool2.push_back(node("aten::layer_norm", {E(x), L({256}), E(w), E(b), C(1e-5), C(true)},
                           tensor(state::dtype::f32, {8, 256})));
    } else if (r < 91) {
      const auto x = pick(pool4);
      const auto p = node("aten::max_pool2d", {E(x), L({3, 3}), L({1, 1}), L({1, 1}), L({1, 1}), C(false)},
                          tensor(state::dtype::f32, {8, 16, 32, 32}));
      pool4.push_back(p);
    } else if (r < 95) {
      const auto x = pick(pool4), y = pick(pool4);
      const auto c = node("aten::cat", {mock_adapter::list({E(x), E(y)}), C(std::int64_t{1})},
                          tensor(state::dtype::f32, {8, 32, 32, 32}));
      pool4.push_back(
          node("aten::_convolution",
               {E(c), E(input(state::dtype::f32, {16, 32, 1, 1})), mock_adapter::none(), L({1, 1}), L({0, 0}),
                L({1, 1}), C(false), L({0, 0}), C(std::int64_t{1}), C(false), C(false), C(true), C(true)},
               tensor(state::dtype::f32, {8, 16, 32, 32})));
    } else {  // integer and half-precision side values
      const auto x = pick(pool2);
      const auto h = node("aten::to", {E(x), C(std::int64_t{5}), C(false), C(false), mock_adapter::none()},
                          tensor(state::dtype::f16, {8, 256}));
      const auto i = node("aten::argmax", {E(h), C(std::int64_t{-1}), C(false)}, tensor(state::dtype::i64, {8}));
      (void)i;
      pool2.push_back(node("aten::to", {E(h), C(std::int64_t{6}), C(false), C(false), mock_adapter::none()},
                           tensor(state::dtype::f32, {8, 256})));
    }
  }
  m->add_output(pool4.back());
  m->add_output(pool2.back());
  // Storage sharers per group.
  for (const auto e : m->graph().edges()) {
    auto& rs = m->profile_mut(e).runs;
    for (auto& s : rs) s.storage_sharers = sharers[s.storage_group];
  }
  return m;
}

mock_adapter& graph_of(std::size_t n) {
  auto& w = the_world();
  auto& g = w.graphs[n];
  if (!g) g = make_graph(w.syms, n);
  return *g;
}

/// Scan only (no retained bindings): the cost of the prefilter-and-reject path.
void BM_construct_count_only(benchmark::State& st) {
  auto& w = the_world();
  auto& g = graph_of(static_cast<std::size_t>(st.range(0)));
  std::span<const match::compiled_operator> ops(w.pool.operators);
  std::uint64_t pairs = 0, allocs = 0, iters = 0;
  for (auto _ : st) {
    const auto before = g_allocations.load();
    const auto set = match::construct(g, ops, {.seed = 1, .keep_candidates = false});
    allocs += g_allocations.load() - before;
    ++iters;
    pairs += set.total.pairs();
    benchmark::DoNotOptimize(set.total.by_stage.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(pairs));
  // Heap allocations per construct call (per-call tables and workspace growth only).
  st.counters["allocations_per_call"] = static_cast<double>(allocs) / static_cast<double>(iters ? iters : 1);
}
BENCHMARK(BM_construct_count_only)->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

void BM_construct(benchmark::State& st) {
  auto& w = the_world();
  auto& g = graph_of(static_cast<std::size_t>(st.range(0)));
  std::span<const match::compiled_operator> ops(w.pool.operators);
  std::uint64_t pairs = 0, cands = 0;
  // range(1): draws of the sampled parameters per pair (4, the default; 1 as before redraws).
  const auto draws = static_cast<unsigned>(st.range(1));
  for (auto _ : st) {
    const auto set = match::construct(g, ops, {.seed = 1, .param_draws = draws});
    pairs += set.total.pairs();
    cands += set.candidates.size();
    benchmark::DoNotOptimize(set.candidates.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(pairs));
  st.counters["candidates_per_second"] = benchmark::Counter(static_cast<double>(cands), benchmark::Counter::kIsRate);
  st.counters["edges"] = static_cast<double>(g.graph().edge_count());
  st.counters["operators"] = static_cast<double>(ops.size());
  st.counters["ns_per_pair"] =
      benchmark::Counter(static_cast<double>(pairs), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
/// As BM_construct, into one candidate_set kept across calls (`construct_into`), as the
/// campaign's generator does round after round: the arrays keep their memory.
void BM_construct_into(benchmark::State& st) {
  auto& w = the_world();
  auto& g = graph_of(static_cast<std::size_t>(st.range(0)));
  std::span<const match::compiled_operator> ops(w.pool.operators);
  std::uint64_t pairs = 0, cands = 0;
  match::candidate_set set;
  for (auto _ : st) {
    match::construct_into(set, g, ops, {.seed = 1, .param_draws = static_cast<unsigned>(st.range(1))});
    pairs += set.total.pairs();
    cands += set.candidates.size();
    benchmark::DoNotOptimize(set.candidates.data());
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(pairs));
  st.counters["candidates_per_second"] = benchmark::Counter(static_cast<double>(cands), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_construct_into)
    ->Args({10'000, 4})
    ->Args({100'000, 4})
    ->Args({1'000'000, 4})
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_construct)
    ->Args({10'000, 4})
    ->Args({100'000, 4})
    ->Args({1'000'000, 4})
    ->Args({100'000, 1})
    ->Unit(benchmark::kMillisecond);

/// A temp folder holding `copies` copies of the selected files (operator names suffixed).
fs::path replicate(const std::string& name, std::size_t copies, const std::vector<std::string>& only) {
  fs::path const dir = fs::temp_directory_path() / ("tfg_bench_pool_" + name);
  fs::remove_all(dir);
  std::regex const op_re(R"((^|\n)(\s*)operator\s+([A-Za-z_][A-Za-z0-9_]*))");
  for (const auto& f : fs::recursive_directory_iterator(operators_dir())) {
    if (!f.is_regular_file() || f.path().extension() != ".tfg") continue;
    if (!only.empty() && std::find(only.begin(), only.end(), f.path().stem().string()) == only.end()) continue;
    std::ifstream in(f.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const auto rel = fs::relative(f.path(), operators_dir());
    for (std::size_t c = 0; c < copies; ++c) {
      fs::path const out = dir / ("copy" + std::to_string(c)) / rel;
      fs::create_directories(out.parent_path());
      std::ofstream(out) << std::regex_replace(ss.str(), op_re, "$1$2operator $3_c" + std::to_string(c));
    }
  }
  return dir;
}

void BM_load_pool(benchmark::State& st) {
  fs::path dir;
  if (st.range(0) == 0) dir = operators_dir();
  if (st.range(0) == 1)
    dir = replicate("five", 1,
                    {"break_alias_with_clone", "swap_activation", "explicit_dtype_roundtrip",
                     "insert_identity_residual", "insert_pool_with_shape_revert"});
  if (st.range(0) == 2) dir = replicate("x30", 30, {});
  std::size_t files = 0, ops = 0, errors = 0;
  {  // warm the file cache and the parser's statics
    match::symbol_table syms;
    (void)match::load_pool({dir}, syms, externs());
  }
  for (auto _ : st) {
    match::symbol_table syms;
    const auto p = match::load_pool({dir}, syms, externs());
    files = p.files;
    ops = p.operators.size();
    errors = p.errors;
    benchmark::DoNotOptimize(p.operators.data());
  }
  st.counters["files"] = static_cast<double>(files);
  st.counters["operators"] = static_cast<double>(ops);
  st.counters["errors"] = static_cast<double>(errors);
}
BENCHMARK(BM_load_pool)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

/// Behaviour fingerprint (TFG_BENCH_DUMP_COUNTS=1): per operator and graph size, the
/// per-stage rejection counts, the candidate count and a hash of the candidates' bindings.
/// Used to check that speed work does not change what `construct` computes.
std::uint64_t mix(std::uint64_t h, std::uint64_t x) { return (h ^ x) * 0x100000001b3ull; }
std::uint64_t hash_attr(const match::attr_value& v) {
  std::uint64_t h = mix(0xcbf29ce484222325ull, v.index());
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, std::string>) {
          for (char c : x) h = mix(h, static_cast<unsigned char>(c));
        } else if constexpr (std::is_same_v<T, double>) {
          std::uint64_t b;
          std::memcpy(&b, &x, 8);
          h = mix(h, b);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          for (auto y : x) h = mix(h, static_cast<std::uint64_t>(y));
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          for (auto y : x) {
            std::uint64_t b;
            std::memcpy(&b, &y, 8);
            h = mix(h, b);
          }
        } else {
          h = mix(h, static_cast<std::uint64_t>(x));
        }
      },
      v);
  return h;
}
void dump_counts() {
  auto& w = the_world();
  std::span<const match::compiled_operator> ops(w.pool.operators);
  for (std::size_t n : {std::size_t{10'000}, std::size_t{100'000}, std::size_t{1'000'000}}) {
    auto& g = graph_of(n);
    for (bool pre : {true, false}) {
      if (!pre && n > 10'000) continue;
      const auto set = match::construct(g, ops, {.seed = 1, .use_prefilter = pre});
      std::vector<std::uint64_t> hs(ops.size(), 0xcbf29ce484222325ull);
      std::vector<std::uint64_t> cs(ops.size(), 0);
      for (const auto& c : set.candidates) {
        auto& h = hs[c.op];
        ++cs[c.op];
        h = mix(h, tfg::graph::index(c.anchor));
        for (const auto v : set.values_of(c)) h = mix(h, v == tfg::graph::no_edge ? ~0ull : tfg::graph::index(v));
        for (const auto v : set.nodes_of(c)) h = mix(h, v == tfg::graph::no_node ? ~0ull : tfg::graph::index(v));
        for (const auto& v : set.params_of(c)) h = mix(h, hash_attr(v));
      }
      std::printf("graph %zu prefilter %d pairs %llu candidates %zu type_faults %llu\n", n, int(pre),
                  static_cast<unsigned long long>(set.total.pairs()), set.candidates.size(),
                  static_cast<unsigned long long>(set.type_faults));
      for (std::size_t i = 0; i < ops.size(); ++i) {
        std::printf("  %-40s", ops[i].name.c_str());
        for (auto x : set.per_operator[i].by_stage) std::printf(" %llu", static_cast<unsigned long long>(x));
        std::printf(" |");
        for (auto x : set.per_operator[i].prefilter_as) std::printf(" %llu", static_cast<unsigned long long>(x));
        std::printf(" | %llu %016llx\n", static_cast<unsigned long long>(cs[i]),
                    static_cast<unsigned long long>(hs[i]));
      }
    }
  }
}

/// Cost per operator (TFG_BENCH_OP_COSTS=1): for each operator alone, the CPU time of
/// `construct` over the 10^4-edge graph (best of 5, less the time with no operator), in ns
/// per edge, and its share of the sum; the costliest first. Tells which operator files to
/// make cheaper when BM_construct regresses.
void dump_op_costs() {
  auto& w = the_world();
  auto& g = graph_of(10'000);
  std::span<const match::compiled_operator> all(w.pool.operators);
  auto best_of = [&](std::span<const match::compiled_operator> ops) {
    double best = 1e300;
    for (int r = 0; r < 5; ++r) {
      auto const t0 = std::chrono::steady_clock::now();
      auto const set = match::construct(g, ops, {.seed = 1});
      benchmark::DoNotOptimize(set.candidates.data());
      best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  // TFG_BENCH_OP_COSTS=<name>: construct with that operator alone for about 5 s (for perf).
  if (std::string_view const only = std::getenv("TFG_BENCH_OP_COSTS"); only != "1") {
    for (std::size_t i = 0; i < all.size(); ++i)
      if (all[i].name == only) {
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
          const auto set = match::construct(g, all.subspan(i, 1), {.seed = 1});
          benchmark::DoNotOptimize(set.candidates.data());
        }
        return;
      }
    std::fprintf(stderr, "no operator %s\n", std::string(only).c_str());
    return;
  }
  const double base = best_of(all.subspan(0, 0));
  const auto edges = static_cast<double>(g.graph().edge_count());
  std::vector<std::pair<double, std::size_t>> cost;
  double sum = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double t = std::max(0.0, best_of(all.subspan(i, 1)) - base) / edges;
    cost.emplace_back(t, i);
    sum += t;
  }
  std::sort(cost.rbegin(), cost.rend());
  std::printf("%zu operators, %.0f edges, sum %.1f ns per edge (%.1f ns per pair)\n", all.size(), edges, sum,
              sum / static_cast<double>(all.size()));
  for (const auto& [t, i] : cost) std::printf("  %-44s %8.1f ns/edge %5.1f%%\n", all[i].name.c_str(), t, 100 * t / sum);
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("TFG_BENCH_DUMP_COUNTS")) {
    dump_counts();
    return 0;
  }
  if (const char* n = std::getenv("TFG_BENCH_REPEAT")) {
    // TFG_BENCH_REPEAT=N: construct with the whole pool on the 10^4-edge graph N times, then
    // exit: a fixed workload for instruction counts (valgrind --tool=callgrind, N = 1 less
    // N = 0), which a noisy shared machine does not disturb.
    auto& w = the_world();
    auto& g = graph_of(10'000);
    for (long i = 0, k = std::strtol(n, nullptr, 10); i < k; ++i) {
      const auto set = match::construct(g, std::span<const match::compiled_operator>(w.pool.operators), {.seed = 1});
      benchmark::DoNotOptimize(set.candidates.data());
    }
    return 0;
  }
  if (std::getenv("TFG_BENCH_OP_COSTS")) {
    dump_op_costs();
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
