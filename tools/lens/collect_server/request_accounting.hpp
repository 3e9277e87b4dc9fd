// What `lens collect`'s gRPC and HTTP servers share for every request: where requests go (the
// sink), the token they must carry, the per-request limits, the memory budget of the requests in
// flight, and the counts of the requests refused. Thread-safe: the servers' threads share one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "collect_server/otlp_sink.hpp"
#include "collect_server/request_limits.hpp"

namespace lens::cli {

// Largest request body accepted, after decompression (gRPC and HTTP alike).
inline constexpr std::size_t kMaxRequestBytes = 64u << 20;
// How long requests in flight may take to finish once a stop is asked for.
inline constexpr auto kShutdownGrace = std::chrono::seconds(5);

struct RequestAccounting {
  RequestAccounting(OtlpSink& s, std::string t, const RequestLimits& l, std::uint64_t budget_bytes)
      : sink(s), token(std::move(t)), limits(l), budget(budget_bytes) {}
  RequestAccounting(const RequestAccounting&) = delete;
  RequestAccounting& operator=(const RequestAccounting&) = delete;

  // True when no token is asked for, or `authorization` (the header or metadata value; "" when
  // absent) is "Bearer <token>" (the scheme case-insensitive, RFC 7235). The comparison takes
  // the same time however much of the token matched.
  bool authorized(std::string_view authorization) const;

  OtlpSink& sink;
  const std::string token;  // empty: no token asked for
  const RequestLimits limits;
  MemoryBudget budget;
  std::atomic<std::uint64_t> malformed{0};
  std::atomic<std::uint64_t> over_budget{0};  // refused for a retry: --max-memory-in-flight
  std::atomic<std::uint64_t> unauthenticated{0};
};

// "lens collect is at its memory budget ... retry later": the message of a request refused for a
// retry at the budget.
std::string budget_message(const MemoryBudget& budget);

}  // namespace lens::cli
