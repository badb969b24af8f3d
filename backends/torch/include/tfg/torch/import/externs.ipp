#pragma once
// The definitions of externs.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/import/externs.hpp"

namespace tfg::torch::detail {

[[nodiscard]] TFG_TORCH_DECL bool reads_geometry(const node_data& d) {
  static const std::array<c10::Symbol, 7> kinds{
      c10::Symbol::fromQualString("aten::as_strided"),    c10::Symbol::fromQualString("aten::as_strided_"),
      c10::Symbol::fromQualString("aten::stride"),        c10::Symbol::fromQualString("aten::storage_offset"),
      c10::Symbol::fromQualString("aten::is_contiguous"), c10::Symbol::fromQualString("aten::set_"),
      c10::Symbol::fromQualString("aten::data_ptr")};
  return std::find(kinds.begin(), kinds.end(), d.kind) != kinds.end();
}

}  // namespace tfg::torch::detail

namespace tfg::torch {

TFG_TORCH_DECL void register_custom_op_namespaces() {
  auto& extra = dsl::extra_op_namespaces();
  for (const auto& op : ::torch::jit::getAllOperators()) {
    const auto& name = op->schema().name();
    const auto sep = name.find("::");
    if (sep == std::string::npos) continue;
    std::string ns = name.substr(0, sep);
    if (std::find(dsl::op_namespaces.begin(), dsl::op_namespaces.end(), ns) != dsl::op_namespaces.end()) continue;
    if (std::find(extra.begin(), extra.end(), ns) == extra.end()) extra.push_back(std::move(ns));
  }
}

[[nodiscard]] TFG_TORCH_DECL std::optional<bool> kernel_runs(std::string_view kind, c10::ScalarType t,
                                                             c10::Device device) {
  static std::mutex mu;
  static std::map<std::tuple<std::string, int, std::string>, std::optional<bool>> cache;
  const auto key = std::make_tuple(std::string(kind), static_cast<int>(t), device.str());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::optional<bool> out;
  try {
    // Values in (0, 1]; no random numbers: the process's generator must not move.
    const auto x = at::arange(1, 33, at::TensorOptions().dtype(at::kFloat)).div(32).reshape({1, 2, 4, 4}).to(device, t);
    std::optional<at::Tensor> y;
    using namespace std::string_view_literals;
    if (kind == "aten::relu"sv) y = at::relu(x);
    else if (kind == "aten::gelu"sv) y = at::gelu(x);
    else if (kind == "aten::silu"sv) y = at::silu(x);
    else if (kind == "aten::sigmoid"sv) y = at::sigmoid(x);
    else if (kind == "aten::tanh"sv) y = at::tanh(x);
    else if (kind == "aten::hardswish"sv) y = at::hardswish(x);
    else if (kind == "aten::hardsigmoid"sv) y = at::hardsigmoid(x);
    else if (kind == "aten::softmax"sv) y = at::softmax(x, -1);
    else if (kind == "aten::log_softmax"sv) y = at::log_softmax(x, -1);
    else if (kind == "aten::sin"sv) y = at::sin(x);
    else if (kind == "aten::cos"sv) y = at::cos(x);
    else if (kind == "aten::exp"sv) y = at::exp(x);
    else if (kind == "aten::rsqrt"sv) y = at::rsqrt(x);
    else if (kind == "aten::sqrt"sv) y = at::sqrt(x);
    else if (kind == "aten::square"sv) y = at::square(x);
    else if (kind == "aten::max_pool2d"sv) y = at::max_pool2d(x, {2, 2});
    else if (kind == "aten::avg_pool2d"sv) y = at::avg_pool2d(x, {2, 2});
    else if (kind == "aten::adaptive_avg_pool2d"sv) y = at::adaptive_avg_pool2d(x, {2, 2});
    else if (kind == "aten::upsample_bilinear2d"sv) y = at::upsample_bilinear2d(x, {8, 8}, false);
    else if (kind == "aten::upsample_nearest2d"sv) y = at::upsample_nearest2d(x, {8, 8});
    else if (kind == "aten::mean"sv) y = at::mean(x, {-1});
    else if (kind == "aten::sum"sv) y = at::sum(x, {-1});
    else if (kind == "aten::amax"sv) y = at::amax(x, {-1});
    if (y) out = true;
  } catch (const std::exception&) {
    out = false;
  }
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, out);
  return out;
}

