#pragma once
/// \file
/// Crash-safe publication of files and folders (reliability-and-reporting.md 6.1 item 11):
/// a reader sees either the old content or the complete new content, never a partial file,
/// and after return the new content survives a crash or power loss (POSIX fsync semantics).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace tfg {

namespace atomic_file_detail {

[[noreturn]] inline void throw_errno(int err, const std::string& what, const std::filesystem::path& p) {
  throw std::system_error(err, std::generic_category(), what + " " + p.string());
}

/// fsync of an existing file or folder (opened read-only).
inline void fsync_path(const std::filesystem::path& p, bool directory) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw_errno(errno, "open for fsync", p);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    // Some file systems cannot fsync folders; that is not a data-loss error.
    if (directory && (err == EINVAL || err == ENOTSUP)) return;
    throw_errno(err, "fsync", p);
  }
  ::close(fd);
}

/// The folder holding `p` ("." for a bare name).
inline std::filesystem::path parent_or_dot(const std::filesystem::path& p) {
  const auto parent = p.parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

}  // namespace atomic_file_detail

/// Replaces (or creates) `p` with `bytes` atomically: a temp file in the same folder is written,
/// fsynced and renamed over `p`, then the folder is fsynced. The folder must exist. Throws
/// std::system_error on failure, leaving `p` unchanged and no temp file behind.
inline void write_file_atomic(const std::filesystem::path& p, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path dir = atomic_file_detail::parent_or_dot(p);
  const std::filesystem::path tmp = dir / ("." + p.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                                           std::to_string(counter.fetch_add(1)));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) atomic_file_detail::throw_errno(errno, "create", tmp);
  const auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    atomic_file_detail::throw_errno(err, what, tmp);
  };
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    atomic_file_detail::throw_errno(err, "close", tmp);
  }
  if (::rename(tmp.c_str(), p.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    atomic_file_detail::throw_errno(err, "rename to", p);
  }
  atomic_file_detail::fsync_path(dir, true);
}

/// Publishes the folder `staging` as `final_dir`: fsyncs every file and folder under it, then
/// renames it into place and fsyncs the parent folder(s). Both must be on one file system.
/// When `final_dir` already exists it is kept unchanged and `staging` is removed (on resume
/// old artifacts win). Returns true when `staging` became `final_dir`. Throws std::system_error.
inline bool publish_directory_atomic(const std::filesystem::path& staging, const std::filesystem::path& final_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto discard_staging = [&] {
    fs::remove_all(staging, ec);
    if (ec) atomic_file_detail::throw_errno(ec.value(), "remove staging folder", staging);
    return false;
  };
  if (fs::exists(final_dir)) return discard_staging();
  for (auto it = fs::recursive_directory_iterator(staging); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_symlink()) continue;
    if (it->is_regular_file()) atomic_file_detail::fsync_path(it->path(), false);
    else if (it->is_directory()) atomic_file_detail::fsync_path(it->path(), true);
  }
  atomic_file_detail::fsync_path(staging, true);
  if (::rename(staging.c_str(), final_dir.c_str()) != 0) {
    const int err = errno;
    // Lost a race against another publisher: theirs stays.
    if ((err == ENOTEMPTY || err == EEXIST) && fs::exists(final_dir)) return discard_staging();
    atomic_file_detail::throw_errno(err, "rename " + staging.string() + " to", final_dir);
  }
  const auto to_parent = atomic_file_detail::parent_or_dot(final_dir);
  atomic_file_detail::fsync_path(to_parent, true);
  const auto from_parent = atomic_file_detail::parent_or_dot(staging);
  if (fs::weakly_canonical(from_parent) != fs::weakly_canonical(to_parent))
    atomic_file_detail::fsync_path(from_parent, true);
  return true;
}

}  // namespace tfg
