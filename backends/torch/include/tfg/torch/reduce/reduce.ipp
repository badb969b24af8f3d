#pragma once
// The definitions of reduce.hpp's functions: inline there by default, compiled once into
// tfg::torch_compiled with TFG_TORCH_SEPARATE (see linkage.hpp).
#include "tfg/torch/reduce/reduce.hpp"

namespace tfg::torch {

[[nodiscard]] TFG_TORCH_DECL input_set record_boundary(const model& m, const input_set& inputs,
                                                       const std::vector<graph::edge_id>& boundary) {
  const auto& g = m.graph;
  std::vector<int> slot(g.edge_capacity(), -1);
  for (std::size_t i = 0; i < boundary.size(); ++i) slot[graph::index(boundary[i])] = static_cast<int>(i);
  input_set out;
  executor ex(m);
  for (const auto& in : inputs) {
    std::vector<c10::IValue> values(boundary.size());
    ex.run(in, [&](graph::node_id, std::span<const graph::edge_id> edges) {
      for (auto e : edges)
        if (const int s = slot[graph::index(e)]; s >= 0)
          values[static_cast<std::size_t>(s)] = ivalue::deep_clone(ex.value(e));
    });
    out.push_back(std::move(values));
  }
  return out;
}

[[nodiscard]] TFG_TORCH_DECL std::vector<char> constant_derived(const model& m) {
  const auto& g = m.graph;
  std::vector<char> out(g.edge_capacity(), 0);
  for (auto n : g.topological_order()) {
    bool derived = true;
    for (auto e : g.inputs(n)) derived = derived && out[graph::index(e)];
    for (auto e : g.outputs(n)) out[graph::index(e)] = derived;
  }
  return out;
}

TFG_TORCH_DECL void fold_constant_inputs(const model& m, window_result& wm, input_set& values) {
  const auto derived = constant_derived(m);
  std::vector<char> fold(wm.boundary.size(), 0);
  bool any = false;
  for (std::size_t i = 0; i < wm.boundary.size(); ++i) {
    if (!derived[graph::index(wm.boundary[i])] || values.empty() || !values[0][i].isTensor()) continue;
    bool same = true;
    for (const auto& v : values) same = same && v[i].isTensor() && v[i].toTensor().equal(values[0][i].toTensor());
    fold[i] = same;
    any = any || same;
  }
  if (!any) return;
  const auto& g = wm.reduced.graph;
  model out;
  out.source = wm.reduced.source;
  std::vector<graph::edge_id> map(g.edge_capacity(), graph::no_edge);
  std::vector<graph::edge_id> boundary;
  const auto ins = g.graph_inputs();
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (fold[i]) continue;
    map[graph::index(ins[i])] = out.graph.add_input(g.data(ins[i]));
    boundary.push_back(wm.boundary[i]);
    out.input_names.push_back(i < wm.reduced.input_names.size() ? wm.reduced.input_names[i] : "x" + std::to_string(i));
  }
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (!fold[i]) continue;
    node_data c;
    c.kind = c10::prim::Constant;
    c.constant = c10::IValue(values[0][i].toTensor());
    c.where = "recorded value of a constant-derived edge";
    const auto n = out.graph.add_node(std::move(c), std::span<const graph::edge_id>{}, {g.data(ins[i])});
    map[graph::index(ins[i])] = out.graph.outputs(n)[0];
  }
  for (auto n : g.topological_order()) copy_node_into(g, n, out.graph, map);
  out.output = wm.reduced.output;
  auto remap = [&](auto&& self, output_tree& t) -> void {
    if (t.how == output_tree::form::edge) t.edge = map[graph::index(t.edge)];
    for (auto& i : t.items) self(self, i);
  };
  remap(remap, out.output);
  for (auto e : g.graph_outputs()) out.graph.add_output(map[graph::index(e)]);
  for (auto& v : values) {
    std::vector<c10::IValue> kept;
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!fold[i]) kept.push_back(v[i]);
    v = std::move(kept);
  }
  wm.reduced = std::move(out);
  wm.boundary = std::move(boundary);
}

