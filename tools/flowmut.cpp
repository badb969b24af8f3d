// flowmut: the command-line tool. The only place in the project that parses argv.
#include "tfg/dsl/parse.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/match/pool_info.hpp"
#include "tfg/torch/import/ivalue.hpp"
#include "tfg/torch/oracle/ops_check.hpp"
#include "tfg/torch/torch.hpp"
#include "tfg/torch/execute/configs.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/version.hpp"
#include "tfg/campaign/fuzz.hpp"

#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

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
  if (!inputs_path.empty()) return tfg::torch::load_inputs(inputs_path, m);
  if (!shapes.empty()) {
    std::vector<tfg::torch::input_spec> specs;
    for (const auto& s : shapes) specs.push_back(tfg::torch::parse_input_spec(s));
    return tfg::torch::random_inputs(specs, random ? random : 3);
  }
  if (random > 0) return tfg::torch::random_inputs(m, random);
  return tfg::torch::backend().seed_inputs(m, model_path,
                                           inputs_path);  // the file, MODEL.inputs.pt, else default_inputs
}

int run_profile(const profile_args& a) {
  at::set_num_threads(a.threads);
  const c10::Device device(a.device);
  auto t0 = clock_type::now();
  const bool exported = tfg::torch::looks_like_pt2(a.model_path);
  // A TorchScript file is also kept as a module, the reference the op-by-op run is checked
  // against; an exported program's reference is its graph run by TorchScript's executor
  // (LibTorch's C++ runtime for .pt2 programs is not part of the wheel's public library).
  std::optional<torch::jit::Module> module;
  tfg::torch::model m;
  if (exported) {
    m = tfg::torch::load_any(a.model_path);
  } else {
    module = tfg::torch::load_module(a.model_path);
    // A forward with control flow is specialised on the profiling inputs' branches.
    m = tfg::torch::torchscript_importer::from_module(*module, a.model_path,
                                                      tfg::torch::profile_inputs(a.model_path, a.inputs_path));
  }
  auto t1 = clock_type::now();
  auto inputs = inputs_for(m, a.model_path, a.inputs_path, a.random_inputs, a.shapes);
  tfg::torch::profiler prof({device, !a.no_numbers, true, true});
  auto p = prof.run(m, inputs);
  auto t2 = clock_type::now();

  std::cout << "flowmut profile " << a.model_path << "  (" << (exported ? "torch.export" : "torchscript") << ", "
            << inputs.size() << " profiling inputs, " << device << ", " << at::get_num_threads() << " thread"
            << (at::get_num_threads() == 1 ? "" : "s") << ")\n";
  std::printf(exported ? "import   %.1f ms (read archive, build graph, translate); profiling %.1f ms\n"
                       : "import   %.1f ms (load, freeze, inline, translate); profiling %.1f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  tfg::torch::print_summary(std::cout, m, p);
  std::size_t events = 0;
  for (const auto& t : p.traces) events += t.size();
  std::cout << "events   " << events / std::max<std::size_t>(1, p.traces.size()) << " dispatcher events per input, "
            << prof.labels().names.size() << " distinct labels\n";

  int rc = 0;
  if (!a.no_check) {
    // The reference is the module as the importer reads it: frozen (LibTorch's freeze_module
    // folds attributes into constants, and on 2.x that alone can move a float32 output by an
    // ulp: plain torch shows T5's encoder 9.5e-7 apart frozen and unfrozen). The unfrozen
    // forward's distance is printed beside it when it differs.
    std::optional<torch::jit::Module> unfrozen;
    std::string method = "forward";
    if (!module) {
      module = tfg::torch::to_module(m);
    } else {
      module->eval();
      unfrozen = module;
      method = tfg::torch::forward_method(*module, a.model_path);  // forward__0 of a scripted LSTM
      module = method == "forward" ? torch::jit::freeze_module(*module)
                                   : torch::jit::freeze_module(*module, std::vector<std::string>{method});
    }
    module->eval();
    module->to(device);
    if (unfrozen) unfrozen->to(device);
    double worst = 0, worst_unfrozen = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      std::vector<c10::IValue> args;
      for (const auto& v : inputs[i]) args.push_back(v.isTensor() ? c10::IValue(v.toTensor().to(device)) : v);
      c10::IValue ref, ref_unfrozen;
      {
        // Without grad, as the forward configurations run (a scripted forward's branches were
        // specialised so: MultiheadAttention takes its fast path only without grad).
        c10::InferenceMode guard(false);
        at::NoGradGuard no_grad;
        ref = module->get_method(method)(args);
        if (unfrozen) ref_unfrozen = unfrozen->get_method(method)(args);
      }
      worst = std::max(worst, tfg::torch::ivalue::max_abs_diff(ref, p.outputs[i]));
      if (unfrozen)
        worst_unfrozen = std::max(worst_unfrozen, tfg::torch::ivalue::max_abs_diff(ref_unfrozen, p.outputs[i]));
    }
    std::printf("check    op-by-op outputs vs %s: max abs diff %g %s\n",
                exported ? "the program's graph (TorchScript executor)" : "module.forward (frozen, as imported)", worst,
                worst == 0 ? "(equal)" : "(DIFFERENT)");
    if (unfrozen && worst_unfrozen != worst)
      std::printf("note     the unfrozen module.forward is %g away: LibTorch's freezing changes the result itself\n",
                  worst_unfrozen);
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

int run_export(const std::string& in, const std::string& out, const std::string& inputs_path) {
  auto m = tfg::torch::load_any(in, inputs_path);
  if (std::filesystem::path(out).extension() == ".pt2") {
#if TFG_HAS_PT2
    // A program records every value's shape: one run on the first profiling input gives them.
    auto inputs = inputs_for(m, in, inputs_path, 0, {});
    tfg::torch::save_pt2(m, inputs.front(), out);
    std::cout << "exported " << in << " -> " << out << " (torch.export program, " << m.graph.node_count()
              << " nodes)\n";
    return 0;
#else
    throw tfg::torch::model_error(out + ": writing a torch.export archive needs the LibTorch 2.x build (this one is " +
                                  std::string(TORCH_VERSION) + ")");
#endif
  }
  tfg::torch::save(m, out);
  std::cout << "exported " << in << " -> " << out << " (TorchScript, " << m.graph.node_count() << " nodes)\n";
  return 0;
}

// ---- operator pool ----------------------------------------------------------------------------

std::vector<std::filesystem::path> operator_dirs(const std::vector<std::string>& given) {
  const auto d = default_operator_dirs(given);
  return {d.begin(), d.end()};
}

struct loaded_pool {
  tfg::match::symbol_table symbols;
  std::shared_ptr<tfg::torch::extern_context> context = std::make_shared<tfg::torch::extern_context>();
  tfg::match::pool pool;
};

/// Loads the pool; prints its diagnostics to stderr. Returns null when a file has errors.
std::unique_ptr<loaded_pool> load_operators(const std::vector<std::string>& given) {
  auto lp = std::make_unique<loaded_pool>();
  lp->pool = tfg::match::load_pool(operator_dirs(given), lp->symbols, tfg::torch::torch_externs(lp->context));
  for (const auto& d : lp->pool.diagnostics) std::cerr << d;
  if (!lp->pool.ok()) {
    std::cerr << "flowmut: " << lp->pool.errors << " error(s) in the operator files\n";
    return nullptr;
  }
  return lp;
}

int run_ops_list(const std::vector<std::string>& dirs, bool json) {
  auto lp = load_operators(dirs);
  if (!lp) return 1;
  const auto& ops = lp->pool.operators;
  if (json) {
    tfg::match::write_json(std::cout, ops);
    return 0;
  }
  namespace tm = tfg::match;
  std::printf("%-40s %-9s %-10s %-22s %-9s %-8s %s\n", "operator", "object", "primitive", "origin", "preserves",
              "requires", "parameters");
  for (const auto& op : ops)
    std::printf("%-40s %-9s %-10s %-22s %-9s %-8s %s\n", op.name.c_str(), std::string(tm::name(op.object)).c_str(),
                std::string(tm::name(op.primitive)).c_str(), tm::origin_text(op).c_str(),
                op.preserves_values ? "values" : "", op.requires_device.c_str(), tm::params_text(op).c_str());
  const auto cells = tm::cell_counts(ops);
  std::size_t paper_pool = 0;
  for (const auto& row : tm::paper_cells)
    for (auto n : row) paper_pool += n;
  std::printf(
      "\n%zu operators from %zu files (the paper's pool: %zu); by object x primitive, ours / paper's "
      "Table 1:\n%-10s %10s %10s %10s %10s %10s\n",
      ops.size(), lp->pool.files, paper_pool, "", "update", "insertion", "deletion", "rewiring", "total");
  std::size_t ours_total = 0, paper_total = 0;
  for (int o = 0; o < 4; ++o) {
    std::printf("%-10s", std::string(tm::name(static_cast<tfg::dsl::object_kind>(o))).c_str());
    std::size_t row = 0, paper_row = 0;
    for (int p = 0; p < 4; ++p) {
      std::printf(" %10s", (std::to_string(cells[o][p]) + " / " + std::to_string(tm::paper_cells[o][p])).c_str());
      row += cells[o][p];
      paper_row += tm::paper_cells[o][p];
    }
    std::printf(" %10s\n", (std::to_string(row) + " / " + std::to_string(paper_row)).c_str());
    ours_total += row;
    paper_total += paper_row;
  }
  std::printf("%-10s %54s\n", "total", (std::to_string(ours_total) + " / " + std::to_string(paper_total)).c_str());
  return 0;
}

int run_ops_check(const std::vector<std::string>& dirs, bool verbose) {
  auto lp = load_operators(dirs);
  if (!lp) return 1;
  std::size_t total = 0, passed = 0, skipped = 0;
  for (const auto& op : lp->pool.operators) {
    for (const auto& ex : op.ast->examples) {
      ++total;
      auto r = tfg::torch::run_example(op, ex, lp->symbols, lp->pool.requirements, lp->context.get());
      passed += r.passed;
      skipped += r.skipped;
      if (!r.passed || verbose)
        std::cout << r.where << ": " << (r.passed ? "ok" : "FAIL") << ": "
                  << (r.match ? "example match" : "example no_match") << " of " << r.op << ": " << r.message << "\n";
    }
  }
  std::cout << passed << " of " << total << " examples of " << lp->pool.operators.size()
            << " operators behave as declared";
  if (skipped) std::cout << " (" << skipped << " skipped: they need a CUDA device this machine lacks)";
  std::cout << "\n";
  return passed == total ? 0 : 1;
}

int run_candidates(const std::string& model_path, const std::string& inputs_path, const std::vector<std::string>& dirs,
                   bool probe) {
  auto lp = load_operators(dirs);
  if (!lp) return 1;
  const tfg::torch::backend be;
  if (const auto n = tfg::match::keep_available(lp->pool, [&](std::string_view d) { return be.device_available(d); }))
    std::printf("%zu operator(s) skipped: they require a device this machine lacks\n", n);
  auto m = tfg::torch::load_any(model_path, inputs_path);
  auto inputs = inputs_for(m, model_path, inputs_path, 0, {});
  auto prof = tfg::torch::profiler({c10::Device(c10::kCPU), true, false, false}).run(m, inputs);
  tfg::torch::torch_match_adapter adapter(m, prof, lp->symbols);
  *lp->context = {&m, &prof};
  const auto& ops = lp->pool.operators;
  auto t0 = clock_type::now();
  auto set = tfg::match::construct(adapter, std::span<const tfg::match::compiled_operator>(ops));
  const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  const auto pairs = set.total.pairs();
  std::printf("%s: %zu edges x %zu operators = %llu pairs in %.2f ms (%.1f M pairs/s); %zu candidates retained\n",
              model_path.c_str(), m.graph.edge_count(), ops.size(), static_cast<unsigned long long>(pairs), secs * 1e3,
              pairs / secs / 1e6, set.candidates.size());
  std::printf("first rejecting stage:");
  for (std::size_t s = 0; s + 1 < tfg::match::reject_stage_count; ++s)
    std::printf(" %s %llu", std::string(tfg::match::name(static_cast<tfg::match::reject_stage>(s))).c_str(),
                static_cast<unsigned long long>(set.total.by_stage[s]));
  std::printf("\n");
  std::vector<std::size_t> legal(ops.size(), 0), tried(ops.size(), 0);
  std::map<std::string, std::size_t> reasons;
  if (probe) {
    tfg::match::workspace ws;
    for (const auto& c : set.candidates) {
      ++tried[c.op];
      // As a campaign decides: instantiate, refute on inferred shapes and dtypes, then run it.
      const auto b = set.bound(c);
      auto made = tfg::torch::instantiate(m, adapter, ops[c.op], b, lp->symbols, ws, &inputs);
      if (auto* f = std::get_if<tfg::torch::mutation_failure>(&made)) {
        ++reasons[std::string(tfg::match::name(f->stage))];
        continue;
      }
      auto& mu = std::get<tfg::torch::mutant>(made);
      if (auto f = tfg::torch::static_check(mu, adapter, ops[c.op], b, lp->symbols, lp->pool.requirements, ws)) {
        ++reasons[std::string(tfg::match::name(f->stage)) + " before execution"];
        continue;
      }
      if (auto f = tfg::torch::check_mutant(mu, adapter, ops[c.op], b, lp->symbols, lp->pool.requirements, inputs, ws))
        ++reasons[std::string(tfg::match::name(f->stage))];
      else ++legal[c.op];
    }
  }
  std::printf("%-40s %9s %9s%s\n", "operator", "pattern+", "retained", probe ? "     legal" : "");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& c = set.per_operator[i];
    const auto retained = c.by_stage[static_cast<int>(tfg::match::reject_stage::accepted)];
    const auto past_pattern = retained + c.by_stage[static_cast<int>(tfg::match::reject_stage::input)] +
                              c.by_stage[static_cast<int>(tfg::match::reject_stage::internal)] +
                              c.by_stage[static_cast<int>(tfg::match::reject_stage::output)];
    if (past_pattern == 0) continue;
    if (probe)
      std::printf("%-40s %9llu %9llu %9zu\n", ops[i].name.c_str(), static_cast<unsigned long long>(past_pattern),
                  static_cast<unsigned long long>(retained), legal[i]);
    else
      std::printf("%-40s %9llu %9llu\n", ops[i].name.c_str(), static_cast<unsigned long long>(past_pattern),
                  static_cast<unsigned long long>(retained));
  }
  if (probe) {
    std::size_t l = 0;
    for (auto x : legal) l += x;
    std::printf("probe: %zu of %zu retained candidates are legal mutants;", l, set.candidates.size());
    for (const auto& [k, v] : reasons) std::printf(" %zu rejected at %s;", v, k.c_str());
    std::printf("\n");
  }
  *lp->context = {};
  return 0;
}
int run_configs() {
  std::printf("%-20s %-10s %-16s %s\n", "configuration", "available", "compared with", "how");
  for (const auto& c : tfg::torch::list_configs())
    std::printf("%-20s %-10s %-16s %s%s\n", c.name.c_str(), c.available ? "yes" : "no",
                c.reference.empty() ? "-" : c.reference.c_str(), c.description.c_str(),
                c.available ? "" : (" [" + c.why_not + "]").c_str());
  std::printf(
      "\na campaign runs every available CPU configuration but the compiled ones (aot_eager ... aoti, seconds of\n"
      "compilation per mutant) and the ONNX ones (onnxruntime, onnxruntime_noopt: an export per mutant) by\n"
      "default; flowmut run --config NAME (repeat) chooses\n");
  return 0;
}
}  // namespace

