#pragma once
/// \file
/// `flowmut compare`: policies (and rewards, and the paper's feature ablations) run on the same
/// seeds with K campaign seeds per cell, read back as figures per campaign and summarised as
/// mean and 95% confidence interval per policy (Student's t over the campaigns of a cell), in
/// the layout of the paper's Table 7, as text, JSON and an HTML page with plots.
///
/// A cell is named `POLICY[/ABLATION][@REWARD]`: `linucb`, `linucb/no-P`, `linucb@paper`,
/// `queue`. Backend-neutral: it reads each campaign's store and state.json.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/report.hpp"
#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/util/atomic_file.hpp"
#include "tfg/util/text_file.hpp"

namespace tfg::campaign {

/// A compare cell's name split: policy, feature ablation ("all" when none), reward ("" when
/// none: the campaign's default).
struct compare_cell {
  std::string policy, ablation = "all", reward;
  [[nodiscard]] static compare_cell parse(const std::string& name) {
    compare_cell c;
    std::string rest = name;
    if (const auto at = rest.find('@'); at != std::string::npos) {
      c.reward = rest.substr(at + 1);
      rest.resize(at);
    }
    if (const auto slash = rest.find('/'); slash != std::string::npos) {
      c.ablation = rest.substr(slash + 1);
      rest.resize(slash);
    }
    c.policy = rest;
    return c;
  }
  /// A folder name for the cell ("linucb_no-P", "linucb@paper").
  [[nodiscard]] static std::string leaf(std::string name) {
    for (auto& ch : name)
      if (ch == '/') ch = '_';
    return name;
  }
};

/// What one campaign achieved, read from its folder.
struct campaign_figures {
  std::map<std::string, double> values;  ///< by metric name (compare_metrics)
  std::string top_op;                    ///< the operator chosen most often
};

/// The metrics of the comparison, in table order: name, header, how to print, whether larger
/// is better (for the reading), a description.
struct compare_metric {
  const char* name;
  const char* header;
  const char* format;  ///< printf format of the mean
  const char* what;
};
inline constexpr compare_metric compare_metrics[] = {
    {"lic", "LIC", "%.3e", "layer input coverage (metrics.md)"},
    {"lpc", "LPC", "%.3e", "layer parameter coverage"},
    {"lsc", "LSC", "%.3e", "layer sequence coverage"},
    {"dfsd", "DFSD", "%.3e", "data-flow state diversity"},
    {"signatures", "sigs", "%.1f", "distinct data-flow signatures"},
    {"api_coverage", "API%", "%.1f", "share of the universe's operator kinds exercised (%)"},
    {"kinds", "kinds", "%.1f", "operator kinds the campaign ran (seeds included)"},
    {"input_classes", "inclass", "%.1f", "distinct (operator kind, input state classes): behaviours"},
    {"legal", "legal%", "%.1f", "legal share of executed rounds (%)"},
    {"findings", "finds", "%.2f", "distinct findings (not flaky)"},
    {"findings_per_hour", "f/h", "%.2f", "distinct findings per hour of campaign time"},
    {"first_finding_min", "1st(min)", "%.2f", "minutes to the first finding after round 0 (campaigns with one)"},
    {"operators", "ops", "%.1f", "distinct operators chosen"},
    {"top_share", "top%", "%.1f", "largest share of the rounds one operator took (%)"},
    {"minutes", "min", "%.1f", "campaign time (minutes)"},
};

/// Mean and the half-width of its 95% confidence interval (Student's t, n - 1 degrees of
/// freedom; 0 for n < 2). NaN entries are left out (a metric a campaign does not have).
struct interval {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double half = 0;
  std::size_t n = 0;
};

/// The 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1).
[[nodiscard]] inline double t975(std::size_t df) {
  static constexpr double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                     2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                     2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return std::numeric_limits<double>::infinity();
  if (df <= std::size(table)) return table[df - 1];
  if (df <= 40) return 2.021;
  if (df <= 60) return 2.000;
  if (df <= 120) return 1.980;
  return 1.960;
}

[[nodiscard]] inline interval mean_ci95(const std::vector<double>& xs) {
  interval r;
  double sum = 0;
  for (double x : xs)
    if (std::isfinite(x)) sum += x, ++r.n;
  if (r.n == 0) return r;
  r.mean = sum / static_cast<double>(r.n);
  if (r.n < 2) return r;
  double ss = 0;
  for (double x : xs)
    if (std::isfinite(x)) ss += (x - r.mean) * (x - r.mean);
  const double sd = std::sqrt(ss / static_cast<double>(r.n - 1));
  r.half = t975(r.n - 1) * sd / std::sqrt(static_cast<double>(r.n));
  return r;
}

/// The figures of the campaign in `dir` (campaign.db, state.json).
[[nodiscard]] inline campaign_figures figures_of(const std::filesystem::path& dir) {
  campaign_figures f;
  const layout files(dir);
  auto opened = store::open(files.database());
  if (!opened) throw std::runtime_error(files.database().string() + ": " + opened.error());
  const auto& db = *opened;
  const auto t = db.summarise();
  auto& v = f.values;
  for (const char* k : {"lic", "lpc", "lsc", "dfsd", "signatures"}) v[k] = t.metrics.count(k) ? t.metrics.at(k) : 0.0;
  v["api_coverage"] = 100 * (t.metrics.count("api_coverage") ? t.metrics.at("api_coverage") : 0.0);
  v["legal"] = 100 * t.legal_rate;
  v["minutes"] = t.minutes;
  // Operators chosen, the largest share, the first finding after round 0.
  std::map<std::string, std::size_t> chosen;
  std::size_t picked = 0;
  double minutes = 0, first = std::numeric_limits<double>::quiet_NaN();
  for (const auto& r : db.rounds()) {
    for (const auto& [k, ms] : r.phase_ms)
      if (k.find('.') == std::string::npos) minutes += ms / 60000;
    if (r.round == 0 || r.arm < 0 || r.op.empty()) continue;
    ++chosen[r.op];
    ++picked;
    if (r.verdict == round_verdict::finding && !std::isfinite(first)) first = minutes;
  }
  std::size_t top = 0;
  for (const auto& [op, n] : chosen)
    if (n > top) top = n, f.top_op = op;
  v["operators"] = static_cast<double>(chosen.size());
  v["top_share"] = picked ? 100.0 * static_cast<double>(top) / static_cast<double>(picked) : 0.0;
  v["first_finding_min"] = first;
  std::size_t findings = 0;
  for (const auto& row : db.findings())
    if (row.status != "flaky") ++findings;
  v["findings"] = static_cast<double>(findings);
  v["findings_per_hour"] = t.minutes > 0 ? static_cast<double>(findings) / (t.minutes / 60) : 0.0;
  // Behaviours from the checkpoint (campaigns of a flowmut before the behaviour reward: NaN).
  v["kinds"] = v["input_classes"] = std::numeric_limits<double>::quiet_NaN();
  std::error_code ec;
  if (std::filesystem::exists(files.state(), ec)) {
    const auto st = nlohmann::json::parse(read_text(files.state()), nullptr, false);
    if (!st.is_discarded() && st.contains("behaviour")) {
      const auto& b = st.at("behaviour");
      if (b.contains("kinds")) v["kinds"] = static_cast<double>(b.at("kinds").size());
      if (b.contains("input_classes")) v["input_classes"] = static_cast<double>(b.at("input_classes").size());
    }
  }
  return f;
}

/// The campaigns of one cell on every seed, and their summary.
struct compare_row {
  std::string cell;
  std::vector<campaign_figures> campaigns;
  [[nodiscard]] interval of(const std::string& metric) const {
    std::vector<double> xs;
    for (const auto& c : campaigns) {
      const auto it = c.values.find(metric);
      xs.push_back(it == c.values.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
    }
    return mean_ci95(xs);
  }
};

/// "mean ±half" with the metric's format ("-" when no campaign has it).
[[nodiscard]] inline std::string format_interval(const compare_metric& m, const interval& i) {
  if (i.n == 0) return "-";
  char a[48], b[48];
  std::snprintf(a, sizeof a, m.format, i.mean);
  if (i.n < 2) return a;
  std::snprintf(b, sizeof b, m.format, i.half);
  return std::string(a) + " ±" + b;
}

/// The comparison table, one row per cell, one column per metric ("mean ±95% half-width").
[[nodiscard]] inline std::string compare_table(const std::vector<compare_row>& rows) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> head{"policy", "n"};
  for (const auto& m : compare_metrics) head.emplace_back(m.header);
  cells.push_back(head);
  for (const auto& r : rows) {
    std::vector<std::string> line{r.cell, std::to_string(r.campaigns.size())};
    for (const auto& m : compare_metrics) line.push_back(format_interval(m, r.of(m.name)));
    cells.push_back(line);
  }
  std::vector<std::size_t> width(head.size(), 0);
  for (const auto& l : cells)
    for (std::size_t i = 0; i < l.size(); ++i) width[i] = std::max(width[i], l[i].size());
  std::string out;
  for (const auto& l : cells) {
    for (std::size_t i = 0; i < l.size(); ++i) {
      out += l[i];
      if (i + 1 < l.size()) out += std::string(width[i] - l[i].size() + 2, ' ');
    }
    out += '\n';
  }
  return out;
}

[[nodiscard]] inline nlohmann::json compare_json(const std::vector<compare_row>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json row = {{"cell", r.cell}, {"campaigns", r.campaigns.size()}};
    for (const auto& m : compare_metrics) {
      const auto i = r.of(m.name);
      row[m.name] = {{"mean", i.n ? nlohmann::json(i.mean) : nlohmann::json()}, {"ci95", i.half}, {"n", i.n}};
    }
    nlohmann::json tops = nlohmann::json::array();
    for (const auto& c : r.campaigns) tops.push_back(c.top_op);
    row["top_operator"] = tops;
    j.push_back(row);
  }
  return j;
}

