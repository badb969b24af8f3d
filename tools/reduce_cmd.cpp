// flowmut reduce: reduce a finding to its localised operator's window, write the standalone
// reproducer (repro.py), run it in a clean process and write the issue draft (issue.md).
#include "commands.hpp"

#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/report.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/oracle/nan_propagation.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/reduce/reduce.hpp"
#include "tfg/torch/reduce/repro.hpp"
#include "tfg/util/atomic_file.hpp"
#include "tfg/util/text_file.hpp"

#include <ATen/Version.h>

#include <sys/utsname.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace {

using tfg::read_text;

/// Runs `command` in `dir` (a clean process) with output to `log` there, within `timeout_s`;
/// the status is the reproducer's last line (REPRODUCED / NOT REPRODUCED), TIMED OUT or ERROR.
std::string run_reproducer(const fs::path& dir, const std::string& command, const std::string& log, int timeout_s) {
  const std::string cmd =
      "cd '" + dir.string() + "' && timeout " + std::to_string(timeout_s) + " " + command + " > " + log + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::string last;
  std::istringstream lines(read_text(dir / log));
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) last = l;
  if (last == "REPRODUCED" || last == "NOT REPRODUCED") return last;
  if (WIFEXITED(rc) && WEXITSTATUS(rc) == 124) return "TIMED OUT";
  return "ERROR";
}

/// The Inductor config flags the flag search tries, each at the value that turns a part of
/// Inductor off (or, for emulate_precision_casts, makes it round as eager does). Learnt from
/// torch's compiler bisector (its ConfigChange entries) and Inductor's config fuzzer.
const std::vector<std::pair<std::string, nlohmann::json>>& triage_flags() {
  static const std::vector<std::pair<std::string, nlohmann::json>> flags = {{"emulate_precision_casts", true},
                                                                            {"layout_optimization", false},
                                                                            {"comprehensive_padding", false},
                                                                            {"pattern_matcher", false},
                                                                            {"epilogue_fusion", false},
                                                                            {"split_reductions", false},
                                                                            {"reorder_for_locality", false},
                                                                            {"max_fusion_size", 1},
                                                                            {"joint_graph_constant_folding", false},
                                                                            {"loop_ordering_after_fusion", false},
                                                                            {"cpp.simdlen", 1},
                                                                            {"cpp.enable_tiling_heuristics", false},
                                                                            {"cpp.enable_loop_tail_vec", false}};
  return flags;
}

/// "epilogue_fusion=False, cpp.simdlen=1" (Python spellings).
std::string describe_flags(const nlohmann::json& set) {
  std::string s;
  for (const auto& [k, v] : set.items())
    s += (s.empty() ? "" : ", ") + k + "=" + (v.is_boolean() ? (v.get<bool>() ? "True" : "False") : v.dump());
  return s;
}

/// Which part of Inductor breaks a finding whose repro.py reproduces it (docs/reproducers.md):
///  - torch's compiler bisector (`python -m torch._inductor.compiler_bisector run`) over
///    `repro.py --bisect`: the backend (eager = Dynamo, aot_eager, aot_eager_decomp_partition =
///    Inductor's decompositions, inductor), the subsystem (pre/post-grad passes, lowerings, a
///    config change, ...), the n-th application and what it was;
///  - the smallest set of Inductor config flags (of triage_flags()) that makes repro.py say NOT
///    REPRODUCED: every single flag that does, else all of them at once, reduced one flag at a time.
/// Every run is a fresh process with its own Inductor cache folder; the deadline bounds it all.
/// ONNX Runtime's graph optimisers the triage disables one at a time (names as ORT registers
/// them: its level 1 rewrite rules and level 2/3 fusions and layout transformers; a name this
/// ONNX Runtime does not know is ignored by it, and so cannot flip anything).
const std::vector<std::string>& ort_optimisers() {
  static const std::vector<std::string> names = {"ConstantFolding",      "CommonSubexpressionElimination",
                                                 "ConstantSharing",      "ConvActivationFusion",
                                                 "ConvAddFusion",        "ConvBNFusion",
                                                 "ConvMulFusion",        "ConvAddActivationFusion",
                                                 "GemmActivationFusion", "GemmTransposeFusion",
                                                 "MatMulAddFusion",      "MatmulTransposeFusion",
                                                 "MatMulScaleFusion",    "GeluFusion",
                                                 "BiasGeluFusion",       "FastGeluFusion",
                                                 "LayerNormFusion",      "SimplifiedLayerNormFusion",
                                                 "SkipLayerNormFusion",  "AttentionFusion",
                                                 "BiasSoftmaxFusion",    "NchwcTransformer",
                                                 "NhwcTransformer",      "TransposeOptimizer",
                                                 "ReshapeFusion",        "DivMulFusion",
                                                 "NoopElimination",      "CastElimination",
                                                 "EliminateIdentity",    "EliminateSlice",
                                                 "FuseReluClip",         "ExpandElimination"};
  return names;
}

