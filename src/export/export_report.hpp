// What became of exported telemetry, per signal: counters the telemetry handle's stats read
// (exports that succeeded or failed, their items, items a receiver rejected through
// partial_success, retries), and failures written to stderr once per cause so that a backend
// that is down cannot flood a training job's log. Lines never contain header values.
//
// The wrappers count the outcome of any exporter (OTLP, file, console); the OTLP exporters add
// the causes (HTTP status, gRPC code, partial_success) and retries to the same report.
// Thread-safety: ExportReport may be used from any thread (counters are relaxed atomics, a
// mutex guards the set of causes already reported); it outlives the exporters (shared_ptr).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "core/signal_counts.hpp"
#include "export/otlp_retry.hpp"
#include "export/signal_sdk.hpp"
#include "lens/otel_settings.hpp"

namespace lens::exporters {

// What one item of `signal` is called in messages: "spans", "data points" or "log records".
const char* items_of(Signal signal);

// One signal's outcome counters (core/signal_counts.hpp): the report fills the exports' part.
using ExportReportCounts = core::SignalCounts;

class ExportReport {
 public:
  using Sink = std::function<void(std::string_view line)>;

  // `sink` receives each reported line without newline; the default writes it to stderr.
  explicit ExportReport(Signal signal, Sink sink = {});

  Signal signal() const noexcept { return signal_; }

  void add_succeeded(std::uint64_t items) noexcept;
  void add_failed(std::uint64_t items) noexcept;
  void add_rejected(std::uint64_t items) noexcept;
  void add_retry() noexcept;
  // An Export of `items` begins / has returned (and was counted as succeeded or failed).
  void begin_export(std::uint64_t items) noexcept;
  void end_export(std::uint64_t items) noexcept;

  // Writes "lens: <line> (further occurrences are counted, not shown; totals at shutdown)" the
  // first time `cause` is reported; later reports of the same cause are only counted.
  void report(std::string_view cause, std::string_view line) noexcept;

  ExportReportCounts counts() const noexcept;

  // Shutdown has begun and ends by `deadline`: exporters reporting here keep retrying, but no
  // attempt or wait between retries reaches past it, so that the final exports fit in the
  // shutdown timeout and a last batch survives one retryable answer. Called by the telemetry
  // handle before it shuts the providers down; a later call only moves the end earlier.
  void begin_drain(std::chrono::steady_clock::time_point deadline) noexcept {
    drain_.trigger(deadline);
  }
  // The exporter is shut down: no further retries at all.
  void stop_retrying() noexcept { drain_.trigger(); }
  Interrupt& drain() noexcept { return drain_; }
  // Calls of report(), shown or not.
  std::uint64_t reports() const noexcept { return reports_.load(std::memory_order_relaxed); }

  // Distinct causes remembered; past this many, new causes are shown but not remembered.
  static constexpr std::size_t kMaxCauses = 64;

 private:
  const Signal signal_;
  Sink sink_;
  core::AtomicSignalCounts counts_;  // the exports' fields only
  std::atomic<std::uint64_t> reports_{0};
  std::mutex mutex_;
  std::set<std::string, std::less<>> causes_;
  Interrupt drain_;
};

// Wrap `inner` (not null): every Export is counted in `report`; with `explain_failures`, a
// failed Export that the inner exporter did not explain in `report` is reported as
// "<signal> export to <target> failed" (off for exporters that write their own line).
template <Signal S>
ExporterPtr<S> make_reporting_exporter(ExporterPtr<S> inner, std::shared_ptr<ExportReport> report,
                                       std::string target, bool explain_failures = true);

}  // namespace lens::exporters
