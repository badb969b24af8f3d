// flowmut legality: how well the constraint system separates legal from illegal candidates
// (the paper's Table 6), measured on real seeds. See docs/legality.md.
#include "tfg/campaign/spawn.hpp"
#include "tfg/campaign/fuzz.hpp"
#include "tfg/campaign/generator.hpp"
#include "tfg/dsl/source.hpp"
#include "tfg/match/legality.hpp"
#include "tfg/match/pool.hpp"
#include "tfg/match/pool_info.hpp"
#include "tfg/torch/backend.hpp"
#include "tfg/torch/mutate/infer.hpp"
#include "tfg/torch/oracle/ops_check.hpp"
#include "tfg/torch/execute/worker.hpp"
#include "tfg/util/json_escape.hpp"
#include "tfg/util/text_file.hpp"

#include "commands.hpp"

#include <ATen/Parallel.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>

namespace {

namespace fs = std::filesystem;
namespace tm = tfg::match;
using clock_type = std::chrono::steady_clock;

struct seed_state {
  std::string path;
  tfg::torch::model m;
  tfg::torch::input_set inputs;
  tfg::torch::profile prof;
  std::unique_ptr<tfg::torch::torch_match_adapter> adapter;
  std::vector<tm::edge_summary> summary;  // for the anchor-type view (prefilter_check)
};

enum class label_kind { legal, illegal, crashed, timed_out };

struct label {
  label_kind kind = label_kind::illegal;
  std::string stage;    // the failing check for illegal ones: instantiate | probe stage
  std::string message;  // why (first line)
};

struct sample {
  std::uint32_t op = 0, seed = 0;
  tfg::graph::edge_id anchor{};
  tm::bindings b;
  tm::group_verdicts v;
  bool typed = true;   // the anchor has the rank, dtype and aliasing the summary prefilter asks for
  std::string before;  // why instantiation or inference rejected it before execution, if they did
  label lab;
  double seconds = 0;
};

/// The label of one candidate: instantiate it and run its legality checks (the mutant runs on
/// every profiling input, its deferred constraints hold, every node reading a new value accepts
/// it). Runs in a forked child so that a crash or a hang of the framework costs one label,
/// not the measurement; the reply is one line on a pipe.
struct child {
  tfg::campaign::forked_child proc;
  std::size_t sample = 0;
  clock_type::time_point started;
  std::string reply;
};

std::string first_line(std::string s) {
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

/// Where `op`'s input group failed (`group_verdicts::input_failed`), for the report and the
/// JSON: "file:line:col" of the condition, with `line` its source line read back from the
/// operator's file after ": ".
std::string input_failure(const tm::compiled_operator& op, std::size_t failed, bool line) {
  if (failed >= op.input.size()) return "a parameter outside its range read from the site";
  std::string where = op.input[failed].text;
  if (!line || !op.ast || !op.ast->require_input || failed >= op.ast->require_input->conditions.size()) return where;
  const std::string text = tfg::read_text(op.file);
  const auto src = tfg::dsl::line_index(text).line_text(op.ast->require_input->conditions[failed].loc.line);
  const auto b = src.find_first_not_of(' ');
  return b == std::string_view::npos ? where : where + ": " + std::string(src.substr(b));
}

/// A multi-line message (an overload error with its schemas) on one line, at most 600 bytes.
std::string one_line(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ' ') out += " | ";
    } else {
      out += c;
    }
    if (out.size() >= 600) break;
  }
  return out;
}

