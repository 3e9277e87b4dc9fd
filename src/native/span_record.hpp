// The data of one native span: the open-span Frame the recording thread fills in place, the
// fixed-layout record it copies into its ring when the span ends, and the rare parts kept on the
// heap (SpanExtras: events, links, status text, attributes that did not fit). Names and
// attributes are stored inline as bytes (see attribute_codec.hpp), a site's name (static storage)
// as its address, so a typical span allocates nothing. Thread-safety: a Frame is written only by
// its owner thread; other threads read it only through Frame::seq (a sequence lock, for the
// snapshot of still-open spans at shutdown).
#pragma once

#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/trace/span_context.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_state.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace opentelemetry::trace {
class Span;
}

namespace lens::native {

// W3C trace flags as exported and propagated: only sampled (0x01). Level 2's random-trace-id
// flag (0x02) is not set: opentelemetry-cpp 1.19 masks it out of the spans it makes and of
// traceparent, so setting it on native spans alone gave one trace two sets of flags.
inline constexpr std::uint8_t kFlagSampled = 0x01;

enum class StatusCode : std::uint8_t { kUnset = 0, kOk = 1, kError = 2 };

// What a span rarely has; allocated on first need, owned by the frame, then by the record.
struct SpanExtras {
  struct Event {
    std::string name;
    std::uint64_t ticks = 0;
    std::int64_t unix_nanos = 0;  // given by the caller (a binding's timestamp); 0: use ticks
    std::string attributes;       // attribute_codec encoding
  };
  std::string attributes;  // attributes that did not fit in the frame's payload
  std::vector<Event> events;
  std::vector<opentelemetry::trace::SpanContext> links;
  std::string status_description;
  std::string name;         // set when the name did not fit in the frame's payload
  std::string trace_state;  // W3C tracestate header of the span context, when not empty
  // Start and end as Unix nanoseconds given by the caller (an already elapsed phase recorded
  // afterwards); 0: the ticks read at start and end.
  std::int64_t start_unix_nanos = 0;
  std::int64_t end_unix_nanos = 0;
};

// Inline room for the name and the attributes of a frame: a name of 20 characters and four
// small attributes use about a third of it.
inline constexpr std::size_t kPayloadBytes = 232;

struct Identity {
  std::array<std::uint8_t, 16> trace_id{};
  std::uint64_t span_id = 0;  // big-endian value of the 8 id bytes
  std::uint64_t parent_span_id = 0;
  std::uint8_t flags = 0;  // kFlagSampled or 0, as exported
  // The span's nesting depth when it started (docs/exporters.md, "Span depth"): 0 without a
  // local parent. In what was padding: the record's layout does not change.
  std::uint8_t depth = 0;
};

// The opentelemetry span id of an Identity span id value.
inline opentelemetry::trace::SpanId span_id_of(std::uint64_t value) noexcept {
  std::uint8_t bytes[8];
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[i] = static_cast<std::uint8_t>(value);
  return opentelemetry::trace::SpanId(bytes);
}

// A finished span in a ring: this header, then `payload_size` payload bytes, padded to 8.
struct RecordHeader {
  std::uint32_t size = 0;  // header + payload + padding
  std::uint16_t name_size = 0;
  std::uint16_t payload_size = 0;
  std::uint16_t attribute_count = 0;
  StatusCode status = StatusCode::kUnset;
  bool has_name_override = false;
  // The payload starts with the address of the name's characters (static storage), not with
  // the characters; name_size is still their count.
  bool static_name = false;
  bool truncated = false;  // ended by shutdown (nemo.span.truncated)
  Identity id;
  std::uint64_t start_ticks = 0;
  std::uint64_t end_ticks = 0;
  SpanExtras* extras = nullptr;  // owned by the record
};

// The plain part of an open span: what the snapshot of open spans copies. `record` and
// `payload` are laid out as the ring record (header, then payload), so that ending the span
// copies them as one block.
struct FrameData {
  RecordHeader record;  // name_size, payload_size (bytes used), ids, status, start, extras
  char payload[kPayloadBytes];
  // The span's yes/no state, one byte (written once per start, tested at once at the end).
  static constexpr std::uint8_t kRecording = 1;  // the sampler kept it (record_only or more)
  static constexpr std::uint8_t kRecordExceptionEvents = 2;
  static constexpr std::uint8_t kExceptionRecorded = 4;
  static constexpr std::uint8_t kHasTraceState = 8;  // Frame::trace_state is set
  static constexpr std::uint8_t kHasView = 16;       // Frame::view is set
  std::uint8_t bits = kRecordExceptionEvents;
  bool has(std::uint8_t bit) const noexcept { return (bits & bit) != 0; }
  void set(std::uint8_t bit, bool on) noexcept {
    bits = static_cast<std::uint8_t>(on ? (bits | bit) : (bits & ~bit));
  }
  bool recording() const noexcept { return has(kRecording); }
  int uncaught_at_start = 0;
  std::int64_t context_depth = 0;  // the thread's opentelemetry attach depth at push
};
static_assert(offsetof(FrameData, payload) == sizeof(RecordHeader));

// One open span of a thread. Reused: frames live in the thread's frame blocks.
struct Frame {
  std::atomic<std::uint32_t> seq{0};  // odd while the owner writes `data`
  FrameData data;
  // The trace state children inherit (null when empty).
  opentelemetry::nostd::shared_ptr<opentelemetry::trace::TraceState> trace_state;
  // The opentelemetry view of this span, made on first request (span(), GetCurrent()).
  opentelemetry::nostd::shared_ptr<opentelemetry::trace::Span> view;
};

inline constexpr std::size_t record_size(std::size_t payload) noexcept {
  return (sizeof(RecordHeader) + payload + 7) & ~std::size_t{7};
}

// The payload bytes the name takes (the attributes follow): its characters or its address.
inline std::size_t name_bytes(const RecordHeader& header) noexcept {
  return header.static_name ? sizeof(const char*) : header.name_size;
}

// The name of a record or frame whose payload starts at `payload`: the override in `extras`
// when there is one, else the payload's name.
inline std::string_view record_name(const RecordHeader& header, const char* payload,
                                    const SpanExtras* extras) noexcept {
  if (header.has_name_override && extras != nullptr) return extras->name;
  if (header.static_name) {
    const char* address = nullptr;
    std::memcpy(&address, payload, sizeof(address));
    return {address, header.name_size};
  }
  return {payload, header.name_size};
}

}  // namespace lens::native
