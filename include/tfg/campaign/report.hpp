#pragma once
/// \file
/// The campaign report (`flowmut report DIR`): a static `DIR/report.html` that opens from disk
/// with no network — the campaign summary, diversity over rounds (LIC, LPC, LSC, DFSD,
/// signatures), rewards over rounds, legality by verdict and reason, the findings table — and
/// one page per finding (`DIR/findings/ID/index.html`: localisation, reduction, reproducer
/// status, issue draft); plus `DIR/findings.jsonl`, one JSON object per finding, and
/// `DIR/findings.sarif` (SARIF 2.1.0, tfg/campaign/sarif.hpp) for CI systems. Plots are
/// inline SVG written here. Backend-neutral: it reads the store and the finding folders.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/sarif.hpp"
#include "tfg/campaign/defects.hpp"
#include "tfg/campaign/fuzz.hpp"
#include "tfg/campaign/known_issues.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/util/atomic_file.hpp"
#include "tfg/util/text_file.hpp"

namespace tfg::campaign {

namespace report_detail {

[[nodiscard]] inline std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

[[nodiscard]] inline std::string num(double v, int digits = 3) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

using tfg::read_text;

using series = std::pair<std::string, std::vector<std::pair<double, double>>>;

inline constexpr const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};

/// A line chart: one polyline per series, axes with their ranges, a legend. `cls` names the
/// svg element (tests find plots by it).
[[nodiscard]] inline std::string line_chart(const std::string& title, const std::vector<series>& data,
                                            const std::string& x_label, const std::string& cls) {
  const double W = 460, H = 220, L = 64, R = 12, T = 28, B = 34;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool any = false;
  for (const auto& [name, pts] : data)
    for (const auto& [x, y] : pts) {
      if (!std::isfinite(y)) continue;
      if (!any) x0 = x1 = x, y0 = y1 = y, any = true;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  y0 = std::min(y0, 0.0);
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  std::ostringstream s;
  s << "<svg class=\"plot " << cls << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\">"
    << "<text x=\"" << L << "\" y=\"16\" class=\"t\">" << esc(title) << "</text>"
    << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" class=\"ax\"/>"
    << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" class=\"ax\"/>"
    << "<text x=\"" << L - 4 << "\" y=\"" << py(y1) + 4 << "\" class=\"l\" text-anchor=\"end\">" << num(y1) << "</text>"
    << "<text x=\"" << L - 4 << "\" y=\"" << py(y0) + 4 << "\" class=\"l\" text-anchor=\"end\">" << num(y0) << "</text>"
    << "<text x=\"" << L << "\" y=\"" << H - B + 14 << "\" class=\"l\">" << num(x0) << "</text>"
    << "<text x=\"" << W - R << "\" y=\"" << H - B + 14 << "\" class=\"l\" text-anchor=\"end\">" << num(x1) << "</text>"
    << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 4 << "\" class=\"l\" text-anchor=\"middle\">" << esc(x_label)
    << "</text>";
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto& [name, pts] = data[i];
    const char* color = palette[i % std::size(palette)];
    std::ostringstream p;
    for (const auto& [x, y] : pts)
      if (std::isfinite(y)) p << num(px(x), 6) << "," << num(py(y), 6) << " ";
    s << "<polyline class=\"series\" data-name=\"" << esc(name) << "\" fill=\"none\" stroke=\"" << color
      << "\" stroke-width=\"1.8\" points=\"" << p.str() << "\"/>";
    if (pts.size() == 1)
      s << "<circle cx=\"" << px(pts[0].first) << "\" cy=\"" << py(pts[0].second) << "\" r=\"3\" fill=\"" << color
        << "\"/>";
    s << "<text x=\"" << W - R - 4 << "\" y=\"" << T + 12 + 13 * static_cast<double>(i)
      << "\" class=\"l\" text-anchor=\"end\" fill=\"" << color << "\">" << esc(name) << "</text>";
  }
  s << "</svg>";
  return s.str();
}

/// Horizontal bars, one per (label, count).
[[nodiscard]] inline std::string bar_chart(const std::string& title,
                                           const std::vector<std::pair<std::string, double>>& bars,
                                           const std::string& cls) {
  const double W = 460, row = 20, T = 28, L = 190;
  const double H = T + row * static_cast<double>(std::max<std::size_t>(bars.size(), 1)) + 10;
  double top = 1;
  for (const auto& [l, v] : bars) top = std::max(top, v);
  std::ostringstream s;
  s << "<svg class=\"plot " << cls << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << " " << H << "\"><text x=\"4\" y=\"16\" class=\"t\">" << esc(title) << "</text>";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    const double w = (W - L - 50) * bars[i].second / top;
    s << "<text x=\"" << L - 6 << "\" y=\"" << y + 13 << "\" class=\"l\" text-anchor=\"end\">"
      << esc(bars[i].first.substr(0, 34)) << "</text><rect class=\"bar\" x=\"" << L << "\" y=\"" << y + 2
      << "\" width=\"" << std::max(w, 1.0) << "\" height=\"" << row - 6 << "\" fill=\""
      << palette[i % std::size(palette)] << "\"/><text x=\"" << L + w + 4 << "\" y=\"" << y + 13 << "\" class=\"l\">"
      << num(bars[i].second, 6) << "</text>";
  }
  s << "</svg>";
  return s.str();
}

