// Counters of what an exporter chain has done, shared between the chain (writer, on the
// exporting thread) and the handle's stats and self-metrics (readers, any thread).
// Relaxed atomics: each counter is read on its own, no ordering with other memory is implied.
#pragma once

#include <atomic>
#include <cstdint>

namespace lens::metrics {

struct SignalCounters {
  std::atomic<std::uint64_t> received{0};   // records handed to the batching stage
  std::atomic<std::uint64_t> exported{0};   // records (metric data points) in successful exports
  std::atomic<std::uint64_t> failed{0};     // records in failed exports
  std::atomic<std::uint64_t> dropped{0};    // records refused because the queue was full
  std::atomic<std::uint64_t> in_flight{0};  // received and not yet through an export
};

}  // namespace lens::metrics
