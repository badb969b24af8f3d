// flowmut run / compare / summary / repro / worker: argument handling and printing around
// tfg::campaign::loop<tfg::torch::backend> (the campaign itself lives in the library).
#include "commands.hpp"

#include "tfg/campaign/compare.hpp"
#include "tfg/campaign/defects.hpp"
#include "tfg/campaign/judge.hpp"
#include "tfg/campaign/loop.hpp"
#include "tfg/campaign/replay.hpp"
#include "tfg/select/registry.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/execute/worker.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <unistd.h>

namespace fs = std::filesystem;

extern "C" const char* tfg_running_configuration() { return tfg::torch::running_configuration().c_str(); }

namespace {

using campaign_type = tfg::campaign::loop<tfg::torch::backend>;

volatile std::sig_atomic_t g_interrupted = 0;

void on_signal(int) {
  g_interrupted = 1;
  campaign_type::request_stop();
}

template <class T>
T or_throw(tfg::expected<T, std::string> e) {
  if (!e) throw std::invalid_argument(e.error());
  return std::move(*e);
}

std::string status_line(const tfg::campaign::status& s) {
  char buf[512];
  const double legal = s.executed ? 100.0 * static_cast<double>(s.legal) / static_cast<double>(s.executed) : 0.0;
  std::snprintf(buf, sizeof buf,
                "round %zu/%zu  %.2f r/s  legal %.0f%%  findings %zu (%zu instances, %zu inherited)  LIC %.2e LPC %.2e "
                "LSC %.2e DFSD %.2e sig %zu API %.1f%%  | %s",
                s.round, s.rounds, s.rounds_per_s, legal, s.findings, s.instances, s.inherited, s.metrics.lic,
                s.metrics.lpc, s.metrics.lsc, s.metrics.dfsd, s.metrics.signatures, 100 * s.metrics.api_coverage,
                s.last.c_str());
  return buf;
}

}  // namespace

std::vector<std::string> default_operator_dirs(const std::vector<std::string>& given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("TFG_OPERATORS")) return {env};
  if (fs::is_directory(TFG_SOURCE_OPERATORS)) return {TFG_SOURCE_OPERATORS};
  return {TFG_INSTALLED_OPERATORS};
}

int run_worker_command(const std::string& dir) { return tfg::torch::serve_requests(dir); }