// Validators for the numbers a user types: a negative count must not wrap to 2^64-1.
const CLI::Range count_range(std::int64_t{0}, std::int64_t{100'000'000}, "a count from 0 to 100000000");
const CLI::Range seed_range(std::int64_t{0}, std::numeric_limits<std::int64_t>::max(), "a non-negative seed");
const CLI::Validator non_empty(
    [](std::string& v) { return v.empty() ? std::string("the path is empty") : std::string(); }, "PATH", "non-empty");
const CLI::Validator finite_non_negative(
    [](std::string& v) {
      double d = 0;
      try {
        std::size_t used = 0;
        d = std::stod(v, &used);
        if (used != v.size()) return std::string("not a number: " + v);
      } catch (const std::exception&) {
        return std::string("not a number: " + v);
      }
      return std::isfinite(d) && d >= 0 ? std::string() : std::string("must be finite and >= 0: " + v);
    },
    "FLOAT>=0", "finite non-negative");

/// "90", "90s", "10m", "1h30m" -> seconds (CLI11 transform: the option then parses a number).
const auto duration_arg = CLI::Validator(
    [](std::string& s) -> std::string {
      const auto d = tfg::campaign::parse_duration(s);
      if (!d) return "not a duration (e.g. 90s, 10m, 2h, 1h30m): " + s;
      s = std::to_string(*d);
      return {};
    },
    "DURATION", "duration");

