// Pipelined span exporter (see pipelined_exporter.hpp).
#include "sdk/pipelined_exporter.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

namespace lens::sdk {

namespace otel_sdk = opentelemetry::sdk::trace;
using opentelemetry::sdk::common::ExportResult;
using RecordablePtr = std::unique_ptr<otel_sdk::Recordable>;

struct PipelinedExporter::State {
  explicit State(std::unique_ptr<otel_sdk::SpanExporter> e) : inner(std::move(e)) {}

  const std::unique_ptr<otel_sdk::SpanExporter> inner;

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<RecordablePtr> waiting;  // the batch handed over, not yet taken by the sender
  bool has_waiting = false;
  std::size_t sending = 0;      // batches being sent, one per busy sender thread
  bool stopping = false;        // no more batches; the sender leaves once idle
  bool shutdown_inner = false;  // the sender shuts `inner` down when it leaves
  bool inner_shut_down = false;

  // Until nothing is waiting or being sent; false when `deadline` came first.
  bool wait_idle(std::unique_lock<std::mutex>& lock,
                 std::chrono::steady_clock::time_point deadline) {
    return changed.wait_until(lock, deadline, [this] { return !has_waiting && sending == 0; });
  }

  void run() noexcept {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [this] { return has_waiting || stopping; });
      if (!has_waiting) break;  // stopping and idle
      std::vector<RecordablePtr> batch = std::move(waiting);
      waiting.clear();
      has_waiting = false;
      ++sending;
      changed.notify_all();  // Export may hand over the next batch now
      lock.unlock();
      inner->Export(opentelemetry::nostd::span<RecordablePtr>(batch.data(), batch.size()));
      batch.clear();  // the recordables are freed here, not under the lock
      lock.lock();
      --sending;
      changed.notify_all();
    }
    // The last sender to leave shuts the wrapped exporter down, after every batch.
    if (shutdown_inner && !inner_shut_down && sending == 0) {
      inner_shut_down = true;
      lock.unlock();
      inner->Shutdown(std::chrono::microseconds(0));
    }
  }
};

namespace {

std::chrono::steady_clock::time_point deadline_after(std::chrono::microseconds timeout) noexcept {
  // Capped: a "forever" timeout must not overflow the clock.
  return std::chrono::steady_clock::now() +
         std::min(timeout, std::chrono::microseconds(std::chrono::hours(24)));
}

std::chrono::microseconds left_until(std::chrono::steady_clock::time_point deadline) noexcept {
  const auto left = deadline - std::chrono::steady_clock::now();
  return std::max(std::chrono::microseconds(0),
                  std::chrono::duration_cast<std::chrono::microseconds>(left));
}

}  // namespace

PipelinedExporter::PipelinedExporter(std::unique_ptr<otel_sdk::SpanExporter> inner,
                                     std::size_t senders)
    : state_(std::make_shared<State>(std::move(inner))) {
  const std::size_t count = std::max<std::size_t>(senders, 1);
  senders_.reserve(count);
  try {
    for (std::size_t i = 0; i < count; ++i) {
      senders_.emplace_back([state = state_] { state->run(); });
    }
  } catch (...) {
    // A thread that could not start (a process or container thread limit): the ones that did
    // are stopped and joined before the error reaches setup, which reports it. Left joinable,
    // their std::thread objects would end the process.
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->stopping = true;
    }
    state_->changed.notify_all();
    join_or_detach_senders(/*join=*/true);
    throw;
  }
}

void PipelinedExporter::join_or_detach_senders(bool join) noexcept {
  for (std::thread& sender : senders_) {
    if (!sender.joinable()) continue;
    if (join) {
      sender.join();
    } else {
      sender.detach();  // it holds the state, and so the wrapped exporter, until it is done
    }
  }
}

PipelinedExporter::~PipelinedExporter() {
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
    idle = !state_->has_waiting && state_->sending == 0;
  }
  state_->changed.notify_all();
  join_or_detach_senders(idle);
}

RecordablePtr PipelinedExporter::MakeRecordable() noexcept {
  return state_->inner->MakeRecordable();
}

ExportResult PipelinedExporter::Export(
    const opentelemetry::nostd::span<RecordablePtr>& spans) noexcept {
  try {
    std::vector<RecordablePtr> batch;
    batch.reserve(spans.size());
    for (RecordablePtr& span : spans) batch.push_back(std::move(span));
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->changed.wait(lock, [this] { return !state_->has_waiting || state_->stopping; });
    if (state_->stopping) return ExportResult::kFailure;
    state_->waiting = std::move(batch);
    state_->has_waiting = true;
  } catch (...) {  // out of memory: this batch is lost
    return ExportResult::kFailure;
  }
  state_->changed.notify_all();
  return ExportResult::kSuccess;
}

bool PipelinedExporter::ForceFlush(std::chrono::microseconds timeout) noexcept {
  const auto deadline = deadline_after(timeout);
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (!state_->wait_idle(lock, deadline)) return false;
  }
  return state_->inner->ForceFlush(left_until(deadline));
}

bool PipelinedExporter::Shutdown(std::chrono::microseconds timeout) noexcept {
  const auto deadline = deadline_after(timeout);
  bool idle = false;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    idle = state_->wait_idle(lock, deadline);
    state_->stopping = true;
    if (state_->inner_shut_down) return true;
    if (!idle) {
      state_->shutdown_inner = true;  // after the batch in flight, by the sender
    } else {
      state_->inner_shut_down = true;
    }
  }
  state_->changed.notify_all();
  if (!idle) {
    // They finish their batches and the wrapped exporter's shutdown on their own, holding the
    // state.
    join_or_detach_senders(false);
    return false;
  }
  join_or_detach_senders(true);
  return state_->inner->Shutdown(left_until(deadline));
}

}  // namespace lens::sdk