/// A triage's deadline and its runs of repro.py under a changed environment.
struct triage_runner {
  fs::path dir;
  std::string python;
  int run_timeout_s;
  std::chrono::steady_clock::time_point deadline;

  [[nodiscard]] int left_s() const {
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::seconds>(deadline - std::chrono::steady_clock::now()).count());
  }
  /// repro.py run with `env` (NAME=value words for env(1)), its output in `log`: true when it
  /// says REPRODUCED, false when NOT REPRODUCED; nothing when it says neither (an error, a
  /// timeout) or the budget is spent.
  [[nodiscard]] std::optional<bool> reproduces(const std::string& env, const std::string& log) const {
    if (left_s() < 5) return std::nullopt;
    const auto st =
        run_reproducer(dir, "env " + env + " '" + python + "' repro.py", log, std::min(left_s(), run_timeout_s));
    if (st == "REPRODUCED") return true;
    if (st == "NOT REPRODUCED") return false;
    return std::nullopt;
  }
};

/// For an onnxruntime finding that reproduces on plain packages: the lowest ONNX Runtime graph
/// optimisation level that shows it, and the optimisers whose disabling alone makes it go away
/// (repro.py reads TFG_ORT_LEVEL and TFG_ORT_DISABLED).
nlohmann::json onnxruntime_triage(const fs::path& dir, const std::string& python, int run_timeout_s,
                                  std::chrono::steady_clock::time_point deadline) {
  nlohmann::json out = {{"complete", false}};
  const triage_runner run{dir, python, run_timeout_s, deadline};
  // Every setting in one process on one export (`repro.py --ort-triage`): the levels, then
  // each optimiser disabled alone at the top level. One process per setting paid torch's
  // import and the export 36 times (3.5 minutes for a two-operator window).
  const std::vector<std::string> levels = {"disable", "basic", "extended", "all"};
  std::string settings;
  for (const auto& l : levels) settings += l + ";";
  for (const auto& name : ort_optimisers()) settings += "all:" + name + ";";
  std::printf("onnxruntime triage:");
  std::fflush(stdout);
  if (run.left_s() < 10) return out;
  (void)run_reproducer(dir, "'" + python + "' repro.py --ort-triage '" + settings + "'", "triage_ort.log",
                       run.left_s());
  std::map<std::string, bool> shown;
  {
    std::istringstream lines(read_text(dir / "triage_ort.log"));
    for (std::string l; std::getline(lines, l);) {
      if (l.rfind("TRIAGE ", 0) != 0) continue;
      const auto sp = l.find(' ', 7);
      if (sp == std::string::npos) continue;
      const auto verdict = l.substr(sp + 1);
      if (verdict == "REPRODUCED" || verdict == "NOT REPRODUCED") shown[l.substr(7, sp - 7)] = verdict == "REPRODUCED";
    }
  }
  auto shows = [&](const std::string& setting) -> std::optional<bool> {
    const auto it = shown.find(setting);
    if (it == shown.end()) return std::nullopt;
    return it->second;
  };
  std::string level;
  for (const auto& l : levels) {
    const auto r = shows(l);
    if (!r) return out;
    if (*r) {
      level = l;
      break;
    }
  }
  out["level"] = level.empty() ? nlohmann::json(nullptr) : nlohmann::json(level);
  std::printf(" level %s;", level.empty() ? "none" : level.c_str());
  nlohmann::json flipping = nlohmann::json::array();
  bool finished = true;
  if (!level.empty() && level != "disable") {
    for (const auto& name : ort_optimisers()) {
      const auto r = shows("all:" + name);
      if (!r) {
        finished = false;
        break;
      }
      if (!*r) flipping.push_back(name);
    }
  }
  out["disabling_flips"] = flipping;
  out["optimisers_tried"] = ort_optimisers().size();
  out["complete"] = finished;
  std::string summary;
  if (level.empty())
    summary = "Not shown at any optimisation level when repro.py sets it (disable, basic, extended, all).";
  else if (level == "disable")
    summary = "Shown with ONNX Runtime's graph optimisations off (TFG_ORT_LEVEL=disable): not an optimiser's doing.";
  else {
    summary = "First shown at graph optimisation level `" + level + "` (not at the level below). ";
    if (flipping.empty())
      summary += "Disabling any one of the " + std::to_string(ort_optimisers().size()) +
                 " optimisers tried does not make it go away";
    else {
      std::string names;
      for (const auto& f : flipping)
        names += (names.empty() ? "" : ", ") + std::string("`") + f.get<std::string>() + "`";
      summary += "Disabling " + names + " alone makes it go away (TFG_ORT_DISABLED=" + flipping[0].get<std::string>() +
                 " python3 repro.py)";
    }
    summary += finished ? "." : " (the search ran out of budget).";
  }
  out["summary"] = summary;
  std::printf(" %s\n", summary.c_str());
  return out;
}

