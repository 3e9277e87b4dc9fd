// Where the hang watchdog of a setup looks and what it says (see hang_watchdog.hpp): the open
// spans of every thread recording into the span pipeline, aged with the pipeline's tick clock;
// each event as one stderr line "lens: rank R: ..." and, when the log pipeline is live, as a log
// record (event name lens.hang or lens.hang.resumed; attributes in docs/configuration.md).
// Thread-safety: the returned functions run on the watchdog's thread.
#pragma once

#include <memory>

#include "native/thread_logs.hpp"
#include "native/thread_spans.hpp"
#include "native/tick_clock.hpp"
#include "telemetry/hang_watchdog.hpp"

namespace lens::telemetry {

// Null `spans` (traces off): no stacks. Null `logs` (logs off): stderr only.
HangWatchdog::Sources hang_sources(int rank, std::shared_ptr<native::SpanRegistry> spans,
                                   std::shared_ptr<native::SharedTickCalibration> clock,
                                   std::shared_ptr<native::LogRegistry> logs);

}  // namespace lens::telemetry
