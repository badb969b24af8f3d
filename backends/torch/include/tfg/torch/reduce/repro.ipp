#pragma once
// The definitions of repro.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/reduce/repro.hpp"

namespace tfg::torch::repro_detail {

[[nodiscard]] TFG_TORCH_DECL std::string py_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\\' || c == '\'') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "'";
}

[[nodiscard]] TFG_TORCH_DECL std::string py_float(double v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "float('-inf')";
  // The shortest decimal that reads back as v (as Python's repr writes it).
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

[[nodiscard]] TFG_TORCH_DECL std::string py_dtype(std::int64_t code) {
  switch (static_cast<c10::ScalarType>(code)) {
    case c10::kHalf: return "torch.float16";
    case c10::kBFloat16: return "torch.bfloat16";
    case c10::kFloat: return "torch.float32";
    case c10::kDouble: return "torch.float64";
    case c10::kChar: return "torch.int8";
    case c10::kByte: return "torch.uint8";
    case c10::kShort: return "torch.int16";
    case c10::kInt: return "torch.int32";
    case c10::kLong: return "torch.int64";
    case c10::kBool: return "torch.bool";
    case c10::kComplexFloat: return "torch.complex64";
    case c10::kComplexDouble: return "torch.complex128";
    default: return std::to_string(code);
  }
}

[[nodiscard]] TFG_TORCH_DECL std::string py_memory_format(std::int64_t code) {
  switch (static_cast<c10::MemoryFormat>(code)) {
    case c10::MemoryFormat::Contiguous: return "torch.contiguous_format";
    case c10::MemoryFormat::Preserve: return "torch.preserve_format";
    case c10::MemoryFormat::ChannelsLast: return "torch.channels_last";
    case c10::MemoryFormat::ChannelsLast3d: return "torch.channels_last_3d";
    default: return std::to_string(code);
  }
}

[[nodiscard]] TFG_TORCH_DECL std::string py_layout(std::int64_t code) {
  if (code == static_cast<std::int64_t>(c10::kStrided)) return "torch.strided";
  if (code == static_cast<std::int64_t>(c10::kSparse)) return "torch.sparse_coo";
  if (code == static_cast<std::int64_t>(c10::kMkldnn)) return "torch._mkldnn";
  return std::to_string(code);
}

[[nodiscard]] TFG_TORCH_DECL judge_settings judge_settings_of(const repro_spec& spec) {
  judge_settings j;
  j.b_is_reference = spec.config_b == "float64_reference" || spec.config_b == "autograd_float64";
  if (j.b_is_reference)
    j.peers = spec.config_a.rfind("autograd", 0) == 0 ? std::vector<std::string>{"autograd"}
                                                      : std::vector<std::string>{"threads_1_vs_n", "channels_last"};
  j.expect = spec.message;
  while (!j.expect.empty() && (j.expect.back() == '\n' || j.expect.back() == ' ')) j.expect.pop_back();
  if (auto nl = j.expect.rfind('\n'); nl != std::string::npos) j.expect = j.expect.substr(nl + 1);
  return j;
}

}  // namespace tfg::torch::repro_detail

