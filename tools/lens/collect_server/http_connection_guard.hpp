// Bounds on what slow or numerous HTTP clients can hold in `lens collect`'s OTLP/HTTP server:
// a deadline for each request (from its first header byte, or the end of the previous request
// on a keep-alive connection, until its body has been read) and a cap on the connections one
// peer address holds at once. cpp-httplib has neither (its read timeout is per read: a byte every
// 3 s keeps a request alive for ever, and 1,100 such connections took every worker thread).
// A sweep thread sees the server's connections in /proc/self/fd and shuts down (SHUT_RDWR; the
// server's blocked read then ends and it closes them) those past the deadline and, per peer
// address, the newest past the cap. The request handler tells the guard when a request's body
// has been read and when it is answered. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "collect_server/connection_sweep.hpp"

namespace lens::cli {

struct HttpConnectionLimits {
  static constexpr std::chrono::seconds kDefaultRequestTimeout{60};
  static constexpr std::size_t kDefaultPerPeer = 256;
  // Headers and body of one request must have arrived within this (--http-request-timeout).
  std::chrono::milliseconds request_timeout = kDefaultRequestTimeout;
  // Connections one peer address may hold at once (--http-max-connections-per-peer).
  std::size_t per_peer = kDefaultPerPeer;
};

class HttpConnectionGuard {
 public:
  // How often connections are looked at: a deadline or the cap acts within about this.
  static constexpr auto kSweepInterval = std::chrono::milliseconds(100);

  HttpConnectionGuard(int local_port, const HttpConnectionLimits& limits);
  ~HttpConnectionGuard();  // stops the sweep thread
  HttpConnectionGuard(const HttpConnectionGuard&) = delete;
  HttpConnectionGuard& operator=(const HttpConnectionGuard&) = delete;

  // Stops the sweep thread (idempotent).
  void stop();

  // The request of the connection from `address`:`port` has its body (no deadline while it is
  // handled), or was answered (the next request's time starts now).
  void body_read(const std::string& address, int port);
  void answered(const std::string& address, int port);

  // Ends the reading side of the connection from `address`:`port` now: its answer still goes
  // out, then the server sees the end of the stream and closes it, without reading what the
  // client sends after the request's headers (a refused request's body).
  void stop_reading(const std::string& address, int port) const;

  // Connections shut down past the deadline, and past the per-peer cap, so far.
  std::uint64_t timed_out() const { return timed_out_.load(); }
  std::uint64_t over_peer_cap() const { return over_peer_cap_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Activity {
    bool handling = false;            // body read, not yet answered
    Clock::time_point request_start;  // when the current request's time began
  };

  void sweep();

  const int local_port_;
  const HttpConnectionLimits limits_;
  std::mutex activity_mutex_;
  std::map<std::string, Activity> activity_;  // "address port" -> its connection's request

  SweptSockets<Clock::time_point> sockets_;  // the sweep thread's own (no lock)

  std::atomic<std::uint64_t> timed_out_{0};
  std::atomic<std::uint64_t> over_peer_cap_{0};
  SweepThread sweeper_;  // last: it sweeps as soon as it is made
};

}  // namespace lens::cli
