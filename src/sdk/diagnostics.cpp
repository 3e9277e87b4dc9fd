// DiagnosticsHandler: one line per distinct SDK diagnostic. Thread-safety: see the header.
#include "sdk/diagnostics.hpp"

#include <cstdio>
#include <mutex>

namespace lens::sdk {

namespace internal_log = opentelemetry::sdk::common::internal_log;

namespace {

const char* level_name(internal_log::LogLevel level) noexcept {
  switch (level) {
    case internal_log::LogLevel::Error:
      return "error";
    case internal_log::LogLevel::Warning:
      return "warning";
    case internal_log::LogLevel::Info:
      return "info";
    default:
      return "debug";
  }
}

// Messages opentelemetry-cpp 1.19 emits on a correct shutdown, counted and never printed (a user
// would otherwise see a warning at the end of every run that records metrics): ~MeterProvider
// shuts its context down again after the handle's bounded Shutdown() did, and a reader's last
// collection runs after the SDK marked it shut down (MetricReader sets the flag first).
bool is_benign(std::string_view message) noexcept {
  for (std::string_view benign : {"[MeterContext::Shutdown] Shutdown can be invoked only once.",
                                  "MetricReader::Collect invoked while Shutdown in progress!"}) {
    if (message.find(benign) != std::string_view::npos) return true;
  }
  return false;
}

void write_to_stderr(std::string_view line) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

}  // namespace

DiagnosticsHandler::DiagnosticsHandler(Sink sink)
    : sink_(sink ? std::move(sink) : Sink(&write_to_stderr)) {}

void DiagnosticsHandler::Handle(internal_log::LogLevel level, const char* file, int line,
                                const char* message,
                                const opentelemetry::sdk::common::AttributeMap&) noexcept {
  events_.fetch_add(1, std::memory_order_relaxed);
  if (message != nullptr && is_benign(message)) {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto site = std::make_pair(std::string(file == nullptr ? "" : file), line);
      if (seen_.count(site) != 0) {
        suppressed_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if (seen_.size() < kMaxSites) seen_.insert(std::move(site));
    }
    std::string text = "lens: opentelemetry-cpp ";
    text += level_name(level);
    text += ": ";
    text += message == nullptr ? "" : message;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    text += " (further occurrences are counted, not shown)";
    sink_(text);
  } catch (...) {
    // Out of memory while reporting a diagnostic: the event stays counted, the line is lost.
  }
}

DiagnosticsHandler& install_sdk_diagnostics() {
  // Leaked (and kept reachable): the SDK's worker threads may report until the very end of
  // the process.
  static auto* owner = [] {
    auto* created =
        new opentelemetry::nostd::shared_ptr<internal_log::LogHandler>(new DiagnosticsHandler());
    internal_log::GlobalLogHandler::SetLogHandler(*created);
    internal_log::GlobalLogHandler::SetLogLevel(internal_log::LogLevel::Warning);
    return created;
  }();
  return *static_cast<DiagnosticsHandler*>(owner->get());
}

}  // namespace lens::sdk
