#pragma once
/// \file
/// TFG_ASSERT: internal consistency checks for conditions the caller is responsible for
/// (preconditions of cheap queries, postconditions of algorithms).
///
/// Contract: TFG_ASSERT(cond, msg) evaluates `cond` only when TFG_ENABLE_ASSERTS is non-zero;
/// a false condition prints `msg`, the condition text and the location to stderr and aborts.
/// TFG_ENABLE_ASSERTS defaults to 1 without NDEBUG and to 0 with it; define it to override.
/// Errors a caller can trigger with well-formed but wrong input are reported with exceptions or
/// error values instead, never with TFG_ASSERT.

#include <cstdio>
#include <cstdlib>

#ifndef TFG_ENABLE_ASSERTS
#ifdef NDEBUG
#define TFG_ENABLE_ASSERTS 0
#else
#define TFG_ENABLE_ASSERTS 1
#endif
#endif

namespace tfg::detail {

[[noreturn]] inline void assert_failed(const char* cond, const char* msg, const char* file, int line) noexcept {
  std::fprintf(stderr, "%s:%d: tfg assertion `%s' failed: %s\n", file, line, cond, msg);
  std::abort();
}

}  // namespace tfg::detail

#if TFG_ENABLE_ASSERTS
#define TFG_ASSERT(cond, msg) \
  ((cond) ? static_cast<void>(0) : ::tfg::detail::assert_failed(#cond, msg, __FILE__, __LINE__))
#else
// sizeof keeps the operands "used" so release builds do not warn about variables that only
// feed assertions, without evaluating anything.
#define TFG_ASSERT(cond, msg) static_cast<void>(sizeof(!(cond)))
#endif
