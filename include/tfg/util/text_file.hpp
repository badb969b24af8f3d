#pragma once
/// \file
/// Reading a whole text file (logs, generated scripts, drafts) for display or inspection.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tfg {

/// The content of `p`; empty when it does not exist or cannot be read.
[[nodiscard]] inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace tfg
