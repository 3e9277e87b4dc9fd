// Counts of spans started and ended on an exporting rank, for TelemetryHandle::stats(). The
// open-span closer keeps them (it sees every start and end), so no extra span processor and
// no extra recordable per span is needed. Thread-safety: relaxed atomics (statistics only).
#pragma once

#include <atomic>
#include <cstdint>

namespace lens::sdk {

struct SpanCounts {
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> ended{0};  // each span once: by its End or by the closer
};

}  // namespace lens::sdk
