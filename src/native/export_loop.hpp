// The control of a native export thread (spans, logs) shared with its callers: the thread wakes
// every drain interval or when asked; force_flush callers wait until everything emitted before
// their request went to the exporter; one caller stops the thread and waits, up to a deadline,
// for its last export and the exporter's shutdown.
// Thread-safety: run() on the export thread only; the rest from any thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace lens::native {

class ExportLoop {
 public:
  explicit ExportLoop(std::chrono::milliseconds drain_interval) noexcept
      : drain_interval_(drain_interval) {}

  // Export thread: pass(flushing) on every wake-up — flushing when a flush request came before
  // it (the pass then hands everything to the exporter) — and finish() once stopped (its result:
  // whether the final export and the exporter's shutdown went well); then returns.
  template <class Pass, class Finish>
  void run(Pass&& pass, Finish&& finish) noexcept {
    for (;;) {
      bool stopping = false;
      std::uint64_t target = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait_for(lock, drain_interval_,
                       [this] { return stop_ || flush_requested_ != flush_completed_; });
        stopping = stop_;
        target = flush_requested_;
      }
      if (stopping) {
        const bool ok = finish();
        std::lock_guard<std::mutex> lock(mutex_);
        stopped_ = true;
        stopped_ok_ = ok;
        done_.notify_all();
        return;
      }
      const bool flushing = target != flush_completed_;
      pass(flushing);
      if (flushing) {
        std::lock_guard<std::mutex> lock(mutex_);
        flush_completed_ = target;
        done_.notify_all();
      }
    }
  }

  // Any thread: waits until a pass that began after this call flushed; false when the timeout
  // passed first (after a stop: whether the thread finished).
  bool flush(std::chrono::microseconds timeout) noexcept {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::min(timeout, std::chrono::microseconds(std::chrono::hours(24)));
    std::unique_lock<std::mutex> lock(mutex_);
    if (stop_) return stopped_;
    const std::uint64_t target = ++flush_requested_;
    wake_.notify_all();
    return done_.wait_until(lock, deadline, [&] { return flush_completed_ >= target || stopped_; });
  }

  // Any thread, once: tells the thread to finish and waits for it until `deadline`; true when it
  // finished in time and finish() returned true.
  bool stop(std::chrono::steady_clock::time_point deadline) noexcept {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
    deadline_ = deadline;
    wake_.notify_all();
    return done_.wait_until(lock, deadline, [this] { return stopped_; }) && stopped_ok_;
  }

  // The thread has returned from finish() (it may then be joined).
  bool stopped() const noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopped_;
  }
  // The deadline stop() was given (for finish()).
  std::chrono::steady_clock::time_point deadline() const noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    return deadline_;
  }

 private:
  const std::chrono::milliseconds drain_interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::uint64_t flush_requested_ = 0;
  std::uint64_t flush_completed_ = 0;  // written by the export thread under mutex_
  bool stop_ = false;
  bool stopped_ = false;
  bool stopped_ok_ = false;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace lens::native
