// ExportPipeline's definitions (see export_pipeline.hpp), included by the signals' .cpp only,
// where the Signal's State is complete. A Signal provides: the types Exporter, Recordable,
// Registry, Thread (a ring of the registry), Processor, Options and Caller; kSortByEnd; and a
// State made from the Core with `registry`, convert (a ring record into a recordable: its end
// ticks, its span id into `seen` when asked), count (the registry's totals into the counts) and
// make_processor; if it needs them, prepare_shutdown (before the registry closes, on the
// caller's thread), add_at_finish (after the last drain, before the last export) and
// after_shutdown.
#pragma once

#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/nostd/span.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/tsan_handoff.hpp"
#include "core/utf8.hpp"
#include "lens/version.hpp"
#include "native/export_loop.hpp"
#include "native/export_pipeline.hpp"

namespace lens::native {

// The counters that PipelineCounts reads, the pipeline's fields only (the registry's totals come on
// top): API records started, queued and refused (dropped_full_queue), lost, truncated, and what
// the limits cut.
using PipelineCounters = core::AtomicSignalCounts;

// Calls `sink` with `value`, strings (and each string of an array) shortened to `max_chars` code
// points when a limit is set, never inside a UTF-8 sequence; counts a shortened value. The
// shortened values are views into the caller's storage (prefixes), valid during the call.
template <class Sink>
void with_limited_value(const opentelemetry::common::AttributeValue& value,
                        const std::optional<std::size_t>& max_chars, PipelineCounters& counters,
                        Sink&& sink) noexcept {
  namespace nostd = opentelemetry::nostd;
  using Strings = nostd::span<const nostd::string_view>;
  bool changed = false;
  auto shorten = [&](nostd::string_view text) {
    const std::size_t bytes =
        core::utf8_prefix_bytes(std::string_view(text.data(), text.size()), *max_chars);
    changed = changed || bytes < text.size();
    return nostd::string_view(text.data(), bytes);
  };
  opentelemetry::common::AttributeValue limited = value;
  std::vector<nostd::string_view> shortened;
  if (!max_chars) {
  } else if (const auto* text = nostd::get_if<nostd::string_view>(&value)) {
    limited = shorten(*text);
  } else if (const auto* raw = nostd::get_if<const char*>(&value)) {
    limited = shorten(*raw == nullptr ? "" : *raw);
  } else if (const auto* items = nostd::get_if<Strings>(&value)) {
    shortened.assign(items->begin(), items->end());
    for (auto& item : shortened) item = shorten(item);
    limited = Strings(shortened.data(), shortened.size());
  }
  if (changed) PipelineCounters::add(counters.truncated_values);
  sink(limited);
}

// The resources and instrumentation scopes of API records, owned by the pipeline. An API record
// points at its provider's, and the export thread may still write the record after the provider
// is gone (a shutdown that ran out of time leaves the thread exporting): each record is pointed
// at an equal copy held here instead. Few distinct values ever exist (one per tracer or logger
// name), so a linear search suffices; shared with the records' wrappers, which may outlive the
// pipeline.
class ForeignOrigins {
 public:
  using Resource = opentelemetry::sdk::resource::Resource;
  using Scope = opentelemetry::sdk::instrumentationscope::InstrumentationScope;

  // The held copy equal to `resource`; `resource` itself when no copy could be made.
  const Resource& resource(const Resource& resource) noexcept {
    return held(resources_, resource, [&](const Resource& r) {
      return r.GetSchemaURL() == resource.GetSchemaURL() &&
             r.GetAttributes() == resource.GetAttributes();
    });
  }
  const Scope& scope(const Scope& scope) noexcept {
    return held(scopes_, scope, [&](const Scope& s) { return s == scope; });
  }

 private:
  template <class T, class Equal>
  const T& held(std::deque<T>& copies, const T& value, Equal&& equal) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const T& copy : copies) {
      if (equal(copy)) return copy;
    }
    try {
      return copies.emplace_back(value);
    } catch (...) {
      return value;
    }
  }

  std::mutex mutex_;
  std::deque<Resource> resources_;  // a deque: references stay valid as it grows
  std::deque<Scope> scopes_;
};

