// The tracer that lens's instrumentation primitives use. setup_telemetry() installs the
// exporting rank's tracer; shutdown, a disabled or non-exporting setup and a fork()ed child
// reset it to a no-op tracer. Thread-safety: reads and writes may race freely (atomic
// shared_ptr); readers keep the tracer they loaded alive for as long as they hold it.
#pragma once

#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/trace/tracer.h>

namespace lens::detail {

using TracerPtr = opentelemetry::nostd::shared_ptr<opentelemetry::trace::Tracer>;

// Never null: a no-op tracer when telemetry is off.
TracerPtr active_tracer() noexcept;
// Installs `tracer` (null = the no-op tracer).
void set_active_tracer(TracerPtr tracer) noexcept;

}  // namespace lens::detail
