#pragma once
// The definitions of compiled.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/execute/compiled.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL const std::vector<std::string>& compiled_config_names() {
  static const std::vector<std::string> names{
      "aot_eager",         "inductor", "inductor_freezing", "inductor_dynamic", "export_decomposed",
      "inductor_autograd", "aoti",     "onnxruntime",       "onnxruntime_noopt"};
  return names;
}

}  // namespace tfg::torch

namespace tfg::torch::compiled_detail {

[[nodiscard]] TFG_TORCH_DECL python_process& process() {
  static python_process p;
  if (p.owner != ::getpid()) {
    (void)p.proc.release();  // the parent's: neither ours to stop nor to talk to (its fds are close-on-exec)
    p = {};
    p.owner = ::getpid();
  }
  return p;
}

[[nodiscard]] TFG_TORCH_DECL std::filesystem::path work_dir() {
  auto& p = process();
  if (p.dir.empty()) {
    static std::atomic<int> counter{0};
    const auto& root = compiled_defaults().work_root;
    p.dir = root.empty() ? std::filesystem::temp_directory_path() /
                               ("tfg-compiled-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))
                         : root / ("compiled-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(p.dir);
  }
  return p.dir;
}

}  // namespace tfg::torch::compiled_detail

namespace tfg::torch {

TFG_TORCH_DECL void sweep_dead_work_dirs(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> swept{dir};
  if (dir.parent_path().filename() == "workers")
    for (const auto& w : fs::directory_iterator(dir.parent_path(), ec))
      if (w.is_directory(ec) && w.path() != dir) swept.push_back(w.path());
  for (const auto& folder : swept) {
    std::vector<fs::path> dead;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      const auto name = e.path().filename().string();
      if (name.rfind("compiled-", 0) != 0) continue;
      const auto pid = std::atoll(name.c_str() + 9);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) dead.push_back(e.path());
    }
    for (const auto& d : dead) fs::remove_all(d, ec);
  }
}

}  // namespace tfg::torch