template <class Signal>
struct ExportPipeline<Signal>::Core {
  using RecordablePtr = std::unique_ptr<typename Signal::Recordable>;
  struct Item {
    std::uint64_t end_ticks;
    RecordablePtr recordable;
  };

  Core(const Options& o, std::unique_ptr<typename Signal::Exporter> e,
       const opentelemetry::sdk::resource::Resource& r)
      : options(o),
        exporter(std::move(e)),
        resource(r),
        signal(std::make_unique<typename Signal::State>(*this)) {}

  const Options options;
  const std::unique_ptr<typename Signal::Exporter> exporter;
  const opentelemetry::sdk::resource::Resource resource;
  // Recordables keep a reference to it: it lives as long as the pipeline.
  const std::unique_ptr<opentelemetry::sdk::instrumentationscope::InstrumentationScope> scope =
      opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens", kVersion);
  // Shared by the recordables of API records (limits), which may outlive the pipeline.
  const std::shared_ptr<PipelineCounters> counters = std::make_shared<PipelineCounters>();
  const std::shared_ptr<ForeignOrigins> origins = std::make_shared<ForeignOrigins>();
  const std::shared_ptr<SharedTickCalibration> calibration =
      options.clock != nullptr ? options.clock : std::make_shared<SharedTickCalibration>();
  // Behind a pointer: the Signal's State uses the Core in its own definition.
  const std::unique_ptr<typename Signal::State> signal;
  ExportLoop loop{options.drain_interval};

  // API records; guarded by mutex.
  std::mutex mutex;
  std::deque<Item> foreign;
  bool closed = false;

  // Export thread only.
  std::vector<Item> batch;
  // Reused by every pass, so that an idle pass allocates nothing (a fork()ed child of an
  // allocator without fork handlers, such as GCC 12's AddressSanitizer, could hang otherwise).
  std::vector<std::shared_ptr<typename Signal::Thread>> threads;
  std::deque<Item> foreign_taken;
  std::chrono::steady_clock::time_point last_export = std::chrono::steady_clock::now();
  std::size_t next_first_thread = 0;

  // Senders (concurrent_exports > 0); guarded by send_mutex. The export thread joins them.
  std::mutex send_mutex;
  std::condition_variable send_changed;
  std::vector<RecordablePtr> waiting;  // the batch handed over, not yet taken by a sender
  bool has_waiting = false;
  std::size_t sending = 0;  // batches in Export, one per busy sender
  bool senders_stop = false;
  std::vector<std::thread> senders;

  void enqueue_foreign(RecordablePtr recordable) noexcept {
    const std::uint64_t ticks = read_ticks();
    bool queued = false;
    std::lock_guard<std::mutex> lock(mutex);
    if (!closed && foreign.size() < options.max_queue_size) {
      try {
        foreign.push_back({ticks, std::move(recordable)});
        queued = true;
      } catch (...) {
      }
    }
    PipelineCounters::add(queued ? counters->foreign_accepted : counters->dropped_full_queue);
  }