/// The operator's declared effect on the mutant that runs: "L" when it holds, else "I effect
/// WHY". An operator that preserves values must give the seed's outputs within its tolerance
/// (never below the dtype's rounding, as `flowmut ops check`), or, where it does not, in the
/// float64 reference within its tolerance (never below float64's): the campaign's metamorphic
/// check reports a mutant only when both differ (the worker, tfg/torch/execute/worker.hpp), so a
/// rewrite whose bf16 rounding differs from the seed's is legal, one whose values differ is
/// not. One that changes values must change some output on some profiling input (a parameter
/// "changed" to its current value, a reduction swapped for itself, computes the seed again).
std::string effect_failure(const seed_state& s, const tfg::torch::mutant& mu, const tm::compiled_operator& op) {
  namespace iv = tfg::torch::ivalue;
  if (mu.probe.outputs.size() != s.prof.outputs.size()) return "I effect the mutant returns a different number of runs";
  bool same = true;
  std::string native_excess;
  for (std::size_t i = 0; i < s.prof.outputs.size(); ++i) {
    if (op.preserves_values && native_excess.empty()) {
      const auto [atol, rtol] = tfg::torch::value_claim_tolerance(op, s.prof.outputs[i]);
      const double e = iv::excess(mu.probe.outputs[i], s.prof.outputs[i], atol, rtol);
      if (e > 0) {
        char buf[200];
        std::snprintf(buf, sizeof buf,
                      "claims to preserve values but profiling input %zu differs by %.3g beyond atol=%g rtol=%g", i + 1,
                      e, atol, rtol);
        native_excess = buf;
      }
    }
    same = same && iv::excess(mu.probe.outputs[i], s.prof.outputs[i], 0.0, 0.0, true) <= 0;
  }
  if (!native_excess.empty()) {
    const auto mine = tfg::torch::run_config("float64_reference", mu.graph_model, s.inputs);
    const auto theirs = tfg::torch::run_config("float64_reference", s.m, s.inputs);
    if (!mine.ok() || !theirs.ok())
      return "I effect " + native_excess +
             " (and the float64 reference cannot decide: " + first_line(mine.ok() ? theirs.error : mine.error) + ")";
    const auto w64 = tfg::torch::float64_excess(mine, theirs, op.atol.value_or(0.0), op.rtol.value_or(0.0));
    if (w64.worst.first > 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ", and by %.3g beyond atol=%g rtol=%g in the float64 reference", w64.worst.first,
                    w64.atol, w64.rtol);
      return "I effect " + native_excess + buf;
    }
    return "L float64 " + native_excess + ", not in the float64 reference";
  }
  if (!same) return "L";
  if (!op.preserves_values) return "I effect no effect: every output equals the seed's on every profiling input";
  // A value-preserving operator's effect is in the graph (a detach, a view, a copy the
  // configurations compile differently), which a run cannot see: legal.
  return "L";
}

/// The label of an instantiated candidate: the probe, then the declared effect.
std::string label_after(const seed_state& s, tfg::torch::mutant& mu, const tm::compiled_operator& op,
                        const tm::bindings& b, tm::symbol_table& symbols, const tm::requirement_table& req,
                        tm::workspace& ws) {
  try {
    if (auto f = tfg::torch::check_mutant(mu, *s.adapter, op, b, symbols, req, s.inputs, ws))
      return "I " + std::string(tm::name(f->stage)) + " " + first_line(f->message);
    return effect_failure(s, mu, op);
  } catch (const std::exception& e) {
    return "I exception " + first_line(e.what());
  }
}

/// The candidate's verdict before execution ("B accepted", "B internal WHY", "B output WHY":
/// instantiation and `static_check` on inferred shapes and dtypes), a newline, then its label.
std::string label_candidate(const seed_state& s, const tm::compiled_operator& op, const tm::bindings& b,
                            tm::symbol_table& symbols, const tm::requirement_table& req) {
  tm::workspace ws;
  std::string before = "B accepted\n";
  try {
    auto made = tfg::torch::instantiate(s.m, *s.adapter, op, b, symbols, ws, &s.inputs);
    if (auto* f = std::get_if<tfg::torch::mutation_failure>(&made))
      return "B internal cannot be instantiated\nI instantiate " + one_line(f->message);
    auto& mu = std::get<tfg::torch::mutant>(made);
    const auto f = tfg::torch::static_check(mu, *s.adapter, op, b, symbols, req, ws);
    before =
        "B " + (f ? std::string(tm::name(f->stage)) + " " + first_line(f->message) : std::string("accepted")) + "\n";
    return before + label_after(s, mu, op, b, symbols, req, ws);
  } catch (const std::exception& e) {
    return before + "I exception " + first_line(e.what());
  }
}

std::string pct(double x) {
  if (std::isnan(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * x);
  return buf;
}

}  // namespace