namespace tfg::torch::compiled_detail {

[[noreturn]] TFG_TORCH_DECL void die_like(const campaign::exchange_result& ex) {
  if (ex.kind == campaign::outcome::signaled || ex.kind == campaign::outcome::out_of_memory) {
    const int sig = ex.kind == campaign::outcome::signaled && ex.signal > 0 ? ex.signal : SIGKILL;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(ex.exit_code != 0 ? ex.exit_code : 1);
}

[[nodiscard]] TFG_TORCH_DECL std::string death_message(const campaign::exchange_result& ex) {
  using campaign::outcome;
  switch (ex.kind) {
    case outcome::signaled:
      return "the Python worker died of signal " + std::to_string(ex.signal) + " (" + ::strsignal(ex.signal) + ")";
    case outcome::exited: return "the Python worker exited with status " + std::to_string(ex.exit_code);
    case outcome::timeout: return "the Python worker did not reply within the timeout";
    case outcome::out_of_memory: return "the Python worker exceeded its memory limit";
    case outcome::spawn_failed: return "the Python worker could not be started";
    case outcome::reply: break;
  }
  return "the Python worker failed";
}

[[nodiscard]] TFG_TORCH_DECL tfg::expected<nlohmann::json, std::string> exchange(const nlohmann::json& request) {
  auto& p = process();
  const auto python = python_path(), script = script_path();
  if (!p.proc || !p.proc->running()) {
    campaign::spawn_options o;
    o.argv = {python, "-u", script};
    o.env_extra = {"TORCHINDUCTOR_COMPILE_THREADS=1", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"};
    o.log_path = work_dir() / "python.log";
    const auto log = o.log_path;
    auto w = campaign::worker::spawn(std::move(o));
    if (!w) return tfg::unexpected("cannot start the Python worker (" + python + " " + script + "): " + w.error());
    std::error_code ec;
    std::filesystem::remove(log, ec);  // read through the worker's descriptor; nothing stays on disk
    p.proc = std::make_unique<campaign::worker>(std::move(*w));
    p.torch_version.clear();
  }
  const auto ex = p.proc->exchange(request.dump(), compiled_defaults().timeout);
  forward_log(ex.log);
  if (ex.kind != campaign::outcome::reply) {
    p.proc.reset();
    if (compiled_defaults().propagate_deaths && ex.kind != campaign::outcome::spawn_failed) {
      std::error_code ec;
      std::filesystem::remove_all(p.dir, ec);
      die_like(ex);
    }
    return tfg::unexpected(death_message(ex));
  }
  auto j = nlohmann::json::parse(ex.reply, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return tfg::unexpected(std::string("unreadable reply from the Python worker"));
  return j;
}

[[nodiscard]] TFG_TORCH_DECL const std::string& unavailable_reason() {
  static const std::string why = []() -> std::string {
#if !TFG_HAS_PT2
    return "needs the PyTorch 2.x build (this LibTorch is " + std::string(TORCH_VERSION) +
           ", which has no torch.compile)";
#else
    const auto python = python_path(), script = script_path();
    if (python.empty() || ::access(python.c_str(), X_OK) != 0)
      return "no Python with torch " + std::string(TORCH_VERSION) + " (set TFG_PYTHON; looked for `" + python + "`)";
    if (script.empty() || !std::filesystem::exists(script))
      return "the compiled worker script is missing (set TFG_COMPILED_WORKER; looked for `" + script + "`)";
    return "";
#endif
  }();
  return why;
}

[[nodiscard]] TFG_TORCH_DECL const std::string& onnx_unavailable_reason() {
  static const std::string why = []() -> std::string {
    if (const auto& w = unavailable_reason(); !w.empty()) return w;
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto python = python_path();
    // <venv>/bin/python -> <venv>/lib/pythonX.Y/site-packages (the link is not followed: a
    // venv's python is a link to the base interpreter).
    const auto root = fs::path(python).parent_path().parent_path() / "lib";
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const auto site = e.path() / "site-packages";
      if (fs::exists(site / "onnxruntime" / "__init__.py", ec) && fs::exists(site / "onnxscript" / "__init__.py", ec))
        return "";
    }
    return "the Python " + python + " has no onnxruntime and onnxscript (tools/setup-deps.sh installs them)";
  }();
  return why;
}

}  // namespace tfg::torch::compiled_detail

#if (TFG_HAS_PT2)
namespace tfg::torch::compiled_detail {

[[nodiscard]] TFG_TORCH_DECL std::string shape_key(const std::vector<c10::IValue>& args) {
  std::string key;
  for (const auto& a : args) {
    if (a.isTensor() && a.toTensor().defined()) {
      const auto& t = a.toTensor();
      key += std::string(c10::toString(t.scalar_type())) + "[";
      for (auto d : t.sizes()) key += std::to_string(d) + ",";
      key += "]";
    } else {
      std::ostringstream os;
      os << a;
      key += os.str();
    }
    key += ";";
  }
  return key;
}

[[nodiscard]] TFG_TORCH_DECL const std::string& load_own_libtorch() {
  static const std::string why = []() -> std::string {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&at::get_num_threads), &info) == 0 || info.dli_fname == nullptr)
      return "cannot find the libtorch_cpu this process runs";
    const auto lib = std::filesystem::path(info.dli_fname).parent_path() / "libtorch.so";
    if (::dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr)
      return "cannot load " + lib.string() + ": " + std::string(::dlerror());
    return "";
  }();
  return why;
}

