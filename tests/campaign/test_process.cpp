// Worker supervision: exchanges with tfg_fake_worker, crashes/hangs/OOM classified, process
// groups killed, crash reports parsed and reduced to meaningful frames.
#include "tfg/campaign/process.hpp"  // first: the header must compile on its own

#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tfg/campaign/stack.hpp"

// Its own namespace: the suite is a unity build (tests/CMakeLists.txt).
namespace tfg_test_campaign_process {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using tfg::campaign::exchange_result;
using tfg::campaign::outcome;
using tfg::campaign::spawn_options;
using tfg::campaign::worker;

namespace {

/// The fake workers' logs, removed when the suite ends (every run left one in /tmp before).
struct scratch_dir {
  fs::path path = fs::temp_directory_path() / ("tfg-process-" + std::to_string(::getpid()));
  scratch_dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path proc_dir() {
  static const scratch_dir d;
  return d.path;
}

spawn_options fake_options(const std::string& name) {
  spawn_options o;
  o.argv = {TFG_FAKE_WORKER};
  o.log_path = proc_dir() / (name + ".log");
  o.kill_grace = 500ms;
  o.rss_poll = 20ms;
  return o;
}

worker spawn_fake(const std::string& name) {
  auto w = worker::spawn(fake_options(name));
  REQUIRE_MESSAGE(w.has_value(), (w.has_value() ? std::string() : w.error()));
  return std::move(*w);
}

/// True once `pid` no longer exists or is a zombie (killed, waiting for init to reap it).
bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(10ms);
  }
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

TEST_CASE("process: echo round trips on one worker") {
  worker w = spawn_fake("echo");
  CHECK(w.running());
  CHECK(w.pid() > 0);
  for (int i = 0; i < 200; ++i) {
    auto r = w.exchange("echo hello " + std::to_string(i), 5s);
    REQUIRE(r.kind == outcome::reply);
    CHECK(r.reply == "hello " + std::to_string(i));
  }
  CHECK(w.exchanges() == 200);
  auto big = std::string(300000, 'x');  // larger than pipe and socket buffers
  auto r = w.exchange("echo " + big, 5s);
  REQUIRE(r.kind == outcome::reply);
  CHECK(r.reply == big);
  CHECK(r.peak_rss_bytes > 0);
  w.shutdown();  // EOF on fd 3: the worker exits 0 on its own
  CHECK_FALSE(w.running());
  REQUIRE(w.wait_status().has_value());
  CHECK(WIFEXITED(*w.wait_status()));
  CHECK(WEXITSTATUS(*w.wait_status()) == 0);
}

TEST_CASE("process: stdout chatter goes to the log, not into the protocol") {
  worker w = spawn_fake("chatter");
  auto r = w.exchange("stdout some library chatter", 5s);
  REQUIRE(r.kind == outcome::reply);
  CHECK(r.reply == "ok");
  CHECK(r.log.find("some library chatter\n") != std::string::npos);
  auto r2 = w.exchange("echo next", 5s);
  REQUIRE(r2.kind == outcome::reply);
  CHECK(r2.reply == "next");
  CHECK(r2.log.empty());  // the excerpt starts where the previous exchange ended
}

TEST_CASE("process: exit code, and a dead worker keeps reporting its end") {
  worker w = spawn_fake("exit");
  auto r = w.exchange("exit 3", 5s);
  CHECK(r.kind == outcome::exited);
  CHECK(r.exit_code == 3);
  CHECK_FALSE(w.running());
  auto again = w.exchange("echo x", 5s);
  CHECK(again.kind == outcome::exited);
  CHECK(again.exit_code == 3);
  CHECK(tfg::campaign::to_string(outcome::out_of_memory) == "out_of_memory");
}

TEST_CASE("crash: segv is signaled SIGSEGV with a parsed stack") {
  worker w = spawn_fake("segv");
  auto r = w.exchange("segv", 5s);
  REQUIRE(r.kind == outcome::signaled);
  CHECK(r.signal == SIGSEGV);
  CHECK_FALSE(w.running());
  auto rep = tfg::campaign::parse_crash_report(r.log);
  REQUIRE_MESSAGE(rep.has_value(), r.log);
  CHECK(rep->signal == SIGSEGV);
  CHECK(rep->complete);
  REQUIRE_FALSE(rep->frames.empty());
  CHECK_MESSAGE(rep->frames.front() == "tfg_fake_fault_segv_here", r.log);
  auto top = tfg::campaign::meaningful_frames(*rep);
  CHECK_MESSAGE(contains(top, "tfg_fake_fault_segv_here"), r.log);
  CHECK(contains(top, "main"));
}

TEST_CASE("crash: abort is signaled SIGABRT, libc frames dropped") {
  worker w = spawn_fake("abort");
  auto r = w.exchange("abort", 5s);
  REQUIRE(r.kind == outcome::signaled);
  CHECK(r.signal == SIGABRT);
  auto rep = tfg::campaign::parse_crash_report(r.log);
  REQUIRE_MESSAGE(rep.has_value(), r.log);
  CHECK(rep->signal == SIGABRT);
  auto top = tfg::campaign::meaningful_frames(*rep);
  REQUIRE_FALSE(top.empty());
  CHECK_MESSAGE(top.front() == "tfg_fake_fault_abort_here", r.log);
}

TEST_CASE("crash: a fresh worker after a crash serves requests") {
  worker w = spawn_fake("respawn");
  CHECK(w.exchange("echo before", 5s).reply == "before");
  CHECK(w.exchange("segv", 5s).kind == outcome::signaled);
  w = spawn_fake("respawn");  // move-assignment shuts the dead one down
  CHECK(w.running());
  auto r = w.exchange("echo after", 5s);
  CHECK(r.kind == outcome::reply);
  CHECK(r.reply == "after");
  CHECK(w.exchanges() == 1);
}

TEST_CASE("process: a hang times out and the whole process group is killed") {
  worker w = spawn_fake("hang");
  const pid_t pid = w.pid();
  auto t0 = std::chrono::steady_clock::now();
  auto r = w.exchange("spin_child", 1000ms);
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.kind == outcome::timeout);
  CHECK(took >= 1000ms);
  CHECK(took < 1000ms + 500ms + 1000ms);  // timeout + kill_grace + slack
  CHECK(r.signal == SIGTERM);             // default SIGTERM action: no grace needed
  CHECK_FALSE(w.running());
  CHECK(gone_within(pid, 100ms));
  auto at = r.log.find("child ");
  REQUIRE_MESSAGE(at != std::string::npos, r.log);
  const pid_t child = std::stoi(r.log.substr(at + 6));
  CHECK(child > 0);
  CHECK(gone_within(child, 2000ms));
}

TEST_CASE("process: a worker that ignores SIGTERM and never reads gets SIGKILL after the grace") {
  spawn_options o;
  o.argv = {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 1; done"};  // sleep inherits it
  o.log_path = proc_dir() / "stubborn.log";
  o.kill_grace = 300ms;
  auto w = worker::spawn(o);
  REQUIRE(w.has_value());
  auto t0 = std::chrono::steady_clock::now();
  auto r = w->exchange(std::string(1 << 20, 'r'), 300ms);  // never read: sending must not block
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.kind == outcome::timeout);
  CHECK(r.signal == SIGKILL);
  CHECK(took >= 600ms);
  CHECK(took < 2000ms);
  CHECK_FALSE(w->running());
}

TEST_CASE("process: a worker killed from outside between exchanges") {
  worker w = spawn_fake("external");
  CHECK(w.exchange("echo 1", 5s).reply == "1");
  ::kill(w.pid(), SIGKILL);
  auto r = w.exchange("echo 2", 5s);  // EPIPE on the request, never SIGPIPE here
  CHECK(r.kind == outcome::signaled);
  CHECK(r.signal == SIGKILL);
  CHECK_FALSE(w.running());
  CHECK(w.exchanges() == 1);
}

TEST_CASE("process: the RSS watchdog reports out_of_memory") {
  auto o = fake_options("alloc");
  o.rss_limit_bytes = 256ll << 20;
  auto w = worker::spawn(o);
  REQUIRE(w.has_value());
  auto r = w->exchange("alloc", 10s);
  CHECK(r.kind == outcome::out_of_memory);
  CHECK(r.signal == SIGKILL);
  CHECK(r.peak_rss_bytes > o.rss_limit_bytes);
  CHECK(r.wall_ms < 5000);
  CHECK_FALSE(w->running());
}

TEST_CASE("process: spawn failures and environment") {
  spawn_options o;
  o.argv = {(proc_dir() / "no-such-program").string()};
  auto w = worker::spawn(o);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error().find("exec") != std::string::npos);
  CHECK_FALSE(worker::spawn(spawn_options{}).has_value());

