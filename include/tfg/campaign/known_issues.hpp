#pragma once
/// \file
/// Known issues: findings a framework's tracker already has. A data file (`known-issues/*.json`,
/// one JSON array per file) maps a finding's signature fields and a message pattern to an
/// upstream issue; a finding that matches is listed as known (with the issue), not as new, in
/// findings.jsonl, findings.sarif and report.html. TorchFuzz does the same with its
/// IGNORE_PATTERNS, each citing an issue.
///
/// An entry:
///   {"issue": "pytorch/pytorch#123456", "url": "https://github.com/pytorch/pytorch/issues/123456",
///    "title": "...", "status": "open" | "closed" | "fixed in 2.16" | "not filed: ...",
///    "match": {"kind": "numeric", "config_b": "inductor", "op": "aten::relu_",
///              "message": "regex (ECMAScript, searched)", "title": "regex"}}
/// Every field of `match` that is given must match (kind, config_a, config_b and op exactly;
/// message and title as a regex found anywhere); an empty `match` is refused. Errors name the
/// file and the entry.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/store.hpp"

namespace tfg::campaign {

struct known_issue {
  std::string issue, url, title, status;
  std::string kind, config_a, config_b, op;  ///< exact; empty: any
  std::string message_text, title_text;      ///< the patterns as written
  std::regex message, title_re;
  std::string file;  ///< where it was read, for messages
};

/// Reads one known-issues file. Throws std::runtime_error naming the file and the entry.
[[nodiscard]] inline std::vector<known_issue> read_known_issues(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot open the known-issues file");
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw std::runtime_error(file.string() + ": not a JSON array of known issues");
  std::vector<known_issue> out;
  std::size_t n = 0;
  for (const auto& e : j) {
    ++n;
    const auto where = file.string() + ": entry " + std::to_string(n);
    if (!e.is_object() || !e.contains("issue") || !e.contains("match") || !e.at("match").is_object())
      throw std::runtime_error(where + ": needs \"issue\" and a \"match\" object");
    known_issue k;
    k.file = file.string();
    k.issue = e.value("issue", "");
    k.url = e.value("url", "");
    k.title = e.value("title", "");
    k.status = e.value("status", "");
    const auto& m = e.at("match");
    k.kind = m.value("kind", "");
    k.config_a = m.value("config_a", "");
    k.config_b = m.value("config_b", "");
    k.op = m.value("op", "");
    k.message_text = m.value("message", "");
    k.title_text = m.value("title", "");
    if (k.kind.empty() && k.config_a.empty() && k.config_b.empty() && k.op.empty() && k.message_text.empty() &&
        k.title_text.empty())
      throw std::runtime_error(where + " (" + k.issue + "): an empty \"match\" would match every finding");
    try {
      if (!k.message_text.empty()) k.message = std::regex(k.message_text, std::regex::ECMAScript);
      if (!k.title_text.empty()) k.title_re = std::regex(k.title_text, std::regex::ECMAScript);
    } catch (const std::regex_error& err) {
      throw std::runtime_error(where + " (" + k.issue + "): bad pattern: " + err.what());
    }
    out.push_back(std::move(k));
  }
  return out;
}

/// Every `*.json` file of `dir` (sorted by name); a missing folder is no known issues.
[[nodiscard]] inline std::vector<known_issue> read_known_issue_dir(const std::filesystem::path& dir) {
  std::vector<known_issue> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto more = read_known_issues(f);
    out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return out;
}

[[nodiscard]] inline bool matches(const known_issue& k, const finding_row& f) {
  if (!k.kind.empty() && k.kind != f.kind) return false;
  if (!k.config_a.empty() && k.config_a != f.config_a) return false;
  if (!k.config_b.empty() && k.config_b != f.config_b) return false;
  if (!k.op.empty() && k.op != f.culprit_op) return false;
  if (!k.message_text.empty() && !std::regex_search(f.message, k.message)) return false;
  if (!k.title_text.empty() && !std::regex_search(f.title, k.title_re)) return false;
  return true;
}

/// The first known issue `f` matches, or nullptr.
[[nodiscard]] inline const known_issue* known_issue_of(const std::vector<known_issue>& known, const finding_row& f) {
  for (const auto& k : known)
    if (matches(k, f)) return &k;
  return nullptr;
}

/// The "known" field of a findings.jsonl row.
[[nodiscard]] inline nlohmann::json known_json(const known_issue& k) {
  return {{"issue", k.issue}, {"url", k.url}, {"title", k.title}, {"status", k.status}};
}

}  // namespace tfg::campaign