nlohmann::json inductor_triage(const fs::path& dir, const std::string& python, const std::string& config,
                               int run_timeout_s, std::chrono::steady_clock::time_point deadline) {
  nlohmann::json out = {{"complete", false}};
  const auto cache = dir / "triage_cache";
  const triage_runner run{dir, python, run_timeout_s, deadline};
  const auto left_s = [&] { return run.left_s(); };
  const std::string env = "TORCHINDUCTOR_CACHE_DIR='" + cache.string() + "' ";
  std::printf("inductor triage:");
  std::fflush(stdout);
  // 1. torch's bisector.
  if (left_s() > 10) {
    // Its status line is not repro.py's: the log is read below.
    (void)run_reproducer(
        dir,
        "env " + env + "'" + python + "' -m torch._inductor.compiler_bisector run '" + python + "' repro.py --bisect",
        "inductor_bisect.log", left_s());
    std::string line;
    std::istringstream lines(read_text(dir / "inductor_bisect.log"));
    for (std::string l; std::getline(lines, l);)
      if (l.rfind("Bisection complete:", 0) == 0) line = l.substr(std::string("Bisection complete: ").size());
    nlohmann::json b = {{"result", line.empty() ? std::string("not finished (inductor_bisect.log)") : line}};
    auto field = [&](const char* key) -> std::string {
      const std::string k = std::string(key) + "=";
      const auto at = line.find(k);
      if (at == std::string::npos) return "";
      auto v = line.substr(at + k.size());
      if (!v.empty() && (v.front() == '\'' || v.front() == '"')) {  // Python's repr quotes with either
        const auto end = v.find(v.front(), 1);
        return v.substr(1, end == std::string::npos ? std::string::npos : end - 1);
      }
      return v.substr(0, v.find_first_of(",)"));
    };
    for (const char* k : {"backend", "subsystem", "bisect_number", "debug_info"})
      if (const auto v = field(k); !v.empty() && v != "None") b[k] = v;
    out["bisect"] = b;
    std::printf(" bisector: %s;", b["result"].get<std::string>().c_str());
    std::fflush(stdout);
  }
  // 2. The smallest flag set that flips it.
  // Nothing: the flag does not apply here (an error, a timeout).
  auto flips = [&](const nlohmann::json& set) -> std::optional<bool> {
    const auto r = run.reproduces(env + "TFG_INDUCTOR_FLAGS='" + set.dump() + "'", "triage_flags.log");
    if (!r) return std::nullopt;
    return !*r;
  };
  auto flags = triage_flags();
  if (config == "inductor_freezing") flags.insert(flags.begin(), {"freezing", false});
  nlohmann::json singles = nlohmann::json::array();
  std::size_t tried = 0;
  bool finished = true;
  for (const auto& [k, v] : flags) {
    const auto r = flips(nlohmann::json{{k, v}});
    if (!r && left_s() < 5) {
      finished = false;
      break;
    }
    ++tried;
    if (r && *r) singles.push_back(nlohmann::json{{k, v}});
  }
  nlohmann::json smallest = nullptr;
  if (!singles.empty()) {
    smallest = singles.front();
  } else if (finished) {
    nlohmann::json all = nlohmann::json::object();
    for (const auto& [k, v] : flags) all[k] = v;
    const auto r = flips(all);
    ++tried;
    if (r && *r) {
      for (const auto& [k, v] : flags) {  // one flag at a time: keep it out where the rest still flip it
        auto fewer = all;
        fewer.erase(k);
        const auto still = flips(fewer);
        ++tried;
        if (!still) {
          finished = false;
          break;
        }
        if (*still) all = fewer;
      }
      smallest = all;
    } else if (!r) {
      finished = false;
    }
  }
  out["flags_tried"] = tried;
  out["flags_each_flipping"] = singles;
  out["flags_smallest"] = smallest;
  out["complete"] = finished;
  std::printf(
      " flags: %s%s\n",
      smallest.is_null() ? "no set of the listed flags flips it" : ("flipped by " + describe_flags(smallest)).c_str(),
      finished ? "" : " (budget spent before the search ended)");
  std::error_code ec;
  fs::remove_all(cache, ec);
  fs::remove(dir / "triage_flags.log", ec);
  return out;
}

