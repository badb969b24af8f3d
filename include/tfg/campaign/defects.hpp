#pragma once
/// \file
/// Findings grouped into defects by mechanism (docs/oracle.md, "One defect, its variants").
///
/// A finding's signature names the state class of its culprit's inputs ("f32 r4 channels_last
/// nan"), so one framework defect reached on inputs of several classes is several findings:
/// oneDNN's relu NaN (docs/findings.md F1) was three over resnet18, efficientad and
/// mobilenet_v3_small. A *defect* is the set of findings that share everything but that class:
/// the kind (and symptom), the configuration pair, the culprit operator, its dtype and device,
/// and the normalised detail (an exception's message, a crash's frames). Its findings are its
/// *variants*. Counts of distinct defects are of these groups, and only of groups with a
/// reproduced variant: a finding whose reruns never showed it again (`flaky`, e.g. a hang that a
/// loaded machine made) is listed apart, never counted as a defect.
///
/// What the grouping would wrongly merge: two unrelated defects of one operator under one pair
/// with the same symptom, told apart only by the input layout (a channels_last bug and a
/// separate strided bug of the same convolution). Its variants stay listed, each with its own
/// reproducer, so a maintainer can split them; what it never merges is two operators, two
/// configuration pairs, two kinds, or two exception messages.
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

namespace tfg::campaign {

/// The mechanism of a finding key (`finding_signature::key()`: "kind|a|b|op|dtype|device|detail"
/// then "|inputs" when the culprit's input class is known, '|' and '\' escaped with '\'): the
/// key without its eighth field, the input class.
[[nodiscard]] inline std::string mechanism_of(std::string_view key) {
  int bars = 0;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '\\') {
      ++i;  // an escaped character
      continue;
    }
    if (key[i] == '|' && ++bars == 7) return std::string(key.substr(0, i));
  }
  return std::string(key);
}

/// 16 lowercase hex digits of XXH3-64 of the mechanism, prefixed "d": a defect's stable id.
[[nodiscard]] inline std::string defect_id(std::string_view mechanism) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "d%016llx",
                static_cast<unsigned long long>(XXH3_64bits(mechanism.data(), mechanism.size())));
  return std::string(buf, 17);
}

/// One defect: its mechanism and its variants (the findings that share it), in input order.
template <class T>
struct defect_group {
  std::string id, mechanism;
  std::vector<T> variants;
  bool reproduced = false;  ///< some variant is not flaky: a defect counted as one
};

/// Groups `items` by the mechanism of `key_of(item)`, in order of each group's first item;
/// `flaky_of(item)` says whether an item's reruns never showed it again. A group is
/// `reproduced` when one of its variants is not flaky.
template <class T, class KeyOf, class FlakyOf>
[[nodiscard]] std::vector<defect_group<T>> group_defects(const std::vector<T>& items, KeyOf key_of, FlakyOf flaky_of) {
  std::vector<defect_group<T>> out;
  std::map<std::string, std::size_t> at;
  for (const auto& item : items) {
    auto mech = mechanism_of(key_of(item));
    auto [it, fresh] = at.emplace(mech, out.size());
    if (fresh) out.push_back({defect_id(mech), std::move(mech), {}, false});
    auto& g = out[it->second];
    g.variants.push_back(item);
    g.reproduced = g.reproduced || !flaky_of(item);
  }
  return out;
}

/// The counts a summary line shows: defects with a reproduced variant, their variants, and
/// findings that never reproduced.
struct defect_counts {
  std::size_t defects = 0, variants = 0, flaky = 0;
};

template <class T, class FlakyOf>
[[nodiscard]] defect_counts count_defects(const std::vector<defect_group<T>>& groups, FlakyOf flaky_of) {
  defect_counts c;
  for (const auto& g : groups) {
    if (g.reproduced) ++c.defects;
    for (const auto& v : g.variants) {
      if (flaky_of(v)) ++c.flaky;
      else ++c.variants;
    }
  }
  return c;
}

/// The counts of stored findings: rows with a `key` and a `status` ("flaky" when no rerun showed
/// them again), such as `finding_row`.
template <class Row>
[[nodiscard]] defect_counts count_row_defects(const std::vector<Row>& rows) {
  const auto flaky = [](const Row& r) { return r.status == "flaky"; };
  return count_defects(group_defects(
                           rows, [](const Row& r) { return r.key; }, flaky),
                       flaky);
}

/// "3 defects (5 variants), 2 not reproduced (flaky)".
[[nodiscard]] inline std::string describe(const defect_counts& c) {
  std::string s = std::to_string(c.defects) + (c.defects == 1 ? " defect" : " defects");
  if (c.variants != c.defects) s += " (" + std::to_string(c.variants) + " variants)";
  if (c.flaky) s += ", " + std::to_string(c.flaky) + " not reproduced (flaky)";
  return s;
}

}  // namespace tfg::campaign
