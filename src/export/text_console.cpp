// One line, one write(2) (see text_console.hpp).
#include "export/text_console.hpp"

#include <unistd.h>

#include <cerrno>

namespace lens::exporters {
namespace {

// The whole of `line`, in one write(2) unless the kernel takes only part of it.
bool write_all(int fd, const std::string& line) noexcept {
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Holds a stdio stream's lock: the process's own printf calls wait until the lines are out.
class StreamLock {
 public:
  explicit StreamLock(std::FILE* out) noexcept : out_(out) { ::flockfile(out_); }
  ~StreamLock() { ::funlockfile(out_); }
  StreamLock(const StreamLock&) = delete;
  StreamLock& operator=(const StreamLock&) = delete;

 private:
  std::FILE* out_;
};

}  // namespace

bool TextConsole::write(const std::string& resource_line,
                        const std::vector<std::string>& lines) noexcept {
  // Newlines added before any lock is taken (the only allocations).
  std::vector<std::string> terminated;
  try {
    terminated.reserve(lines.size());
    for (const std::string& line : lines) terminated.push_back(line + '\n');
  } catch (...) {
    return false;  // out of memory
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::string resource;
  if (!resource_line.empty() && resource_line != last_resource_line_) {
    try {
      resource = resource_line + '\n';
    } catch (...) {
      return false;
    }
  }
  const int fd = ::fileno(out_);
  if (fd < 0) return false;
  bool ok = true;
  const StreamLock stream_lock(out_);
  // What the process printed through this stream so far goes first, whole.
  if (std::fflush(out_) != 0) ok = false;
  if (!resource.empty()) {
    if (write_all(fd, resource)) {
      resource.pop_back();
      last_resource_line_.swap(resource);
    } else {
      ok = false;
    }
  }
  for (const std::string& line : terminated) {
    if (!write_all(fd, line)) ok = false;
  }
  return ok;
}

bool TextConsole::flush() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::fflush(out_) == 0;
}

std::shared_ptr<TextConsole> stdout_text_console() {
  // Leaked: exporters may still write while static destructors run.
  static auto* console = new std::shared_ptr<TextConsole>(std::make_shared<TextConsole>(stdout));
  return *console;
}

}  // namespace lens::exporters
