// The native path's export thread (see span_pipeline.hpp).
#include "native/span_pipeline.hpp"

#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/trace/recordable.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_id.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/tsan_handoff.hpp"
#include "lens/version.hpp"
#include "native/attribute_codec.hpp"
#include "native/export_loop.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {
namespace {

namespace otel = opentelemetry;
namespace sdktrace = opentelemetry::sdk::trace;
using RecordablePtr = std::unique_ptr<sdktrace::Recordable>;

constexpr std::string_view kTruncated = "nemo.span.truncated";
constexpr std::string_view kTruncatedReasonKey = "nemo.span.truncated.reason";
constexpr std::string_view kTruncatedReason = "still open at telemetry shutdown";

otel::nostd::string_view view(std::string_view s) noexcept { return {s.data(), s.size()}; }

class OneAttribute final : public otel::common::KeyValueIterable {
 public:
  OneAttribute(std::string_view key, std::string_view value) noexcept : key_(key), value_(value) {}
  bool ForEachKeyValue(
      otel::nostd::function_ref<bool(otel::nostd::string_view, otel::common::AttributeValue)>
          callback) const noexcept override {
    return callback(view(key_), otel::common::AttributeValue(view(value_)));
  }
  std::size_t size() const noexcept override { return 1; }

 private:
  std::string_view key_;
  std::string_view value_;
};

otel::common::SystemTimestamp timestamp(std::int64_t unix_ns) noexcept {
  return otel::common::SystemTimestamp(std::chrono::nanoseconds(unix_ns));
}

// What one record carries, wherever it comes from (a ring, or a snapshot of an open span).
struct RecordView {
  const Identity* id;
  std::string_view name;
  const char* attributes;  // encoded, after the name in the payload
  std::size_t attributes_size;
  StatusCode status;
  std::uint64_t start_ticks;
  std::uint64_t end_ticks;
  const SpanExtras* extras;
  bool truncated;
};

}  // namespace