namespace {

/// Resume: the campaign's stored settings replace the defaults; an option given with another
/// value than the campaign runs with is refused (a resumed campaign makes the choices the
/// uninterrupted one would).
void take_stored_settings(run_args& a) {
  // No campaign there: the campaign says so ("nothing to resume"), writing nothing.
  if (!fs::exists(tfg::campaign::layout(a.out).state())) return;
  auto st = tfg::campaign::stored_settings(a.out);
  if (!st) return;  // a campaign of an older flowmut: the given settings
  const auto& s = *st;
  const auto spec = s.value("policy_spec", nlohmann::json::object());
  auto conflict = [&](const char* flag, const std::string& stored, const std::string& given) {
    throw std::invalid_argument(std::string("--") + flag + " " + given + ": the campaign in " + a.out + " runs with " +
                                stored + "; a resumed campaign keeps its settings (only --rounds, --time, --timeout, " +
                                "--reruns, --rss-limit-mb and --quiet may change)");
  };
  auto take = [&](const char* flag, auto& field, const nlohmann::json& src, const char* key) {
    using T = std::remove_reference_t<decltype(field)>;
    if (!src.contains(key)) return;
    const T stored = src.at(key).get<T>();
    if (a.given.count(flag) && !(stored == field))
      conflict(flag, nlohmann::json(stored).dump(), nlohmann::json(field).dump());
    field = stored;
  };
  take("policy", a.policy, spec, "policy");
  take("features", a.ablation, spec, "features");
  take("alpha", a.alpha, spec, "alpha");
  // A campaign stored without a reward learnt from the paper's trace novelty.
  if (!s.contains("reward")) {
    if (a.given.count("reward") && a.reward != "paper")
      conflict("reward", "\"paper\"", nlohmann::json(a.reward).dump());
    a.reward = "paper";
  } else {
    take("reward", a.reward, s, "reward");
  }
  take("seed", a.seed, s, "seed");
  take("corpus", a.corpus, s, "corpus_size");
  take("return-every", a.return_every, s, "return_every");
  if (s.contains("accept_any")) {
    const std::string stored = s.at("accept_any").get<bool>() ? "any" : "healthy";
    if (a.given.count("accept") && a.accept != stored) conflict("accept", stored, a.accept);
    a.accept = stored;
  }
  if (s.contains("localise")) {
    const bool stored = !s.at("localise").get<bool>();
    if (a.given.count("no-localise") && a.no_localise != stored) conflict("no-localise", "localisation on", "off");
    a.no_localise = stored;
  }
  if (a.given.count("config") && s.contains("configs") && a.configs != s.at("configs").get<std::vector<std::string>>())
    conflict("config", s.at("configs").dump(), nlohmann::json(a.configs).dump());
  // The stored configurations decide the timeout cap below (15 minutes with a compiled one): a
  // resumed compiled campaign (every fuzz slice after the first) calibrated its seed against 60 s
  // and failed "the seed model fails in the worker (timeout)".
  if (!a.given.count("config") && s.contains("configs")) a.configs = s.at("configs").get<std::vector<std::string>>();
  // The operator pool and the inputs are the campaign's own copies: the same paths as at the
  // start may be given again (the command line repeated with --resume), others not.
  auto same_paths = [](const std::vector<std::string>& given, const nlohmann::json& stored) {
    std::vector<std::string> g;
    for (const auto& p : given) g.push_back(fs::absolute(p).lexically_normal().string());
    return stored.is_array() && g == stored.get<std::vector<std::string>>();
  };
  if (a.given.count("ops") && s.contains("operators") &&
      !same_paths(a.op_dirs, s.value("operators_from", nlohmann::json())))
    throw std::invalid_argument("--ops: a resumed campaign keeps the operator pool it started with (its copy in " +
                                tfg::campaign::layout(a.out).operators_dir().string() + ")");
  if (a.given.count("shape"))
    throw std::invalid_argument("--shape: a resumed campaign keeps its inputs (" +
                                tfg::campaign::layout::of<tfg::torch::backend>(a.out).inputs().string() + ")");
  if (a.given.count("inputs") &&
      !same_paths({a.inputs}, nlohmann::json::array({s.value("inputs_from", std::string())})))
    throw std::invalid_argument("--inputs: a resumed campaign keeps its inputs (" +
                                tfg::campaign::layout::of<tfg::torch::backend>(a.out).inputs().string() + ")");
}

}  // namespace

