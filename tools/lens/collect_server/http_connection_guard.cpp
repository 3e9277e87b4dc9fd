// The HTTP request deadline and per-peer connection cap (see http_connection_guard.hpp).
#include "collect_server/http_connection_guard.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "collect_server/connection_sweep.hpp"

namespace lens::cli {
namespace {

// The numeric address and port of a socket's peer ("" when it has none).
std::string peer_of(int fd, int& port) {
  sockaddr_storage peer{};
  socklen_t size = sizeof(peer);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0) return {};
  char text[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(peer);
    port = ntohs(v4.sin_port);
    return ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text)) != nullptr ? text : "";
  }
  if (peer.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(peer);
    port = ntohs(v6.sin6_port);
    return ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text)) != nullptr ? text : "";
  }
  return {};
}

std::string key_of(const std::string& address, int port) {
  return address + " " + std::to_string(port);
}

}  // namespace

HttpConnectionGuard::HttpConnectionGuard(int local_port, const HttpConnectionLimits& limits)
    : local_port_(local_port), limits_(limits), sweeper_(kSweepInterval, [this] { sweep(); }) {}

HttpConnectionGuard::~HttpConnectionGuard() { stop(); }

void HttpConnectionGuard::stop() { sweeper_.stop(); }

void HttpConnectionGuard::body_read(const std::string& address, int port) {
  std::lock_guard lock(activity_mutex_);
  activity_[key_of(address, port)].handling = true;
}

void HttpConnectionGuard::answered(const std::string& address, int port) {
  std::lock_guard lock(activity_mutex_);
  activity_[key_of(address, port)] = {false, Clock::now()};
}

void HttpConnectionGuard::stop_reading(const std::string& address, int port) const {
  for (const ConnectedSocket& socket : connected_sockets_on_port(local_port_)) {
    int peer_port = 0;
    if (peer_of(socket.fd, peer_port) == address && peer_port == port) {
      shut_down_if_unchanged(socket, SHUT_RD);
      break;
    }
  }
}

void HttpConnectionGuard::sweep() {
  const Clock::time_point now = Clock::now();
  struct Connection {
    ConnectedSocket socket;
    Clock::time_point first_seen;
    std::string address;
    std::string key;
  };
  std::vector<Connection> open;  // not shut down yet, with a peer
  for (const auto& [socket, first_seen] : sockets_.open_on_port(local_port_, now)) {
    int port = 0;
    std::string address = peer_of(socket.fd, port);
    if (address.empty()) continue;
    std::string key = key_of(address, port);
    open.push_back({socket, first_seen, std::move(address), std::move(key)});
  }

  std::vector<Connection> kept;
  {
    std::lock_guard lock(activity_mutex_);
    std::set<std::string> keys;
    for (Connection& connection : open) {
      keys.insert(connection.key);
      Clock::time_point start = connection.first_seen;
      const auto it = activity_.find(connection.key);
      if (it != activity_.end()) {
        if (it->second.handling) {
          kept.push_back(std::move(connection));
          continue;  // answered by the server in its own time
        }
        start = std::max(start, it->second.request_start);
      }
      if (now - start > limits_.request_timeout && sockets_.shut_down(connection.socket)) {
        timed_out_.fetch_add(1);
        continue;
      }
      kept.push_back(std::move(connection));
    }
    std::erase_if(activity_, [&](const auto& item) { return keys.count(item.first) == 0; });
  }

  // Per peer address, the oldest keep their place: a newcomer cannot push out an exporter
  // already connected.
  std::sort(kept.begin(), kept.end(), [](const Connection& a, const Connection& b) {
    return std::tie(a.address, a.first_seen, a.socket.inode) <
           std::tie(b.address, b.first_seen, b.socket.inode);
  });
  std::size_t run = 0;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    run = i > 0 && kept[i].address == kept[i - 1].address ? run + 1 : 1;
    if (run > limits_.per_peer && sockets_.shut_down(kept[i].socket)) over_peer_cap_.fetch_add(1);
  }
}

}  // namespace lens::cli
