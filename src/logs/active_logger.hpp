// The log pipeline that lens::log and the spdlog sink write to. setup_telemetry() installs it on
// an exporting rank with logs on; shutdown, a disabled or non-exporting setup and a fork()ed
// child remove it. The level threshold that lens::log::enabled() reads is recomputed on every
// change. Thread-safety: lock-free reads; writes may race (the last one wins).
#pragma once

#include <memory>

#include "native/thread_logs.hpp"

namespace lens::logs {

struct ActiveLogger {
  std::shared_ptr<native::LogRegistry> registry;  // null: none
};

// Never null; `registry` inside is null when no pipeline is installed.
const ActiveLogger* active_logger() noexcept;
void set_active_logger(ActiveLogger logger) noexcept;
void clear_active_logger() noexcept;

// The bridge's requested level (a severity number), or 0 when the bridge is not set up.
void set_bridge_level(int severity) noexcept;

}  // namespace lens::logs
