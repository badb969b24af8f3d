// tfg_fake_worker: a stand-in worker for testing the supervision layer (process.hpp,
// crash_handler.hpp) without LibTorch. Reads command lines from the worker channel:
//   echo TEXT     reply TEXT
//   stdout TEXT   print TEXT to stdout (the log), reply "ok"
//   segv          null write inside tfg_fake_fault_segv_here()  -> SIGSEGV + crash report
//   abort         std::abort() inside tfg_fake_fault_abort_here() -> SIGABRT + crash report
//   hang          sleep forever
//   alloc         allocate and touch 64 MiB chunks (stops growing at 4 GiB as a safety net)
//   exit N        exit with code N, no reply
//   spin_child    fork a child that sleeps forever, print "child PID" to stdout, then hang
// Unknown commands reply "error: unknown command". EOF on the channel: exit 0.
// The fault functions live outside namespace tfg (whose frames meaningful_frames drops) and
// have external linkage; the target links with -rdynamic so backtrace_symbols names them.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tfg/campaign/crash_handler.hpp"
#include "tfg/campaign/process.hpp"

__attribute__((noinline)) void tfg_fake_fault_segv_here() {
  int* volatile p = nullptr;  // volatile: the compiler cannot prove the store faults
  *p = 42;
  __asm__ volatile("" ::: "memory");  // no tail position for the store
}

__attribute__((noinline)) void tfg_fake_fault_abort_here() {
  void (*volatile do_abort)() = std::abort;  // not known noreturn: the call is not last
  do_abort();
  __asm__ volatile("" ::: "memory");
}

[[noreturn]] static void hang_forever() {
  for (;;) ::pause();
}

[[noreturn]] static void alloc_forever() {
  constexpr std::size_t chunk = 64u << 20;
  std::vector<char*> keep;
  for (std::size_t total = 0; total < (4ull << 30); total += chunk) {
    char* p = static_cast<char*>(std::malloc(chunk));
    if (p == nullptr) break;
    std::memset(p, 1, chunk);
    keep.push_back(p);
  }
  hang_forever();
}

int main() {
  tfg::campaign::install_crash_handler();
  tfg::campaign::worker_channel ch;
  if (!ch.valid()) {
    std::fprintf(stderr, "tfg_fake_worker: not started by tfg::campaign::worker::spawn\n");
    return 2;
  }
  while (auto req = ch.next_request()) {
    std::string_view line = *req;
    auto sp = line.find(' ');
    std::string_view cmd = line.substr(0, sp);
    std::string_view arg = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
    if (cmd == "echo") {
      ch.reply(arg);
    } else if (cmd == "stdout") {
      std::printf("%.*s\n", static_cast<int>(arg.size()), arg.data());
      ch.reply("ok");
    } else if (cmd == "segv") {
      tfg_fake_fault_segv_here();
      ch.reply("survived segv");
    } else if (cmd == "abort") {
      tfg_fake_fault_abort_here();
    } else if (cmd == "hang") {
      hang_forever();
    } else if (cmd == "alloc") {
      alloc_forever();
    } else if (cmd == "exit") {
      std::fflush(nullptr);
      std::_Exit(std::atoi(std::string(arg).c_str()));
    } else if (cmd == "spin_child") {
      pid_t child = ::fork();
      if (child == 0) hang_forever();
      std::printf("child %d\n", static_cast<int>(child));
      std::fflush(stdout);
      hang_forever();
    } else {
      ch.reply("error: unknown command");
    }
  }
  return 0;
}
