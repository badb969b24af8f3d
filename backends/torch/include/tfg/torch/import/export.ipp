#pragma once
// The definitions of export.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/export.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL ::torch::jit::Module to_module(const model& m, const std::string& class_name,
                                                            bool tag_positions) {
  namespace jit = ::torch::jit;
  auto cu = std::make_shared<jit::CompilationUnit>();
  auto cls = c10::ClassType::create(c10::QualifiedName(class_name), cu, /*is_module=*/true);
  cu->register_type(cls);  // so that clone() (used by freeze) finds the class in its unit
  jit::Module module(cu, cls);
  auto graph = std::make_shared<jit::Graph>();
  graph->addInput("self")->setType(cls);
  detail::graph_builder builder(m, graph);
  if (tag_positions) builder.tag_positions();
  builder.build();
  graph->lint();
  auto* fn = cu->create_function(c10::QualifiedName(*cls->name(), "forward"), graph);
  cls->addMethod(fn);
  return module;
}

[[nodiscard]] TFG_TORCH_DECL failed_node failed_position_of(const std::string& what) {
  failed_node out;
  out.message = what;
  const std::string key = "File \"" + std::string(detail::graph_builder::position_file) + "\", line ";
  for (std::size_t at = what.find(key); at != std::string::npos; at = what.find(key, at + 1)) {
    std::size_t i = at + key.size();
    std::int64_t n = 0;
    bool digits = false;
    while (i < what.size() && std::isdigit(static_cast<unsigned char>(what[i]))) {
      n = n * 10 + (what[i++] - '0');
      digits = true;
    }
    if (digits) out.position = n;
  }
  if (out.position < 0) return out;
  // "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript
  // (most recent call last):\n  File "<tfg model>", line N, in forward\n<context: lines of
  // the position file, a `~~~ <--- HERE` marker>\nRuntimeError: what": the error proper is
  // what follows the last frame's context.
  auto is_context = [](std::string_view l) {
    if (l.empty() || l[0] == ' ' || l[0] == '~' || l.find("<--- HERE") != std::string_view::npos) return true;
    std::size_t i = 0;
    while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) ++i;
    return i > 0 && l.substr(i, 2) == ": " && l.find(' ', i + 2) == std::string_view::npos;  // "12: aten::relu"
  };
  std::size_t line = what.find('\n', what.rfind(key));
  while (line != std::string::npos && line + 1 < what.size()) {
    const auto next = what.find('\n', line + 1);
    const std::string_view text(what.data() + line + 1, (next == std::string::npos ? what.size() : next) - line - 1);
    if (!is_context(text)) {
      out.message = what.substr(line + 1);
      break;
    }
    line = next;
  }
  return out;
}

TFG_TORCH_DECL void save(const model& m, const std::string& path) {
  auto module = to_module(m);
  try {
    module.save(path);
  } catch (const std::exception& e) {
    std::string what = first_line(e.what());
    throw model_error(path + ": cannot save the exported module: " + what);
  }
}

}  // namespace tfg::torch
