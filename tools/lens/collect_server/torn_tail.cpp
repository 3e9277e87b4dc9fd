// Moving a torn last line out of a JSON-lines file (see torn_tail.hpp).
#include "collect_server/torn_tail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <vector>

namespace lens::cli {
namespace {

std::string failure(const std::string& what, const std::string& path, int error) {
  return "cannot repair the torn last line of '" + path + "': " + what + ": " +
         std::error_code(error, std::generic_category()).message();
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool read_at(int fd, char* data, std::size_t size, off_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, data, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

Result<TornTail> repair_torn_tail(const std::string& path) {
  Fd file{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  if (file.fd < 0) {
    if (errno == ENOENT) return TornTail{};
    return Error(failure("open", path, errno));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return Error(failure("stat", path, errno));
  if (!S_ISREG(st.st_mode) || st.st_size == 0) return TornTail{};
  const off_t size = st.st_size;

  // Find the last newline, reading backwards a block at a time.
  constexpr off_t kBlock = 64 * 1024;
  std::vector<char> block(static_cast<std::size_t>(kBlock));
  off_t cut = 0;  // where the torn fragment starts
  for (off_t end = size; end > 0;) {
    const off_t begin = std::max<off_t>(0, end - kBlock);
    const auto length = static_cast<std::size_t>(end - begin);
    if (!read_at(file.fd, block.data(), length, begin)) return Error(failure("read", path, errno));
    if (end == size && block[length - 1] == '\n') {
      return TornTail{};  // the file ends with a newline: nothing torn
    }
    std::size_t i = length;
    while (i > 0 && block[i - 1] != '\n') --i;
    if (i > 0) {
      cut = begin + static_cast<off_t>(i);
      break;
    }
    end = begin;
  }

  TornTail torn{static_cast<std::uint64_t>(size - cut), path + ".torn"};
  Fd quarantine{::open(torn.quarantine.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (quarantine.fd < 0) return Error(failure("open " + torn.quarantine, path, errno));
  std::string fragment;
  fragment.resize(static_cast<std::size_t>(size - cut));
  if (!read_at(file.fd, fragment.data(), fragment.size(), cut)) {
    return Error(failure("read", path, errno));
  }
  fragment += '\n';
  if (!write_all(quarantine.fd, fragment.data(), fragment.size()) || ::fsync(quarantine.fd) != 0) {
    return Error(failure("write " + torn.quarantine, path, errno));
  }
  if (::ftruncate(file.fd, cut) != 0) return Error(failure("truncate", path, errno));
  return torn;
}

}  // namespace lens::cli
