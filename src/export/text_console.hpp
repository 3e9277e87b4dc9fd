// The stream the text console writes to, shared by the exporters of the three signals so that
// the resource line is written once, not once per signal or per batch: again only when the
// resource changes (a new setup). Each line goes out in one write(2) on the stream's descriptor
// while the stream's stdio lock is held (after the stream's own buffer is flushed), so a lens
// line never lands inside a line the process is printing with stdio, and lines up to PIPE_BUF
// bytes never mix with other processes' writes to the same pipe. Thread-safe.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lens::exporters {

class TextConsole {
 public:
  explicit TextConsole(std::FILE* out) noexcept : out_(out) {}

  // `resource_line` (unless it is the one written last) and then `lines`; each without its
  // newline. False when a write failed.
  bool write(const std::string& resource_line, const std::vector<std::string>& lines) noexcept;
  bool flush() noexcept;

 private:
  std::FILE* const out_;
  std::mutex mutex_;
  std::string last_resource_line_;
};

// The process's text console on standard output.
std::shared_ptr<TextConsole> stdout_text_console();

}  // namespace lens::exporters
