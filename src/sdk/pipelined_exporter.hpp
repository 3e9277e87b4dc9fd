// PipelinedExporter: runs the wrapped exporter's Export on a sender thread of its own, so that
// the native span pipeline's export thread converts the next batch while the previous one is on
// the wire (an OTLP exporter returns only once the receiver has answered; without this the two
// processes take turns and both sit idle half the time). At most one batch waits while one is
// being sent: Export blocks its caller while a batch is already waiting, which bounds memory and
// keeps back-pressure on the export thread (never on a recording thread).
// Results: Export returns kSuccess once the batch is handed over (the wrapped exporter, a
// CountingExporter in lens, counts what was delivered) and kFailure after Shutdown. ForceFlush
// and Shutdown first wait for the batches handed over, within their timeout.
// Thread-safety: MakeRecordable from any thread (the wrapped exporter's must be thread-safe,
// as all of lens's are); Export, ForceFlush and Shutdown from one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <thread>

#include "opentelemetry/sdk/trace/exporter.h"

namespace lens::sdk {

class PipelinedExporter final : public opentelemetry::sdk::trace::SpanExporter {
 public:
  // `inner` must not be null.
  explicit PipelinedExporter(std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> inner);
  // Lets a batch still being sent finish on its own (the sender thread owns what it uses).
  ~PipelinedExporter() override;
  PipelinedExporter(const PipelinedExporter&) = delete;
  PipelinedExporter& operator=(const PipelinedExporter&) = delete;

  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override;
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>&
          spans) noexcept override;
  bool ForceFlush(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;
  // Waits for the batches handed over, then shuts the wrapped exporter down with the time left.
  // When the timeout passes first, the sender thread shuts it down after its last batch.
  bool Shutdown(
      std::chrono::microseconds timeout = (std::chrono::microseconds::max)()) noexcept override;

  struct State;  // shared with the sender thread

 private:
  std::shared_ptr<State> state_;
  std::thread sender_;
};

}  // namespace lens::sdk
