// Diagnostics of opentelemetry-cpp itself (its "internal log"), reported the lens way.
//
// The SDK's default handler writes one stderr line per event: a batch processor with a full
// queue prints a line for every dropped span, so a burst can write hundreds of thousands of
// lines from the training process. This handler writes each distinct diagnostic (same level,
// source file and line) once, prefixed with "lens: opentelemetry-cpp", counts every event, and
// keeps a bounded number of distinct sites. Messages the SDK emits on a correct shutdown are
// counted and never printed. Thread-safety: Handle() may be called from any
// thread (the SDK calls it from its worker threads); a mutex guards the site table.
#pragma once

#include <opentelemetry/sdk/common/global_log_handler.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace lens::sdk {

class DiagnosticsHandler final : public opentelemetry::sdk::common::internal_log::LogHandler {
 public:
  using Sink = std::function<void(std::string_view line)>;

  // `sink` receives each reported line without its newline; the default writes to stderr.
  explicit DiagnosticsHandler(Sink sink = {});

  void Handle(opentelemetry::sdk::common::internal_log::LogLevel level, const char* file, int line,
              const char* message,
              const opentelemetry::sdk::common::AttributeMap& attributes) noexcept override;

  // Events seen (reported or not) and events not reported because their site was seen before.
  std::uint64_t events() const noexcept { return events_.load(std::memory_order_relaxed); }
  std::uint64_t suppressed() const noexcept { return suppressed_.load(std::memory_order_relaxed); }

  // Sites remembered; past this many, further new sites are reported once more each time
  // they occur rather than remembered (memory stays bounded).
  static constexpr std::size_t kMaxSites = 256;

 private:
  Sink sink_;
  std::mutex mutex_;
  std::set<std::pair<std::string, int>> seen_;
  std::atomic<std::uint64_t> events_{0};
  std::atomic<std::uint64_t> suppressed_{0};
};

// Installs one process-wide DiagnosticsHandler as opentelemetry-cpp's log handler (the first
// call installs it, later calls return the same one) and sets the SDK's level to Warning.
DiagnosticsHandler& install_sdk_diagnostics();

}  // namespace lens::sdk