  // A worker that is not our fake one: /bin/sh exec'd directly, argv and env_extra passed.
  spawn_options sh;
  sh.argv = {"/bin/sh", "-c", "read line <&3; echo \"$TFG_T_VAR:$line\" >&4; echo to-log"};
  sh.env_extra = {"TFG_T_VAR=value"};
  sh.log_path = proc_dir() / "sh.log";
  auto s = worker::spawn(sh);
  REQUIRE(s.has_value());
  auto r = s->exchange("ping", 5s);
  REQUIRE(r.kind == outcome::reply);
  CHECK(r.reply == "value:ping");
}

TEST_CASE("process: workers die with their supervisor") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  pid_t sup = ::fork();  // a throw-away supervisor (this test process has no CUDA)
  REQUIRE(sup >= 0);
  if (sup == 0) {
    auto w = worker::spawn(fake_options("orphan"));
    pid_t p = w ? w->pid() : -1;
    if (w) (void)w->exchange("echo up", 5s);
    (void)!::write(fds[1], &p, sizeof p);
    ::_exit(0);  // no destructor: the worker is left behind
  }
  ::close(fds[1]);
  pid_t p = -1;
  REQUIRE(::read(fds[0], &p, sizeof p) == sizeof p);
  ::close(fds[0]);
  int st = 0;
  ::waitpid(sup, &st, 0);
  REQUIRE(p > 0);
  CHECK(gone_within(p, 2000ms));
}