inline constexpr const char* style = R"CSS(
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.plots{display:flex;flex-wrap:wrap;gap:12px}
svg.plot{border:1px solid #ddd;background:#fff}svg .t{font-size:13px;font-weight:600}svg .l{font-size:11px}
svg .ax{stroke:#888;stroke-width:1}pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
.ok{color:#2a7a2a;font-weight:600}.bad{color:#b22;font-weight:600}.muted{color:#777}
)CSS";

/// The reason class of a round's reason text: its first clause, numbers masked.
[[nodiscard]] inline std::string reason_class(const std::string& reason) {
  std::string r = reason.substr(0, reason.find_first_of(":(\n"));
  std::string out;
  for (char c : r) out += (c >= '0' && c <= '9') ? 'N' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? std::string("(no reason)") : out;
}

/// The "backend: ..." line a compiled configuration's finding message ends with (which backend
/// breaks, from the worker's aot_eager rerun), without its label; "" when there is none.
[[nodiscard]] inline std::string backend_of(const std::string& message) {
  const auto at = message.find("\nbackend: ");
  if (at == std::string::npos) return {};
  const auto rest = message.substr(at + 10);
  return rest.substr(0, rest.find('\n'));
}

/// The note report pages put under a finding that matches a known upstream issue.
[[nodiscard]] inline std::string known_note(const known_issue& k) {
  return "<br><span class=\"muted\">known: " +
         (k.url.empty() ? esc(k.issue) : "<a href=\"" + esc(k.url) + "\">" + esc(k.issue) + "</a>") + " (" +
         esc(k.status) + ")</span>";
}

}  // namespace report_detail

/// The parsed `meta.json` of each finding folder (`dir / row.dir`); an empty object where there
/// is none or it does not parse.
[[nodiscard]] inline std::vector<nlohmann::json> finding_metas(const std::filesystem::path& dir,
                                                               const std::vector<finding_row>& rows) {
  std::vector<nlohmann::json> metas;
  metas.reserve(rows.size());
  for (const auto& f : rows) {
    std::ifstream in(layout(dir).finding_at(f.dir).meta());
    auto m = nlohmann::json::parse(in, nullptr, false);
    metas.push_back(m.is_object() ? std::move(m) : nlohmann::json::object());
  }
  return metas;
}

/// What write_report wrote.
struct report_result {
  std::filesystem::path html, jsonl, sarif;
  std::size_t findings = 0, rounds = 0, plots = 0;
  std::size_t flaky = 0;  ///< of `findings`: did not reproduce on reruns (not claims about the framework)
};

/// Writes `dir/report.html`, `dir/findings.jsonl`, `dir/findings.sarif` and
/// `dir/findings/ID/index.html` for the campaign in `dir`. Throws std::runtime_error when `dir` holds no campaign
/// store. A finding that matches one of `known` (known_issues.hpp) is listed as known, with its issue.
inline report_result write_report(const std::filesystem::path& dir, const std::vector<known_issue>& known = {}) {
  namespace fs = std::filesystem;
  using namespace report_detail;
  const layout files(dir);
  if (!fs::is_regular_file(files.database()))
    throw std::runtime_error(dir.string() + " is not a campaign folder (no campaign.db)");
  auto opened = store::open(files.database());
  if (!opened) throw std::runtime_error(opened.error());
  const store& db = *opened;
  report_result out;
  const auto rounds = db.rounds();
  const auto findings = db.findings();
  const auto metrics = db.metrics();
  out.rounds = rounds.size();
  out.findings = findings.size();
  out.flaky = static_cast<std::size_t>(
      std::count_if(findings.begin(), findings.end(), [](const auto& f) { return f.status == "flaky"; }));

  // findings.jsonl: the row, plus what the finding folder adds (localisation, reduction).
  std::ostringstream jsonl;
  const auto metas = finding_metas(dir, findings);
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    const auto& meta = metas[i];
    nlohmann::json j = f;
    if (meta.contains("localisation")) j["localisation"] = meta["localisation"];
    if (meta.contains("reduction")) j["reduction"] = meta["reduction"];
    j["defect"] = defect_id(mechanism_of(f.key));
    if (const auto* k = known_issue_of(known, f)) j["known"] = known_json(*k);
    // A compiled configuration's finding: which backend breaks (the worker's aot_eager rerun).
    if (meta.contains("message") && meta["message"].is_string())
      if (auto backend = backend_of(meta["message"].get<std::string>()); !backend.empty())
        j["backend"] = std::move(backend);
    jsonl << j.dump() << "\n";
  }
  out.jsonl = files.findings_jsonl();
  write_file_atomic(out.jsonl, jsonl.str());
  out.sarif = files.findings_sarif();
  write_file_atomic(out.sarif, sarif_log(dir, findings, metas, rounds.size()).dump(2) + "\n");

  // Plots.
  std::vector<std::string> plots;
  std::map<std::string, series> curves;
  for (const auto& [r, values] : metrics)
    for (const auto& [name, v] : values) curves[name].second.emplace_back(static_cast<double>(r), v);
  for (const char* name : {"lic", "lpc", "lsc", "dfsd", "signatures"}) {
    auto it = curves.find(name);
    if (it == curves.end()) continue;
    std::string upper = name;
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    plots.push_back(line_chart(upper + " over rounds", {{upper, it->second.second}}, "round", "diversity"));
  }
  {
    series reward{"reward", {}}, avg{"running mean", {}};
    double sum = 0;
    std::size_t n = 0;
    for (const auto& r : rounds) {
      if (r.arm < 0) continue;
      reward.second.emplace_back(static_cast<double>(r.round), r.reward);
      sum += r.reward;
      ++n;
      avg.second.emplace_back(static_cast<double>(r.round), sum / static_cast<double>(n));
    }
    plots.push_back(line_chart("rewards over rounds", {reward, avg}, "round", "rewards"));
  }
  std::vector<std::pair<std::string, double>> verdicts;
  for (const auto& [k, v] : db.verdict_counts()) verdicts.emplace_back(k, static_cast<double>(v));
  plots.push_back(bar_chart("rounds by verdict", verdicts, "legality"));
  std::map<std::string, double> reasons;
  for (const auto& r : rounds)
    if (r.verdict == round_verdict::illegal || r.verdict == round_verdict::rejected)
      reasons[reason_class(r.reason)] += 1;
  std::vector<std::pair<std::string, double>> top(reasons.begin(), reasons.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (top.size() > 10) top.resize(10);
  if (!top.empty()) plots.push_back(bar_chart("illegal and rejected rounds by reason", top, "legality"));
  out.plots = plots.size();

  // The page.
  const auto t = db.summarise();
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset=\"utf-8\"><title>flowmut report: " << esc(dir.filename().string())
    << "</title><style>" << style << "</style></head><body>";
  h << "<h1>flowmut campaign report</h1><table class=\"summary\">";
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<tr><th>" << esc(k) << "</th><td>" << v << "</td></tr>";
  };
  row("campaign", esc(fs::absolute(dir).string()));
  if (auto s = db.meta("seed_model")) row("seed model", esc(*s));
  if (auto s = db.meta("policy")) row("policy", esc(*s));
  row("rounds", std::to_string(t.rounds) + " (" + std::to_string(t.executed) + " executed, legal rate " +
                    num(t.legal_rate) + ")");
  row("time in rounds", num(t.minutes) + " min");
  std::size_t known_count = 0;
  for (const auto& f : findings) known_count += f.status != "flaky" && known_issue_of(known, f) != nullptr;
  row("findings", esc(describe(count_row_defects(findings))) +
                      (known_count ? " (" + std::to_string(known_count) + " known upstream)" : ""));
  h << "</table>";
  h << "<h2>Findings</h2><table "
       "class=\"findings\"><tr><th>id</th><th>defect</th><th>kind</th><th>culprit</th><th>pair</th><th>rounds</th>"
       "<th>instances</th><th>reliability</th><th>reduced</th><th>repro.py / .cpp</th><th>title</th></tr>";
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    const auto& meta = metas[i];
    std::string reduced = "<span class=\"muted\">not reduced</span>", repro = "<span class=\"muted\">-</span>";
    if (meta.contains("reduction")) {
      const auto& r = meta["reduction"];
      if (r.value("reduced", false))
        reduced = std::to_string(r.value("reduced_nodes", 0)) + " of " + std::to_string(r.value("mutant_nodes", 0));
      auto status = [&](const char* key) {
        const std::string st = r.value(key, "");
        return "<span class=\"" +
               std::string(st == "REPRODUCED" ? "ok"
                           : st == "NOT RUN"  ? "muted"
                                              : "bad") +
               "\">" + esc(st) + "</span>";
      };
      repro = status("repro_py") + "<br><span class=\"muted\">cpp:</span> " + status("repro_cpp");
    }
    h << "<tr class=\"finding" << (f.status == "flaky" ? " flaky" : "") << "\"><td><a href=\"" << esc(f.dir)
      << "/index.html\">" << esc(f.id) << "</a></td><td>" << esc(defect_id(mechanism_of(f.key))) << "</td><td>"
      << esc(f.kind) << "</td><td>" << esc(f.culprit_op) << "</td><td>" << esc(f.config_a) << " vs " << esc(f.config_b)
      << "</td><td>" << f.first_round << "-" << f.last_round << "</td><td>" << f.instances << "</td><td>"
      << num(f.reliability) << "</td><td>" << reduced << "</td><td>" << repro << "</td><td>" << esc(f.title);
    if (const auto* k = known_issue_of(known, f)) h << known_note(*k);
    h << "</td></tr>";
  }
  h << "</table>";
  if (findings.empty()) h << "<p class=\"muted\">No findings.</p>";
  h << "<h2>Diversity, rewards and legality</h2><div class=\"plots\">";
  for (const auto& p : plots) h << p;
  h << "</div><p class=\"muted\">Written by flowmut report; opens from disk, no network. findings.jsonl and "
       "findings.sarif beside it.</p>"
       "</body></html>\n";
  out.html = files.report();
  write_file_atomic(out.html, h.str());

  // One page per finding.
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    const auto& meta = metas[i];
    const auto folder = files.finding_at(f.dir);
    if (!fs::is_directory(folder.dir())) continue;
    std::ostringstream p;
    p << "<!doctype html><html><head><meta charset=\"utf-8\"><title>" << esc(f.id) << "</title><style>" << style
      << "</style></head><body><p><a href=\"../../report.html\">campaign report</a></p><h1>" << esc(f.title) << "</h1>";
    p << "<table>";
    auto prow = [&](const std::string& k, const std::string& v) {
      p << "<tr><th>" << esc(k) << "</th><td>" << v << "</td></tr>";
    };
    prow("id", esc(f.id));
    prow("kind", esc(f.kind));
    prow("configurations", esc(f.config_a) + " vs " + esc(f.config_b));
    prow("rounds", std::to_string(f.first_round) + "-" + std::to_string(f.last_round) + ", " +
                       std::to_string(f.instances) + " instance(s), reliability " + num(f.reliability) + " (" +
                       esc(f.status) + ")");
    prow("message", "<pre>" + esc(f.message) + "</pre>");
    if (meta.contains("localisation")) {
      const auto& l = meta["localisation"];
      std::string st;
      for (const auto& s : l.value("input_states", nlohmann::json::array())) st += esc(s.get<std::string>()) + "<br>";
      prow("localised", l.value("localised", false) ? esc(l.value("operator", std::string())) + " at position " +
                                                          std::to_string(l.value("position", 0))
                                                    : "no: " + esc(l.value("note", std::string())));
      prow("inputs at the operator", st.empty() ? esc(l.value("inputs", std::string())) : st);
    }
    if (meta.contains("reduction")) {
      const auto& r = meta["reduction"];
      prow("reduced graph", r.value("reduced", false)
                                ? std::to_string(r.value("reduced_nodes", 0)) + " of " +
                                      std::to_string(r.value("mutant_nodes", 0)) + " operators (depth " +
                                      std::to_string(r.value("depth", 0)) + ")"
                                : "not reduced");
      const auto link = [&](std::string_view file, std::string_view log) {
        return " (<a href=\"" + std::string(file) + "\">" + std::string(file) + "</a>, <a href=\"" + std::string(log) +
               "\">output</a>)";
      };
      prow("repro.py", esc(r.value("repro_py", std::string())) +
                           link(finding_layout::repro_py_name(), finding_layout::repro_log_name()));
      prow("repro.cpp", esc(r.value("repro_cpp", std::string())) +
                            link(finding_layout::repro_cpp_name(), finding_layout::repro_cpp_log_name()));
    } else {
      prow("reduction", "not made: <code>flowmut reduce " + esc((dir / f.dir).string()) + "</code>");
    }
    p << "</table>";
    const auto issue = read_text(folder.issue());
    if (!issue.empty()) p << "<h2>Issue draft (issue.md)</h2><pre>" << esc(issue) << "</pre>";
    p << "</body></html>\n";
    write_file_atomic(folder.index_html(), p.str());
  }
  return out;
}