std::string machine_versions() {
  std::ostringstream s;
  s << "LibTorch " << TORCH_VERSION;
  utsname u{};
  if (::uname(&u) == 0) s << ", " << u.sysname << " " << u.release << " " << u.machine;
  s << ", " << std::thread::hardware_concurrency() << " hardware threads";
#if defined(__VERSION__)
  s << ", built with GCC " << __VERSION__;
#endif
  return s.str();
}

/// Builds repro.cpp in `dir` with the command in its header and runs it (a clean process);
/// the status is its last line, or why it did not build.
std::string run_cpp_repro(const fs::path& dir, int timeout_s, std::string& note) {
  const std::string build = "cd '" + dir.string() +
                            "' && g++ -std=c++17 -O1 repro.cpp -o repro -I/usr/include/torch/csrc/api/include -ltorch "
                            "-ltorch_cpu -lc10 > repro_cpp_build.log 2>&1";
  if (std::system(build.c_str()) != 0) {
    note = "repro.cpp did not build (repro_cpp_build.log)";
    return "ERROR";
  }
  return run_reproducer(dir, "./repro", "repro_cpp.log", timeout_s);
}

/// The part of at::show_config() a framework developer asks for first (BLAS, oneDNN, ISA).
std::string build_config() {
  std::istringstream lines(at::show_config());
  std::string out;
  for (std::string l; std::getline(lines, l);) {
    const auto t = l.find_first_not_of(" -");
    if (t == std::string::npos) continue;
    const auto x = l.substr(t);
    if (x.rfind("Intel(R) oneAPI", 0) == 0 || x.rfind("Intel(R) MKL-DNN", 0) == 0 || x.rfind("OpenMP", 0) == 0 ||
        x.rfind("LAPACK", 0) == 0 || x.rfind("CPU capability", 0) == 0) {
      out += "    " + x + "\n";
    } else if (x.rfind("Build settings: ", 0) == 0) {
      // Of the settings, those that decide which kernels run.
      std::istringstream items(x.substr(16));
      std::string kept;
      for (std::string item; std::getline(items, item, ',');) {
        const auto k = item.find_first_not_of(' ');
        if (k == std::string::npos) continue;
        item = item.substr(k);
        for (const char* key : {"BLAS_INFO=", "LAPACK_INFO=", "USE_MKLDNN=", "USE_OPENMP=", "USE_CUDA=", "USE_CUDNN=",
                                "PERF_WITH_AVX512=", "BUILD_TYPE="})
          if (item.rfind(key, 0) == 0) kept += (kept.empty() ? "" : ", ") + item;
      }
      out += "    Build settings: " + kept + "\n";
    }
  }
  return out;
}

