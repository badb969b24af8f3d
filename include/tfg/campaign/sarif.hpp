#pragma once
/// \file
/// A campaign's findings as SARIF 2.1.0 (`DIR/findings.sarif`, written by `flowmut report`), for
/// CI systems and code-scanning dashboards. One run; one rule per finding kind
/// (`tfg::oracle::finding_kind`); one result per finding. A result's location is the finding's
/// standalone reproducer (`findings/ID/repro.py`, else the mutant), relative to the base id
/// `CAMPAIGN` (the campaign folder as a file URI); its logical location is the localised
/// operator. `partialFingerprints["flowmutSignature/v1"]` is the finding's deduplication key, so
/// a dashboard merges the same defect across campaigns the way flowmut does. Backend-neutral.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tfg/campaign/layout.hpp"
#include "tfg/campaign/store.hpp"
#include "tfg/oracle/finding.hpp"
#include "tfg/version.hpp"

namespace tfg::campaign {

/// The URI of the SARIF 2.1.0 schema, as `$schema` names it (not fetched by anyone here).
inline constexpr std::string_view sarif_schema_uri = "https://json.schemastore.org/sarif-2.1.0.json";

namespace sarif_detail {

/// `file://` URI of an absolute folder, with a trailing slash (RFC 8089; octets outside the
/// unreserved set and '/' percent-encoded).
[[nodiscard]] inline std::string folder_uri(const std::filesystem::path& folder) {
  std::string out = "file://";
  for (unsigned char c : std::filesystem::absolute(folder).lexically_normal().generic_string()) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  if (out.back() != '/') out += '/';
  return out;
}

/// What each kind means, for the rule's description.
[[nodiscard]] inline std::string_view describe(oracle::finding_kind k) {
  using oracle::finding_kind;
  switch (k) {
    case finding_kind::crash: return "A configuration was killed by a signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL).";
    case finding_kind::abort: return "A configuration aborted (SIGABRT or a failed internal check).";
    case finding_kind::exception: return "A framework exception in one configuration only.";
    case finding_kind::hang: return "A configuration did not answer within its timeout, confirmed by a rerun.";
    case finding_kind::out_of_memory: return "A configuration ran out of memory.";
    case finding_kind::nan_inf: return "NaN or Inf in one configuration only.";
    case finding_kind::numeric:
      return "Finite values differ between two equivalent configurations beyond the tolerance.";
    case finding_kind::state: return "Dtype, shape, structure or RNG state differs between two configurations.";
    case finding_kind::metamorphic: return "A metamorphic relation is violated.";
    case finding_kind::performance: return "A performance anomaly between configurations.";
    case finding_kind::memory: return "A memory-safety error.";
    case finding_kind::nan_vanished:
      return "A NaN entered an operator documented to propagate it and did not come out.";
    case finding_kind::export_failure: return "An exporter (torch.onnx.export) fails on a model eager execution runs.";
  }
  return "";
}

[[nodiscard]] inline std::string rule_name(std::string_view kind) {
  std::string out;
  bool up = true;
  for (char c : kind) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

[[nodiscard]] inline nlohmann::json artifact(const std::string& rel) {
  return {{"uri", rel}, {"uriBaseId", "CAMPAIGN"}};
}

}  // namespace sarif_detail

/// The SARIF log of the findings stored for the campaign in `dir`. `metas[i]` is the parsed
/// `meta.json` of `findings[i]` (an empty object where there is none); it adds the
/// localisation position and the reduction to the result's properties.
[[nodiscard]] inline nlohmann::json sarif_log(const std::filesystem::path& dir,
                                              const std::vector<finding_row>& findings,
                                              const std::vector<nlohmann::json>& metas, std::size_t rounds) {
  namespace fs = std::filesystem;
  using namespace sarif_detail;
  nlohmann::json rules = nlohmann::json::array();
  for (auto k : oracle::all_finding_kinds) {
    const std::string id(oracle::to_string(k));
    rules.push_back({{"id", id},
                     {"name", rule_name(id)},
                     {"shortDescription", {{"text", std::string(describe(k))}}},
                     {"defaultConfiguration", {{"level", "error"}}},
                     {"properties", {{"tags", {"deep-learning-framework", "differential-testing"}}}}});
  }
  auto rule_index = [](std::string_view kind) -> int {
    int i = 0;
    for (auto k : oracle::all_finding_kinds) {
      if (oracle::to_string(k) == kind) return i;
      ++i;
    }
    return -1;
  };
  nlohmann::json results = nlohmann::json::array();
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const auto& f = findings[i];
    const auto& meta = i < metas.size() ? metas[i] : nlohmann::json::object();
    const std::string rel = fs::path(f.dir).generic_string() + "/";
    const auto folder = layout(dir).finding_at(f.dir);
    const bool has_repro = fs::is_regular_file(folder.repro_py());
    nlohmann::json location = {
        {"physicalLocation",
         {{"artifactLocation",
           artifact(rel + (has_repro ? std::string(finding_layout::repro_py_name()) : folder.mutant_name()))}}}};
    if (!f.culprit_op.empty()) location["logicalLocations"] = {{{"name", f.culprit_op}, {"kind", "function"}}};
    nlohmann::json related = nlohmann::json::array();
    int related_id = 0;
    for (const std::string& file :
         {std::string(finding_layout::repro_cpp_name()), std::string(finding_layout::issue_name()),
          folder.mutant_name(), folder.seed_name(), folder.inputs_name()}) {
      if (!fs::is_regular_file(folder.dir() / file) || (!has_repro && file == folder.mutant_name())) continue;
      related.push_back({{"id", related_id++},
                         {"physicalLocation", {{"artifactLocation", artifact(rel + file)}}},
                         {"message", {{"text", file}}}});
    }
    nlohmann::json props = {{"findingId", f.id},           {"configA", f.config_a},
                            {"configB", f.config_b},       {"dtype", f.dtype},
                            {"device", f.device},          {"status", f.status},
                            {"firstRound", f.first_round}, {"lastRound", f.last_round},
                            {"reliability", f.reliability}};
    if (meta.contains("localisation")) props["localisation"] = meta["localisation"];
    if (meta.contains("reduction")) props["reduction"] = meta["reduction"];
    std::string text = f.title;
    if (!f.message.empty() && f.message != f.title) text += "\n" + f.message;
    nlohmann::json r = {{"ruleId", f.kind},
                        {"kind", "fail"},
                        {"level", f.status == "flaky" ? "warning" : "error"},
                        {"message", {{"text", text}}},
                        {"locations", {location}},
                        {"partialFingerprints", {{"flowmutSignature/v1", f.key}}},
                        {"occurrenceCount", std::max<std::int64_t>(1, f.instances)},
                        {"properties", std::move(props)}};
    if (const int ri = rule_index(f.kind); ri >= 0) r["ruleIndex"] = ri;
    if (!related.empty()) r["relatedLocations"] = std::move(related);
    results.push_back(std::move(r));
  }
  nlohmann::json run = {
      {"tool",
       {{"driver",
         {{"name", "flowmut"},
          {"version", std::string(tfg::version)},
          {"semanticVersion", std::string(tfg::version)},
          {"rules", std::move(rules)}}}}},
      {"originalUriBaseIds",
       {{"CAMPAIGN", {{"uri", folder_uri(dir)}, {"description", {{"text", "the campaign folder"}}}}}}},
      {"invocations", {{{"executionSuccessful", true}, {"properties", {{"rounds", rounds}}}}}},
      {"results", std::move(results)}};
  return {{"$schema", std::string(sarif_schema_uri)}, {"version", "2.1.0"}, {"runs", {std::move(run)}}};
}

}  // namespace tfg::campaign
