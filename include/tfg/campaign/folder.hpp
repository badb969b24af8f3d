#pragma once
/// \file
/// What a campaign does to its folder besides writing its files: it holds the folder's lock
/// for as long as it runs (`folder_lock`, flock on `lock`: a second flowmut on the same
/// folder is refused, a killed one releases it), and it keeps its own copy of the operator
/// pool (`snapshot_operators`: a resume uses the same operators whatever happened to the
/// folders they came from).
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "tfg/campaign/layout.hpp"

namespace tfg::campaign {

/// An exclusive flock() on a campaign folder's lock file, released when it goes.
class folder_lock {
 public:
  folder_lock() = default;
  /// Throws std::runtime_error when another process holds the folder.
  explicit folder_lock(const layout& files) {
    fd_ = ::open(files.lock().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      throw std::runtime_error(files.root().string() + " is in use by another flowmut process");
    }
  }
  folder_lock(folder_lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  folder_lock& operator=(folder_lock&& o) noexcept {
    if (this != &o) {
      release();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  folder_lock(const folder_lock&) = delete;
  folder_lock& operator=(const folder_lock&) = delete;
  ~folder_lock() { release(); }

  [[nodiscard]] bool held() const noexcept { return fd_ >= 0; }

 private:
  void release() noexcept {
    if (fd_ >= 0) ::close(fd_);  // closing the descriptor drops the flock
    fd_ = -1;
  }
  int fd_ = -1;
};

/// --force: removes the campaign in the folder (its database, checkpoint, current seed,
/// findings and corpus); the folders stay, empty.
inline void clear_campaign(const layout& files) {
  namespace fs = std::filesystem;
  for (const auto& f : files.database_files()) fs::remove(f);
  fs::remove(files.state());
  fs::remove(files.current());
  for (const auto& d : {files.findings_dir(), files.corpus_dir()}) {
    fs::remove_all(d);
    fs::create_directories(d);
  }
}

/// Copies the operator folders (or single files) `dirs` into operators/K of the campaign
/// folder (what was there goes) and returns the copies' paths, in order.
[[nodiscard]] inline std::vector<std::filesystem::path> snapshot_operators(
    const layout& files, const std::vector<std::filesystem::path>& dirs) {
  namespace fs = std::filesystem;
  fs::remove_all(files.operators_dir());
  std::vector<fs::path> copies;
  for (std::size_t k = 0; k < dirs.size(); ++k) {
    const auto& src = dirs[k];
    const auto dst = files.operators_copy(k);
    fs::create_directories(dst);
    if (fs::is_directory(src)) {
      fs::copy(src, dst, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
      copies.push_back(dst);
    } else {
      fs::copy_file(src, dst / src.filename(), fs::copy_options::overwrite_existing);
      copies.push_back(dst / src.filename());
    }
  }
  return copies;
}

}  // namespace tfg::campaign