TEST_CASE("stack: parse a hand-written report and keep meaningful frames") {
  const std::string log =
      "some chatter\n"
      "tfg-worker: fatal signal 6 (SIGABRT)\n"
      "/old/report(_Z3oldv+0x1) [0x1]\n"
      "tfg-worker: end of stack\n"
      "more chatter\n"
      "tfg-worker: fatal signal 11 (SIGSEGV)\n"
      "/lib/x86_64-linux-gnu/libc.so.6(+0x8a3bc) [0x7f0000001000]\n"
      "/opt/torch/lib/libtorch_cpu.so(_ZN2at6native12_GLOBAL__N_18foo_implIfLi4EEEvRKNS_6TensorE+0x1a) "
      "[0x7f0000002000]\n"
      "/opt/torch/lib/libtorch_cpu.so(_ZN2at6native3barERKNS_6TensorEl+0x30) [0x7f0000003000]\n"
      "interleaved line from another thread\n"
      "/opt/torch/lib/libtorch_cpu.so(_ZN3c104impl28wrap_kernel_functor_unboxed_IiE4callEv+0x5) "
      "[0x7f0000004000]\n"
      "/opt/torch/lib/libtorch_cpu.so(_ZNK3c1010Dispatcher4callEv+0x9) [0x7f0000005000]\n"
      "./flowmut(_ZN3tfg5torch3runEv+0x44) [0x5500000000]\n"
      "./flowmut(+0x1234) [0x5500001234]\n"
      "/opt/torch/lib/libtorch_cpu.so(_ZN2at6native3bazEv+0x30) [0x7f0000006000]\n"
      "[0x7f0000007000]\n"
      "tfg-worker: end of stack\n";
  auto rep = tfg::campaign::parse_crash_report(log);
  REQUIRE(rep.has_value());
  CHECK(rep->signal == SIGSEGV);
  CHECK(rep->complete);
  REQUIRE(rep->frames.size() == 9);
  CHECK(rep->frames[0] == "??");
  CHECK(rep->modules[0] == "libc.so.6");
  CHECK(rep->frames[1] == "at::native::(anonymous namespace)::foo_impl<float, 4>");
  CHECK(rep->frames[2] == "at::native::bar");
  CHECK(rep->modules[2] == "libtorch_cpu.so");
  CHECK(rep->frames[5] == "tfg::torch::run");
  CHECK(rep->frames[8] == "??");
  auto top = tfg::campaign::meaningful_frames(*rep);
  REQUIRE(top.size() == 3);
  CHECK(top[0] == "at::native::(anonymous namespace)::foo_impl<float, N>");
  CHECK(top[1] == "at::native::bar");
  CHECK(top[2] == "at::native::baz");
  CHECK(tfg::campaign::meaningful_frames(*rep, 1).size() == 1);

  // The name-only overload: c10 boilerplate, std::function invokers, libc names, tfg, masking.
  std::vector<std::string> names = {"raise",
                                    "abort",
                                    "__GI___assert_fail",
                                    "__assert_fail",
                                    "c10::Dispatcher::callBoxed",
                                    "c10::impl::make_boxed_from_unboxed_functor<X>::call",
                                    "c10::BoxedKernel::callBoxed",
                                    "c10::KernelFunction::call<at::Tensor>",
                                    "std::_Function_handler<void (std::vector<c10::IValue>&), F>::_M_invoke",
                                    "torch::jit::(anonymous namespace)::createOperatorFromC10(c10::OperatorHandle "
                                    "const&)::{lambda(std::vector<c10::IValue>&)#1}::operator()",
                                    "tfg::campaign::detail::fatal_signal_handler",
                                    "at::native::kernel+0x1f",
                                    "at::detail::at 0xdeadbeef",
                                    "??",
                                    "",
                                    "main"};
  auto names_top = tfg::campaign::meaningful_frames(names, 5);
  REQUIRE(names_top.size() == 3);
  CHECK(names_top[0] == "at::native::kernel");
  CHECK(names_top[1] == "at::detail::at ADDR");
  CHECK(names_top[2] == "main");

  CHECK_FALSE(tfg::campaign::parse_crash_report("no report here\n").has_value());
  auto cut = tfg::campaign::parse_crash_report("tfg-worker: fatal signal 7 (SIGBUS)\n./p(_Z1fv+0x1) [0x1]\n");
  REQUIRE(cut.has_value());
  CHECK_FALSE(cut->complete);
  CHECK(cut->frames == std::vector<std::string>{"f"});
}

TEST_CASE("stack: demangled names lose parameters, qualifiers and return types") {
  using tfg::campaign::detail::strip_signature;
  CHECK(strip_signature("void at::native::foo<float>(at::Tensor const&) const") == "at::native::foo<float>");
  CHECK(strip_signature("foo()::{lambda(int)#1}::operator()(int) const") == "foo()::{lambda(int)#1}::operator()");
  CHECK(strip_signature("bool operator< <int>(A<int> const&, A<int> const&)") == "operator< <int>");
  CHECK(strip_signature("std::vector<int, std::allocator<int> >::operator[](unsigned long)") ==
        "std::vector<int, std::allocator<int> >::operator[]");
  CHECK(strip_signature("operator new(unsigned long)") == "operator new");
  CHECK(strip_signature("main") == "main");
  CHECK(tfg::campaign::signal_name(SIGSEGV) == "SIGSEGV");
  CHECK(tfg::campaign::signal_name(SIGABRT) == "SIGABRT");
  CHECK(tfg::campaign::signal_name(77) == "signal 77");
}

}  // namespace tfg_test_campaign_process
