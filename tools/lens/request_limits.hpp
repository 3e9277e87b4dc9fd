// Bounds on what one OTLP request may cost once decoded. A small body can describe millions of
// empty objects (58 KB of gzip inflate to 30 million empty ResourceSpans, gigabytes once
// parsed), so the body's size alone bounds nothing: the items in a body and an estimate of
// their decoded memory are counted on the encoded bytes, before anything is allocated for them.
#pragma once

#include <google/protobuf/descriptor.h>

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
  // Estimated bytes of the decoded request (objects, strings, arrays). --max-request-memory.
  std::uint64_t max_memory = kDefaultMaxMemory;
};

// What a body was found to hold, as far as it was read (the count stops at the first limit).
struct RequestSize {
  std::uint64_t items = 0;
  std::uint64_t memory = 0;
};

// Counts a binary protobuf body of message `type` without decoding it. Returns the message for
// the client when a limit is passed ("" otherwise, also when the body is not valid protobuf:
// the parser reports that); `size` gets what was counted.
std::string protobuf_over_limits(const google::protobuf::Descriptor& type, std::string_view body,
                                 const RequestLimits& limits, RequestSize& size);

// The same for an OTLP JSON body: each JSON object outside strings is one item.
std::string json_over_limits(std::string_view body, const RequestLimits& limits, RequestSize& size);

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
