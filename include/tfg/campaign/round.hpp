#pragma once
/// \file
/// What one campaign round concluded about its mutant (docs/campaign.md, "Verdicts of a
/// round"), with the only spelling of the names the store, the summary and reports use.
#include <cstdint>
#include <optional>
#include <string_view>

namespace tfg::campaign {

/// What one round concluded (docs/campaign.md, "Verdicts of a round").
enum class round_verdict : std::uint8_t {
  legal,         ///< ran in the reference configuration, legal, no new finding
  finding,       ///< at least one new finding
  illegal,       ///< the reference configuration fails with an ordinary error, or R(v) fails on the probe
  rejected,      ///< the replacement could not be instantiated or exported, or its inferred shapes refute a constraint
  no_candidate,  ///< every candidate of the seed has been tried
  worker_failure,  ///< the worker could not load the exported mutant (a tool defect)
};

inline constexpr round_verdict all_round_verdicts[] = {round_verdict::legal,        round_verdict::finding,
                                                       round_verdict::illegal,      round_verdict::rejected,
                                                       round_verdict::no_candidate, round_verdict::worker_failure};

[[nodiscard]] constexpr std::string_view to_string(round_verdict v) noexcept {
  switch (v) {
    case round_verdict::legal: return "legal";
    case round_verdict::finding: return "finding";
    case round_verdict::illegal: return "illegal";
    case round_verdict::rejected: return "rejected";
    case round_verdict::no_candidate: return "no_candidate";
    case round_verdict::worker_failure: return "worker_failure";
  }
  return "?";
}

[[nodiscard]] constexpr std::optional<round_verdict> parse_round_verdict(std::string_view s) noexcept {
  for (auto v : all_round_verdicts)
    if (to_string(v) == s) return v;
  return std::nullopt;
}

/// True for rounds whose mutant ran in the reference configuration (legal, finding, illegal).
[[nodiscard]] constexpr bool is_executed(round_verdict v) noexcept {
  return v == round_verdict::legal || v == round_verdict::finding || v == round_verdict::illegal;
}

}  // namespace tfg::campaign
