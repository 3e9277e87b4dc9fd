// A small logging API whose records become OpenTelemetry log records, correlated with the
// active span (its trace id, span id and flags are stamped on the record).
//
//   lens::setup_logging_bridge(lens::log::Level::info);   // once; idempotent
//   lens::log::info("checkpoint saved in ", seconds, " s");
//   lens::log::emit(lens::log::Level::warn, "loss spike", {{"megatron.iteration", 7}});
//
// Records flow only while the bridge is set up AND telemetry built a logger provider (an
// exporting rank with P_LOGS_ENABLED=1); otherwise every call is one relaxed atomic load and
// a branch, and its arguments are not formatted. Programs that log through spdlog add
// lens::SpdlogSink (lens/spdlog_sink.hpp) instead. A recorded call writes one record into a
// buffer of the calling thread (no lock, no allocation for a body up to 8 KiB); lens's export
// thread turns it into the exporter's record. Thread-safety: every function may be called from
// any thread; nothing here throws or blocks on I/O (a full buffer drops and counts the record).
#pragma once

#include <atomic>
#include <string_view>

#include "lens/attributes.hpp"
#include "lens/detail/log_body.hpp"

namespace lens::log {

// Values are OpenTelemetry severity numbers.
enum class Level : int { trace = 1, debug = 5, info = 9, warn = 13, error = 17, fatal = 21 };

namespace detail {
// The lowest severity number that is recorded now; above every level when nothing records.
extern std::atomic<int> g_threshold;
}  // namespace detail

// True when a record of `level` would be emitted now. One relaxed load: it only gates work;
// emit() re-reads the logger itself.
inline bool enabled(Level level) noexcept {
  return static_cast<int>(level) >= detail::g_threshold.load(std::memory_order_relaxed);
}

// Emits one record: body, attributes (a lens::AttributeList as at a span site, null values
// skipped, not redacted; within OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT and
// OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT) and an optional event name.
void emit(Level level, std::string_view body, AttributeList attributes = {},
          std::string_view event_name = {}) noexcept;

namespace detail {

template <class... Parts>
void emit_parts(Level level, const Parts&... parts) noexcept {
  try {
    BodyBuilder body;
    (append_part(body, parts), ...);
    emit(level, body.view());
  } catch (...) {
    // Out of memory while formatting: the record is lost, the caller is not disturbed.
  }
}

}  // namespace detail

// The parts (strings, numbers, bools) concatenated into the body, only when enabled.
template <class... Parts>
void trace(const Parts&... parts) noexcept {
  if (enabled(Level::trace)) detail::emit_parts(Level::trace, parts...);
}
template <class... Parts>
void debug(const Parts&... parts) noexcept {
  if (enabled(Level::debug)) detail::emit_parts(Level::debug, parts...);
}
template <class... Parts>
void info(const Parts&... parts) noexcept {
  if (enabled(Level::info)) detail::emit_parts(Level::info, parts...);
}
template <class... Parts>
void warn(const Parts&... parts) noexcept {
  if (enabled(Level::warn)) detail::emit_parts(Level::warn, parts...);
}
template <class... Parts>
void error(const Parts&... parts) noexcept {
  if (enabled(Level::error)) detail::emit_parts(Level::error, parts...);
}
template <class... Parts>
void fatal(const Parts&... parts) noexcept {
  if (enabled(Level::fatal)) detail::emit_parts(Level::fatal, parts...);
}

}  // namespace lens::log

namespace lens {

// Routes lens::log (and lens::SpdlogSink) records at `level` and above to the logger provider that
// setup_telemetry() built (docs/logs.md, "The bridge: lens::log"; idempotent): calling it again
// only sets the level. Returns true when records flow now; false when there is no logger provider
// yet (disabled, non-exporting rank, logs off) — records then flow as soon as a later setup builds
// one.
bool setup_logging_bridge(log::Level level = log::Level::info) noexcept;

// Stops routing records (they are dropped at the level check again).
void remove_logging_bridge() noexcept;

}  // namespace lens
