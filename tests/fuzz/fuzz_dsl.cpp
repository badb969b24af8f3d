// libFuzzer harness over the DSL front end: parse (prescan, X3 grammar, folding), check and
// compile to matchers, as `ops check` and `--ops` run them. A crash, a sanitizer report, an
// internal error (E000) or an input slower than libFuzzer's -timeout is a failure.
//
//   tests/fuzz/run.sh 600        build with clang (ASan + UBSan + libFuzzer) and fuzz 10 minutes
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tfg/dsl/parse.hpp"
#include "tfg/match/compile.hpp"

namespace {

const tfg::match::extern_registry& externs() {
  static const tfg::match::extern_registry r = [] {
    tfg::match::extern_registry x;
    for (const char* name : {"no_inplace_writer", "no_geometry_reader", "kernel_for"})
      x.add(name, [](std::span<const tfg::match::extern_arg>) { return tfg::match::attr_value(true); });
    return x;
  }();
  return r;
}

[[noreturn]] void internal_error(std::string_view where, const std::string& text) {
  std::fprintf(stderr, "internal error (E000) in %.*s:\n%s\n", static_cast<int>(where.size()), where.data(),
               text.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = tfg::dsl::parse(text, "fuzz.tfg");
  for (const auto& d : r.diagnostics) {
    if (d.code == "E000") internal_error("parse/check", r.format_diagnostics());
    if (d.loc.offset > size || d.loc.offset + d.loc.len > size)
      internal_error("a diagnostic's span", r.format_diagnostics());
  }
  (void)r.format_diagnostics();
  if (!r.ok()) return 0;
  tfg::match::symbol_table symbols;
  const auto c = tfg::match::compile(r.ast, symbols, externs());
  for (const auto& d : c.diagnostics)
    if (d.code == "E000") internal_error("compile", tfg::dsl::format(c.diagnostics, r.source));
  return 0;
}
