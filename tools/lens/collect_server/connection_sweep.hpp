// Ending the connections a server thread is stuck on. cpp-httplib 0.11 bounds each read, not a
// whole request, and gives no access to its connections' sockets: a client that trickles its
// request a byte at a time holds a worker, and a stop that joins the workers, forever.
// Also what the two connection sweeps (GrpcConnectionCap, HttpConnectionGuard) share: their
// thread and their record of the sockets they have seen.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace lens::cli {

// A connected TCP socket of this process: its descriptor, and its inode, which tells it from a
// later socket that reuses the number.
struct ConnectedSocket {
  int fd;
  ino_t inode;
};

// The connected TCP sockets of this process whose local port is `local_port` (read from
// /proc/self/fd; a listening socket is not one).
std::vector<ConnectedSocket> connected_sockets_on_port(int local_port);

// Shuts `socket` down (`how`: SHUT_RD or SHUT_RDWR, without closing: its owner still holds the
// descriptor) when the descriptor is still that socket, not closed and reused since it was listed.
// True when it was shut down.
bool shut_down_if_unchanged(const ConnectedSocket& socket, int how);

// The local port of the connected TCP socket `fd`, or -1 for anything else (files, listening
// sockets, other families).
int connected_local_port(int fd);

// Shuts down (SHUT_RDWR, without closing: the descriptors stay valid for the threads that own
// them) every connected TCP socket of this process whose local port is `local_port`; a thread
// blocked reading one wakes to end of file. Returns how many were shut down.
int shut_down_connections_on_port(int local_port);

// A thread that calls `sweep` every `interval` (with its lock held, so that stop() waits for a
// sweep in progress) until stop(). Thread-safe.
class SweepThread {
 public:
  SweepThread(std::chrono::milliseconds interval, std::function<void()> sweep);
  ~SweepThread();  // stop()
  SweepThread(const SweepThread&) = delete;
  SweepThread& operator=(const SweepThread&) = delete;

  // Stops the thread (idempotent): no sweep runs once it returns.
  void stop();

 private:
  void run();

  const std::chrono::milliseconds interval_;
  const std::function<void()> sweep_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// The connected sockets a sweep has seen on its port, across sweeps: when each was first seen
// (a `Stamp`: a sweep number, a time) and which the sweep has shut down. A socket is forgotten
// once it is no longer open (its inode may come back for a new one). The sweep thread's own.
template <class Stamp>
class SweptSockets {
 public:
  struct Open {
    ConnectedSocket socket;
    Stamp first_seen;
  };

  // The sockets on `local_port` now that the sweep has not shut down, each with when it was
  // first seen (`now` for one seen for the first time).
  std::vector<Open> open_on_port(int local_port, Stamp now) {
    std::vector<Open> open;
    std::set<ino_t> present;
    for (const ConnectedSocket& socket : connected_sockets_on_port(local_port)) {
      present.insert(socket.inode);
      const auto seen = first_seen_.try_emplace(socket.inode, now).first;
      if (shut_down_.count(socket.inode) == 0) open.push_back({socket, seen->second});
    }
    std::erase_if(first_seen_, [&](const auto& item) { return present.count(item.first) == 0; });
    std::erase_if(shut_down_, [&](ino_t inode) { return present.count(inode) == 0; });
    return open;
  }

  // Shuts `socket` down (SHUT_RDWR) when it is still that socket; true when it was.
  bool shut_down(const ConnectedSocket& socket) {
    if (!shut_down_if_unchanged(socket, SHUT_RDWR)) return false;
    shut_down_.insert(socket.inode);
    return true;
  }

 private:
  std::map<ino_t, Stamp> first_seen_;  // socket inode -> when first seen
  std::set<ino_t> shut_down_;          // already shut down, until closed
};

}  // namespace lens::cli
