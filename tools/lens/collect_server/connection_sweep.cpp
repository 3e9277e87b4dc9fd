// Shutting down a server's stuck connections (see connection_sweep.hpp).
#include "collect_server/connection_sweep.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>
#include <utility>

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

std::vector<ConnectedSocket> connected_sockets_on_port(int local_port) {
  std::vector<ConnectedSocket> sockets;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return sockets;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long number = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || number == own) continue;
    const int fd = static_cast<int>(number);
    struct stat st {};
    if (connected_local_port(fd) != local_port || ::fstat(fd, &st) != 0) continue;
    sockets.push_back({fd, st.st_ino});
  }
  ::closedir(dir);
  return sockets;
}

bool shut_down_if_unchanged(const ConnectedSocket& socket, int how) {
  struct stat st {};
  if (::fstat(socket.fd, &st) != 0 || st.st_ino != socket.inode) return false;
  return ::shutdown(socket.fd, how) == 0;
}

int shut_down_connections_on_port(int local_port) {
  int count = 0;
  for (const ConnectedSocket& socket : connected_sockets_on_port(local_port)) {
    if (shut_down_if_unchanged(socket, SHUT_RDWR)) ++count;
  }
  return count;
}

SweepThread::SweepThread(std::chrono::milliseconds interval, std::function<void()> sweep)
    : interval_(interval), sweep_(std::move(sweep)), thread_([this] { run(); }) {}

SweepThread::~SweepThread() { stop(); }

void SweepThread::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SweepThread::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    sweep_();
  }
}

}  // namespace lens::cli