namespace tfg::torch {

TFG_TORCH_DECL void write_python_repro(const model& m, const input_set& inputs, const repro_spec& spec,
                                       const std::filesystem::path& dir, const compare_options& co) {
  using namespace repro_detail;
  const auto mod = python_forward(m);
  std::filesystem::create_directories(dir);
  // Data: (inputs as a list of tuples, constants as a list of tensors).
  {
    c10::impl::GenericList ins(c10::AnyType::get());
    for (const auto& in : inputs) ins.push_back(c10::ivalue::Tuple::create(in));
    c10::List<at::Tensor> consts;
    for (const auto& t : mod.constants) consts.push_back(t);
    const auto bytes = ::torch::jit::pickle_save(c10::ivalue::Tuple::create({c10::IValue(ins), c10::IValue(consts)}));
    std::ofstream f(campaign::finding_layout::of<backend>(dir).repro_data(), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw model_error(campaign::finding_layout::of<backend>(dir).repro_data().string() + ": cannot write");
  }
  const auto js = judge_settings_of(spec);
  std::string peers = "(";
  for (const auto& p : js.peers) peers += py_string(p) + ", ";
  peers += ")";
  auto values = tolerance_values(co);
  values.insert(
      {{"ID", spec.id},
       {"TITLE", spec.title},
       {"CONFIG_A", spec.config_a},
       {"CONFIG_B", spec.config_b},
       {"FOUND_WITH", spec.versions.empty() ? "" : "\nFound with: " + spec.versions + "\n"},
       {"TITLE_PY", py_string(spec.title)},
       {"KIND_PY", py_string(spec.kind)},
       {"CONFIG_A_PY", py_string(spec.config_a)},
       {"CONFIG_B_PY", py_string(spec.config_b)},
       {"REFERENCE_PY", py_config(reference_of(spec.config_a, spec.config_b))},
       {"B_IS_REFERENCE_PY", js.b_is_reference ? "True" : "False"},
       {"PEERS_PY", peers},
       {"EXPECT_PY", py_string(js.expect)},
       {"FORWARD", mod.forward_source},
       {"REPRO64", mod.uses_f32_dtype
                       ? "class Repro64(Repro):\n    \"\"\"The float64 baseline: float32 dtype arguments "
                         "widened too.\"\"\"\n\n" +
                             python_forward(m, repro_dialect::python, /*wide=*/true).forward_source + "\n"
                       : "Repro64 = Repro  # the float64 baseline: same code, widened constants and inputs\n"}});
  const auto py = render_template(template_text(repro_py_template), values, "repro.py.inc");
  std::ofstream f(campaign::finding_layout(dir).repro_py());
  f << py;
  if (!f) throw model_error(campaign::finding_layout(dir).repro_py().string() + ": cannot write");
}

TFG_TORCH_DECL void write_cpp_repro(const model& m, const repro_spec& spec, const std::filesystem::path& dir,
                                    const compare_options& co) {
  using namespace repro_detail;
  const auto js = judge_settings_of(spec);
  const auto ts32 = python_forward(m, repro_dialect::torchscript, false);
  const auto ts64 =
      ts32.uses_f32_dtype ? python_forward(m, repro_dialect::torchscript, true).forward_source : ts32.forward_source;
  auto cstr = [](const std::string& s) {
    std::string o = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      if (c == '\n') {
        o += "\\n";
        continue;
      }
      o += c;
    }
    return o + "\"";
  };
  std::string peers;
  for (std::size_t i = 0; i < js.peers.size(); ++i) peers += (i ? ", " : "") + cstr(js.peers[i]);
  auto values = tolerance_values(co);
  values.insert({{"ID", spec.id},
                 {"TITLE", spec.title},
                 {"TITLE_C", cstr(spec.title)},
                 {"KIND_C", cstr(spec.kind)},
                 {"CONFIG_A_C", cstr(spec.config_a)},
                 {"CONFIG_B_C", cstr(spec.config_b)},
                 {"REFERENCE_C", cstr(reference_of(spec.config_a, spec.config_b))},
                 {"B_IS_REFERENCE_C", js.b_is_reference ? "true" : "false"},
                 {"PEERS_C", peers},
                 {"EXPECT_C", cstr(js.expect)},
                 {"FORWARD32", ts32.forward_source},
                 {"FORWARD64", ts64}});
  const auto c = render_template(template_text(repro_cpp_template), values, "repro.cpp.inc");
  std::ofstream f(campaign::finding_layout(dir).repro_cpp());
  f << c;
  if (!f) throw model_error(campaign::finding_layout(dir).repro_cpp().string() + ": cannot write");
}

}  // namespace tfg::torch