void write_issue(const fs::path& dir, const nlohmann::json& meta, const tfg::torch::reduce_outcome& r,
                 const std::string& repro_status, const std::string& repro_note, const std::string& cpp_status) {
  const auto& loc = meta.contains("localisation") ? meta["localisation"] : nlohmann::json::object();
  const std::string op = meta.value("culprit_op", "?");
  const std::string a = meta.value("config_a", "?"), b = meta.value("config_b", "?");
  const std::string kind = meta.value("kind", "?");
  std::ostringstream md;
  if (repro_status != "REPRODUCED")
    md << "> **Not ready to file.** The standalone reproducer did not reproduce under plain PyTorch (" << repro_status
       << "): the divergence needs something of flowmut's own (a tool defect or an injected fault), or the "
       << "reproducer misses a configuration detail. Check with `flowmut repro` before reporting it.\n\n";
  md << "## 🐛 Describe the bug\n\n";
  md << "`" << op << "` gives "
     << (kind == "export_failure"             ? "an export error"
         : kind == "exception"                ? "an error"
         : kind == "nan_inf"                  ? "NaN/Inf"
         : kind == "crash" || kind == "abort" ? "a crash"
                                              : "different values")
     << " under **" << b << "** where **" << a << "** (the reference) runs"
     << (kind == "exception" || kind == "export_failure" || kind == "crash" || kind == "abort" ? ""
                                                                                               : " with other values")
     << ". Found by flowmut (data-flow mutation of a real model, finding `" << meta.value("id", "?")
     << "`): " << meta.value("title", "") << ".";
  if (r.reduced)
    md << " The graph below is the finding's mutant reduced to the operator's window (" << r.reduced_nodes << " of "
       << r.mutant_nodes << " operators, depth " << r.depth << "), its inputs recorded on the mutant (" << r.inputs_kept
       << " of the campaign's " << r.inputs_total << " inputs).";
  md << "\n\nInput state at the operator: `" << loc.value("inputs", meta.value("inputs", std::string("?"))) << "`";
  if (loc.contains("input_states"))
    for (const auto& s : loc["input_states"]) md << "\n- `" << s.get<std::string>() << "`";
  md << "\n\n### Minimal reproduction\n\n";
  md << "`repro.py` (plain PyTorch, imports torch only; inputs and constants in `repro_data.pt` beside it): "
     << "run `python3 repro.py`. Re-run in a clean process before this draft was written: **" << repro_status << "**"
     << (repro_note.empty() ? "" : " (" + repro_note + ")") << ". The same in plain LibTorch: `repro.cpp` (build "
     << "command in its first lines): **" << cpp_status << "**.\n\n";
  const auto py = read_text(tfg::campaign::finding_layout(dir).repro_py());
  const auto cls = py.find("class Repro(");
  auto drv = py.find("\nRepro64 = Repro");
  if (drv == std::string::npos) drv = py.find("\ndef clone(");
  if (cls != std::string::npos && drv != std::string::npos)
    md << "```python\n" << py.substr(cls, drv - cls) << "```\n\n";
  md << "### Expected vs actual\n\n";
  md << "Expected: `" << b << "` computes what `" << a << "` computes, within flowmut's tolerance (f32: rtol 1e-4, "
     << "atol 1e-5, plus 64 ulps of the output's RMS; a configuration is wrong only where it is further from "
     << "the float64 baseline than the reference is, by a factor of 4; docs/oracle.md).\n\nActual (flowmut's "
     << "judgement): " << meta.value("message", std::string()) << "\n\n";
  const auto log = read_text(tfg::campaign::finding_layout(dir).repro_log());
  if (!log.empty()) md << "Output of `python3 repro.py`:\n\n```\n" << log << "```\n\n";
  md << "### Configurations\n\n| configuration | role |\n|---|---|\n| `" << a << "` | reference |\n| `" << b
     << "` | diverges |\n";
  if (meta.contains("configs"))
    for (const auto& c : meta["configs"])
      if (c != a && c != b) md << "| `" << c.get<std::string>() << "` | ran in the campaign |\n";
  if (tfg::torch::is_onnx_config(b)) {
    // Which side breaks decides where it is filed: the exporter is PyTorch's (torch.onnx), the
    // runtime is ONNX Runtime's (its bug template asks for the model, the session options, the
    // execution provider and the versions).
    if (kind == "export_failure")
      md << "\n### Component\n\nPyTorch's ONNX exporter (`torch.onnx.export(..., dynamo=True)`, module: onnx): it "
            "fails "
         << "on a program that `torch.export` produced and eager runs. File at pytorch/pytorch with the `module: onnx` "
         << "label; repro.py exports `Repro` exactly as flowmut does.\n";
    else
      md << "\n### Component\n\nONNX Runtime (CPU execution provider, graph optimisation level "
         << (b == "onnxruntime_noopt" ? "ORT_DISABLE_ALL" : "ORT_ENABLE_ALL, the default") << "), running the model "
         << "`torch.onnx.export` made from `Repro`. File at microsoft/onnxruntime (bug report: the model comes from "
         << "repro.py, which saves it in a temporary folder; `TFG_ORT_LEVEL` and `TFG_ORT_DISABLED` change the "
         << "session's optimisation level and disabled optimisers).\n";
    if (meta.contains("reduction") && meta["reduction"].contains("onnxruntime")) {
      const auto& t = meta["reduction"]["onnxruntime"];
      md << "\n### Which ONNX Runtime optimisation\n\n" << t.value("summary", std::string()) << "\n";
    }
    const auto cfg = dir / "onnx_versions.txt";
    const std::string cmd =
        "'" + default_python() +
        "' -c 'import torch, onnx, onnxruntime, onnxscript; print(\"torch\", torch.__version__); "
        "print(\"onnx\", onnx.__version__); print(\"onnxruntime\", onnxruntime.__version__, onnxruntime.get_device()); "
        "print(\"onnxscript\", onnxscript.__version__)' > '" +
        cfg.string() + "' 2>/dev/null";
    if (std::system(cmd.c_str()) == 0)
      md << "\n### Versions of the Python packages\n\n```\n" << read_text(cfg) << "```\n";
  } else if (tfg::torch::is_compiled_config(b)) {
    // PyTorch's torch.compile bug template (pt2-bug-report): the backend that breaks, the
    // backend ladder, and the versions from torch.__config__.show() of the Python that ran repro.py.
    const auto backend = tfg::campaign::backend_of(meta.value("message", std::string()));
    md << "\n### Backend\n\n"
       << (backend.empty() ? std::string("not attributed") : backend) << "\n\nLadder (PyTorch's triage): eager (`" << a
       << "`) is the reference; `aot_eager` is Dynamo + AOTAutograd "
       << "without Inductor; `" << b << "` diverges. repro.py sets `torch._inductor.config.fallback_random = True` and "
       << "compiles `Repro` with the options of `" << b << "`.\n";
    if (meta.contains("reduction") && meta["reduction"].contains("inductor")) {
      const auto& t = meta["reduction"]["inductor"];
      md << "\n### Which part of Inductor\n\n";
      if (t.contains("bisect"))
        md << "torch's compiler bisector (`python -m torch._inductor.compiler_bisector run python repro.py --bisect`): "
              "`"
           << t["bisect"].value("result", std::string()) << "`\n\n";
      if (t.contains("flags_smallest") && !t["flags_smallest"].is_null()) {
        md << "Inductor config flags that make it go away (smallest set found): `"
           << describe_flags(t["flags_smallest"]) << "`";
        if (t["flags_each_flipping"].size() > 1) {
          std::string each;
          for (const auto& f : t["flags_each_flipping"]) each += (each.empty() ? "" : "; ") + describe_flags(f);
          md << " (each of these alone also does: `" << each << "`)";
        }
      } else {
        md << "No set of the " << t.value("flags_tried", 0) << " Inductor config flags tried makes it go away";
      }
      md << (t.value("complete", false) ? "." : " (the search ran out of budget).")
         << " To try a set: `TFG_INDUCTOR_FLAGS='{\"epilogue_fusion\": false}' python3 repro.py`.\n";
    }
    const auto cfg = dir / "torch_config.txt";
    const std::string cmd = "'" + default_python() +
                            "' -c 'import torch; print(torch.__version__); print(torch.__config__.show())' > '" +
                            cfg.string() + "' 2>/dev/null";
    if (std::system(cmd.c_str()) == 0) md << "\n### torch.__config__.show()\n\n```\n" << read_text(cfg) << "```\n";
  }
  md << "\n### Versions\n\n```\n" << machine_versions() << "\n" << build_config() << "```\n";
  tfg::write_file_atomic(tfg::campaign::finding_layout(dir).issue(), md.str());
}

}  // namespace