/// `run --shape`: random inputs of the given shapes, in a temporary file the campaign copies
/// into its inputs.pt; the file goes when the command ends.
struct shaped_inputs {
  fs::path file;
  explicit shaped_inputs(const run_args& a) {
    if (a.shapes.empty()) return;
    std::vector<tfg::torch::input_spec> specs;
    for (const auto& s : a.shapes) specs.push_back(tfg::torch::parse_input_spec(s));
    std::string tmpl = (fs::temp_directory_path() / "flowmut-shape-XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0)
      throw std::runtime_error("cannot create a temporary inputs file in " + fs::temp_directory_path().string());
    ::close(fd);
    file = tmpl;
    tfg::torch::save_inputs(tfg::torch::random_inputs(specs, 3, a.seed), file);
  }
  ~shaped_inputs() {
    std::error_code ec;
    if (!file.empty()) fs::remove(file, ec);
  }
  shaped_inputs(const shaped_inputs&) = delete;
  shaped_inputs& operator=(const shaped_inputs&) = delete;
};

namespace {
bool any_compiled(const std::vector<std::string>& configs) {
  return std::any_of(configs.begin(), configs.end(),
                     [](const std::string& c) { return tfg::torch::is_compiled_config(c); });
}
}  // namespace

int campaign_timeout_cap_s(int timeout_s, bool given, const std::vector<std::string>& configs) {
  // A compiled configuration compiles every mutant (a cold Inductor cache: minutes on two cores).
  return !given && any_compiled(configs) ? std::max(timeout_s, 15 * 60) : timeout_s;
}

int run_campaign_command(run_args a, const std::string& self_exe) {
  if (a.resume) take_stored_settings(a);
  const shaped_inputs shaped(a);
  tfg::campaign::options o;
  o.seed_model = a.model;
  o.out_dir = a.out;
  o.inputs_path = shaped.file.empty() ? fs::path(a.inputs) : shaped.file;
  for (const auto& d : default_operator_dirs(a.op_dirs)) o.op_dirs.emplace_back(d);
  o.rounds = a.rounds;
  o.time_budget = std::chrono::milliseconds(static_cast<long long>(a.time_s * 1000));
  o.seed = a.seed;
  o.policy_name = a.policy + (a.ablation == "all" ? "" : "/" + a.ablation);
  o.reward = a.reward;
  o.features = or_throw(tfg::select::parse_ablation(a.ablation));
  o.configs = a.configs;
  o.worker_exe = self_exe;
  // Unless --timeout says otherwise, 15 minutes with a compiled configuration (the timeout is
  // still calibrated on the seed).
  o.timeout_cap = std::chrono::seconds(campaign_timeout_cap_s(a.timeout_s, a.given.count("timeout") > 0, a.configs));
  // A compiled configuration compiles every mutant cold: the seed's first (cold) run is the
  // measure, and a second would compile it again for minutes.
  if (any_compiled(a.configs)) o.calibration_runs = 1;
  o.reruns = a.reruns;
  o.rss_limit_bytes = a.rss_limit_mb * (std::int64_t{1} << 20);
  o.resume = a.resume;
  o.force = a.force;
  o.accept_any = a.accept == "any";
  o.corpus_size = a.corpus;
  o.return_every = a.return_every;
  o.localise = !a.no_localise;
  tfg::select::policy_options po;
  po.alpha = a.alpha;
  po.features = o.features;
  auto policy = or_throw(tfg::select::make_policy(a.policy, po));
  o.policy_spec = {{"policy", a.policy}, {"features", a.ablation}, {"alpha", a.alpha}};

  const bool tty = ::isatty(2) && !std::getenv("NO_COLOR");
  tfg::torch::backend backend;
  campaign_type c(backend, o, std::move(policy));
  std::signal(SIGINT, &on_signal);
  std::signal(SIGTERM, &on_signal);
  std::fprintf(stderr, "flowmut run %s -> %s  (policy %s, seed %llu, %zu rounds%s)\n",
               a.model.empty() ? "(the campaign's seed)" : a.model.c_str(), a.out.c_str(), o.policy_name.c_str(),
               static_cast<unsigned long long>(a.seed), a.rounds, a.resume ? ", resumed" : "");
  auto last_print = std::chrono::steady_clock::now();
  std::size_t last_findings = 0;
  try {
    c.run([&](const tfg::campaign::status& s) {
      if (a.quiet) return;
      if (s.findings > last_findings) {
        if (tty) std::fputs("\r\x1b[K", stderr);
        for (const auto& f : c.database().findings())
          if (f.first_round >= 0 && (static_cast<std::size_t>(f.first_round) + 1 == s.round))
            std::fprintf(stderr, "NEW FINDING %s  %s  (round %lld, reliability %.2f)\n", f.id.c_str(), f.title.c_str(),
                         static_cast<long long>(f.first_round), f.reliability);
        last_findings = s.findings;
      }
      const auto now = std::chrono::steady_clock::now();
      if (tty) {
        std::fprintf(stderr, "\r\x1b[K%s", status_line(s).substr(0, 200).c_str());
      } else if (s.round % 10 == 0 || s.round == s.rounds || now - last_print > std::chrono::seconds(30)) {
        std::fprintf(stderr, "%s\n", status_line(s).c_str());
        last_print = now;
      }
    });
  } catch (const std::exception& e) {
    // Stopped (Ctrl-C, a fuzz job's end of slice) while the seed was being calibrated: the
    // worker's exchange was cut, which is not the seed's failure. Nothing of the rounds is lost.
    if (!g_interrupted) throw;
    std::fprintf(stderr, "\ninterrupted before the first round (%s); continue with --resume\n",
                 tfg::torch::first_line(e.what()).c_str());
    return 130;
  }
  if (tty && !a.quiet) std::fputs("\n", stderr);
  auto& db = c.database();
  std::printf("verdicts:");
  for (const auto& [k, v] : db.verdict_counts()) std::printf(" %s %lld;", k.c_str(), static_cast<long long>(v));
  // A finding that did not reproduce in fresh workers (status "flaky": a hang on a loaded
  // machine, say) is not a claim about the framework: listed apart.
  const auto all = db.findings();
  // Findings that differ only in the state of the culprit's inputs are variants of one defect.
  const auto counts = tfg::campaign::count_row_defects(all);
  const std::size_t flaky = counts.flaky;
  // Configurations that could not take some mutants (an operator the ONNX exporter cannot
  // translate, say): counted and listed, not findings.
  std::map<std::string, std::pair<std::size_t, std::string>> unsupported;
  for (const auto& r : db.rounds()) {
    const auto j = nlohmann::json::parse(r.extra_json.empty() ? "{}" : r.extra_json, nullptr, false);
    if (j.is_discarded() || !j.contains("unsupported")) continue;
    for (const auto& it : j.at("unsupported").items()) {
      auto& [n, first] = unsupported[it.key()];
      if (n++ == 0) first = it.value().get<std::string>();
    }
  }
  for (const auto& [config, u] : unsupported)
    std::printf("\n%s did not run on %zu mutant(s) it does not support (not findings), first: %s", config.c_str(),
                u.first, u.second.c_str());
  std::printf("\nfindings: %zu distinct", counts.variants);
  if (counts.defects != counts.variants) std::printf(" (%zu defects)", counts.defects);
  std::printf("\n");
  for (const auto& f : all)
    if (f.status != "flaky")
      std::printf("  %s  %-12s x%-3lld rel %.2f  %s\n", f.id.c_str(), f.kind.c_str(),
                  static_cast<long long>(f.instances), f.reliability, f.title.c_str());
  if (flaky) {
    std::printf("did not reproduce on reruns (flaky, not findings): %zu\n", flaky);
    for (const auto& f : all)
      if (f.status == "flaky")
        std::printf("  %s  %-12s rel %.2f  %s\n", f.id.c_str(), f.kind.c_str(), f.reliability, f.title.c_str());
  }
  if (g_interrupted) {
    std::printf("interrupted after round %zu; continue with --resume\n", c.progress().round);
    return 130;
  }
  if (c.progress().out_of_time)
    std::printf("time budget (%.0f s) spent after round %zu of %zu; continue with --resume\n", a.time_s,
                c.progress().round - 1, a.rounds);
  // Reduction, reproducers and issue drafts of the findings, within the budget (docs/reproducers.md).
  if (a.reduce_budget_s > 0 && all.size() > flaky) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(a.reduce_budget_s * 1000));
    std::printf("\nreducing the findings (budget %.0f s):\n", a.reduce_budget_s);
    for (const auto& f : all) {
      if (f.status == "flaky") continue;
      const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0 || g_interrupted) {
        std::printf("budget spent: the other findings are not reduced (flowmut reduce DIR/findings/ID)\n");
        break;
      }
      std::fflush(stdout);
      (void)run_reduce_command(tfg::campaign::layout(a.out).finding(f.id).dir().string(), self_exe, a.timeout_s,
                               a.rss_limit_mb > 0 ? a.rss_limit_mb : 8192, default_python(), true, left,
                               /*build_cpp=*/false);  // about a minute each: `flowmut reduce` builds it
    }
  }
  return 0;
}