TFG_TORCH_DECL void run_package(compiled_result& r, const nlohmann::json& c, const input_set& used,
                                const std::vector<std::size_t>& group, std::size_t warmup) {
  const auto paths = c.value("out_paths", std::vector<std::string>{});
  if (const auto& why = load_own_libtorch(); !why.empty()) {
    r.error = "aoti: " + why;
    r.skipped = true;
    return;
  }
  try {
    const auto t0 = std::chrono::steady_clock::now();
    ::torch::inductor::AOTIModelPackageLoader loader(c.value("package", std::string()));
    auto flat = [&](std::size_t slot) {
      std::vector<at::Tensor> ts;
      for (const auto& a : used[slot]) ts.push_back(a.toTensor().clone());
      return ts;
    };
    at::NoGradGuard no_grad;
    for (std::size_t k = 0; k < warmup; ++k) (void)loader.run(flat(group[0]));
    r.prepare_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (auto slot : group) {
      auto args = flat(slot);
      const auto t1 = std::chrono::steady_clock::now();
      auto outs = loader.run(args);
      r.wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
      if (outs.size() != paths.size())
        throw std::runtime_error("the package returned " + std::to_string(outs.size()) +
                                 " outputs, its program's spec " + std::to_string(paths.size()));
      output_list named;
      for (std::size_t i = 0; i < outs.size(); ++i) named.push_back({paths[i], c10::IValue(outs[i].detach())});
      r.outputs[slot] = std::move(named);
    }
  } catch (const std::exception& e) {
    r.error = "run: " + first_line(e.what());
  }
}

TFG_TORCH_DECL void run_group(compiled_result& r, std::string_view name, const model& m, const input_set& used,
                              const std::vector<std::size_t>& group, std::size_t warmup, int threads) {
  namespace fs = std::filesystem;
  auto& proc = process();
  const auto dir = work_dir();
  const auto program = dir / "model.pt2", in_path = dir / "inputs.pt";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove(e.path(), ec);
  input_set inputs;
  for (auto i : group) inputs.push_back(used[i]);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    save_pt2(m, inputs[0], program.string());
    save_inputs(inputs, in_path);
  } catch (const std::exception& e) {
    r.error = "cannot write the mutant as a torch.export program: " + first_line(e.what());
    r.skipped = true;
    return;
  }
  nlohmann::json req = {
      {"id", proc.next_id++},           {"op", "run"},        {"model", program.string()}, {"inputs", in_path.string()},
      {"configs", {std::string(name)}}, {"threads", threads}, {"warmup", warmup},          {"outputs", dir.string()}};
  if (is_inductor_config(name) && !compiled_defaults().inductor_flags.empty()) {
    nlohmann::json flags = nlohmann::json::object();
    for (const auto& [k, v] : compiled_defaults().inductor_flags) flags[k] = v;
    req["flags"] = flags;
  }
  auto reply = exchange(req);
  if (!reply) {
    r.error = reply.error();
    return;
  }
  const auto& j = *reply;
  if (!j.value("ok", false)) {
    r.error = "the Python worker: " + j.value("error", std::string("failed"));
    r.skipped = true;
    return;
  }
  if (proc.torch_version.empty()) proc.torch_version = j.value("torch", "");
  if (public_version(proc.torch_version) != public_version(TORCH_VERSION)) {
    r.error = "the Python worker's torch is " + proc.torch_version + ", this build's LibTorch " + TORCH_VERSION +
              ": set TFG_PYTHON to a Python with torch " + TORCH_VERSION;
    r.skipped = true;
    return;
  }
  const auto results = j.value("results", nlohmann::json::array());
  if (results.empty()) {
    r.error = "the Python worker returned no result";
    r.skipped = true;
    return;
  }
  const auto& c = results.at(0);
  const double wall = c.value("wall_ms", 0.0);
  const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  r.wall_ms += wall;
  // Preparation: writing the program, starting Python (import torch), the compile and its
  // warm-up calls; run time is the timed calls only (what the performance oracle compares).
  r.prepare_ms += std::max(c.value("prepare_ms", 0.0), total - wall);
  r.skipped = c.value("skipped", false);
  r.unsupported = r.skipped && c.value("unsupported", false);
  if (!c.value("ok", false)) {
    const auto stage = c.value("stage", std::string());
    r.error = (stage.empty() ? "" : stage + ": ") + c.value("error", std::string("failed"));
    return;
  }
  if (name == "aoti") {
    run_package(r, c, used, group, warmup);
    return;
  }
  try {
    std::ifstream in(c.value("outputs", std::string()), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto all = pickle_load_compatible(bytes);
    if (!all.isList() || all.toListRef().size() != group.size()) throw std::runtime_error("not one result per input");
    const bool gradients = name == "inductor_autograd";
    std::size_t k = 0;
    for (const auto& per_input : all.toListRef()) {
      const auto slot = group[k++];
      if (!gradients) {
        r.outputs[slot] = ivalue::flatten(per_input);
        continue;
      }
      // The gradients, in the order of the floating input tensors: named as run_gradients names them.
      const auto& args = used[slot];
      output_list named;
      const auto grads = ivalue::flatten(per_input);
      std::size_t g = 0;
      for (std::size_t a = 0; a < args.size() && g < grads.size(); ++a)
        if (args[a].isTensor() && args[a].toTensor().defined() && args[a].toTensor().is_floating_point())
          named.push_back({"grad." + std::to_string(a), grads[g++].value});
      r.outputs[slot] = std::move(named);
    }
  } catch (const std::exception& e) {
    r.error = "cannot read the outputs the Python worker wrote: " + first_line(e.what());
    r.skipped = true;
  }
}

}  // namespace tfg::torch::compiled_detail
#endif

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL std::string onnx_localise(std::string_view name, const model& m, const input_set& inputs,
                                                       int threads) {
#if !TFG_HAS_PT2
  (void)name, (void)m, (void)inputs, (void)threads;
  return compiled_detail::unavailable_reason();
#else
  namespace fs = std::filesystem;
  if (inputs.empty()) return "no input";
  auto& proc = compiled_detail::process();
  const auto dir = compiled_detail::work_dir();
  const auto program = dir / "model.pt2", in_path = dir / "inputs.pt";
  std::string text;
  try {
    save_pt2(m, inputs[0], program.string());
    save_inputs(input_set{inputs[0]}, in_path);
    const nlohmann::json req = {{"id", proc.next_id++},        {"op", "onnx_localise"},
                                {"config", std::string(name)}, {"model", program.string()},
                                {"inputs", in_path.string()},  {"threads", threads},
                                {"outputs", dir.string()}};
    const auto reply = compiled_detail::exchange(req);
    if (!reply) text = "not localised on the ONNX graph: " + reply.error();
    else if (!reply->value("ok", false))
      text = "not localised on the ONNX graph: " + reply->value("error", std::string("failed"));
    else text = reply->value("text", std::string());
  } catch (const std::exception& e) {
    text = "not localised on the ONNX graph: " + first_line(e.what());
  }
  std::error_code ec;
  fs::remove_all(proc.dir, ec);
  proc.dir.clear();
  return text;
#endif
}

