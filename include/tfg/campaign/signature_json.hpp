#pragma once
/// One JSON form of a finding's signature (`oracle::finding_signature`): meta.json of a finding
/// folder, the corpus's roots in state.json and the judge's re-reading of recorded findings all
/// go through these two functions.
///
///     {"kind": "numeric", "config_a": "eager_op_by_op", "config_b": "float64_reference",
///      "culprit_op": "aten::conv2d", "dtype": "f32", "device": "cpu", "detail": "",
///      "symptom": "", "inputs": "f32 r4 contiguous"}
///
/// nlohmann's `to_json`/`from_json`, found by argument-dependent lookup (they live in
/// tfg::oracle, next to the type; here rather than in oracle/finding.hpp because tfg::core does
/// not depend on nlohmann-json). `from_json` keeps the target's value for a missing field (set
/// defaults first: an older meta.json has no `detail`), reads the corpus roots' older short keys
/// (`a`, `b`, `op`: state.json before 2026-12-07) and throws `nlohmann::json::other_error` for
/// an unknown kind.
#include <string>

#include <nlohmann/json.hpp>

#include "tfg/oracle/finding.hpp"

namespace tfg::oracle {

inline void to_json(nlohmann::json& j, const finding_signature& s) {
  j = {{"kind", std::string(to_string(s.kind))},
       {"config_a", s.config_a},
       {"config_b", s.config_b},
       {"culprit_op", s.culprit_op},
       {"dtype", s.dtype},
       {"device", s.device},
       {"detail", s.detail},
       {"symptom", s.symptom},
       {"inputs", s.inputs}};
}

inline void from_json(const nlohmann::json& j, finding_signature& s) {
  if (j.contains("kind")) {
    const auto name = j.at("kind").get<std::string>();
    const auto kind = parse_finding_kind(name);
    if (!kind) throw nlohmann::json::other_error::create(501, "unknown finding kind `" + name + "`", &j);
    s.kind = *kind;
  }
  auto read = [&j](std::string& field, const char* key, const char* older = nullptr) {
    if (j.contains(key)) field = j.at(key).get<std::string>();
    else if (older && j.contains(older)) field = j.at(older).get<std::string>();
  };
  read(s.config_a, "config_a", "a");
  read(s.config_b, "config_b", "b");
  read(s.culprit_op, "culprit_op", "op");
  read(s.dtype, "dtype");
  read(s.device, "device");
  read(s.detail, "detail");
  read(s.symptom, "symptom");
  read(s.inputs, "inputs");
}

}  // namespace tfg::oracle