int run_repro_command(const std::string& dir, const std::string& self_exe, int timeout_s, std::int64_t rss_limit_mb,
                      const std::vector<std::string>& op_dirs) {
  namespace tc = tfg::campaign;
  const auto folder = tc::finding_layout::of<tfg::torch::backend>(dir);
  std::ifstream in(folder.meta());
  const auto meta = nlohmann::json::parse(in, nullptr, false);
  if (meta.is_discarded()) {
    std::cerr << "flowmut repro: " << dir << " is not a finding folder (meta.json, " << folder.mutant_name() << ")\n";
    return 2;
  }
  std::printf("finding %s: %s\n", meta.value("id", "?").c_str(), meta.value("title", "?").c_str());
  // The NaN-propagation rules come from the requirement files of the operator folders.
  tfg::oracle::nan_rules rules;
  {
    tfg::match::symbol_table symbols;
    tfg::torch::backend b;
    std::vector<fs::path> dirs;
    for (const auto& d : default_operator_dirs(op_dirs)) dirs.emplace_back(d);
    const auto pool = tfg::match::load_pool(dirs, symbols, b.externs());
    for (const auto& [op, r] : pool.requirements.nan_rules)
      if (auto rule = tfg::oracle::parse_nan_rule(r)) rules.emplace(op, *rule);
  }
  tfg::torch::backend backend;
  const auto r = tc::replay(backend, dir, self_exe, std::chrono::seconds(timeout_s), rss_limit_mb << 20, rules);
  if (!r.error.empty()) {
    std::cerr << "flowmut repro: " << r.error << "\n";
    return 2;
  }
  const auto& o = r.outcome;
  std::printf("outcome: %s", std::string(tc::to_string(o.exchange.kind)).c_str());
  if (o.exchange.kind == tc::outcome::signaled) {
    std::printf(" (%s)", tc::signal_name(o.exchange.signal).c_str());
    if (auto rep = tc::parse_crash_report(o.exchange.log))
      for (const auto& f : tc::meaningful_frames(rep->frames, 5)) std::printf("\n  at %s", f.c_str());
  }
  for (const auto& f : r.observed) {
    std::printf("\n  %s: %s", f.signature.title().c_str(), f.message.substr(0, 160).c_str());
    if (f.where.localised)
      std::printf("\n    localised to %s (position %lld), inputs %s", f.where.culprit_op.c_str(),
                  static_cast<long long>(f.where.position), f.where.inputs.c_str());
    else if (!f.where.note.empty()) std::printf("\n    not localised: %s", f.where.note.substr(0, 300).c_str());
  }
  if (meta.value("kind", "") == "performance" && o.reply)
    for (const auto& c : o.reply->results) std::printf("\n  %-20s %8.1f ms", c.config.c_str(), c.wall_ms);
  std::printf("\nreproduced: %s%s\n", r.reproduced ? "yes" : "no",
              r.relocalised ? " (localised again: the campaign's localisation had failed on a step, so the finding "
                              "was recorded under the mutation's operator)"
                            : "");
  return r.reproduced ? 0 : 1;
}

