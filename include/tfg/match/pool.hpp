#pragma once
/// \file
/// The pool loader: every `*.tfg` file under some folders, parsed, checked and compiled into
/// one operator pool and one requirement table.
///
///     tfg::match::symbol_table syms;
///     auto pool = tfg::match::load_pool({"operators"}, syms);
///     if (!pool.ok()) for (auto const& d : pool.diagnostics) std::cerr << d;
///
/// Includes `tfg/dsl/parse.hpp`, which is header-only by default (see there for the
/// separate-parser mode that avoids compiling the grammar in every TU).

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "tfg/dsl/diagnostic.hpp"
#include "tfg/dsl/parse.hpp"
#include "tfg/match/compile.hpp"

namespace tfg::match {

struct pool {
  std::vector<compiled_operator> operators;  ///< in file order (sorted paths), then declaration order
  requirement_table requirements;
  std::vector<std::string> diagnostics;  ///< formatted: "file:line:col: error[E...]: ..." + snippet
  std::size_t files = 0;                 ///< files read
  std::size_t errors = 0;                ///< error diagnostics
  /// Operators `keep_available` took out: their `requires` device is absent here.
  std::vector<compiled_operator> unavailable;
  [[nodiscard]] bool ok() const noexcept { return errors == 0; }
};

/// Moves every operator whose `requires` device `available(device)` denies from
/// `p.operators` to `p.unavailable` (order kept), so that it is skipped rather than executed
/// where its mutation means nothing. Returns the number moved.
template <class Pred>
std::size_t keep_available(pool& p, Pred&& available) {
  std::size_t moved = 0;
  std::vector<compiled_operator> kept;
  kept.reserve(p.operators.size());
  for (auto& op : p.operators) {
    if (!op.requires_device.empty() && !available(std::string_view(op.requires_device))) {
      p.unavailable.push_back(std::move(op));
      ++moved;
    } else {
      kept.push_back(std::move(op));
    }
  }
  p.operators = std::move(kept);
  return moved;
}

namespace detail {
inline bool under_requirements(const std::filesystem::path& rel) {
  for (const auto& part : rel)
    if (part == "requirements") return true;
  return false;
}
inline bool names_extra(const std::filesystem::path& p) {
  for (const auto& part : p)
    if (part == "extra") return true;
  return false;
}
}  // namespace detail

/// Loads every `*.tfg` under `dirs` (recursively, sorted by path; an `extra/` folder below a
/// given folder is skipped unless it is given itself: its operators are opt-in). Files under a
/// `requirements/` folder are read first and contribute `requirement` declarations; the
/// other files contribute operators (and any requirements they declare). A file with parse,
/// check or compile errors contributes nothing; an operator whose name an earlier file
/// already declared is dropped with an E019 diagnostic. A path may also name one `.tfg`
/// file; a missing path or another kind of file is E048, and paths that declare nothing at
/// all are E049. Never throws. O(total size of the files).
[[nodiscard]] inline pool load_pool(const std::vector<std::filesystem::path>& dirs, symbol_table& symbols,
                                    const extern_registry& externs = {}) noexcept {
  pool out;
  try {
    std::vector<std::filesystem::path> req_files, op_files;
    for (const auto& dir : dirs) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir, ec) && dir.extension() == ".tfg") {
        (detail::under_requirements(dir.parent_path()) ? req_files : op_files).push_back(dir);
        continue;
      }
      if (!std::filesystem::is_directory(dir, ec)) {
        out.diagnostics.push_back(
            dir.string() + ": error[E048]: " +
            (std::filesystem::exists(dir, ec) ? "not a folder or a .tfg file\n" : "no such folder or file\n"));
        ++out.errors;
        continue;
      }
      // An `extra/` folder below the given one holds opt-in operators: it is read only when
      // named itself (`--ops operators/extra`), never on the way through `operators/`.
      const bool opted_in = detail::names_extra(dir.lexically_normal());
      for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!opted_in && it->is_directory() && it->path().filename() == "extra") {
          it.disable_recursion_pending();
          continue;
        }
        if (!it->is_regular_file() || it->path().extension() != ".tfg") continue;
        (detail::under_requirements(std::filesystem::relative(it->path(), dir)) ? req_files : op_files)
            .push_back(it->path());
      }
    }
    std::sort(req_files.begin(), req_files.end());
    std::sort(op_files.begin(), op_files.end());
    std::map<std::string, std::string> seen;  // operator -> "file:line:col"
    auto load = [&](const std::filesystem::path& f) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream os;
      os << in.rdbuf();
      ++out.files;
      auto parsed = dsl::parse(os.str(), f.string());
      if (!parsed.ok()) {
        out.diagnostics.push_back(parsed.format_diagnostics());
        for (auto const& d : parsed.diagnostics) out.errors += d.level == dsl::severity::error;
        return;
      }
      auto compiled = compile(parsed.ast, symbols, externs);
      if (!compiled.ok()) {
        out.diagnostics.push_back(dsl::format(compiled.diagnostics, parsed.source));
        for (auto const& d : compiled.diagnostics) out.errors += d.level == dsl::severity::error;
        return;
      }
      std::vector<dsl::diagnostic> dups;
      for (std::size_t i = 0; i < compiled.operators.size(); ++i) {
        auto& op = compiled.operators[i];
        auto const& loc = parsed.ast.operators[i].name.loc;
        std::string const where = f.string() + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
        auto const [it, fresh] = seen.emplace(op.name, where);
        if (!fresh) {
          dups.push_back(dsl::make_error(dsl::errc::duplicate_operator, loc,
                                         "duplicate operator '" + op.name + "' across the pool",
                                         {{"first defined at " + it->second, std::nullopt}}));
          continue;
        }
        out.operators.push_back(std::move(op));
      }
      if (!dups.empty()) {
        out.diagnostics.push_back(dsl::format(dups, parsed.source));
        out.errors += dups.size();
      }
      for (auto& [sym, alts] : compiled.requirements.by_op) {
        auto& dst = out.requirements.by_op[sym];
        for (auto& r : alts) dst.push_back(std::move(r));
      }
      for (auto& [op, rule] : compiled.requirements.nan_rules) out.requirements.nan_rules.emplace(op, rule);
    };
    for (const auto& f : req_files) load(f);
    for (const auto& f : op_files) load(f);
    // Nothing declared at all (an empty folder, files with only a header) is a mistake the
    // user wants to hear about, not "0 of 0 examples".
    if (out.errors == 0 && out.operators.empty() && out.requirements.by_op.empty()) {
      std::string where;
      for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
      out.diagnostics.push_back(where + ": error[E049]: no operator or requirement declaration in " +
                                std::to_string(out.files) + " .tfg file(s)\n");
      ++out.errors;
    }
  } catch (const std::exception& e) {
    try {
      out.diagnostics.push_back(std::string("error[E000]: internal error: ") + e.what() + "\n");
      ++out.errors;
    } catch (...) {
    }
  } catch (...) {
  }
  return out;
}

}  // namespace tfg::match
