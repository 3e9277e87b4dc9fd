// The outcome counters of one signal (spans, metric points or log records): one definition that
// the signal's native pipeline fills (what it accepted, refused, lost and what the limits cut:
// native::ExportPipeline::counts) and its export report fills (what the exports delivered,
// failed, retried: exporters::ExportReport::counts), and that setup adds up and reads
// (TelemetryHandle::stats, the self-metrics, the completeness line). Each side leaves the
// other's fields at 0, so the sum of the two is the signal's whole account. SignalCounts is the
// value; AtomicSignalCounts the live form the two sides bump from any thread (relaxed adds), with
// the same fields, declared once below.
#pragma once

#include <atomic>
#include <cstdint>

namespace lens::core {

// The fields, once: `Counter` is std::uint64_t for a value, std::atomic<std::uint64_t> for the
// live counters.
template <class Counter>
struct BasicSignalCounts {
  // --- The native pipeline's ---
  Counter started{0};              // native records begun (spans; a log record is accepted at once)
  Counter accepted{0};             // native records ended into a ring, or ended by shutdown
  Counter foreign_started{0};      // spans started through opentelemetry-cpp's API
  Counter foreign_accepted{0};     // records queued from opentelemetry-cpp's API
  Counter dropped_full_buffer{0};  // native records refused: a full ring or buffer
  Counter dropped_full_queue{0};   // API records refused: a full (or closed) queue
  // Lost before the exporter saw them (out of memory converting or batching).
  Counter lost{0};
  Counter truncated{0};  // spans exported as still open at shutdown
  // Limits (OTEL_*_LIMIT): what they cut.
  Counter dropped_attributes{0};  // span, event and link attributes
  Counter dropped_events{0};
  Counter dropped_links{0};
  Counter truncated_values{0};  // attribute values shortened

  // --- The exports' (the signal's export report) ---
  Counter exports_succeeded{0};  // Export calls that returned kSuccess
  Counter exports_failed{0};     // Export calls that failed (after any retries)
  Counter items_exported{0};     // spans / metric data points / log records sent
  Counter items_failed{0};       // items of failed exports: dropped
  Counter items_rejected{0};     // items a receiver accepted the request of but rejected
                                 // (partial_success), counted within items_exported
  Counter retries{0};            // attempts after the first
  Counter items_in_flight{0};    // items of Export calls not returned yet (a receiver
                                 // that never answers holds them past shutdown)
};

// Calls f(a.x, b.x) for every field x of two counts, in the order above.
template <class A, class B, class F>
void for_each_count(A& a, B& b, F&& f) {
  f(a.started, b.started);
  f(a.accepted, b.accepted);
  f(a.foreign_started, b.foreign_started);
  f(a.foreign_accepted, b.foreign_accepted);
  f(a.dropped_full_buffer, b.dropped_full_buffer);
  f(a.dropped_full_queue, b.dropped_full_queue);
  f(a.lost, b.lost);
  f(a.truncated, b.truncated);
  f(a.dropped_attributes, b.dropped_attributes);
  f(a.dropped_events, b.dropped_events);
  f(a.dropped_links, b.dropped_links);
  f(a.truncated_values, b.truncated_values);
  f(a.exports_succeeded, b.exports_succeeded);
  f(a.exports_failed, b.exports_failed);
  f(a.items_exported, b.items_exported);
  f(a.items_failed, b.items_failed);
  f(a.items_rejected, b.items_rejected);
  f(a.retries, b.retries);
  f(a.items_in_flight, b.items_in_flight);
}

struct SignalCounts : BasicSignalCounts<std::uint64_t> {
  SignalCounts& operator+=(const SignalCounts& other) noexcept {
    for_each_count(*this, other, [](std::uint64_t& sum, std::uint64_t add) { sum += add; });
    return *this;
  }

  // Records that reached the pipeline: ended native ones and those queued from the API.
  std::uint64_t handed_over() const noexcept { return accepted + foreign_accepted; }
  // Records the pipeline refused (a full ring, buffer or queue).
  std::uint64_t refused() const noexcept { return dropped_full_buffer + dropped_full_queue; }
};

// The live counters: each side bumps its own fields from any thread and reads all at once.
struct AtomicSignalCounts : BasicSignalCounts<std::atomic<std::uint64_t>> {
  static void add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) noexcept {
    counter.fetch_add(n, std::memory_order_relaxed);
  }
  static void sub(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept {
    counter.fetch_sub(n, std::memory_order_relaxed);
  }
  // Each field read on its own (relaxed): a snapshot of counters that only grow.
  SignalCounts load() const noexcept {
    SignalCounts value;
    for_each_count(value, *this, [](std::uint64_t& out, const std::atomic<std::uint64_t>& in) {
      out = in.load(std::memory_order_relaxed);
    });
    return value;
  }
};

}  // namespace lens::core