int run_summary_command(const std::string& dir) {
  const tfg::campaign::layout files(dir);
  if (!fs::is_regular_file(files.database())) {
    std::cerr << "flowmut summary: " << dir << " is not a campaign folder (no campaign.db)\n";
    return 2;
  }
  auto opened = tfg::campaign::store::open(files.database());
  if (!opened) {
    std::cerr << "flowmut: error: " << opened.error() << "\n";
    return 2;
  }
  auto& db = *opened;
  const auto rounds = db.rounds();
  std::string reward = "?";
  if (const auto st = tfg::campaign::stored_settings(dir)) reward = st->value("reward", std::string("paper"));
  std::printf("campaign %s: seed %s, policy %s, reward %s, %zu rounds recorded\n", dir.c_str(),
              db.meta("seed_model").value_or("?").c_str(), db.meta("policy").value_or("?").c_str(), reward.c_str(),
              rounds.size());
  std::printf("%5s %-9s %-38s %5s %7s %6s %9s  %s\n", "round", "verdict", "operator", "cand", "reward", "accept",
              "exec ms", "site / reason");
  for (const auto& r : rounds) {
    const auto it = r.phase_ms.find("execute");
    std::printf("%5lld %-9s %-38s %5lld %7.3f %6s %9.1f  %s%s%s\n", static_cast<long long>(r.round),
                std::string(to_string(r.verdict)).c_str(), r.op.c_str(), static_cast<long long>(r.candidates), r.reward,
                r.accepted ? "yes" : "", it == r.phase_ms.end() ? 0.0 : it->second, r.site.c_str(),
                r.reason.empty() ? "" : "  ", r.reason.substr(0, 120).c_str());
  }
  std::printf("\nverdicts:");
  for (const auto& [k, v] : db.verdict_counts()) std::printf(" %s %lld;", k.c_str(), static_cast<long long>(v));
  std::printf("\n\nmetrics (round: LIC LPC LSC DFSD signatures API-coverage):\n");
  for (const auto& [round, m] : db.metrics()) {
    auto g = [&](const char* k) {
      auto it = m.find(k);
      return it == m.end() ? 0.0 : it->second;
    };
    std::printf("  %5lld  %.3e %.3e %.3e %.3e %5.0f %5.1f%%\n", static_cast<long long>(round), g("lic"), g("lpc"),
                g("lsc"), g("dfsd"), g("signatures"), 100 * g("api_coverage"));
  }
  std::printf("\nfindings:\n");
  for (const auto& f : db.findings())
    std::printf("  %s  %-12s x%-3lld rel %.2f  round %lld  %s\n    %s\n", f.id.c_str(), f.kind.c_str(),
                static_cast<long long>(f.instances), f.reliability, static_cast<long long>(f.first_round),
                f.title.c_str(), f.message.substr(0, 200).c_str());
  return 0;
}

