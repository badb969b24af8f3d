#pragma once
/// \file
/// Crash-safe worker processes (POSIX/Linux): the supervisor side (worker) and the worker side
/// (worker_channel) of a line protocol. One request line in, one reply line out; anything else
/// the worker does (crash, abort, hang, exit, run out of memory) is classified, never fatal to
/// the supervisor.
///
/// Design (reliability-and-reporting.md section 6.1):
///  - Workers are started with fork + execve of argv[0] (no PATH search, no shell). fork rather
///    than posix_spawn because the child must call prctl(PR_SET_PDEATHSIG, SIGKILL) before exec;
///    between fork and exec the child only makes async-signal-safe system calls, so forking a
///    multi-threaded supervisor is safe. The supervisor never initialises CUDA itself (workers
///    do, after exec), so the "never fork after CUDA init" rule holds trivially.
///  - Each worker leads its own process group; timeouts and the RSS limit kill the whole group,
///    so children a worker forked die with it.
///  - fd 3 (requests) is a socketpair end, fd 4 (replies) a pipe; stdin is /dev/null and
///    stdout/stderr are appended to spawn_options::log_path, so library chatter never corrupts
///    the protocol. The worker inherits no other descriptors (the child closes fds >= 5).
///    Supervisor-side ends are close-on-exec, so one worker never holds another's channel open.
///  - Requests are sent with MSG_NOSIGNAL: a dead worker yields EPIPE, never SIGPIPE in the
///    supervisor; the process-wide SIGPIPE disposition is left alone.
///  - A killed supervisor does not leave workers behind: PR_SET_PDEATHSIG kills them, and a worker
///    also sees EOF on fd 3 (worker_channel::next_request returns nullopt). Caveat: Linux fires
///    PDEATHSIG when the *thread* that spawned the worker exits, so spawn from a thread that
///    lives as long as the worker, or set die_with_supervisor = false.
///  - Children are reaped with waitpid on their pid only; a host that sets SIGCHLD to SIG_IGN or
///    reaps with waitpid(-1) breaks the classification of deaths.
///  - Workers sit outside the terminal's foreground group, so Ctrl-C reaches only the
///    supervisor; its death then takes the workers with it (above).
///  - Grandchildren that leave the worker's process group (setsid/setpgid) escape group kills.
///  - A worker object is used from one thread at a time.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tfg/util/expected.hpp"

extern "C" char** environ;