/// A dot per cell with its 95% interval as a whisker (inline SVG).
[[nodiscard]] inline std::string interval_chart(const compare_metric& m, const std::vector<compare_row>& rows) {
  const double W = 460, row = 22, T = 28, L = 150, R = 60;
  const double H = T + row * static_cast<double>(std::max<std::size_t>(rows.size(), 1)) + 24;
  double lo = 0, hi = 0;
  for (const auto& r : rows) {
    const auto i = r.of(m.name);
    if (i.n == 0) continue;
    lo = std::min(lo, i.mean - i.half);
    hi = std::max(hi, i.mean + i.half);
  }
  if (hi <= lo) hi = lo + 1;
  auto px = [&](double x) { return L + (x - lo) / (hi - lo) * (W - L - R); };
  std::ostringstream s;
  s << "<svg class=\"plot compare-" << m.name << "\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << " " << H << "\"><text x=\"4\" y=\"16\" class=\"t\">"
    << esc(m.header) << ": " << esc(m.what) << "</text>";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const auto i = rows[k].of(m.name);
    const double y = T + row * static_cast<double>(k) + 10;
    const char* color = palette[k % std::size(palette)];
    s << "<text x=\"" << L - 8 << "\" y=\"" << y + 4 << "\" class=\"l\" text-anchor=\"end\">" << esc(rows[k].cell)
      << "</text>";
    if (i.n == 0) continue;
    s << "<line class=\"ci\" data-cell=\"" << esc(rows[k].cell) << "\" x1=\"" << px(i.mean - i.half) << "\" y1=\"" << y
      << "\" x2=\"" << px(i.mean + i.half) << "\" y2=\"" << y << "\" stroke=\"" << color << "\" stroke-width=\"2\"/>"
      << "<circle cx=\"" << px(i.mean) << "\" cy=\"" << y << "\" r=\"4\" fill=\"" << color << "\"/><text x=\""
      << W - R + 4 << "\" y=\"" << y + 4 << "\" class=\"l\">" << num(i.mean, 4) << "</text>";
  }
  const double yb = H - 14;
  s << "<line x1=\"" << L << "\" y1=\"" << yb - 8 << "\" x2=\"" << W - R << "\" y2=\"" << yb - 8 << "\" class=\"ax\"/>"
    << "<text x=\"" << L << "\" y=\"" << yb + 4 << "\" class=\"l\">" << num(lo) << "</text><text x=\"" << W - R
    << "\" y=\"" << yb + 4 << "\" class=\"l\" text-anchor=\"end\">" << num(hi) << "</text></svg>";
  return s.str();
}