int run_compare_command(compare_args a, const std::string& self_exe) {
  namespace tc = tfg::campaign;
  // Refuse a bad cell before hours of campaigns.
  for (const auto& name : a.policies) {
    const auto cell = tc::compare_cell::parse(name);
    (void)or_throw(tfg::select::make_policy(cell.policy));
    (void)or_throw(tfg::select::parse_ablation(cell.ablation));
    if (!cell.reward.empty() && cell.reward != "behaviour" && cell.reward != "paper")
      throw std::invalid_argument("--policies " + name + ": unknown reward `" + cell.reward + "` (behaviour, paper)");
  }
  std::vector<tc::compare_row> rows;
  for (const auto& name : a.policies) rows.push_back({name, {}});
  for (const auto& model : a.models) {
    for (std::size_t k = 0; k < a.campaign_seeds; ++k) {
      for (std::size_t p = 0; p < a.policies.size(); ++p) {
        const auto cell = tc::compare_cell::parse(a.policies[p]);
        run_args r;
        r.model = model;
        r.out = (fs::path(a.out) / fs::path(model).stem() / tc::compare_cell::leaf(a.policies[p]) /
                 ("s" + std::to_string(a.seed + k)))
                    .string();
        r.op_dirs = a.op_dirs;
        r.configs = a.configs;
        r.policy = cell.policy;
        r.ablation = cell.ablation;
        if (!cell.reward.empty()) r.reward = cell.reward;
        r.rounds = a.rounds;
        r.seed = a.seed + k;
        r.timeout_s = a.timeout_s;
        r.quiet = true;
        r.resume = a.resume && fs::exists(tc::layout(r.out).state());
        r.force = !r.resume;
        if (r.resume) {
          // A campaign that has its rounds already is read, not resumed (no worker, no seed run).
          auto db = tfg::campaign::store::open(tc::layout(r.out).database());
          if (db && db->rounds().size() > a.rounds) {
            std::fprintf(stderr, "compare: %s: done (%zu rounds), read\n", r.out.c_str(), a.rounds);
            rows[p].campaigns.push_back(tc::figures_of(r.out));
            continue;
          }
        }
        std::fprintf(stderr, "compare: %s with %s, campaign seed %llu (%zu rounds) -> %s\n", model.c_str(),
                     a.policies[p].c_str(), static_cast<unsigned long long>(r.seed), a.rounds, r.out.c_str());
        if (int rc = run_campaign_command(r, self_exe); rc != 0) return rc;
        rows[p].campaigns.push_back(tc::figures_of(r.out));
      }
    }
  }
  const auto title = "flowmut compare: " + std::to_string(a.models.size()) + " seed(s) x " +
                     std::to_string(a.campaign_seeds) + " campaign seed(s), " + std::to_string(a.rounds) + " rounds";
  std::printf("\n%s\nmean ±95%% confidence half-width over each cell's campaigns (Table-7 layout)\n%s", title.c_str(),
              tc::compare_table(rows).c_str());
  std::printf("largest share: the operator chosen most often in each campaign:\n");
  for (const auto& r : rows) {
    std::printf("  %-16s", r.cell.c_str());
    for (const auto& c : r.campaigns) std::printf(" %s(%.0f%%)", c.top_op.c_str(), c.values.at("top_share"));
    std::printf("\n");
  }
  tfg::write_file_atomic(fs::path(a.out) / "compare.json", tc::compare_json(rows).dump(1));
  tc::write_compare_html(fs::path(a.out) / "compare.html", rows, title);
  std::printf("wrote %s and %s\n", (fs::path(a.out) / "compare.json").c_str(),
              (fs::path(a.out) / "compare.html").c_str());
  return 0;
}