namespace tfg::campaign {

/// How to start a worker.
struct spawn_options {
  std::vector<std::string> argv;               ///< argv[0] = executable path, exec'd directly
  std::vector<std::string> env_extra;          ///< "K=V", added to (overriding) the inherited environment
  std::filesystem::path log_path;              ///< stdout+stderr appended here (O_APPEND); empty: /dev/null
  std::chrono::milliseconds kill_grace{2000};  ///< SIGTERM, wait this long, then SIGKILL the group
  std::int64_t rss_limit_bytes = 0;            ///< 0: none; the largest RSS (/proc/PID/statm) of the worker
                                               ///< and its descendants, polled only while exchange() waits
  std::chrono::milliseconds rss_poll{100};     ///< RSS sampling period while waiting for a reply
  bool die_with_supervisor = true;             ///< PR_SET_PDEATHSIG(SIGKILL) in the worker (see file comment)
};

/// How one exchange ended.
enum class outcome : std::uint8_t { reply, exited, signaled, timeout, out_of_memory, spawn_failed };

inline std::string_view to_string(outcome o) {
  switch (o) {
    case outcome::reply: return "reply";
    case outcome::exited: return "exited";
    case outcome::signaled: return "signaled";
    case outcome::timeout: return "timeout";
    case outcome::out_of_memory: return "out_of_memory";
    case outcome::spawn_failed: return "spawn_failed";
  }
  return "unknown";
}

/// The result of worker::exchange. exit_code/signal describe how the worker ended for every
/// kind but `reply` (for timeout/out_of_memory: the signal the supervisor killed it with).
struct exchange_result {
  outcome kind = outcome::reply;
  std::string reply;                ///< the reply line without '\n' (kind == reply)
  int exit_code = 0;                ///< kind == exited
  int signal = 0;                   ///< kind == signaled (SIGSEGV, SIGABRT, ...)
  std::int64_t peak_rss_bytes = 0;  ///< highest RSS of the worker process seen while waiting
  double wall_ms = 0;
  std::string log;  ///< what the worker wrote to its log during this exchange (last 64 KiB)
};

namespace detail {

/// Closes an fd if open and sets it to -1.
inline void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

/// Writes errno and a stage tag to the spawn error pipe, then exits; child side of fork only.
[[noreturn]] inline void child_fail(int err_fd, int stage) noexcept {
  int msg[2] = {errno, stage};
  ssize_t w;
  do w = ::write(err_fd, msg, sizeof msg);
  while (w < 0 && errno == EINTR);
  ::_exit(127);
}

/// Resident set size of `pid` in bytes, 0 when unknown (exited, no /proc).
inline std::int64_t read_rss_bytes(pid_t pid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[128];
  ssize_t n;
  do n = ::read(fd, buf, sizeof buf - 1);
  while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  long long size = 0, resident = 0;
  if (std::sscanf(buf, "%lld %lld", &size, &resident) != 2) return 0;
  static const long page = ::sysconf(_SC_PAGESIZE);
  return static_cast<std::int64_t>(resident) * page;
}

/// The largest resident set size among `pid` and its descendants (a fork-server worker runs
/// each request in a child; the largest, not the sum, since children share the server's
/// pages). Children are read from /proc/PID/task/PID/children (the server is one thread).
inline std::int64_t read_tree_rss_bytes(pid_t pid, int depth = 0) noexcept {
  std::int64_t best = read_rss_bytes(pid);
  if (depth >= 4) return best;
  char path[96];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", static_cast<int>(pid), static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return best;
  char buf[512];
  ssize_t n;
  do n = ::read(fd, buf, sizeof buf - 1);
  while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return best;
  buf[n] = '\0';
  for (char* p = buf; *p;) {
    char* end = nullptr;
    const long child = std::strtol(p, &end, 10);
    if (end == p) break;
    if (child > 0) best = std::max(best, read_tree_rss_bytes(static_cast<pid_t>(child), depth + 1));
    p = end;
  }
  return best;
}

}  // namespace detail

/// A worker process (supervisor side). Move-only; the destructor calls shutdown().
class worker {
 public:
  worker(worker&& o) noexcept { take(std::move(o)); }
  worker& operator=(worker&& o) noexcept {
    if (this != &o) {
      shutdown();
      take(std::move(o));
    }
    return *this;
  }
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;
  ~worker() { shutdown(); }

