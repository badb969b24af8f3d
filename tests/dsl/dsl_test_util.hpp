#pragma once
// Helpers shared by the DSL test suites: locating data files through TFG_SOURCE_DIR, reading
// them, and extracting fenced code blocks from markdown.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#ifndef TFG_SOURCE_DIR
#error "compile the DSL tests with -DTFG_SOURCE_DIR=\"<path of the source tree>\""
#endif

namespace tfg_test {

inline std::filesystem::path source_dir() { return std::filesystem::path(TFG_SOURCE_DIR); }

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return std::move(os).str();
}

/// Files under `dir` ending in `ext`, sorted; recursive, skipping the folders in `skip`.
inline std::vector<std::filesystem::path> files_with_extension(const std::filesystem::path& dir, std::string_view ext,
                                                               const std::vector<std::string>& skip = {}) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(dir)) return out;
  for (auto it = std::filesystem::recursive_directory_iterator(dir);
       it != std::filesystem::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && std::find(skip.begin(), skip.end(), it->path().filename().string()) != skip.end()) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && it->path().extension() == ext) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Splits text into lines (without terminators).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      if (!cur.empty() && cur.back() == '\r') cur.pop_back();
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

struct fenced_block {
  std::string text;
  int first_line;  // 1-based line of the first line inside the fence
};

/// The bodies of the ```<lang> blocks of a markdown text.
inline std::vector<fenced_block> fenced_blocks(const std::string& md, const std::string& lang) {
  std::vector<fenced_block> out;
  const auto ls = lines_of(md);
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (ls[i] != "```" + lang) continue;
    fenced_block b{"", static_cast<int>(i) + 2};
    for (++i; i < ls.size() && ls[i] != "```"; ++i) b.text += ls[i] + "\n";
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace tfg_test
