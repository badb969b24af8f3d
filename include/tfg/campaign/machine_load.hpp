#pragma once
/// \file
/// How busy the machine is, for timeouts that follow the load (docs/campaign.md, "Timeouts").
///
/// A campaign calibrates its per-mutant timeout on the seed (10 x the seed's time). When other
/// jobs start afterwards (the other campaigns of a `flowmut fuzz --jobs 2`, a build), a mutant
/// as fast as the seed takes longer in wall time, and a fixed timeout turns that into a `hang`
/// finding. The load factor is the Linux 1-minute load average (runnable and uninterruptible
/// tasks, /proc/loadavg) over the online cores, at least 1: roughly how many times slower a
/// CPU-bound process runs now than on an idle machine. A timeout is the calibrated one times
/// the factor now over the factor at calibration (never less than calibrated).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <string>

#include <unistd.h>

namespace tfg::campaign {

/// The 1-minute load average in the text of /proc/loadavg ("0.52 0.58 0.59 1/467 12345"), or
/// nullopt when it does not start with a number.
[[nodiscard]] inline std::optional<double> parse_loadavg(const std::string& text) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == 0 || !std::isfinite(v) || v < 0) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// Load over cores, at least 1, from a load average and a core count.
[[nodiscard]] inline double load_factor(double loadavg, long cores) {
  return std::max(1.0, loadavg / static_cast<double>(std::max(1L, cores)));
}

/// This machine's load factor now (1 where /proc/loadavg cannot be read).
[[nodiscard]] inline double machine_load_factor() {
  std::ifstream in("/proc/loadavg");
  std::string text;
  std::getline(in, text);
  const auto avg = parse_loadavg(text);
  return avg ? load_factor(*avg, ::sysconf(_SC_NPROCESSORS_ONLN)) : 1.0;
}

/// A calibrated time scaled by how much busier the machine is now than at calibration.
[[nodiscard]] inline double load_scaled(double calibrated, double factor_at_calibration, double factor_now) {
  return calibrated * std::max(1.0, factor_now / std::max(1.0, factor_at_calibration));
}

}  // namespace tfg::campaign