  /// Starts argv[0]; the error says which step failed (log file, pipes, fork, exec + errno).
  /// Success means the program was exec'd, not that it speaks the protocol.
  static tfg::expected<worker, std::string> spawn(spawn_options opt) {
    using tfg::unexpected;
    if (opt.argv.empty() || opt.argv[0].empty()) return unexpected(std::string("spawn: empty argv"));
    if (opt.rss_poll.count() < 1) opt.rss_poll = std::chrono::milliseconds(1);
    worker w(std::move(opt));
    auto& o = w.opt_;
    // Everything the child needs is prepared before fork: the child may not allocate.
    std::vector<char*> argv;
    for (auto& a : o.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view kv(*e);
      auto key = kv.substr(0, kv.find('=') + 1);
      bool overridden =
          std::any_of(o.env_extra.begin(), o.env_extra.end(), [&](const std::string& x) { return x.starts_with(key); });
      if (!overridden) env_store.emplace_back(kv);
    }
    for (auto& x : o.env_extra) env_store.push_back(x);
    std::vector<char*> envp;
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    auto fail = [](std::string what) { return unexpected(what + ": " + std::strerror(errno)); };
    std::string log = o.log_path.empty() ? std::string("/dev/null") : o.log_path.string();
    w.log_fd_ = ::open(log.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (w.log_fd_ < 0) return fail("spawn: open log " + log);
    int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0) return fail("spawn: open /dev/null");
    int req[2] = {-1, -1}, rep[2] = {-1, -1}, err[2] = {-1, -1};
    auto close_all = [&] {
      for (int* fd : {&devnull, &req[0], &req[1], &rep[0], &rep[1], &err[0], &err[1]}) detail::close_fd(*fd);
    };
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, req) != 0 || ::pipe2(rep, O_CLOEXEC) != 0 ||
        ::pipe2(err, O_CLOEXEC) != 0) {
      auto e = fail("spawn: socketpair/pipe");
      close_all();
      return e;
    }
    const pid_t parent = ::getpid();
    const int log_fd = w.log_fd_;
    const bool pdeath = o.die_with_supervisor;
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);  // no parent handler may run in the child
    pid_t pid = ::fork();
    if (pid == 0) {
      // ---- child: async-signal-safe calls only ----
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);  // also un-ignores SIGPIPE
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::setpgid(0, 0);
      if (pdeath) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) detail::child_fail(err[1], 1);
        if (::getppid() != parent) ::_exit(127);  // the supervisor is already gone
      }
      // Move everything above the target slots first, so no dup2 clobbers a source.
      int hi_err = ::fcntl(err[1], F_DUPFD_CLOEXEC, 10);
      if (hi_err < 0) ::_exit(127);
      int hi_null = ::fcntl(devnull, F_DUPFD_CLOEXEC, 10);
      int hi_log = ::fcntl(log_fd, F_DUPFD_CLOEXEC, 10);
      int hi_req = ::fcntl(req[1], F_DUPFD_CLOEXEC, 10);
      int hi_rep = ::fcntl(rep[1], F_DUPFD_CLOEXEC, 10);
      if (hi_null < 0 || hi_log < 0 || hi_req < 0 || hi_rep < 0) detail::child_fail(hi_err, 2);
      if (::dup2(hi_null, 0) < 0 || ::dup2(hi_log, 1) < 0 || ::dup2(hi_log, 2) < 0 || ::dup2(hi_req, 3) < 0 ||
          ::dup2(hi_rep, 4) < 0)
        detail::child_fail(hi_err, 2);
      if (hi_err > 5) ::close_range(5, static_cast<unsigned>(hi_err) - 1, 0);
      ::close_range(static_cast<unsigned>(hi_err) + 1, ~0U, 0);
      ::execve(argv[0], argv.data(), envp.data());
      detail::child_fail(hi_err, 3);
    }
    int fork_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (pid < 0) {
      errno = fork_errno;
      auto e = fail("spawn: fork");
      close_all();
      return e;
    }
    ::setpgid(pid, pid);  // also here: whichever of parent and child runs first sets it
    w.pid_ = pid;
    w.req_fd_ = req[0];
    w.rep_fd_ = rep[0];
    req[0] = rep[0] = -1;
    detail::close_fd(req[1]);
    detail::close_fd(rep[1]);
    detail::close_fd(err[1]);
    detail::close_fd(devnull);
    int msg[2] = {0, 0};
    ssize_t n;
    do n = ::read(err[0], msg, sizeof msg);  // EOF (0 bytes): exec succeeded
    while (n < 0 && errno == EINTR);
    detail::close_fd(err[0]);
    if (n > 0) {
      w.reap_blocking();
      errno = msg[0];
      const char* stage = msg[1] == 1 ? "prctl" : msg[1] == 2 ? "dup2" : "exec";
      return fail(std::string("spawn: ") + stage + " " + w.opt_.argv[0]);
    }
    ::fcntl(w.req_fd_, F_SETFL, ::fcntl(w.req_fd_, F_GETFL) | O_NONBLOCK);
    ::fcntl(w.rep_fd_, F_SETFL, ::fcntl(w.rep_fd_, F_GETFL) | O_NONBLOCK);
    return w;
  }

  /// Sends `request_line` + '\n' (embedded '\n' become ' ') and waits for one reply line, the
  /// worker's death, `timeout`, or the RSS limit. After any kind but `reply` the worker is dead
  /// and reaped; on timeout it got SIGTERM, kill_grace, then SIGKILL (whole group), on
  /// out_of_memory SIGKILL at once (it is growing). A reply that arrived before the worker died
  /// still counts as a reply. On a worker that is already dead: its recorded end, nothing sent;
  /// on a moved-from worker: spawn_failed. Not thread-safe; one exchange at a time.
  exchange_result exchange(std::string_view request_line, std::chrono::milliseconds timeout) {
    using clock = std::chrono::steady_clock;
    exchange_result r;
    const auto start = clock::now();
    auto finish = [&](outcome k) {
      r.kind = k;
      r.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
      if (k != outcome::reply) fill_status(r);
      return std::move(r);
    };
    if (pid_ <= 0) return finish(outcome::spawn_failed);
    if (dead_) {
      r.kind = WIFEXITED(status_) ? outcome::exited : outcome::signaled;
      return finish(r.kind);
    }
    const off_t log_start = log_size();
    std::string out(request_line);
    std::replace(out.begin(), out.end(), '\n', ' ');
    out += '\n';
    std::size_t sent = 0;
    bool write_closed = false, reply_eof = false;
    const auto deadline = start + timeout;
    auto last_rss = clock::time_point{};
    auto sample_rss = [&] {
      last_rss = clock::now();
      r.peak_rss_bytes = std::max(r.peak_rss_bytes, detail::read_tree_rss_bytes(pid_));
    };
    sample_rss();
    auto done = [&](outcome k) {
      r.log = log_since(log_start);
      return finish(k);
    };
    for (;;) {
      if (!write_closed && sent < out.size()) {  // nonblocking: a stuck worker cannot block us
        ssize_t w = ::send(req_fd_, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (w > 0) sent += static_cast<std::size_t>(w);
        else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
          write_closed = true;  // EPIPE/ECONNRESET: the worker is gone or closed fd 3
      }
      if (!reply_eof) reply_eof = drain_reply();
      if (auto line = take_line()) {
        sample_rss();
        ++exchanges_;
        r.reply = std::move(*line);
        return done(outcome::reply);
      }
      if (leader_exited()) {
        finish_dead_group();
        return done(WIFEXITED(status_) ? outcome::exited : outcome::signaled);
      }
      auto now = clock::now();
      if (opt_.rss_limit_bytes > 0 && now - last_rss >= opt_.rss_poll) {
        sample_rss();
        if (r.peak_rss_bytes > opt_.rss_limit_bytes) {
          kill_group(SIGKILL);
          reap_blocking();
          return done(outcome::out_of_memory);
        }
      } else if (now - last_rss >= opt_.rss_poll) {
        sample_rss();
      }
      if (now >= deadline) {
        terminate_group();
        return done(outcome::timeout);
      }
      // Sleep until data, writability, the next RSS sample or the deadline. After EOF on the
      // reply pipe the worker is exiting: poll its state every few milliseconds.
      auto wait = std::min<clock::duration>(deadline - now, opt_.rss_poll);
      if (reply_eof) wait = std::min<clock::duration>(wait, std::chrono::milliseconds(2));
      pollfd fds[2];
      nfds_t nfds = 0;
      if (!reply_eof) fds[nfds++] = {rep_fd_, POLLIN, 0};
      if (!write_closed && sent < out.size()) fds[nfds++] = {req_fd_, POLLOUT, 0};
      int ms =
          static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(std::max<clock::duration>(wait, {})).count());
      if (::poll(fds, nfds, ms) < 0 && errno != EINTR) std::this_thread::sleep_for(wait);
    }
  }

  /// True while the worker has not exited; reaps it (and kills its group's leftovers) if it has.
  bool running() {
    if (pid_ <= 0 || dead_) return false;
    if (leader_exited()) {
      finish_dead_group();
      return false;
    }
    return true;
  }

  /// Closes the request channel (the worker sees EOF), waits up to kill_grace for it to exit,
  /// then SIGKILLs the group and reaps. Idempotent; also run by the destructor.
  void shutdown() noexcept {
    if (pid_ > 0 && !dead_) {
      detail::close_fd(req_fd_);
      if (wait_exit(opt_.kill_grace)) finish_dead_group();
      else {
        kill_group(SIGKILL);
        reap_blocking();
      }
    }
    detail::close_fd(req_fd_);
    detail::close_fd(rep_fd_);
    detail::close_fd(log_fd_);
  }

  pid_t pid() const noexcept { return pid_; }
  /// Exchanges that ended with a reply since spawn.
  std::size_t exchanges() const noexcept { return exchanges_; }
  /// The raw wait status once the worker was reaped (see running()); nullopt while it runs.
  std::optional<int> wait_status() const noexcept { return dead_ ? std::optional<int>(status_) : std::nullopt; }

 private:
  explicit worker(spawn_options opt) : opt_(std::move(opt)) {}

  void take(worker&& o) noexcept {
    opt_ = std::move(o.opt_);
    pid_ = std::exchange(o.pid_, -1);
    req_fd_ = std::exchange(o.req_fd_, -1);
    rep_fd_ = std::exchange(o.rep_fd_, -1);
    log_fd_ = std::exchange(o.log_fd_, -1);
    rbuf_ = std::move(o.rbuf_);
    dead_ = o.dead_;
    status_ = o.status_;
    exchanges_ = o.exchanges_;
  }

  /// Reads what is available on the reply pipe into rbuf_; true on EOF.
  bool drain_reply() {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(rep_fd_, buf, sizeof buf);
      if (n > 0) rbuf_.append(buf, static_cast<std::size_t>(n));
      else if (n == 0) return true;
      else if (errno == EINTR) continue;
      else return errno != EAGAIN && errno != EWOULDBLOCK;
    }
  }

  std::optional<std::string> take_line() {
    auto nl = rbuf_.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    std::string line = rbuf_.substr(0, nl);
    rbuf_.erase(0, nl + 1);
    return line;
  }

  /// True when the group leader has exited; leaves it a zombie (WNOWAIT) so its pid, and so the
  /// group id, cannot be reused before finish_dead_group() has killed the group's leftovers.
  bool leader_exited() noexcept {
    siginfo_t si{};
    si.si_pid = 0;
    int rc;
    do rc = ::waitid(P_PID, static_cast<id_t>(pid_), &si, WEXITED | WNOHANG | WNOWAIT);
    while (rc < 0 && errno == EINTR);
    return rc < 0 || si.si_pid == pid_;  // rc < 0 (ECHILD): reaped by someone else
  }

  /// The leader has exited: SIGKILL the rest of its group, then reap the leader.
  void finish_dead_group() noexcept {
    kill_group(SIGKILL);
    reap_blocking();
  }

  void kill_group(int sig) noexcept {
    if (pid_ <= 0 || dead_) return;
    if (::kill(-pid_, sig) != 0) ::kill(pid_, sig);
  }

  void reap_blocking() noexcept {
    if (pid_ <= 0 || dead_) return;
    int st = 0;
    pid_t rc;
    do rc = ::waitpid(pid_, &st, 0);
    while (rc < 0 && errno == EINTR);
    status_ = rc == pid_ ? st : (SIGKILL & 0x7f);  // ECHILD: unknown, report as killed
    dead_ = true;
  }

  /// Waits up to `grace` for the leader to exit (without reaping); true if it did.
  bool wait_exit(std::chrono::milliseconds grace) noexcept {
    auto end = std::chrono::steady_clock::now() + grace;
    auto step = std::chrono::microseconds(500);
    while (!leader_exited()) {
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(step);
      step = std::min<std::chrono::microseconds>(step * 2, std::chrono::milliseconds(20));
    }
    return true;
  }

  /// SIGTERM to the group, kill_grace for the leader to go, SIGKILL to the group, reap.
  void terminate_group() noexcept {
    kill_group(SIGTERM);
    wait_exit(opt_.kill_grace);
    kill_group(SIGKILL);
    reap_blocking();
  }

  void fill_status(exchange_result& r) const {
    if (!dead_) return;
    if (WIFEXITED(status_)) r.exit_code = WEXITSTATUS(status_);
    if (WIFSIGNALED(status_)) r.signal = WTERMSIG(status_);
  }

  off_t log_size() const noexcept {
    struct stat st {};
    return log_fd_ >= 0 && ::fstat(log_fd_, &st) == 0 ? st.st_size : 0;
  }

  /// The log from `from` to its end, at most the last 64 KiB.
  std::string log_since(off_t from) const {
    constexpr off_t max_excerpt = 64 * 1024;
    off_t end = log_size();
    if (end <= from) return {};
    from = std::max(from, end - max_excerpt);
    std::string s(static_cast<std::size_t>(end - from), '\0');
    std::size_t got = 0;
    while (got < s.size()) {
      ssize_t n = ::pread(log_fd_, s.data() + got, s.size() - got, from + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    s.resize(got);
    return s;
  }

  spawn_options opt_;
  pid_t pid_ = -1;
  int req_fd_ = -1, rep_fd_ = -1, log_fd_ = -1;
  std::string rbuf_;  ///< reply bytes read but not yet returned
  bool dead_ = false;
  int status_ = 0;
  std::size_t exchanges_ = 0;
};

/// Worker side of the protocol: requests on fd 3, replies on fd 4.
class worker_channel {
 public:
  /// Adopts fds 3 and 4 and marks them close-on-exec (programs the worker runs must not hold
  /// the channel open). valid() is false when they are not open with usable access modes,
  /// i.e. the process was not started by worker::spawn.
  worker_channel() {
    int f3 = ::fcntl(3, F_GETFL), f4 = ::fcntl(4, F_GETFL);
    valid_ = f3 >= 0 && f4 >= 0 && (f3 & O_ACCMODE) != O_WRONLY && (f4 & O_ACCMODE) != O_RDONLY;
    if (valid_) {
      ::fcntl(3, F_SETFD, FD_CLOEXEC);
      ::fcntl(4, F_SETFD, FD_CLOEXEC);
    }
  }
  worker_channel(const worker_channel&) = delete;
  worker_channel& operator=(const worker_channel&) = delete;

  bool valid() const noexcept { return valid_; }

  /// Blocks for the next request line (without '\n'); nullopt on EOF (the supervisor closed
  /// the channel or died), on a read error, or when !valid(). A partial line at EOF is dropped.
  std::optional<std::string> next_request() {
    if (!valid_) return std::nullopt;
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      char tmp[4096];
      ssize_t n = ::read(3, tmp, sizeof tmp);
      if (n > 0) buf_.append(tmp, static_cast<std::size_t>(n));
      else if (n < 0 && errno == EINTR) continue;
      else return std::nullopt;
    }
  }

  /// Flushes C stdio (so this exchange's log excerpt holds what was printed), then writes
  /// `line` + '\n' fully; embedded '\n' become ' '. Errors (supervisor gone) are ignored: the
  /// next next_request() returns nullopt, or SIGPIPE ends the worker.
  void reply(std::string_view line) {
    std::fflush(nullptr);
    std::string out(line);
    std::replace(out.begin(), out.end(), '\n', ' ');
    out += '\n';
    std::size_t done = 0;
    while (valid_ && done < out.size()) {
      ssize_t n = ::write(4, out.data() + done, out.size() - done);
      if (n > 0) done += static_cast<std::size_t>(n);
      else if (n < 0 && errno == EINTR) continue;
      else return;
    }
  }

 private:
  bool valid_ = false;
  std::string buf_;
};

}  // namespace tfg::campaign