[[nodiscard]] TFG_TORCH_DECL match::extern_registry torch_externs(std::shared_ptr<const extern_context> ctx) {
  register_custom_op_namespaces();
  match::extern_registry r;
  r.add("no_inplace_writer", [ctx](std::span<const match::extern_arg> args) -> std::optional<match::attr_value> {
    if (args.size() != 1 || !args[0].state || !ctx->target || !ctx->prof) return std::nullopt;
    const auto& g = ctx->target->graph;
    const auto e = args[0].edge;
    if (e == graph::no_edge || graph::index(e) >= ctx->prof->edges.size()) return std::nullopt;
    const auto& runs = ctx->prof->edges[graph::index(e)].runs;
    if (runs.empty() || args[0].state < runs.data() || args[0].state >= runs.data() + runs.size()) return std::nullopt;
    const auto run = static_cast<std::size_t>(args[0].state - runs.data());
    const auto group = args[0].state->storage_group;
    if (args[0].state->kind != state::value_kind::tensor || args[0].state->storage_nbytes == 0)
      return match::attr_value{true};
    if (!ctx->written_groups) {  // O(V + in-place writers x runs), once per target
      std::vector<std::vector<std::pair<std::uint32_t, std::size_t>>> groups(ctx->prof->runs);
      for (auto n : g.nodes()) {
        if (!detail::writes_in_place(g.data(n)) || g.inputs(n).empty()) continue;
        const auto at = g.topological_index(n);
        const auto& wr = ctx->prof->edges[graph::index(g.inputs(n)[0])].runs;
        for (std::size_t r = 0; r < wr.size() && r < groups.size(); ++r)
          if (wr[r].kind == state::value_kind::tensor) groups[r].emplace_back(wr[r].storage_group, at);
      }
      for (auto& v : groups) {  // one entry per group: its last writer
        std::sort(v.begin(), v.end());
        auto out = v.begin();
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (out != v.begin() && std::prev(out)->first == it->first) std::prev(out)->second = it->second;
          else *out++ = *it;
        }
        v.erase(out, v.end());
      }
      ctx->written_groups = std::move(groups);
    }
    // A write before the tensor is produced is already in its values, whoever reads it later;
    // only a write at or after its producer (in execution order) is seen by some readers and
    // not others. A graph input is produced before every node.
    const auto p = g.producer(e);
    const auto& groups = *ctx->written_groups;
    if (run < groups.size()) {
      const auto& v = groups[run];
      const auto it = std::lower_bound(v.begin(), v.end(), std::pair<std::uint32_t, std::size_t>{group, 0});
      if (it != v.end() && it->first == group && (p == graph::no_node || it->second > g.topological_index(p)))
        return match::attr_value{false};
    }
    return match::attr_value{true};
  });
  r.add("no_geometry_reader", [ctx](std::span<const match::extern_arg> args) -> std::optional<match::attr_value> {
    if (args.size() != 1 || !ctx->target) return std::nullopt;
    const auto& g = ctx->target->graph;
    const auto e = args[0].edge;
    if (e == graph::no_edge) return std::nullopt;
    for (const auto& u : g.consumers(e))
      if (detail::reads_geometry(g.data(u.node))) return match::attr_value{false};
    return match::attr_value{true};
  });
  r.add("kernel_for", [ctx](std::span<const match::extern_arg> args) -> std::optional<match::attr_value> {
    if (args.size() != 2 || !ctx->target || args[0].edge == graph::no_edge || !args[0].state) return std::nullopt;
    const auto* code = std::get_if<std::int64_t>(&args[1].value);
    if (!code) return std::nullopt;
    const auto t = scalar_type_of_word(state::name(static_cast<state::dtype>(*code)));
    const auto p = ctx->target->graph.producer(args[0].edge);
    if (!t || p == graph::no_node) return std::nullopt;
    const auto kind = std::string_view(ctx->target->graph.data(p).kind.toQualString());
    const c10::Device device =
        args[0].state->device.kind == state::device_kind::cuda ? c10::Device(c10::kCUDA) : c10::Device(c10::kCPU);
    if (device.is_cuda() && !compat::cuda_available()) return match::attr_value{false};
    return match::attr_value{kernel_runs(kind, *t, device).value_or(false)};
  });
  r.add("device_available", [](std::span<const match::extern_arg> args) -> std::optional<match::attr_value> {
    if (args.size() != 1) return std::nullopt;
    bool cuda = false;
    if (const auto* s = std::get_if<std::string>(&args[0].value)) cuda = *s == "cuda";
    else if (const auto* i = std::get_if<std::int64_t>(&args[0].value))
      cuda = *i == static_cast<std::int64_t>(state::device_kind::cuda);
    else return std::nullopt;
    return match::attr_value{!cuda || compat::cuda_available()};
  });
  return r;
}

}  // namespace tfg::torch