std::string default_python() {
  if (const char* p = std::getenv("TFG_PYTHON"); p && *p) return p;
#ifdef TFG_DEFAULT_PYTHON
  if (fs::exists(TFG_DEFAULT_PYTHON)) return TFG_DEFAULT_PYTHON;  // the Python of this build's torch
#endif
  return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

int run_reduce_command(const std::string& dir_s, const std::string& self_exe, int timeout_s, std::int64_t rss_limit_mb,
                       const std::string& python, bool run_repro, double budget_s, bool build_cpp) {
  const fs::path dir(dir_s);
  // One deadline for the reduction and the Inductor triage after it.
  const auto deadline = budget_s > 0 ? std::optional(std::chrono::steady_clock::now() +
                                                     std::chrono::milliseconds(static_cast<long long>(budget_s * 1000)))
                                     : std::nullopt;
  const auto folder = tfg::campaign::finding_layout::of<tfg::torch::backend>(dir);
  std::ifstream in(folder.meta());
  auto meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded()) {
    std::cerr << "flowmut reduce: " << dir_s << " is not a finding folder (meta.json, " << folder.mutant_name() << ", "
              << folder.inputs_name() << ")\n";
    return 2;
  }
  std::printf("finding %s: %s\n", meta.value("id", "?").c_str(), meta.value("title", "?").c_str());
  const auto r = tfg::torch::reduce_finding(
      dir, self_exe, std::chrono::seconds(timeout_s), rss_limit_mb << 20, {},
      [](const tfg::torch::reduce_step& s) {
        std::printf("  depth %3zu: %4zu operator%s: %s%s%s\n", s.depth, s.nodes, s.nodes == 1 ? "" : "s",
                    s.reproduced ? "reproduces" : "does not reproduce", s.note.empty() ? "" : " - ",
                    s.note.substr(0, 200).c_str());
        std::fflush(stdout);
      },
      deadline);
  if (!r.error.empty()) {
    std::cerr << "flowmut reduce: " << r.error << "\n";
    return 2;
  }
  if (r.reduced)
    std::printf("reduced: %zu of %zu operators (depth %zu), %zu of %zu inputs, in %s\n", r.reduced_nodes,
                r.mutant_nodes, r.depth, r.inputs_kept, r.inputs_total, folder.reduced_dir().c_str());
  else if (r.budget_spent)
    std::printf(
        "not reduced: the budget was spent before a window reproduced (run `flowmut reduce %s` to go on); "
        "the reproducer uses the whole mutant\n",
        dir_s.c_str());
  else
    std::printf(
        "not reduced: no window of the operator reproduces the finding; the reproducer uses the whole mutant\n");
  // The reproducer: from the reduced graph, else from the mutant itself.
  std::string status = "NOT WRITTEN", note, cpp_status = "NOT WRITTEN", cpp_note;
  try {
    tfg::torch::backend b;
    const auto src = r.reduced ? folder.reduced() : folder;
    const auto m = b.load(src.mutant());
    const auto inputs = tfg::torch::load_inputs(src.inputs().string(), m);
    tfg::torch::repro_spec spec;
    spec.id = meta.value("id", "");
    spec.title = meta.value("title", "");
    spec.kind = meta.value("kind", "");
    spec.config_a = meta.value("config_a", "");
    spec.config_b = meta.value("config_b", "");
    spec.message = meta.value("message", "");
    spec.versions = machine_versions();
    tfg::torch::write_python_repro(m, inputs, spec, dir);
    // torch.compile and its relatives run from Python only: no LibTorch reproducer for them.
    const bool compiled =
        tfg::torch::is_compiled_config(spec.config_b) || tfg::torch::is_compiled_config(spec.config_a);
    if (!compiled) tfg::torch::write_cpp_repro(m, spec, dir);
    status = run_repro ? run_reproducer(dir, "'" + python + "' " + std::string(folder.repro_py_name()),
                                        std::string(folder.repro_log_name()), std::max(timeout_s * 4, 120))
                       : "NOT RUN";
    if (compiled) {
      cpp_status = "NOT APPLICABLE";
      cpp_note = spec.config_b + (tfg::torch::is_onnx_config(spec.config_b)
                                      ? " runs from Python (torch.onnx.export, onnxruntime); repro.py is the reproducer"
                                      : " compiles from Python (torch.compile); repro.py is the reproducer");
    } else {
      cpp_status = run_repro && build_cpp ? run_cpp_repro(dir, std::max(timeout_s * 4, 120), cpp_note) : "NOT RUN";
    }
  } catch (const std::exception& e) {
    note = tfg::torch::clean_error(e.what());
  }
  std::printf("repro.py: %s%s%s\n", status.c_str(), note.empty() ? "" : " - ", note.c_str());
  std::printf("repro.cpp: %s%s%s\n", cpp_status.c_str(), cpp_note.empty() ? "" : " - ", cpp_note.c_str());
  // An Inductor finding that reproduces on plain PyTorch: which part of Inductor, which flags.
  nlohmann::json triage;
  const std::string kind = meta.value("kind", "");
  const std::string config_b = meta.value("config_b", "");
  if (status == "REPRODUCED" && tfg::torch::is_inductor_config(config_b) &&
      (kind == "numeric" || kind == "nan_inf" || kind == "exception" || kind == "state")) {
    triage = inductor_triage(dir, python, config_b, std::max(timeout_s * 4, 120),
                             deadline.value_or(std::chrono::steady_clock::now() + std::chrono::minutes(15)));
  }
  meta["reduction"] = {{"reduced", r.reduced},
                       {"mutant_nodes", r.mutant_nodes},
                       {"reduced_nodes", r.reduced_nodes},
                       {"depth", r.depth},
                       {"tries", r.steps.size()},
                       {"repro_py", status},
                       {"repro_note", note},
                       {"repro_cpp", cpp_status},
                       {"repro_cpp_note", cpp_note},
                       {"inputs_total", r.inputs_total},
                       {"inputs_kept", r.inputs_kept}};
  if (!triage.is_null()) meta["reduction"]["inductor"] = triage;
  if (status == "REPRODUCED" && config_b == "onnxruntime" &&
      (kind == "numeric" || kind == "nan_inf" || kind == "exception" || kind == "state"))
    meta["reduction"]["onnxruntime"] =
        onnxruntime_triage(dir, python, std::max(timeout_s * 4, 120),
                           deadline.value_or(std::chrono::steady_clock::now() + std::chrono::minutes(15)));
  tfg::write_file_atomic(folder.meta(), meta.dump(1));
  write_issue(dir, meta, r, status, note, cpp_status);
  std::printf("issue draft: %s\n", folder.issue().c_str());
  return status == "REPRODUCED" ? 0 : 1;
}

std::vector<tfg::campaign::known_issue> known_issues() {
  const char* env = std::getenv("TFG_KNOWN_ISSUES");
  const fs::path dir = env && *env ? fs::path(env) : fs::path(TFG_SOURCE_KNOWN_ISSUES);
  return tfg::campaign::read_known_issue_dir(dir);
}

int run_report_command(const std::string& dir) {
  try {
    const auto r = tfg::campaign::write_report(dir, known_issues());
    // Flaky ones (no rerun showed them again) are listed in the report, not counted as findings.
    std::printf("report: %s (%zu rounds, %zu findings%s, %zu plots)\nfindings: %s\nsarif: %s\n",
                fs::absolute(r.html).c_str(), r.rounds, r.findings - r.flaky,
                r.flaky ? (" and " + std::to_string(r.flaky) + " flaky").c_str() : "", r.plots,
                fs::absolute(r.jsonl).c_str(), fs::absolute(r.sarif).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "flowmut report: " << e.what() << "\n";
    return 2;
  }
}
