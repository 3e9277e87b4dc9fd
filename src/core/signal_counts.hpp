// The outcome counters of one signal (spans, metric points or log records): one definition that
// the signal's native pipeline fills (what it accepted, refused, lost and what the limits cut:
// native::ExportPipeline::counts) and its export report fills (what the exports delivered,
// failed, retried: exporters::ExportReport::counts), and that setup adds up and reads
// (TelemetryHandle::stats, the self-metrics, the completeness line). Each side leaves the
// other's fields at 0, so the sum of the two is the signal's whole account. A value type.
#pragma once

#include <cstdint>

namespace lens::core {

struct SignalCounts {
  // --- The native pipeline's ---
  std::uint64_t started = 0;   // native records begun (spans; a log record is accepted at once)
  std::uint64_t accepted = 0;  // native records ended into a ring, or ended by shutdown
  std::uint64_t foreign_started = 0;      // spans started through opentelemetry-cpp's API
  std::uint64_t foreign_accepted = 0;     // records queued from opentelemetry-cpp's API
  std::uint64_t dropped_full_buffer = 0;  // native records refused: a full ring or buffer
  std::uint64_t dropped_full_queue = 0;   // API records refused: a full (or closed) queue
  // Lost before the exporter saw them (out of memory converting or batching).
  std::uint64_t lost = 0;
  std::uint64_t truncated = 0;  // spans exported as still open at shutdown
  // Limits (OTEL_*_LIMIT): what they cut.
  std::uint64_t dropped_attributes = 0;  // span, event and link attributes
  std::uint64_t dropped_events = 0;
  std::uint64_t dropped_links = 0;
  std::uint64_t truncated_values = 0;  // attribute values shortened

  // --- The exports' (the signal's export report) ---
  std::uint64_t exports_succeeded = 0;  // Export calls that returned kSuccess
  std::uint64_t exports_failed = 0;     // Export calls that failed (after any retries)
  std::uint64_t items_exported = 0;     // spans / metric data points / log records sent
  std::uint64_t items_failed = 0;       // items of failed exports: dropped
  std::uint64_t items_rejected = 0;     // items a receiver accepted the request of but rejected
                                        // (partial_success), counted within items_exported
  std::uint64_t retries = 0;            // attempts after the first
  std::uint64_t items_in_flight = 0;    // items of Export calls not returned yet (a receiver
                                        // that never answers holds them past shutdown)

  SignalCounts& operator+=(const SignalCounts& other) noexcept {
    started += other.started;
    accepted += other.accepted;
    foreign_started += other.foreign_started;
    foreign_accepted += other.foreign_accepted;
    dropped_full_buffer += other.dropped_full_buffer;
    dropped_full_queue += other.dropped_full_queue;
    lost += other.lost;
    truncated += other.truncated;
    dropped_attributes += other.dropped_attributes;
    dropped_events += other.dropped_events;
    dropped_links += other.dropped_links;
    truncated_values += other.truncated_values;
    exports_succeeded += other.exports_succeeded;
    exports_failed += other.exports_failed;
    items_exported += other.items_exported;
    items_failed += other.items_failed;
    items_rejected += other.items_rejected;
    retries += other.retries;
    items_in_flight += other.items_in_flight;
    return *this;
  }

  // Records that reached the pipeline: ended native ones and those queued from the API.
  std::uint64_t handed_over() const noexcept { return accepted + foreign_accepted; }
  // Records the pipeline refused (a full ring, buffer or queue).
  std::uint64_t refused() const noexcept { return dropped_full_buffer + dropped_full_queue; }
};

}  // namespace lens::core