/// OUT/report.html for a fuzzing job (or a merge of shards): the totals, the distinct findings
/// with their witnesses, and the units with links to their campaigns' own reports.
/// (Written for flowmut fuzz and flowmut merge: OUT/report.html and OUT/findings.sarif.)
inline void write_fuzz_report(const std::filesystem::path& out, const findings_index& idx,
                              const std::vector<fuzz_unit>& units, const std::string& what,
                              const std::vector<known_issue>& known) {
  namespace fs = std::filesystem;
  using report_detail::esc;
  using report_detail::num;
  std::vector<finding_row> rows;
  for (const auto* f : idx.entries()) rows.push_back(f->job_row());
  std::size_t rounds = 0;
  double seconds = 0;
  for (const auto& u : units) rounds += u.round, seconds += u.seconds;
  write_file_atomic(fuzz_layout(out).findings_sarif(),
                    sarif_log(out, rows, finding_metas(out, rows), rounds).dump(2) + "\n");
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset=\"utf-8\"><title>flowmut " << esc(what) << "</title><style>"
    << report_detail::style << "</style></head><body><h1>flowmut " << esc(what) << "</h1><table class=\"summary\">";
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<tr><th>" << esc(k) << "</th><td>" << v << "</td></tr>";
  };
  row("folder", esc(fs::absolute(out).string()));
  std::set<std::string> seeds;
  for (const auto& u : units) seeds.insert(u.seed.string());
  row("seeds", std::to_string(seeds.size()) + " (" + std::to_string(units.size()) + " campaigns)");
  row("rounds", std::to_string(rounds) + " in " + esc(format_duration(seconds)) + " of campaign time");
  std::size_t known_count = 0;
  for (const auto* f : idx.entries())
    known_count += !indexed_finding::is_flaky(f) && known_issue_of(known, f->job_row()) != nullptr;
  // One defect per mechanism (tfg/campaign/defects.hpp), its reproduced variants under it.
  const auto defects = idx.defects();
  const auto counts = count_defects(defects, &indexed_finding::is_flaky);
  row("findings", esc(describe(counts)) + (known_count ? " (" + std::to_string(known_count) + " known upstream)" : "") +
                      ", " + std::to_string(idx.witnesses()) + " witnesses");
  auto finding_row_html = [&](const indexed_finding* f, const std::string& defect) {
    const auto& r = f->row;
    std::string wit;
    for (const auto& w : f->witnesses) {
      const auto report = fuzz_layout(out).campaign(w.unit).report();
      const bool local = fs::is_regular_file(report);
      wit += (local ? "<a href=\"" + esc(report.lexically_relative(out).generic_string()) + "\">" + esc(w.unit) + "</a>"
                    : esc(w.unit)) +
             " (round " + std::to_string(w.first_round) + ")<br>";
    }
    std::string repro = "<span class=\"muted\">not reduced</span>";
    for (const std::string_view file : {finding_layout::repro_py_name(), finding_layout::issue_name()})
      if (fs::is_regular_file(out / r.dir / file)) {
        if (repro.find("muted") != std::string::npos) repro.clear();
        repro += "<a href=\"" + esc(r.dir) + "/" + std::string(file) + "\">" + std::string(file) + "</a> ";
      }
    h << "<tr class=\"finding" << (indexed_finding::is_flaky(f) ? " flaky" : "") << "\"><td>" << defect << "</td><td>"
      << esc(r.id) << "</td><td>" << esc(r.kind) << "</td><td>" << esc(r.culprit_op) << "</td><td>" << esc(r.config_a)
      << " vs " << esc(r.config_b) << "</td><td>" << esc(f->status()) << "</td><td>" << wit << "</td><td>" << repro
      << "</td><td>" << esc(r.title);
    if (const auto* k = known_issue_of(known, f->job_row())) h << report_detail::known_note(*k);
    h << "</td></tr>";
  };
  const char* head =
      "<tr><th>defect</th><th>finding</th><th>kind</th><th>culprit</th><th>pair</th><th>status</th>"
      "<th>witnesses</th><th>reproducer</th><th>title</th></tr>";
  h << "</table><h2>Defects</h2><p class=\"muted\">Findings that share kind, configuration pair, culprit operator, "
       "dtype, device and detail are one defect; its variants differ in the state of the culprit's inputs.</p>"
       "<table class=\"findings\">"
    << head;
  for (const auto& d : defects) {
    if (!d.reproduced) continue;
    bool first = true;
    for (const auto* f : d.variants) {
      if (indexed_finding::is_flaky(f)) continue;
      finding_row_html(f, first ? esc(d.id) : "<span class=\"muted\">&#x2514; variant</span>");
      first = false;
    }
  }
  h << "</table>";
  if (counts.variants == 0) h << "<p class=\"muted\">No defects.</p>";
  if (counts.flaky) {
    h << "<h2>Not reproduced (flaky)</h2><p class=\"muted\">Findings no rerun showed again (a hang on a loaded machine "
         "is one); not counted as defects.</p><table class=\"findings\">"
      << head;
    for (const auto* f : idx.entries())
      if (indexed_finding::is_flaky(f)) finding_row_html(f, esc(defect_id(mechanism_of(f->row.key))));
    h << "</table>";
  }
  h << "<h2>Campaigns</h2><table><tr><th>campaign</th><th>seed</th><th>rounds</th><th>slices</th><th>time</th>"
       "<th>findings</th><th>state</th></tr>";
  for (const auto& u : units)
    h << "<tr><td>" << esc(u.name) << "</td><td>" << esc(u.seed.filename().string()) << "</td><td>" << u.round
      << "</td><td>" << u.slices << "</td><td>" << esc(format_duration(u.seconds)) << "</td><td>" << u.findings
      << "</td><td>"
      << (u.error.empty() ? (u.done ? "done" : "open") : "<span class=\"bad\">failed: " + esc(u.error) + "</span>")
      << "</td></tr>";
  h << "</table><p class=\"muted\">Written by flowmut; findings.jsonl (the index, witnesses included) and "
       "findings.sarif "
       "beside it.</p></body></html>\n";
  write_file_atomic(fuzz_layout(out).report(), h.str());
}

/// Helpers of report_detail other files use (the report, compare and the tools share these HTML and message helpers);
/// the rest of report_detail is this file's own.
using report_detail::backend_of;
using report_detail::esc;
using report_detail::num;
using report_detail::palette;
using report_detail::style;

}  // namespace tfg::campaign
