// PipelinedExporter: runs the wrapped exporter's Export on sender threads of its own, so that
// the native span pipeline's export thread converts the next batch while the previous one is on
// the wire (an OTLP exporter returns only once the receiver has answered; without this the two
// processes take turns and both sit idle half the time). With two or more senders (for an
// exporter whose Export may run on several threads at once, as lens's OTLP exporters) several
// batches are on the wire at once, so that the receiver works on one while the next is encoded.
// At most one batch waits while the senders are busy: Export blocks its caller while a batch is
// already waiting, which bounds memory and keeps back-pressure on the export thread (never on a
// recording thread). Batches may reach the receiver out of order with several senders.
// Results: Export returns kSuccess once the batch is handed over (the wrapped exporter counts
// what was delivered in its ExportReport) and kFailure after Shutdown. ForceFlush
// and Shutdown first wait for the batches handed over, within their timeout.
// Thread-safety: MakeRecordable from any thread (the wrapped exporter's must be thread-safe,
// as all of lens's are); Export, ForceFlush and Shutdown from one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "opentelemetry/sdk/trace/exporter.h"

namespace lens::sdk {

class PipelinedExporter final : public opentelemetry::sdk::trace::SpanExporter {
 public:
  // `inner` must not be null. `senders` > 1 only for an exporter whose Export is thread-safe.
  explicit PipelinedExporter(std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> inner,
                             std::size_t senders = 1);
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
  void join_or_detach_senders(bool join) noexcept;

  std::shared_ptr<State> state_;
  std::vector<std::thread> senders_;
};

}  // namespace lens::sdk
