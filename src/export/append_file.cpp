// Line-appending file (see append_file.hpp).
#include "export/append_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace lens::exporters {
namespace {

std::string os_error(int error) {
  return std::error_code(error, std::generic_category()).message();
}

}  // namespace

Result<std::unique_ptr<AppendFile>> AppendFile::open(const std::string& directory,
                                                     const std::string& directory_label,
                                                     const std::string& name, std::string what) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(directory), error);
  if (error) {
    return Error("Cannot create directory '" + directory + "' (" + directory_label +
                 ") for the file exporter: " + error.message());
  }
  const std::string path = path_in(directory, name);
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int open_error = errno;
    return Error("Cannot open '" + path + "' (" + directory_label +
                 ") for appending: " + os_error(open_error));
  }
  return std::unique_ptr<AppendFile>(new AppendFile(fd, path, std::move(what)));
}

std::string AppendFile::path_in(const std::string& directory, const std::string& name) {
  return (std::filesystem::path(directory) / name).string();
}

AppendFile::AppendFile(int fd, std::string path, std::string what)
    : fd_(fd), path_(std::move(path)), what_(std::move(what)) {}

AppendFile::~AppendFile() { close(); }

bool AppendFile::append(const std::string& line) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) return false;
  ssize_t written = 0;
  do {
    written = ::write(fd_, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
  if (written >= 0 && static_cast<std::size_t>(written) == line.size()) return true;
  const int error = written < 0 ? errno : 0;
  if (written > 0) {
    // A partial line (disk full): end it, so that later lines stay whole lines.
    if (::write(fd_, "\n", 1) < 0) {
      // Nothing more to do: the failure is reported below.
    }
    report("short write (" + std::to_string(written) + " of " + std::to_string(line.size()) +
           " bytes)");
  } else {
    report(os_error(error));
  }
  return false;
}

bool AppendFile::close() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return close_locked();
}

bool AppendFile::close_locked() noexcept {
  if (fd_ < 0) return true;
  const int result = ::close(fd_);
  const int close_error = errno;
  fd_ = -1;
  // Linux releases the descriptor even when close is interrupted.
  if (result != 0 && close_error != EINTR) {
    report("cannot close: " + os_error(close_error));
    return false;
  }
  return true;
}

void AppendFile::report(const std::string& message) noexcept {
  if (reported_.exchange(true, std::memory_order_relaxed)) return;
  std::fprintf(stderr,
               "lens: file exporter: %s: %s; %s of failed exports are dropped (further errors "
               "are not reported)\n",
               path_.c_str(), message.c_str(), what_.c_str());
}

}  // namespace lens::exporters