[[nodiscard]] TFG_TORCH_DECL compiled_result run_compiled(std::string_view name, const model& m,
                                                          const input_set& inputs, std::size_t max_inputs,
                                                          std::size_t warmup, int threads) {
  compiled_result r;
#if !TFG_HAS_PT2
  (void)name, (void)m, (void)inputs, (void)max_inputs, (void)warmup, (void)threads;
  r.error = compiled_detail::unavailable_reason();
  r.skipped = true;
  return r;
#else
  if (inputs.empty()) {
    r.error = "no inputs to run on";
    r.skipped = true;
    return r;
  }
  const std::size_t n = max_inputs == 0 ? inputs.size() : std::min(inputs.size(), max_inputs);
  const input_set used(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<std::string> keys;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < used.size(); ++i) {
    const auto key = compiled_detail::shape_key(used[i]);
    const auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      groups.push_back({i});
    } else {
      groups[static_cast<std::size_t>(it - keys.begin())].push_back(i);
    }
  }
  r.outputs.resize(used.size());
  for (const auto& g : groups) {
    compiled_detail::run_group(r, name, m, used, g, warmup, threads);
    if (!r.error.empty()) break;
  }
  if (!r.error.empty()) r.outputs.clear();
  // Programs, inputs and outputs go (a worker process per request would leave a folder each).
  auto& proc = compiled_detail::process();
  std::error_code ec;
  std::filesystem::remove_all(proc.dir, ec);
  proc.dir.clear();
  return r;
#endif
}

}  // namespace tfg::torch
