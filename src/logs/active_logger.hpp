// The logger that lens::log and the spdlog sink emit to, with the log record limits of the
// config. setup_telemetry() installs it on an exporting rank with logs on; shutdown, a
// disabled or non-exporting setup and a fork()ed child remove it. The level threshold that
// lens::log::enabled() reads is recomputed on every change. Thread-safety: lock-free reads;
// writes may race (the last one wins).
#pragma once

#include <opentelemetry/logs/logger.h>
#include <opentelemetry/nostd/shared_ptr.h>

#include <cstdint>
#include <optional>

namespace lens::logs {

struct ActiveLogger {
  opentelemetry::nostd::shared_ptr<opentelemetry::logs::Logger> logger;  // null: none
  std::int64_t attribute_count_limit = 128;
  std::optional<std::int64_t> attribute_value_length_limit;
};

// Never null; `logger` inside is null when no logger is installed.
const ActiveLogger* active_logger() noexcept;
void set_active_logger(ActiveLogger logger) noexcept;
void clear_active_logger() noexcept;

// The bridge's requested level (a severity number), or 0 when the bridge is not set up.
void set_bridge_level(int severity) noexcept;

}  // namespace lens::logs
