#pragma once
/// \file
/// Worker side: a fatal-signal handler that writes a crash report (format: stack.hpp) to fd 2,
/// which worker::spawn connects to the worker's log, then dies of the same signal so that the
/// supervisor sees outcome::signaled with the original signal number.
///
/// Contract and limits:
///  - Handles SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT with SA_RESETHAND (a fault inside the
///    handler kills the process with the default action) and SA_ONSTACK.
///  - The alternate signal stack (so that stack overflows are reported) is installed for the
///    calling thread only (sigaltstack is per thread): call it from the main thread first thing.
///    Faults in other threads are still reported, on their own stack.
///  - glibc's backtrace() is called once at install time so that libgcc_s is loaded then; in the
///    handler only write(2), backtrace, backtrace_symbols_fd, sigaction, sigprocmask and raise
///    run (backtrace_symbols_fd does not allocate).
///  - Symbols come from the dynamic symbol table: link executables with -rdynamic, or frames of
///    the executable print as "prog(+0x1234)" (parsed as "??").

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tfg/campaign/stack.hpp"

namespace tfg::campaign {

namespace detail {

/// Async-signal-safe write of all of [s, s+n) to fd 2; gives up on errors other than EINTR.
inline void crash_write(const char* s, std::size_t n) noexcept {
  while (n > 0) {
    ssize_t w = ::write(2, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

inline void crash_write(const char* s) noexcept { crash_write(s, std::strlen(s)); }

/// Async-signal-safe decimal output of a non-negative int.
inline void crash_write_int(int v) noexcept {
  char buf[16];
  std::size_t i = sizeof buf;
  unsigned u = v < 0 ? 0u : static_cast<unsigned>(v);
  do {
    buf[--i] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && i > 0);
  crash_write(buf + i, sizeof buf - i);
}

/// The handler: report, then re-raise with the default action (installed by SA_RESETHAND and
/// again here, in case the handler was entered without it).
inline void fatal_signal_handler(int sig) noexcept {
  int saved_errno = errno;
  crash_write(crash_report_begin.data(), crash_report_begin.size());
  crash_write_int(sig);
  crash_write(" (");
  const char* name = signal_abbrev(sig);
  crash_write(name != nullptr ? name : "?");
  crash_write(")\n");
  void* pcs[128];
  int n = ::backtrace(pcs, 128);
  // Frame 0 is this handler, frame 1 the kernel's signal trampoline (__restore_rt): skip both.
  constexpr int skip = 2;
  if (n > skip) ::backtrace_symbols_fd(pcs + skip, n - skip, 2);
  crash_write(crash_report_end.data(), crash_report_end.size());
  crash_write("\n");
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, sig);
  ::sigprocmask(SIG_UNBLOCK, &mask, nullptr);
  ::raise(sig);  // default action: the process dies here with `sig`
  errno = saved_errno;
  ::_exit(128 + sig);  // not reached unless the signal was ignored meanwhile
}

}  // namespace detail

/// Installs the handler (see the file comment). Idempotent; the alternate stack is allocated
/// once per process (64 KiB or 4 x SIGSTKSZ, whichever is larger) and never freed.
inline void install_crash_handler() {
  {
    void* warm[4];
    (void)::backtrace(warm, 4);  // loads libgcc_s now, not inside the handler
  }
  static void* alt_stack = nullptr;
  static std::size_t alt_size = 0;
  if (alt_stack == nullptr) {
#ifdef _SC_SIGSTKSZ
    long sz = ::sysconf(_SC_SIGSTKSZ);
#else
    long sz = SIGSTKSZ;
#endif
    alt_size = std::max<std::size_t>(64 * 1024, sz > 0 ? 4 * static_cast<std::size_t>(sz) : 0);
    alt_stack = std::malloc(alt_size);
  }
  if (alt_stack != nullptr) {
    stack_t ss{};
    ss.ss_sp = alt_stack;
    ss.ss_size = alt_size;
    ss.ss_flags = 0;
    ::sigaltstack(&ss, nullptr);
  }
  struct sigaction sa {};
  sa.sa_handler = &detail::fatal_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace tfg::campaign
