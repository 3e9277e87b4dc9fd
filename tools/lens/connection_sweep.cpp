// Shutting down a server's stuck connections (see connection_sweep.hpp).
#include "connection_sweep.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace lens::cli {

int connected_local_port(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return -1;
  int listening = 0;
  socklen_t flag_size = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &flag_size) != 0 || listening) {
    return -1;
  }
  sockaddr_storage local{};
  socklen_t size = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) != 0) return -1;
  if (local.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(local).sin_port);
  }
  if (local.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(local).sin6_port);
  }
  return -1;
}

int shut_down_connections_on_port(int local_port) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  const int own = ::dirfd(dir);
  int count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == own) continue;
    if (connected_local_port(static_cast<int>(fd)) == local_port &&
        ::shutdown(static_cast<int>(fd), SHUT_RDWR) == 0) {
      ++count;
    }
  }
  ::closedir(dir);
  return count;
}

}  // namespace lens::cli
