// TCP connections to a listener on 127.0.0.1 for the tests that play raw or hostile clients of
// `lens collect` (slow senders, idle connections, many connections of one peer). Plain functions
// over the socket API; each call owns the descriptor it returns.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace lens::testing {

// A connection to the port of `address` (HOST:PORT, as lens collect prints it) on 127.0.0.1,
// from the loopback address `source` (such as 127.0.0.2) when given; -1 on failure.
inline int connect_loopback(const std::string& address, const char* source = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &local.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port =
      htons(static_cast<std::uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  remote.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace lens::testing