TFG_TORCH_DECL reduce_outcome reduce_finding(const std::filesystem::path& dir, const std::filesystem::path& worker_exe,
                                             std::chrono::milliseconds timeout, std::int64_t rss_limit_bytes,
                                             const oracle::nan_rules& rules,
                                             const std::function<void(const reduce_step&)>& progress,
                                             std::optional<std::chrono::steady_clock::time_point> deadline) {
  namespace fs = std::filesystem;
  reduce_outcome out;
  const auto folder = campaign::finding_layout::of<backend>(dir);
  std::ifstream in(folder.meta());
  auto meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded() || !fs::exists(folder.mutant()) || !fs::exists(folder.inputs())) {
    out.error = dir.string() + " is not a finding folder (meta.json, " + folder.mutant_name() + ", " +
                folder.inputs_name() + ")";
    return out;
  }
  const std::string kind = meta.value("kind", "");
  if (!reducible_kind(kind)) {
    out.error = "a " + kind + " finding is not reduced (only divergences localised to one operator are)";
    return out;
  }
  if (!meta.contains("localisation") || !meta["localisation"].value("localised", false)) {
    out.error = "the finding is not localised (" +
                (meta.contains("localisation") ? meta["localisation"].value("note", std::string("no note"))
                                               : std::string("no localisation")) +
                "): there is no operator to reduce to";
    return out;
  }
  const auto& loc = meta["localisation"];
  backend b;
  model m;
  input_set inputs;
  try {
    m = b.load(folder.mutant());
    inputs = tfg::torch::load_inputs(folder.inputs().string(), m);
  } catch (const std::exception& e) {
    out.error = clean_error(e.what());
    return out;
  }
  out.mutant_nodes = operator_count(m);
  const auto work = dir / "reduce";
  // Resume: tries already made are not made again.
  std::map<std::size_t, reduce_step> done;
  std::optional<std::size_t> position;
  {
    std::ifstream pf(work / "progress.json");
    const auto p = nlohmann::json::parse(pf, nullptr, false);
    if (!p.is_discarded() && p.contains("position")) position = p["position"].get<std::size_t>();
    if (!p.is_discarded())
      for (const auto& s : p.value("steps", nlohmann::json::array())) {
        reduce_step st{s.value("depth", std::size_t{0}), s.value("nodes", std::size_t{0}), s.value("reproduced", false),
                       s.value("note", std::string())};
        done[st.depth] = st;
      }
  }
  out.resumed = !done.empty();
  // The finding must reproduce now, and its localisation as this build makes it names the node
  // (the recorded position may come from another build or import of the same file).
  if (!position) {
    const auto base = campaign::replay(b, dir, worker_exe, timeout, rss_limit_bytes, rules);
    if (!base.error.empty()) {
      out.error = base.error;
      return out;
    }
    if (!base.reproduced) {
      out.error = "the finding does not reproduce now (see `flowmut repro " + dir.string() + "`): nothing to reduce";
      return out;
    }
    const std::string key = meta.value("key", "");
    for (const auto& f : base.observed)
      if (f.signature.key() == key && f.where.localised && f.where.position >= 0)
        position = static_cast<std::size_t>(f.where.position);
    if (!position) position = loc.value("position", std::size_t{0});
  }
  const auto culprit = locate_culprit(m, *position, loc.value("operator", std::string()));
  if (!culprit) {
    out.error = folder.mutant().string() + " has no " + loc.value("operator", std::string()) + " node";
    return out;
  }
  fs::create_directories(work);
  auto checkpoint = [&] {
    nlohmann::json j;
    j["position"] = *position;
    j["steps"] = nlohmann::json::array();
    for (const auto& s : out.steps)
      j["steps"].push_back({{"depth", s.depth}, {"nodes", s.nodes}, {"reproduced", s.reproduced}, {"note", s.note}});
    write_file_atomic(work / "progress.json", j.dump(1));
  };
  std::size_t last_nodes = static_cast<std::size_t>(-1);
  for (std::size_t depth : {0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512}) {
    const auto w = window_of(m, *culprit, depth);
    if (w.nodes == last_nodes) {
      if (w.whole_cone) break;
      continue;
    }
    last_nodes = w.nodes;
    if (deadline && std::chrono::steady_clock::now() > *deadline && !done.count(depth)) {
      out.budget_spent = true;
      break;
    }
    reduce_step st;
    const auto cand = work / ("d" + std::to_string(depth));
    const auto candidate = campaign::finding_layout::of<backend>(cand);
    if (auto it = done.find(depth); it != done.end()) {
      st = it->second;
    } else {
      st.depth = depth;
      st.nodes = w.nodes;
      try {
        auto wm = window_model(m, w, *culprit);
        auto values = record_boundary(m, inputs, wm.boundary);
        fold_constant_inputs(m, wm, values);
        fs::create_directories(cand);
        b.save(wm.reduced, candidate.mutant());
        save_inputs(values, candidate.inputs());
        auto cm = meta;
        cm["reduced_from"] = {
            {"finding", dir.string()}, {"depth", depth}, {"nodes", w.nodes}, {"mutant_nodes", out.mutant_nodes}};
        write_file_atomic(candidate.meta(), cm.dump(1));
        const auto r = campaign::replay(b, cand, worker_exe, timeout, rss_limit_bytes, rules);
        if (!r.error.empty()) st.note = r.error;
        st.reproduced = r.reproduced;
      } catch (const std::exception& e) {
        st.note = clean_error(e.what());
      }
    }
    out.steps.push_back(st);
    checkpoint();
    if (progress) progress(st);
    if (st.reproduced) {
      // Inputs: one input that shows the finding is enough (tried in order; each try is
      // cand_iK with a result.json, so a repeated reduce does not try again).
      fs::path best = cand;
      std::size_t inputs_total = 0;
      try {
        const auto all = tfg::torch::load_inputs(candidate.inputs().string());
        inputs_total = all.size();
        for (std::size_t k = 0; all.size() > 1 && k < all.size(); ++k) {
          const auto one = work / ("d" + std::to_string(depth) + "_i" + std::to_string(k));
          const auto single = campaign::finding_layout::of<backend>(one);
          bool ok = false;
          std::ifstream rf(one / "result.json");
          const auto prior = nlohmann::json::parse(rf, nullptr, false);
          if (!prior.is_discarded()) {
            ok = prior.value("reproduced", false);
          } else {
            if (deadline && std::chrono::steady_clock::now() > *deadline) break;
            fs::create_directories(one);
            fs::copy_file(candidate.mutant(), single.mutant(), fs::copy_options::overwrite_existing);
            fs::copy_file(candidate.meta(), single.meta(), fs::copy_options::overwrite_existing);
            save_inputs({all[k]}, single.inputs());
            const auto r = campaign::replay(b, one, worker_exe, timeout, rss_limit_bytes, rules);
            ok = r.error.empty() && r.reproduced;
            write_file_atomic(one / "result.json", nlohmann::json{{"reproduced", ok}}.dump());
          }
          if (ok) {
            best = one;
            out.input_kept = k;
            break;
          }
        }
      } catch (const std::exception&) {
        best = cand;  // the window with all its inputs reproduces: keep it
      }
      out.inputs_total = inputs_total;
      out.inputs_kept = best == cand ? inputs_total : 1;
      std::error_code ec;
      fs::remove_all(folder.reduced_dir(), ec);
      fs::create_directories(folder.reduced_dir());
      for (const auto& f : folder.reduction_files()) fs::copy_file(best / f, folder.reduced_dir() / f);
      out.reduced = true;
      out.reduced_nodes = st.nodes;
      out.depth = depth;
      break;
    }
    if (w.whole_cone) break;
  }
  return out;
}

}  // namespace tfg::torch