struct SpanPipeline::Core {
  Core(const SpanPipelineOptions& o, std::unique_ptr<sdktrace::SpanExporter> e,
       const otel::sdk::resource::Resource& r)
      : options(o),
        exporter(std::move(e)),
        resource(r),
        scope(
            otel::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens", kVersion)) {}

  const SpanPipelineOptions options;
  const std::unique_ptr<sdktrace::SpanExporter> exporter;
  const otel::sdk::resource::Resource resource;
  const std::unique_ptr<otel::sdk::instrumentationscope::InstrumentationScope> scope;
  std::shared_ptr<SpanRegistry> registry;

  ExportLoop loop{options.drain_interval};

  // Guarded by mutex.
  std::mutex mutex;
  struct Foreign {
    std::uint64_t end_ticks;
    RecordablePtr recordable;
  };
  std::deque<Foreign> foreign;
  bool closed = false;  // no more foreign spans
  std::vector<ThreadSpans::OpenSpan> open_at_shutdown;
  std::uint64_t shutdown_ticks = 0;

  std::atomic<std::uint64_t> foreign_dropped{0};
  std::atomic<std::uint64_t> truncated{0};

  // Shared with the other signal's pipeline of the setup (see the options).
  const std::shared_ptr<SharedTickCalibration> calibration =
      options.clock != nullptr ? options.clock : std::make_shared<SharedTickCalibration>();

  // Export thread only.
  // Shared by every span without a trace state (one reference count less per span).
  const otel::nostd::shared_ptr<otel::trace::TraceState> default_trace_state =
      otel::trace::TraceState::GetDefault();
  struct Item {
    std::uint64_t end_ticks;
    RecordablePtr recordable;
  };
  std::vector<Item> batch;
  // Reused by every pass, so that an idle pass allocates nothing (a fork()ed child of an
  // allocator without fork handlers, such as GCC 12's AddressSanitizer, could hang otherwise).
  std::vector<std::shared_ptr<ThreadSpans>> threads;
  std::deque<Foreign> foreign_taken;
  std::chrono::steady_clock::time_point last_export = std::chrono::steady_clock::now();
  std::size_t next_first_thread = 0;

  void enqueue_foreign(RecordablePtr recordable) noexcept;
  void run() noexcept;

 private:
  RecordablePtr convert(const RecordView& record) noexcept;
  // Moves up to `limit` finished spans into `batch` (sorted by end time within the pass),
  // exporting full batches on the way; returns how many were taken.
  std::size_t collect(std::size_t limit, std::unordered_set<std::uint64_t>* seen) noexcept;
  void collect_all(std::unordered_set<std::uint64_t>* seen) noexcept;
  void export_full_batches() noexcept;
  void export_all() noexcept;
  void export_some(std::size_t count) noexcept;
  bool finish() noexcept;
};

void SpanPipeline::Core::enqueue_foreign(RecordablePtr recordable) noexcept {
  const std::uint64_t ticks = read_ticks();
  std::lock_guard<std::mutex> lock(mutex);
  if (closed || foreign.size() >= options.max_queue_size) {
    foreign_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    foreign.push_back({ticks, std::move(recordable)});
  } catch (...) {
    foreign_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

RecordablePtr SpanPipeline::Core::convert(const RecordView& r) noexcept {
  RecordablePtr out = exporter->MakeRecordable();
  if (out == nullptr) return nullptr;
  try {
    const otel::trace::TraceId trace_id(
        otel::nostd::span<const std::uint8_t, 16>(r.id->trace_id.data(), 16));
    const otel::trace::TraceFlags flags(r.id->flags);
    const bool has_state = r.extras != nullptr && !r.extras->trace_state.empty();
    const otel::trace::SpanContext context(
        trace_id, span_id_of(r.id->span_id), flags, false,
        has_state ? otel::trace::TraceState::FromHeader(view(r.extras->trace_state))
                  : default_trace_state);
    out->SetIdentity(context, span_id_of(r.id->parent_span_id));
    out->SetTraceFlags(flags);
    out->SetResource(resource);
    out->SetInstrumentationScope(*scope);
    out->SetName(view(r.name));
    out->SetSpanKind(otel::trace::SpanKind::kInternal);
    out->SetStartTime(timestamp(calibration->unix_nanos(r.start_ticks)));
    auto set = [&out](otel::nostd::string_view key, const otel::common::AttributeValue& value) {
      out->SetAttribute(key, value);
    };
    decode_attributes(r.attributes, r.attributes_size, set);
    if (r.extras != nullptr) {
      decode_attributes(r.extras->attributes.data(), r.extras->attributes.size(), set);
    }
    if (r.truncated) out->SetAttribute(view(kTruncated), true);
    if (r.extras != nullptr) {
      for (const SpanExtras::Event& event : r.extras->events) {
        const std::int64_t at =
            event.unix_ns != 0 ? event.unix_ns : calibration->unix_nanos(event.ticks);
        out->AddEvent(view(event.name), timestamp(at),
                      EncodedAttributes(event.attributes.data(), event.attributes.size()));
      }
      for (const otel::trace::SpanContext& link : r.extras->links) {
        out->AddLink(link, NoAttributes());
      }
    }
    if (r.truncated) {
      out->AddEvent(view(kTruncated), timestamp(calibration->unix_nanos(r.end_ticks)),
                    OneAttribute(kTruncatedReasonKey, kTruncatedReason));
    }
    if (r.status != StatusCode::kUnset) {
      const auto code = r.status == StatusCode::kError ? otel::trace::StatusCode::kError
                                                       : otel::trace::StatusCode::kOk;
      const std::string_view description = r.extras != nullptr && r.status == StatusCode::kError
                                               ? std::string_view(r.extras->status_description)
                                               : std::string_view();
      out->SetStatus(code, view(description));
    }
    out->SetDuration(
        std::chrono::nanoseconds(calibration->nanos_between(r.start_ticks, r.end_ticks)));
  } catch (...) {
    return nullptr;  // out of memory while converting: the span is lost
  }
  return out;
}

std::size_t SpanPipeline::Core::collect(std::size_t limit,
                                        std::unordered_set<std::uint64_t>* seen) noexcept {
  std::vector<Item> pass;
  std::size_t taken = 0;
  try {
    calibration->refresh();
    registry->copy_threads(threads);
    // Each pass starts one thread further, so that a thread that always has a full pass's worth
    // of spans cannot starve the others.
    const std::size_t first = threads.empty() ? 0 : next_first_thread++ % threads.size();
    for (std::size_t k = 0; k < threads.size(); ++k) {
      const auto& thread = threads[(first + k) % threads.size()];
      if (taken >= limit) break;
      const bool exited = thread->exited.load(std::memory_order_acquire);
      const std::size_t budget = limit - taken;
      const std::size_t drained = thread->drain(
          [&](const unsigned char* bytes) {
            RecordHeader header;
            std::memcpy(&header, bytes, sizeof(header));
            const std::unique_ptr<SpanExtras> extras(header.extras);
            if (seen != nullptr) seen->insert(header.id.span_id);
            const char* payload = reinterpret_cast<const char*>(bytes + sizeof(header));
            const std::string_view name = header.has_name_override && extras != nullptr
                                              ? std::string_view(extras->name)
                                              : std::string_view(payload, header.name_size);
            RecordView record{&header.id,
                              name,
                              payload + header.name_size,
                              static_cast<std::size_t>(header.payload_size - header.name_size),
                              header.status,
                              header.start_ticks,
                              header.end_ticks,
                              extras.get(),
                              false};
            if (RecordablePtr converted = convert(record)) {
              pass.push_back({header.end_ticks, std::move(converted)});
            }
          },
          budget);
      taken += drained;
      // Everything it wrote before exiting was committed before `exited` was set.
      if (exited && drained < budget) registry->remove(thread);
    }
    threads.clear();  // no thread state kept alive between passes
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!foreign.empty()) foreign_taken.swap(foreign);
    }
    for (Foreign& f : foreign_taken) {
      core::tsan_receive(f.recordable.get());
      pass.push_back({f.end_ticks, std::move(f.recordable)});
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

void SpanPipeline::Core::collect_all(std::unordered_set<std::uint64_t>* seen) noexcept {
  const std::size_t limit = std::max<std::size_t>(options.max_export_batch_size, 1) * 4;
  while (collect(limit, seen) >= limit) {
  }
}

void SpanPipeline::Core::export_some(std::size_t count) noexcept {
  count = std::min(count, batch.size());
  if (count == 0) return;
  try {
    std::vector<RecordablePtr> spans;
    spans.reserve(count);
    for (std::size_t i = 0; i < count; ++i) spans.push_back(std::move(batch[i].recordable));
    batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(count));
    exporter->Export(otel::nostd::span<RecordablePtr>(spans.data(), spans.size()));
  } catch (...) {
  }
  last_export = std::chrono::steady_clock::now();
}

void SpanPipeline::Core::export_full_batches() noexcept {
  const std::size_t size = std::max<std::size_t>(options.max_export_batch_size, 1);
  while (batch.size() >= size) export_some(size);
}

void SpanPipeline::Core::export_all() noexcept {
  const std::size_t size = std::max<std::size_t>(options.max_export_batch_size, 1);
  while (!batch.empty()) export_some(size);
}

bool SpanPipeline::Core::finish() noexcept {
  std::vector<ThreadSpans::OpenSpan> open;
  std::uint64_t end_ticks = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    open.swap(open_at_shutdown);
    end_ticks = shutdown_ticks;
  }
  std::unordered_set<std::uint64_t> ended;
  collect_all(&ended);
  // Newest first, so that children precede their parents (as the opentelemetry-cpp closer).
  std::stable_sort(open.begin(), open.end(),
                   [](const ThreadSpans::OpenSpan& a, const ThreadSpans::OpenSpan& b) {
                     return a.data.record.start_ticks > b.data.record.start_ticks;
                   });
  for (const ThreadSpans::OpenSpan& span : open) {
    if (ended.count(span.data.record.id.span_id) != 0) continue;  // it ended before the last drain
    const FrameData& d = span.data;
    const std::string_view name = d.record.has_name_override
                                      ? std::string_view(span.extras.name)
                                      : std::string_view(d.payload, d.record.name_size);
    RecordView record{&d.record.id,
                      name,
                      d.payload + d.record.name_size,
                      static_cast<std::size_t>(d.record.payload_size - d.record.name_size),
                      d.record.status,
                      d.record.start_ticks,
                      std::max(end_ticks, d.record.start_ticks),
                      &span.extras,
                      true};
    if (RecordablePtr converted = convert(record)) {
      try {
        batch.push_back({end_ticks, std::move(converted)});
        truncated.fetch_add(1, std::memory_order_relaxed);
      } catch (...) {
      }
    }
  }
  export_all();
  const auto remaining = std::max(std::chrono::steady_clock::duration::zero(),
                                  loop.deadline() - std::chrono::steady_clock::now());
  return exporter->Shutdown(std::chrono::duration_cast<std::chrono::microseconds>(remaining));
}

void SpanPipeline::Core::run() noexcept {
  loop.run(
      [this](bool flushing) {
        collect_all(nullptr);
        if (flushing) {
          export_all();
          exporter->ForceFlush();
        } else if (!batch.empty() &&
                   std::chrono::steady_clock::now() - last_export >= options.schedule_delay) {
          export_all();
        }
      },
      [this] { return finish(); });
}

namespace {

class HandoffProcessor final : public sdktrace::SpanProcessor {
 public:
  explicit HandoffProcessor(std::shared_ptr<SpanPipeline::Core> core) noexcept
      : core_(std::move(core)) {}

  RecordablePtr MakeRecordable() noexcept override { return core_->exporter->MakeRecordable(); }
  void OnStart(sdktrace::Recordable&, const otel::trace::SpanContext&) noexcept override {}
  void OnEnd(RecordablePtr&& span) noexcept override {
    if (span == nullptr) return;
    core::tsan_publish(span.get());
    core_->enqueue_foreign(std::move(span));
  }
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override {
    return core_->loop.flush(timeout);
  }
  // The pipeline is shut down by its owner, after the tracer provider.
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<SpanPipeline::Core> core_;
};

std::atomic<std::uint64_t> g_next_generation{1};

}  // namespace

SpanPipeline::SpanPipeline(const SpanPipelineOptions& options,
                           std::unique_ptr<sdktrace::SpanExporter> exporter,
                           std::shared_ptr<const Sampler> sampler,
                           const otel::sdk::resource::Resource& resource)
    : core_(std::make_shared<Core>(options, std::move(exporter), resource)) {
  registry_ = std::make_shared<SpanRegistry>(
      g_next_generation.fetch_add(1, std::memory_order_relaxed), std::move(sampler),
      std::make_shared<ChunkPool>(options.buffer_bytes));
  core_->registry = registry_;
  thread_ = std::thread([core = core_] { core->run(); });
}

SpanPipeline::~SpanPipeline() {
  shutdown(std::chrono::seconds(5));
  if (thread_.joinable()) thread_.detach();
}

void SpanPipeline::activate() noexcept { native::activate(registry_); }

std::unique_ptr<sdktrace::SpanProcessor> SpanPipeline::make_handoff_processor() {
  return std::make_unique<HandoffProcessor>(core_);
}

bool SpanPipeline::force_flush(std::chrono::microseconds timeout) noexcept {
  return core_->loop.flush(timeout);
}

bool SpanPipeline::shutdown(std::chrono::microseconds timeout, const ThreadSpans* caller) noexcept {
  std::call_once(shutdown_once_, [&] {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::min(timeout, std::chrono::microseconds(std::chrono::hours(24)));
    if (g_active_generation.load(std::memory_order_acquire) == registry_->generation()) {
      native::deactivate();
    }
    // Open spans first, then close: a span that ends in between is written to its ring and
    // the export thread keeps that record instead of the truncated copy.
    std::vector<ThreadSpans::OpenSpan> open;
    try {
      registry_->snapshot_open(open, caller);
    } catch (...) {
    }
    registry_->close();
    {
      std::lock_guard<std::mutex> lock(core_->mutex);
      core_->open_at_shutdown = std::move(open);
      core_->shutdown_ticks = read_ticks();
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

SpanPipelineCounts SpanPipeline::counts() const noexcept {
  SpanPipelineCounts counts;
  try {
    const SpanTotals totals = registry_->totals();
    counts.started = totals.started;
    counts.truncated = core_->truncated.load(std::memory_order_relaxed);
    counts.ended = totals.ended + counts.truncated;
    counts.lost_unended = totals.dropped;
    counts.lost_queue_full = core_->foreign_dropped.load(std::memory_order_relaxed);
  } catch (...) {
  }
  return counts;
}

}  // namespace lens::native