  // Moves up to `limit` finished records into `batch` (sorted by end time within the pass),
  // exporting full batches on the way; returns how many were taken.
  std::size_t collect(std::size_t limit, std::unordered_set<std::uint64_t>* seen) noexcept {
    std::vector<Item> pass;
    // Spans are sorted by end time within the pass; log records go in ring order, exported
    // while the drain is under way (the ring's bound counts a record until its drain is over).
    auto take = [&](Item&& item) {
      if constexpr (Signal::kSortByEnd) {
        pass.push_back(std::move(item));
      } else {
        batch.push_back(std::move(item));
        export_full_batches();
      }
    };
    std::size_t taken = 0;
    try {
      calibration->refresh();
      signal->registry->copy_threads(threads);
      // Each pass starts one thread further, so that a thread that always has a full pass's
      // worth of records cannot starve the others.
      const std::size_t first = threads.empty() ? 0 : next_first_thread++ % threads.size();
      for (std::size_t k = 0; k < threads.size() && taken < limit; ++k) {
        const auto& thread = threads[(first + k) % threads.size()];
        const bool exited = thread->exited.load(std::memory_order_acquire);
        const std::size_t budget = limit - taken;
        const std::size_t drained = thread->drain(
            [&](const unsigned char* bytes) {
              std::uint64_t end_ticks = 0;
              if (RecordablePtr converted = signal->convert(bytes, end_ticks, seen)) {
                take({end_ticks, std::move(converted)});
              } else {
                PipelineCounters::add(counters->lost);
              }
            },
            budget);
        taken += drained;
        // Everything it wrote before exiting was committed before `exited` was set.
        if (exited && drained < budget) signal->registry->remove(thread);
      }
      threads.clear();  // no thread state kept alive between passes
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!foreign.empty()) foreign_taken.swap(foreign);
      }
      for (Item& item : foreign_taken) {
        core::tsan_receive(item.recordable.get());
        take(std::move(item));
      }
      taken += foreign_taken.size();
      foreign_taken.clear();
      std::stable_sort(pass.begin(), pass.end(),
                       [](const Item& a, const Item& b) { return a.end_ticks < b.end_ticks; });
      for (Item& item : pass) batch.push_back(std::move(item));
    } catch (...) {
      // Out of memory: what was taken is lost.
    }
    export_full_batches();
    return taken;
  }

  void collect_all(std::unordered_set<std::uint64_t>* seen) noexcept {
    const std::size_t limit = Signal::kSortByEnd ? batch_size() * 4 : SIZE_MAX;
    while (collect(limit, seen) >= limit) {
    }
  }

  std::size_t batch_size() const noexcept {
    return std::max<std::size_t>(options.max_export_batch_size, 1);
  }

  void export_some(std::size_t count) noexcept {
    count = std::min(count, batch.size());
    if (count == 0) return;
    std::vector<RecordablePtr> records;
    try {
      records.reserve(count);
      for (std::size_t i = 0; i < count; ++i) records.push_back(std::move(batch[i].recordable));
      batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(count));
    } catch (...) {
      PipelineCounters::add(counters->lost, batch.size());
      batch.clear();
      return;
    }
    send(std::move(records));
    last_export = std::chrono::steady_clock::now();
  }

  void export_full_batches() noexcept {
    while (batch.size() >= batch_size()) export_some(batch_size());
  }

  void export_all() noexcept {
    while (!batch.empty()) export_some(batch_size());
  }

  // Into the exporter's Export: here, or to a sender once none is waiting.
  void send(std::vector<RecordablePtr>&& records) noexcept {
    if (senders.empty()) {
      static_cast<void>(exporter->Export(
          opentelemetry::nostd::span<RecordablePtr>(records.data(), records.size())));
      return;
    }
    {
      std::unique_lock<std::mutex> lock(send_mutex);
      send_changed.wait(lock, [this] { return !has_waiting; });
      waiting = std::move(records);
      has_waiting = true;
    }
    send_changed.notify_all();
  }

  void run_sender() noexcept {
    std::unique_lock<std::mutex> lock(send_mutex);
    for (;;) {
      send_changed.wait(lock, [this] { return has_waiting || senders_stop; });
      if (!has_waiting) return;  // stopping and idle
      std::vector<RecordablePtr> records = std::move(waiting);
      waiting.clear();
      has_waiting = false;
      ++sending;
      send_changed.notify_all();  // the next batch may be handed over now
      lock.unlock();
      static_cast<void>(exporter->Export(
          opentelemetry::nostd::span<RecordablePtr>(records.data(), records.size())));
      records.clear();  // the recordables are freed here, not under the lock
      lock.lock();
      --sending;
      send_changed.notify_all();
    }
  }

  void wait_senders_idle() noexcept {
    std::unique_lock<std::mutex> lock(send_mutex);
    send_changed.wait(lock, [this] { return !has_waiting && sending == 0; });
  }

  // Every sender finishes what was handed over, then leaves.
  void stop_senders() noexcept {
    {
      std::lock_guard<std::mutex> lock(send_mutex);
      senders_stop = true;
    }
    send_changed.notify_all();
    for (std::thread& sender : senders) {
      if (sender.joinable()) sender.join();
    }
  }

  bool finish() noexcept {
    std::unordered_set<std::uint64_t> ended;
    collect_all(&ended);
    if constexpr (requires { signal->add_at_finish(ended); }) signal->add_at_finish(ended);
    export_all();
    stop_senders();
    const auto remaining = std::max(std::chrono::steady_clock::duration::zero(),
                                    loop.deadline() - std::chrono::steady_clock::now());
    const bool ok =
        exporter->Shutdown(std::chrono::duration_cast<std::chrono::microseconds>(remaining));
    if constexpr (requires { signal->after_shutdown(); }) signal->after_shutdown();
    return ok;
  }

  void run() noexcept {
    loop.run(
        [this](bool flushing) {
          collect_all(nullptr);
          if (flushing) {
            export_all();
            wait_senders_idle();
            exporter->ForceFlush();
          } else if (!batch.empty() &&
                     std::chrono::steady_clock::now() - last_export >= options.schedule_delay) {
            export_all();
          }
        },
        [this] { return finish(); });
  }
};