/// OUT/compare.html: the table and a plot per metric (means with 95% intervals).
inline void write_compare_html(const std::filesystem::path& file, const std::vector<compare_row>& rows,
                               const std::string& title) {
  std::ostringstream h;
  h << "<!doctype html><html><head><meta charset=\"utf-8\"><title>" << esc(title) << "</title><style>" << style
    << "</style></head><body><h1>" << esc(title) << "</h1>"
    << "<p>Mean over the campaigns of each cell (seeds x campaign seeds) with the half-width of its 95% confidence "
       "interval (Student's t).</p><table><tr><th>policy</th><th>n</th>";
  for (const auto& m : compare_metrics) h << "<th title=\"" << esc(m.what) << "\">" << esc(m.header) << "</th>";
  h << "</tr>";
  for (const auto& r : rows) {
    h << "<tr><td>" << esc(r.cell) << "</td><td>" << r.campaigns.size() << "</td>";
    for (const auto& m : compare_metrics) h << "<td>" << esc(format_interval(m, r.of(m.name))) << "</td>";
    h << "</tr>";
  }
  h << "</table><div class=\"plots\">";
  for (const auto& m : compare_metrics) h << interval_chart(m, rows);
  h << "</div></body></html>\n";
  write_file_atomic(file, h.str());
}

}  // namespace tfg::campaign
