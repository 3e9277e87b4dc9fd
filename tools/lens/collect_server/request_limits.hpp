// Bounds on what one OTLP request may cost once decoded. A small body can describe millions of
// empty objects (58 KB of gzip inflate to 30 million empty ResourceSpans, gigabytes once
// parsed), so the body's size alone bounds nothing: the items in a body and an estimate of
// their decoded memory are counted on the encoded bytes, before anything is allocated for them.
#pragma once

#include <google/protobuf/descriptor.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lens::cli {

struct RequestLimits {
  static constexpr std::uint64_t kDefaultMaxItems = 1'000'000;
  static constexpr std::uint64_t kDefaultMaxMemory = 128ull << 20;

  // Items: every object in the request (resources, scopes, spans, log records, metrics, data
  // points, attributes, events, links, ...). --max-request-items.
  std::uint64_t max_items = kDefaultMaxItems;
  // Estimated bytes of the request in memory: its body, the decoded request (objects, strings,
  // arrays) and the JSON line it is written as (escapes included). --max-request-memory.
  std::uint64_t max_memory = kDefaultMaxMemory;
};

// What a body was found to hold, as far as it was read (the count stops at the first limit).
struct RequestSize {
  std::uint64_t items = 0;
  std::uint64_t memory = 0;   // the body, the decoded request and the written line, estimated
  std::uint64_t written = 0;  // of which the JSON line (escapes included)
};

// Counts a binary protobuf body of message `type` without decoding it. Returns the message for
// the client when a limit is passed ("" otherwise, also when the body is not valid protobuf:
// the parser reports that); `size` gets what was counted.
std::string protobuf_over_limits(const google::protobuf::Descriptor& type, std::string_view body,
                                 const RequestLimits& limits, RequestSize& size);

// The same for an OTLP JSON body: each JSON object outside strings is one item.
std::string json_over_limits(std::string_view body, const RequestLimits& limits, RequestSize& size);

// The memory all requests in flight may take together (--max-memory-in-flight). Each request
// holds a share, grown as it is read (its declared or received body, its inflated body, then its
// estimated size); a request that would take the budget past its size is refused for a retry
// (HTTP 503 with Retry-After, gRPC RESOURCE_EXHAUSTED with grpc-retry-pushback-ms) unless it is
// the only request holding a share, so that one request within --max-request-memory always
// passes. Thread-safe.
class MemoryBudget {
 public:
  static constexpr std::uint64_t kDefaultBytes = 160ull << 20;

  explicit MemoryBudget(std::uint64_t bytes = kDefaultBytes) : bytes_(bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t in_use() const { return in_use_.load(); }

  // One request's share, given back when it goes.
  class Share {
   public:
    explicit Share(MemoryBudget& budget) : budget_(budget) {}
    ~Share() { budget_.in_use_.fetch_sub(held_); }
    Share(const Share&) = delete;
    Share& operator=(const Share&) = delete;

    // Holds `total` bytes from now on (never less than before); false, holding what it held,
    // when that would pass the budget while other requests hold shares.
    bool grow_to(std::uint64_t total);
    std::uint64_t held() const { return held_; }

   private:
    MemoryBudget& budget_;
    std::uint64_t held_ = 0;
  };

 private:
  const std::uint64_t bytes_;
  std::atomic<std::uint64_t> in_use_{0};
};

// Declared before a request's buffers, so that it runs after they are freed: returns the freed
// memory to the system (malloc_trim) after a large request, which the allocator would keep.
class ReleaseMemoryAfterLargeRequest {
 public:
  static constexpr std::size_t kLargeRequestBytes = 16u << 20;
  ReleaseMemoryAfterLargeRequest() = default;
  ~ReleaseMemoryAfterLargeRequest();
  ReleaseMemoryAfterLargeRequest(const ReleaseMemoryAfterLargeRequest&) = delete;
  ReleaseMemoryAfterLargeRequest& operator=(const ReleaseMemoryAfterLargeRequest&) = delete;

  // The request took at least `bytes` (body, inflated body or decoded estimate).
  void note(std::uint64_t bytes) { largest_ = bytes > largest_ ? bytes : largest_; }

 private:
  std::uint64_t largest_ = 0;
};

}  // namespace lens::cli