int main(int argc, char** argv) {
  // The compiled configurations' Python worker (workers inherit the choice: they run this main).
  if (auto& cs = tfg::torch::compiled_defaults(); cs.python.empty()) {
    cs.python = default_python();
    const char* script = std::getenv("TFG_COMPILED_WORKER");
    cs.script = script && *script ? script : TFG_SOURCE_COMPILED_WORKER;
  }
  CLI::App app{"flowmut: data-flow mutation testing of deep learning frameworks"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       std::string("flowmut ") + std::string(tfg::version) + " (LibTorch " + TORCH_VERSION + ")");

  profile_args pa;
  auto* profile = app.add_subcommand("profile", "import a model, run it op by op and print its TFG summary");
  profile->add_option("model", pa.model_path, "TorchScript .pt or torch.export .pt2 file")
      ->required()
      ->check(CLI::ExistingFile);
  profile
      ->add_option("--inputs", pa.inputs_path,
                   "profiling inputs (torch.save'd list of argument tuples); default MODEL.inputs.pt")
      ->check(CLI::ExistingFile);
  profile->add_option("--random", pa.random_inputs, "synthesise N random inputs (default 3 with --shape)");
  profile->add_option("--shape", pa.shapes,
                      "shape of each forward argument for random inputs, e.g. f32[1,3,64,64] (repeat per argument)");
  profile->add_option("--json", pa.json_path, "write the TFG with F(e) as JSON");
  profile->add_option("--dot", pa.dot_path, "write the TFG as Graphviz DOT");
  profile->add_option("--device", pa.device, "cpu or cuda")->default_val("cpu")->check(CLI::IsMember({"cpu", "cuda"}));
  profile->add_option("--threads", pa.threads, "intra-op threads (1-256)")->default_val(1)->check(CLI::Range(1, 256));
  profile->add_flag("--no-numbers", pa.no_numbers, "skip numeric summaries (min/max/mean/counts/hash)");
  profile->add_flag("--no-check", pa.no_check, "do not compare op-by-op outputs with module.forward");

  std::string export_in, export_out, export_inputs;
  auto* exp = app.add_subcommand(
      "export", "import a model and write it back: OUTPUT.pt as TorchScript, OUTPUT.pt2 as a torch.export program");
  exp->add_option("model", export_in, "TorchScript .pt or torch.export .pt2 file")
      ->required()
      ->check(CLI::ExistingFile);
  exp->add_option("output", export_out, "output .pt or .pt2 file")->required();
  exp->add_option("--inputs", export_inputs,
                  "forward arguments for a .pt2 output's shapes (default MODEL.inputs.pt, else random)")
      ->check(CLI::ExistingFile);

  auto* ops = app.add_subcommand("ops", "list or check mutation operators (.tfg files)");
  ops->require_subcommand(1);
  std::vector<std::string> op_dirs;
  bool ops_json = false, ops_verbose = false;
  auto* ops_list = ops->add_subcommand("list", "list operators: object, primitive, origin, parameters");
  ops_list->add_option("dirs", op_dirs, "operator folders (default: the bundled operators/)");
  ops_list->add_flag("--json", ops_json, "JSON output");
  auto* ops_check = ops->add_subcommand("check", "run every operator's examples on LibTorch");
  ops_check->add_option("dirs", op_dirs, "operator folders (default: the bundled operators/)");
  ops_check->add_flag("-v,--verbose", ops_verbose, "print every example, not only failures");

  std::string cand_model, cand_inputs;
  bool cand_probe = false;
  auto* cand = app.add_subcommand("candidates", "construct mutation candidates on a model and count them by stage");
  cand->add_option("model", cand_model, "TorchScript .pt file")->required()->check(CLI::ExistingFile);
  cand->add_option("--inputs", cand_inputs, "profiling inputs")->check(CLI::ExistingFile);
  cand->add_option("--ops", op_dirs, "operator folders (default: the bundled operators/)");
  cand->add_flag("--probe", cand_probe, "apply every retained candidate and check the mutant's legality");

  legality_args la;
  auto* legality = app.add_subcommand("legality",
                                      "label pre-filter candidates by running them; the constraint system's "
                                      "retention, legal-mutant rate and confusion table, with each group switched off");
  legality->add_option("models", la.models, "seed .pt files and folders of them")->required()->check(CLI::ExistingPath);
  legality->add_option("--sample", la.sample, "pre-filter candidates to draw (stratified by operator)")
      ->default_val(1000)
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000}));
  legality->add_option("--seed", la.seed, "sampling seed")->default_val(1)->check(seed_range);
  legality->add_option("--ops", la.op_dirs, "operator folders (default: the bundled operators/)");
  legality->add_option("-j,--jobs", la.jobs, "candidates labelled at a time")
      ->default_val(1)
      ->check(CLI::Range(1, 256));
  legality->add_option("--timeout", la.timeout_s, "seconds one label may take before it counts as illegal (a hang)")
      ->default_val(60)
      ->check(CLI::Range(1, 86400));
  legality
      ->add_option("--param-draws", la.param_draws,
                   "draws of an operator's sampled parameters before its constraints reject a candidate "
                   "(as candidate construction; 1: a single draw)")
      ->default_val(4)
      ->check(CLI::Range(1, 1024));
  legality->add_option("--json", la.json, "write every labelled candidate and the table as JSON");
  legality->add_flag("-q,--quiet", la.quiet, "no progress line");

  auto* configs = app.add_subcommand("configs", "list the execution configurations and whether this machine has them");

  run_args ra;
  auto* run = app.add_subcommand("run", "run a mutation campaign on a seed model");
  run->add_option("model", ra.model, "seed TorchScript .pt file (not needed with --resume)");
  run->add_option("--rounds", ra.rounds, "mutation rounds after the seed's own round 0")
      ->default_val(250)
      ->check(count_range);
  run->add_option("--out", ra.out, "campaign folder (database, findings, checkpoints)")->required()->check(non_empty);
  run->add_option("--policy", ra.policy,
                  "linucb-op (LinUCB, a model per operator) | linucb (one shared model, the paper's) | ucb1 | random | "
                  "queue | fixed | one-shot")
      ->default_val("linucb-op");
  run->add_option("--reward", ra.reward,
                  "what the policy learns from: behaviour (new operators, input classes, disagreements; decays with "
                  "repetition) | paper (trace novelty)")
      ->default_val("behaviour")
      ->check(CLI::IsMember({"behaviour", "paper"}));
  run->add_option("--features", ra.ablation,
                  "feature ablation: all | coverage-only | impact-only | no-L | no-T | no-M | no-P | no-I")
      ->default_val("all");
  run->add_option("--alpha", ra.alpha, "LinUCB exploration weight (finite, >= 0)")
      ->default_val(1.0)
      ->check(finite_non_negative);
  run->add_option("--ops", ra.op_dirs, "operator folders (default: the bundled operators/)");
  run->add_option("--config", ra.configs, "execution configurations to run (repeat; default: every CPU configuration)");
  run->add_option("--inputs", ra.inputs, "profiling inputs (default MODEL.inputs.pt or 3 random inputs)");
  run->add_option("--shape", ra.shapes,
                  "3 random inputs of this shape instead, e.g. f32[1,3,64,64] (repeat per forward argument)")
      ->excludes("--inputs");
  run->add_option("--seed", ra.seed, "campaign seed (a campaign is deterministic for a seed)")
      ->default_val(1)
      ->check(seed_range);
  run->add_option("--timeout", ra.timeout_s, "per-mutant timeout cap in seconds (the timeout is calibrated below it)")
      ->default_val(60)
      ->check(CLI::Range(1, 86400));
  run->add_option("--reruns", ra.reruns, "reliability reruns of each new finding")
      ->default_val(2)
      ->check(CLI::Range(0, 100));
  run->add_option("--rss-limit-mb", ra.rss_limit_mb, "worker memory limit (default min(8 GiB, RAM/2))")
      ->check(CLI::Range(std::int64_t{64}, std::int64_t{1} << 30));
  run->add_flag("--resume", ra.resume, "continue the campaign in --out");
  run->add_flag("--force", ra.force, "start over in a folder that holds a campaign");
  run->add_flag("-q,--quiet", ra.quiet, "no status line");
  run->add_option("--accept", ra.accept,
                  "which legal mutants become seeds: healthy (no new finding, no new NaN/Inf) | any")
      ->default_val("healthy")
      ->check(CLI::IsMember({"healthy", "any"}));
  run->add_option("--corpus", ra.corpus, "accepted seeds kept to go back to (the original always)")
      ->default_val(8)
      ->check(CLI::Range(2, 1000));
  run->add_option("--return-every", ra.return_every, "every N rounds continue from the next corpus member (0: never)")
      ->default_val(25)
      ->check(count_range);
  run->add_flag("--no-localise", ra.no_localise, "attribute findings to the mutation instead of localising them");
  run->add_option("--reduce-budget", ra.reduce_budget_s,
                  "after the campaign, reduce its findings and write repro.py and issue.md, within S seconds (0: off)")
      ->default_val(300)
      ->check(CLI::Range(0.0, 1e7));
  run->add_option("--time", ra.time_s,
                  "wall-clock budget of the rounds, e.g. 90s, 10m, 2h; then stop as --resume expects (default: none)")
      ->transform(duration_arg);

  fuzz_args fa;
  auto* fuzz =
      app.add_subcommand("fuzz", "run campaigns over many seeds within a time budget, N at a time, one findings index");
  fuzz->add_option("seeds", fa.seeds, "seed .pt files and folders of them (not needed with --resume)");
  fuzz->add_option("--time", fa.time_s, "wall-clock budget, e.g. 10m, 8h (required unless --resume)")
      ->transform(duration_arg);
  fuzz->add_option("--out", fa.out, "job folder (fuzz.json, campaigns/, findings/, findings.jsonl, report.html)")
      ->required()
      ->check(non_empty);
  fuzz->add_option("-j,--jobs", fa.jobs, "campaigns at a time (default: the core count)")->check(CLI::Range(1, 1024));
  fuzz->add_option("--shard", fa.shard, "do part i of N (0-based) of the seeds x campaign seeds, e.g. 0/4")
      ->default_val("0/1");
  fuzz->add_option("--rounds", fa.rounds, "round budget of each campaign (default: the time decides)")
      ->check(count_range);
  fuzz->add_option("--campaigns-per-seed", fa.per_seed, "campaigns per seed, with campaign seeds SEED, SEED+1, ...")
      ->default_val(1)
      ->check(CLI::Range(1, 10000));
  fuzz->add_option("--seed", fa.seed, "first campaign seed")->default_val(1)->check(seed_range);
  fuzz->add_option("--slice", fa.slice_s,
                   "time a campaign runs before the scheduler chooses again (default: budget x jobs / 3 campaigns, 30 "
                   "s to 5 min)")
      ->transform(duration_arg);
  fuzz->add_option("--config", fa.configs, "execution configurations (repeat; default: every CPU configuration)");
  fuzz->add_option("--ops", fa.op_dirs, "operator folders (default: the bundled operators/)");
  fuzz->add_option("--policy", fa.policy,
                   "each campaign's policy: linucb-op | linucb | ucb1 | random | queue | fixed | one-shot")
      ->default_val("linucb-op");
  fuzz->add_option("--timeout", fa.timeout_s, "per-mutant timeout cap in seconds")
      ->default_val(60)
      ->check(CLI::Range(1, 86400));
  fuzz->add_option("--reruns", fa.reruns, "reliability reruns of each new finding")
      ->default_val(2)
      ->check(CLI::Range(0, 100));
  fuzz->add_option("--reduce-budget", fa.reduce_budget_s,
                   "after the job, reduce one reproduced variant of each defect and write repro.py and issue.md, "
                   "within S seconds (0: off)")
      ->default_val(900)
      ->check(CLI::Range(0.0, 1e7));
  fuzz->add_flag("--resume", fa.resume, "continue the job in --out with the time that was left");
  fuzz->add_flag("--force", fa.force, "start over in a folder that holds a job");
  fuzz->add_flag("-q,--quiet", fa.quiet, "no status screen");

  std::vector<std::string> merge_dirs;
  std::string merge_out;
  auto* merge =
      app.add_subcommand("merge", "merge the outputs of fuzz shards into one deduplicated findings set and report");
  merge->add_option("dirs", merge_dirs, "fuzz (or merge) output folders")->required()->check(CLI::ExistingDirectory);
  merge->add_option("--out", merge_out, "output folder")->required()->check(non_empty);

  compare_args ca;
  auto* cmp =
      app.add_subcommand("compare", "run several policies on the same seeds and print a Table-7-like comparison");
  cmp->add_option("models", ca.models, "seed .pt files")->required()->check(CLI::ExistingFile);
  cmp->add_option("--out", ca.out, "folder for the campaigns (OUT/SEED/POLICY)")->required()->check(non_empty);
  cmp->add_option("--policies", ca.policies,
                  "cells to compare: POLICY[/ABLATION][@REWARD], e.g. linucb-op,queue,linucb/no-P,linucb@paper")
      ->delimiter(',')
      ->default_val("linucb-op,linucb,ucb1,random,queue,linucb@paper");
  cmp->add_option("--campaign-seeds", ca.campaign_seeds,
                  "campaigns per seed model and cell (campaign seeds --seed, --seed+1, ...)")
      ->default_val(5)
      ->check(CLI::Range(1, 1000));
  cmp->add_option("--rounds", ca.rounds, "rounds per campaign")->default_val(250)->check(count_range);
  cmp->add_option("--ops", ca.op_dirs, "operator folders");
  cmp->add_option("--config", ca.configs, "execution configurations");
  cmp->add_option("--seed", ca.seed, "first campaign seed")->default_val(1)->check(seed_range);
  cmp->add_option("--timeout", ca.timeout_s, "per-mutant timeout cap in seconds")
      ->default_val(60)
      ->check(CLI::Range(1, 86400));
  cmp->add_flag("--resume", ca.resume, "reuse campaigns that are already there (continue unfinished ones)");

  std::string summary_dir;
  auto* summary = app.add_subcommand("summary", "print a campaign's rounds, verdicts, metric curve and findings");
  summary->add_option("dir", summary_dir, "campaign folder")->required()->check(CLI::ExistingDirectory);

  std::string repro_dir;
  int repro_timeout = 60;
  auto* repro =
      app.add_subcommand("repro", "re-run a finding's mutant in a fresh worker and say whether it reproduces");
  repro->add_option("dir", repro_dir, "finding folder (CAMPAIGN/findings/ID)")
      ->required()
      ->check(CLI::ExistingDirectory);
  repro->add_option("--timeout", repro_timeout, "seconds before the run counts as a hang")
      ->default_val(60)
      ->check(CLI::Range(1, 86400));
  std::int64_t repro_rss_mb = 8192;
  repro->add_option("--rss-limit-mb", repro_rss_mb, "worker memory limit")->default_val(8192);
  std::vector<std::string> repro_ops;
  repro->add_option("--ops", repro_ops, "operator folders (their requirement files give the NaN-propagation rules)");

  std::string reduce_dir;
  int reduce_timeout = 60;
  std::int64_t reduce_rss_mb = 8192;
  std::string reduce_python = default_python();
  bool reduce_no_run = false;
  auto* reduce = app.add_subcommand("reduce", "reduce a finding to its operator's window, write repro.py and issue.md");
  reduce->add_option("dir", reduce_dir, "finding folder (CAMPAIGN/findings/ID)")
      ->required()
      ->check(CLI::ExistingDirectory);
  reduce->add_option("--timeout", reduce_timeout, "seconds per try before it counts as a hang")
      ->default_val(60)
      ->check(CLI::Range(1, 86400));
  reduce->add_option("--rss-limit-mb", reduce_rss_mb, "worker memory limit")->default_val(8192);
  reduce->add_option(
      "--python", reduce_python,
      "the Python with torch that runs repro.py (default $TFG_PYTHON, else the Python of the torch this build uses)");
  reduce->add_flag("--no-run", reduce_no_run, "write repro.py and repro.cpp without running them");
  bool reduce_no_cpp = false;
  reduce->add_flag("--no-cpp-build", reduce_no_cpp,
                   "do not build and run repro.cpp (g++ and libtorch-dev, about a minute)");

  std::string report_dir;
  auto* report =
      app.add_subcommand("report", "write DIR/report.html (summary, plots, findings) and DIR/findings.jsonl");
  report->add_option("dir", report_dir, "campaign folder")->required()->check(CLI::ExistingDirectory);

  std::string worker_dir;
  auto* worker = app.add_subcommand("worker", "(internal) serve execution requests from a supervising campaign");
  worker->add_option("--dir", worker_dir, "folder for the write-ahead record")->required();
  worker->group("");

  // Argument errors exit 2, as the README documents (CLI11's own codes are 100 and up);
  // --help and --version exit 0.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  // Children (a fuzz job's campaign slices, workers, reruns) exec the binary this process runs
  // through /proc/self/exe, not its path: a rebuild that replaces build/tools/flowmut while a job
  // runs neither breaks their exec (a fuzz job's slices exited 127 during a relink) nor mixes two
  // builds in one job.
  const std::string self_exe = std::filesystem::exists("/proc/self/exe")
                                   ? "/proc/self/exe"
                                   : std::filesystem::read_symlink("/proc/self/exe").string();
  try {
    if (*profile) return run_profile(pa);
    if (*exp) return run_export(export_in, export_out, export_inputs);
    if (*ops_list) return run_ops_list(op_dirs, ops_json);
    if (*ops_check) return run_ops_check(op_dirs, ops_verbose);
    if (*cand) return run_candidates(cand_model, cand_inputs, op_dirs, cand_probe);
    if (*configs) return run_configs();
    if (*worker) return run_worker_command(worker_dir);
    if (*summary) return run_summary_command(summary_dir);
    if (*repro) return run_repro_command(repro_dir, self_exe, repro_timeout, repro_rss_mb, repro_ops);
    if (*report) return run_report_command(report_dir);
    if (*reduce)
      return run_reduce_command(reduce_dir, self_exe, reduce_timeout, reduce_rss_mb, reduce_python, !reduce_no_run, 0,
                                !reduce_no_cpp);
    if (*cmp) return run_compare_command(ca, self_exe);
    if (*legality) return run_legality_command(la);
    if (*merge) return run_merge_command(merge_dirs, merge_out);
    if (*fuzz) {
      if (fa.seeds.empty() && !fa.resume) {
        std::cerr << "flowmut fuzz: seed files or folders are required (or --resume)\n";
        return 2;
      }
      for (const auto* o : fuzz->get_options())
        if (o->count() > 0 && !o->get_lnames().empty()) fa.given.insert(o->get_lnames().front());
      return run_fuzz_command(fa, self_exe);
    }
    if (*run) {
      if (ra.model.empty() && !ra.resume) {
        std::cerr << "flowmut run: a seed model is required (or --resume)\n";
        return 2;
      }
      for (const auto* o : run->get_options())
        if (o->count() > 0 && !o->get_lnames().empty()) ra.given.insert(o->get_lnames().front());
      return run_campaign_command(ra, self_exe);
    }
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
