// An spdlog sink that turns every message it receives into an OpenTelemetry log record through
// lens::log::emit (correlated with the active span), so a program that already logs through
// spdlog gets OTLP logs by adding one sink:
//
//   auto sink = std::make_shared<lens::SpdlogSink>();
//   spdlog::default_logger()->sinks().push_back(sink);
//   lens::setup_logging_bridge(lens::log::Level::info);
//
// The body is the formatted message without spdlog's pattern; the logger name becomes the
// attribute `logger.name` (when not empty). spdlog's own level filter applies first, then the
// bridge's level. Header-only: lens does not link spdlog, the program does. Thread-safety:
// spdlog_sink_mt locks around sink_it_; lens::log::emit is thread-safe.
#pragma once

#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

#include "lens/log.hpp"

namespace lens {

inline log::Level level_of(spdlog::level::level_enum level) noexcept {
  switch (level) {
    case spdlog::level::trace:
      return log::Level::trace;
    case spdlog::level::debug:
      return log::Level::debug;
    case spdlog::level::info:
      return log::Level::info;
    case spdlog::level::warn:
      return log::Level::warn;
    case spdlog::level::err:
      return log::Level::error;
    default:
      return log::Level::fatal;
  }
}

template <class Mutex>
class SpdlogSinkT final : public spdlog::sinks::base_sink<Mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level == spdlog::level::off) return;
    const log::Level level = level_of(msg.level);
    if (!log::enabled(level)) return;  // before any copy
    const std::string_view body(msg.payload.data(), msg.payload.size());
    if (msg.logger_name.size() == 0) {
      log::emit(level, body);
    } else {
      log::emit(
          level, body,
          {{"logger.name", std::string_view(msg.logger_name.data(), msg.logger_name.size())}});
    }
  }
  void flush_() override {}
};

using SpdlogSink = SpdlogSinkT<std::mutex>;
using SpdlogSinkSt = SpdlogSinkT<spdlog::details::null_mutex>;

}  // namespace lens