template <class Signal>
ExportPipeline<Signal>::ExportPipeline(const Options& options,
                                       std::unique_ptr<typename Signal::Exporter> exporter,
                                       const opentelemetry::sdk::resource::Resource& resource)
    : core_(std::make_shared<Core>(options, std::move(exporter), resource)) {
  try {
    for (std::size_t i = 0; i < options.concurrent_exports; ++i) {
      core_->senders.emplace_back([core = core_.get()] { core->run_sender(); });
    }
    thread_ = std::thread([core = core_] { core->run(); });
  } catch (...) {
    // A thread that could not start (a process or container thread limit): the ones that did
    // are stopped and joined before the error reaches setup, which reports it. Left joinable,
    // their std::thread objects would end the process.
    core_->stop_senders();
    throw;
  }
}

template <class Signal>
ExportPipeline<Signal>::~ExportPipeline() {
  shutdown(std::chrono::seconds(5));
  if (thread_.joinable()) thread_.detach();  // still exporting: it owns what it uses
}

template <class Signal>
const std::shared_ptr<typename Signal::Registry>& ExportPipeline<Signal>::registry()
    const noexcept {
  return core_->signal->registry;
}

template <class Signal>
std::unique_ptr<typename Signal::Processor> ExportPipeline<Signal>::make_processor() {
  return core_->signal->make_processor(this->shared_from_this(), core_);
}

template <class Signal>
bool ExportPipeline<Signal>::force_flush(std::chrono::microseconds timeout) noexcept {
  return core_->loop.flush(timeout);
}

template <class Signal>
bool ExportPipeline<Signal>::shutdown(std::chrono::microseconds timeout,
                                      const typename Signal::Caller* caller) noexcept {
  std::call_once(shutdown_once_, [&] {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::min(timeout, std::chrono::microseconds(std::chrono::hours(24)));
    if constexpr (requires { core_->signal->prepare_shutdown(caller); }) {
      core_->signal->prepare_shutdown(caller);
    }
    core_->signal->registry->close();
    {
      std::lock_guard<std::mutex> lock(core_->mutex);
      core_->closed = true;
    }
    shutdown_result_ = core_->loop.stop(deadline);
    if (core_->loop.stopped()) {
      thread_.join();
    } else {
      thread_.detach();  // it owns what it touches (the core)
    }
  });
  return shutdown_result_;
}

template <class Signal>
PipelineCounts ExportPipeline<Signal>::counts() const noexcept {
  PipelineCounts c = core_->counters->load();
  try {
    core_->signal->count(c);  // started, accepted and dropped_full_buffer from the rings
  } catch (...) {
  }
  c.accepted += c.truncated;
  return c;
}

}  // namespace lens::native