int run_legality_command(const legality_args& a) {
  at::set_num_threads(1);  // the children fork from this process: no thread pool may be running
  tm::symbol_table symbols;
  auto context = std::make_shared<tfg::torch::extern_context>();
  const auto dirs_s = default_operator_dirs(a.op_dirs);
  const std::vector<fs::path> dirs(dirs_s.begin(), dirs_s.end());
  auto pool = tm::load_pool(dirs, symbols, tfg::torch::torch_externs(context));
  for (const auto& d : pool.diagnostics) std::cerr << d;
  if (!pool.ok()) {
    std::cerr << "flowmut: " << pool.errors << " error(s) in the operator files\n";
    return 1;
  }
  tfg::torch::backend be;
  const auto unavailable = tm::keep_available(pool, [&](std::string_view d) { return be.device_available(d); });
  const auto& ops = pool.operators;

  // Seeds: the models given, and the .pt files of folders given (inputs files excluded).
  const auto paths = tfg::campaign::collect_seeds(a.models);

  // Every seed's pre-filter candidates: the pairs whose pattern matches, per operator.
  std::vector<std::unique_ptr<seed_state>> seeds;
  std::vector<std::vector<std::pair<std::uint32_t, tfg::graph::edge_id>>> pool_of(ops.size());
  std::uint64_t pairs = 0;
  const auto t0 = clock_type::now();
  for (const auto& p : paths) {
    auto s = std::make_unique<seed_state>();
    s->path = p.string();
    try {
      s->m = be.load(p);
      s->inputs = be.seed_inputs(s->m, p, {});
      s->prof = be.profile(s->m, s->inputs);
    } catch (const std::exception& e) {
      std::cerr << "flowmut legality: " << p.string() << ": skipped: " << first_line(e.what()) << "\n";
      continue;
    }
    s->adapter = std::make_unique<tfg::torch::torch_match_adapter>(s->m, s->prof, symbols);
    s->summary = tm::summarize(*s->adapter);
    *context = {&s->m, &s->prof};
    auto set = tm::construct(*s->adapter, std::span<const tm::compiled_operator>(ops),
                             {.seed = a.seed, .record_pairs = true, .keep_candidates = false, .use_prefilter = false});
    pairs += set.pairs.size();
    const auto si = static_cast<std::uint32_t>(seeds.size());
    for (const auto& r : set.pairs)
      if (r.stage != tm::reject_stage::pattern && r.stage != tm::reject_stage::prefilter)
        pool_of[r.op].push_back({si, r.anchor});
    seeds.push_back(std::move(s));
  }
  if (seeds.empty()) throw std::invalid_argument("none of the seed models could be profiled");
  std::uint64_t prefilter_total = 0;
  std::vector<std::uint64_t> sizes;
  for (const auto& v : pool_of) {
    sizes.push_back(v.size());
    prefilter_total += v.size();
  }
  std::mt19937_64 rng(a.seed);
  const auto drawn = tm::stratified_sample(std::span<const std::uint64_t>(sizes), a.sample, rng);
  std::size_t strata = 0;
  for (auto n : sizes) strata += n > 0;
  std::printf(
      "flowmut legality: %zu seeds, %zu operators (%zu with pre-filter candidates; %zu skipped: their device is "
      "absent); %llu pairs, %llu pre-filter candidates; %zu drawn (stratified by operator, seed %llu) in %.1f s\n",
      seeds.size(), ops.size(), strata, unavailable, static_cast<unsigned long long>(pairs),
      static_cast<unsigned long long>(prefilter_total), drawn.size(), static_cast<unsigned long long>(a.seed),
      std::chrono::duration<double>(clock_type::now() - t0).count());
  std::fflush(stdout);

  // Bindings and group verdicts of each drawn candidate, decided before any execution.
  std::vector<sample> samples;
  samples.reserve(drawn.size());
  tm::workspace ws;
  for (const auto& d : drawn) {
    sample x;
    x.op = d.stratum;
    const auto [si, e] = pool_of[d.stratum][d.index];
    x.seed = si;
    x.anchor = e;
    const auto& s = *seeds[si];
    *context = {&s.m, &s.prof};
    const auto& op = ops[x.op];
    if (!tm::match_pattern(op, *s.adapter, e, x.b, ws)) continue;  // cannot happen: the pattern matched above
    tm::splitmix64 prng(a.seed ^ (static_cast<std::uint64_t>(tfg::graph::index(e)) << 24) ^ (std::uint64_t{x.op} << 1) ^
                        (std::uint64_t{si} << 48));
    // The parameters as candidate construction chooses them (redrawn while the constraints
    // decided at construction reject them); the groups are then judged on that choice.
    (void)tm::evaluate_constraints(op, *s.adapter, x.b, prng, ws, a.param_draws);
    x.v = tm::judge_groups(op, *s.adapter, x.b, ws);
    x.typed = tm::prefilter_check(op.pre, s.summary[tfg::graph::index(e)]) == tm::reject_stage::accepted;
    samples.push_back(std::move(x));
  }

  // Labels, `jobs` children at a time.
  const int jobs = std::max(1, a.jobs);
  std::vector<child> running;
  std::size_t next = 0, done = 0;
  auto reap = [&](child& c, bool timed_out) {
    auto& x = samples[c.sample];
    x.seconds = std::chrono::duration<double>(clock_type::now() - c.started).count();
    const int status = tfg::campaign::reap(c.proc, timed_out);
    if (!timed_out && !c.reply.empty() && c.reply[0] == 'B') {
      // the verdict before execution, then the label
      const auto nl = c.reply.find('\n');
      const std::string b = first_line(c.reply.substr(2));  // "STAGE WHY"
      c.reply = nl == std::string::npos ? std::string() : c.reply.substr(nl + 1);
      const auto sp = b.find(' ');
      const std::string stage = b.substr(0, sp);
      x.before = sp == std::string::npos ? "" : b.substr(sp + 1);
      if (stage == "internal") x.v.internal = false;
      if (stage == "output") x.v.output = false;
    }
    if (timed_out) {
      x.lab = {label_kind::timed_out, "timeout", "no reply within " + std::to_string(a.timeout_s) + " s"};
    } else if (!c.reply.empty() && c.reply[0] == 'L') {
      // "L", or "L float64 WHY": legal in the float64 reference only
      x.lab = {label_kind::legal, c.reply.rfind("L float64 ", 0) == 0 ? "float64" : "",
               c.reply.size() > 10 ? first_line(c.reply.substr(10)) : ""};
    } else if (!c.reply.empty() && c.reply[0] == 'I') {
      const auto sp = c.reply.find(' ', 2);
      x.lab = {label_kind::illegal, c.reply.substr(2, sp == std::string::npos ? std::string::npos : sp - 2),
               sp == std::string::npos ? "" : first_line(c.reply.substr(sp + 1))};
      while (!x.lab.message.empty() && x.lab.message.back() == ' ') x.lab.message.pop_back();
    } else {
      x.lab = {label_kind::crashed, "crash",
               WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                   : "exited " + std::to_string(WEXITSTATUS(status)) + " without a label"};
    }
    ++done;
    if (!a.quiet && ::isatty(2) && (done % 50 == 0 || done == samples.size())) {
      std::fprintf(stderr, "\rlabelled %zu of %zu", done, samples.size());
      if (done == samples.size()) std::fprintf(stderr, "\n");
    }
  };
  while (done < samples.size()) {
    while (static_cast<int>(running.size()) < jobs && next < samples.size()) {
      std::fflush(stdout);
      std::fflush(stderr);
      const auto& x = samples[next];
      const auto& s = *seeds[x.seed];
      *context = {&s.m, &s.prof};
      auto proc =
          tfg::campaign::fork_call([&] { return label_candidate(s, ops[x.op], x.b, symbols, pool.requirements); });
      running.push_back({proc, next++, clock_type::now(), {}});
    }
    std::vector<pollfd> pf;
    for (const auto& c : running) pf.push_back({c.proc.fd, POLLIN, 0});
    ::poll(pf.data(), pf.size(), 200);
    for (std::size_t i = running.size(); i-- > 0;) {
      auto& c = running[i];
      bool finished = false;
      if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        const auto n = ::read(c.proc.fd, buf, sizeof buf);
        if (n > 0) c.reply.append(buf, static_cast<std::size_t>(n));
        else finished = true;  // EOF: the child exited (or died)
      }
      const bool late = std::chrono::duration<double>(clock_type::now() - c.started).count() > a.timeout_s;
      if (finished || late) {
        reap(c, !finished && late);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
  *context = {};

  // The table.
  std::size_t legal = 0, crashed = 0, timed_out = 0;
  for (const auto& x : samples) {
    legal += x.lab.kind == label_kind::legal;
    crashed += x.lab.kind == label_kind::crashed;
    timed_out += x.lab.kind == label_kind::timed_out;
  }
  std::map<std::string, std::size_t> why;
  for (const auto& x : samples)
    if (x.lab.kind != label_kind::legal) {
      std::string k = x.lab.stage;
      if (k == "output" && x.lab.message.find("does not run") != std::string::npos) k = "does not run";
      else if (k == "output" && x.lab.message.find("rejects its new input") != std::string::npos)
        k = "R(v) of a reader";
      else if (k == "output" || k == "internal") k = "deferred constraint";
      else if (k == "effect") k = x.lab.message.rfind("no effect", 0) == 0 ? "no effect" : "values not preserved";
      ++why[k];
    }
  std::string reasons;
  for (const auto& [k, n] : why) reasons += (reasons.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  std::size_t not_instantiated = 0, inferred = 0;
  for (const auto& x : samples) {
    if (x.before.empty()) continue;
    if (x.before.rfind("cannot be instantiated", 0) == 0) ++not_instantiated;
    else ++inferred;
  }
  std::size_t legal64 = 0;
  for (const auto& x : samples) legal64 += x.lab.kind == label_kind::legal && x.lab.stage == "float64";
  std::printf(
      "\n%zu candidates labelled in the reference (op by op, CPU): %zu legal (%zu of them value-preserving "
      "within the tolerance only in the float64 reference), %zu illegal (%s; %zu crashed, %zu timed out) in %.1f s\n\n",
      samples.size(), legal, legal64, samples.size() - legal, reasons.c_str(), crashed, timed_out,
      std::chrono::duration<double>(clock_type::now() - t0).count());
  std::printf(
      "Decided before execution (counted in the groups below): %zu cannot be instantiated (internal), %zu "
      "refuted by shapes and dtypes inferred on meta tensors (internal or output)\n\n",
      not_instantiated, inferred);
  std::printf("%-18s %9s %9s %6s %6s %6s %6s %9s %9s %9s %9s\n", "constraints", "retention", "LMR", "TP", "FN", "FP",
              "TN", "precision", "recall", "false-rej", "leakage");
  std::array<tm::confusion, tm::ablations.size()> table{};
  for (const auto& x : samples)
    for (std::size_t k = 0; k < tm::ablations.size(); ++k)
      table[k].add(tm::retains(tm::ablations[k], x.v), x.lab.kind == label_kind::legal);
  for (std::size_t k = 0; k < tm::ablations.size(); ++k) {
    const auto& c = table[k];
    std::printf("%-18s %9s %9s %6llu %6llu %6llu %6llu %9s %9s %9s %9s\n", std::string(tm::ablations[k].name).c_str(),
                pct(c.retention()).c_str(), pct(c.legal_rate()).c_str(), static_cast<unsigned long long>(c.tp),
                static_cast<unsigned long long>(c.fn), static_cast<unsigned long long>(c.fp),
                static_cast<unsigned long long>(c.tn), pct(c.precision()).c_str(), pct(c.recall()).c_str(),
                pct(c.false_rejection()).c_str(), pct(c.leakage()).c_str());
  }
  std::printf(
      "(positive = rejected; TP rejected illegal, FN retained illegal, FP rejected legal, TN retained legal; "
      "leakage = FN / retained)\n");
  {
    // The same candidates seen as a typed pattern would draw them: only those whose anchor
    // has the rank, dtype and aliasing the operator's anchor-only input conditions ask for
    // (the summary prefilter, run 0). Not the measure above: those guards are input
    // constraints here, and a candidate they reject counts as a rejection.
    tm::confusion typed{};
    std::size_t typed_legal = 0, n = 0;
    for (const auto& x : samples)
      if (x.typed) {
        ++n;
        typed_legal += x.lab.kind == label_kind::legal;
        typed.add(tm::retains(tm::ablations[0], x.v), x.lab.kind == label_kind::legal);
      }
    std::printf(
        "Anchor-typed view: %zu of %zu candidates have an anchor of the rank, dtype and aliasing their "
        "operator's input conditions on the anchor ask for; %zu of them legal (%s); full constraints retain %s "
        "of them at LMR %s\n",
        n, samples.size(), typed_legal, pct(n ? double(typed_legal) / double(n) : 0.0).c_str(),
        pct(typed.retention()).c_str(), pct(typed.legal_rate()).c_str());
  }

  // What leaks and what is rejected wrongly under the full system, by operator: the list to
  // work from when constraints are to be tightened or loosened.
  auto by_operator = [&](bool leaks) {
    std::map<std::string, std::pair<std::size_t, std::string>> per;
    for (const auto& x : samples) {
      const bool kept = tm::retains(tm::ablations[0], x.v), ok = x.lab.kind == label_kind::legal;
      if (leaks ? (kept && !ok) : (!kept && ok)) {
        auto& [n, example] = per[ops[x.op].name];
        if (n++ == 0)
          example = leaks ? x.lab.stage + ": " + x.lab.message
                          : std::string("rejected by ") +
                                (x.v.input_failed ? "input (" + input_failure(ops[x.op], *x.v.input_failed, true) + ")"
                                 : !x.v.internal  ? "internal"
                                                  : "output") +
                                " on " + fs::path(seeds[x.seed]->path).filename().string();
      }
    }
    return per;
  };
  for (bool leaks : {true, false}) {
    const auto per = by_operator(leaks);
    if (per.empty()) continue;
    std::printf("\n%s under full constraints, by operator:\n",
                leaks ? "Illegal candidates retained (FN)" : "Legal candidates rejected (FP)");
    for (const auto& [name, v] : per) {
      std::string ex = v.second;
      if (ex.size() > 150) ex = ex.substr(0, 147) + "...";
      std::printf("  %-40s %4zu  %s\n", name.c_str(), v.first, ex.c_str());
    }
  }

  if (!a.json.empty()) {
    std::ofstream out(a.json);
    out << std::boolalpha << "{\"seeds\":[";
    for (std::size_t i = 0; i < seeds.size(); ++i) {
      out << (i ? "," : "");
      tfg::json::write_string(out, seeds[i]->path);
    }
    out << "],\"sample\":" << a.sample << ",\"seed\":" << a.seed << ",\"prefilter_candidates\":" << prefilter_total
        << ",\"table\":[";
    for (std::size_t k = 0; k < tm::ablations.size(); ++k) {
      const auto& c = table[k];
      out << (k ? "," : "") << "{\"constraints\":";
      tfg::json::write_string(out, tm::ablations[k].name);
      out << ",\"tp\":" << c.tp << ",\"fn\":" << c.fn << ",\"fp\":" << c.fp << ",\"tn\":" << c.tn << "}";
    }
    out << "],\"candidates\":[";
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& x = samples[i];
      const auto& op = ops[x.op];
      const auto& s = *seeds[x.seed];
      out << (i ? ",\n" : "\n") << "{\"operator\":";
      tfg::json::write_string(out, op.name);
      out << ",\"seed\":";
      tfg::json::write_string(out, fs::path(s.path).filename().string());
      out << ",\"anchor\":";
      tfg::json::write_string(out, s.m.graph.data(x.anchor).name);
      out << ",\"anchor_kind\":";
      {
        const auto& runs = s.adapter->profile(x.anchor).runs;
        tfg::json::write_string(out, runs.empty() ? "unprofiled" : std::string(tfg::state::name(runs.front().kind)));
      }
      out << ",\"params\":{";
      for (std::size_t k = 0; k < op.params.size(); ++k) {
        out << (k ? "," : "");
        tfg::json::write_string(out, op.params[k].name);
        out << ":";
        tfg::json::write_string(out, tfg::campaign::attr_text(x.b.params[k]));
      }
      out << "},\"input\":" << x.v.input << ",\"internal\":" << x.v.internal << ",\"output\":" << x.v.output
          << ",\"input_at\":";
      tfg::json::write_string(out, x.v.input_failed ? input_failure(op, *x.v.input_failed, false) : "");
      out << ",\"anchor_typed\":" << x.typed << ",\"before_execution\":";
      tfg::json::write_string(out, x.before);
      out << ",\"legal\":" << (x.lab.kind == label_kind::legal) << ",\"why\":";
      tfg::json::write_string(out, x.lab.stage.empty() ? "" : x.lab.stage + ": " + x.lab.message);
      out << ",\"seconds\":" << x.seconds << "}";
    }
    out << "\n]}\n";
    if (!out) throw std::runtime_error(a.json + ": cannot write");
    std::printf("\nwrote %s\n", a.json.c_str());
  }
  return 0;
}
