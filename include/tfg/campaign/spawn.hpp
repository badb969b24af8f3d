#pragma once
/// \file
/// Child processes that are not workers (workers: process.hpp). A program started with its
/// output appended to a log, dying with this process (`spawn_program`: a fuzzing job's
/// `flowmut run` slices), watched without blocking (`poll_exit`) and asked to stop
/// (`interrupt`); and a function run in a forked copy of this process whose answer comes back
/// through a pipe (`fork_call`: `flowmut legality` labels each candidate in a child a crash may
/// take down).
#include <csignal>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tfg::campaign {

/// Starts `argv[0]` with `argv` (stdin inherited, stdout and stderr appended to `log`,
/// SIGINT at its default): it gets SIGTERM when this process dies. Returns its pid; throws
/// std::runtime_error when fork fails (a failed exec exits the child with 127).
[[nodiscard]] inline pid_t spawn_program(std::vector<std::string> argv, const std::filesystem::path& log) {
  if (argv.empty()) throw std::invalid_argument("spawn_program: no program");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    ::signal(SIGINT, SIG_DFL);
    std::vector<char*> args;
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

/// The wait status of child `pid` once it ended (reaped), nullopt while it runs; -1 when it
/// cannot be waited for (not our child any more).
[[nodiscard]] inline std::optional<int> poll_exit(pid_t pid) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  return r < 0 ? -1 : status;
}

/// Asks child `pid` to stop (SIGINT: a campaign stops after its round and checkpoints).
inline void interrupt(pid_t pid) { ::kill(pid, SIGINT); }

/// A forked child computing an answer (fork_call).
struct forked_child {
  pid_t pid = -1;
  int fd = -1;  ///< the read end of the pipe its answer comes through; EOF when it ended
};

/// Runs `answer` in a forked copy of this process (its own process group), writes what it
/// returns (or "I exception unknown" when it throws) and a newline to the pipe and exits 0.
/// Flush stdio before calling. Throws std::runtime_error when the pipe or fork fails.
[[nodiscard]] inline forked_child fork_call(const std::function<std::string()>& answer) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::close(fds[0]);
    ::setpgid(0, 0);
    std::string r;
    try {
      r = answer();
    } catch (...) {
      r = "I exception unknown";
    }
    r += "\n";
    for (std::size_t off = 0; off < r.size();) {
      const auto n = ::write(fds[1], r.data() + off, r.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

/// Waits for a forked child (killed first when `kill`), closes its pipe and returns its wait
/// status.
inline int reap(forked_child& c, bool kill) {
  int status = 0;
  if (kill) ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, &status, 0);
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
  return status;
}

}  // namespace tfg::campaign
