// A file that whole lines are appended to, for the OTLP JSON file exporters: opened O_APPEND,
// and each line goes out in one write(2), so rank processes sharing the directory never
// interleave within a line. A write error is reported once on stderr.
// Thread-safety: every member may be called from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "lens/result.hpp"

namespace lens::exporters {

class AppendFile {
 public:
  // Creates `directory` (with parents) and opens `name` inside it; the error names the
  // variable that set the directory (`directory_label`), the path and the OS error.
  static Result<std::unique_ptr<AppendFile>> open(const std::string& directory,
                                                  const std::string& directory_label,
                                                  const std::string& name, std::string what);
  // The path open() uses for `name`: <directory>/<name>.
  static std::string path_in(const std::string& directory, const std::string& name);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Appends `line` (which ends with '\n'); false when closed or the write failed.
  bool append(const std::string& line) noexcept;
  // Closes the file; later appends fail.
  bool close() noexcept;
  // Reports `message` once per file on stderr.
  void report(const std::string& message) noexcept;
  const std::string& path() const noexcept { return path_; }
  const std::string& what() const noexcept { return what_; }

 private:
  AppendFile(int fd, std::string path, std::string what);
  bool close_locked() noexcept;

  std::mutex mutex_;
  int fd_;  // -1 once closed; guarded by mutex_
  const std::string path_;
  const std::string what_;  // "spans", "metrics", "log records": what a failure loses
  std::atomic<bool> reported_{false};
};

}  // namespace lens::exporters
