// The native log path's export thread (see log_pipeline.hpp).
#include "native/log_pipeline.hpp"

#include <opentelemetry/logs/severity.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/logs/recordable.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_flags.h>
#include <opentelemetry/trace/trace_id.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <string_view>
#include <vector>

#include "core/utf8.hpp"
#include "lens/version.hpp"
#include "native/attribute_codec.hpp"
#include "native/export_loop.hpp"
#include "native/log_record.hpp"
#include "native/thread_spans.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {
namespace {

namespace otel = opentelemetry;
namespace sdklogs = opentelemetry::sdk::logs;
using RecordablePtr = std::unique_ptr<sdklogs::Recordable>;

otel::nostd::string_view view(std::string_view s) noexcept { return {s.data(), s.size()}; }

// Shortens a string to `limit` characters (code points), as span attribute values are.
otel::nostd::string_view truncated(otel::nostd::string_view value,
                                   const std::optional<std::int64_t>& limit) noexcept {
  if (!limit || value.size() <= static_cast<std::size_t>(*limit)) return value;
  return value.substr(0, core::utf8_prefix_bytes(std::string_view(value.data(), value.size()),
                                                 static_cast<std::size_t>(*limit)));
}

}  // namespace

struct LogPipeline::Core {
  Core(const LogPipelineOptions& o, std::unique_ptr<sdklogs::LogRecordExporter> e,
       const otel::sdk::resource::Resource& r)
      : options(o),
        exporter(std::move(e)),
        resource(r),
        scope(
            otel::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens", kVersion)) {}

  const LogPipelineOptions options;
  const std::unique_ptr<sdklogs::LogRecordExporter> exporter;
  const otel::sdk::resource::Resource resource;
  // Recordables keep a reference to it: it lives as long as the pipeline.
  const std::unique_ptr<otel::sdk::instrumentationscope::InstrumentationScope> scope;
  std::shared_ptr<LogRegistry> registry;

  ExportLoop loop{options.drain_interval};

  // Records made through opentelemetry-cpp's Logger; guarded by foreign_mutex.
  std::mutex foreign_mutex;
  std::deque<RecordablePtr> foreign;
  bool closed = false;

  std::atomic<std::uint64_t> foreign_accepted{0};
  std::atomic<std::uint64_t> foreign_dropped{0};
  std::atomic<std::uint64_t> lost{0};  // see LogPipelineCounts::lost

  // Shared with the other signal's pipeline of the setup (see the options).
  const std::shared_ptr<SharedTickCalibration> calibration =
      options.clock != nullptr ? options.clock : std::make_shared<SharedTickCalibration>();

  // Export thread only.
  std::vector<RecordablePtr> batch;
  // Reused by every pass, so that an idle pass allocates nothing (a fork()ed child of an
  // allocator without fork handlers, such as GCC 12's AddressSanitizer, could hang otherwise).
  std::vector<std::shared_ptr<ThreadLogs>> threads;
  std::deque<RecordablePtr> foreign_taken;
  std::chrono::steady_clock::time_point last_export = std::chrono::steady_clock::now();

  void enqueue_foreign(RecordablePtr recordable) noexcept;
  // Once (later calls return the first one's result); see LogPipeline::shutdown.
  bool shutdown(std::chrono::microseconds timeout) noexcept;
  void run() noexcept;

  std::once_flag shutdown_once;
  bool shutdown_result = false;

 private:
  RecordablePtr convert(const LogRecordHeader& header, const char* inline_part) noexcept;
  // Takes what every ring and the foreign queue hold now into `batch`, exporting full batches
  // on the way.
  void collect() noexcept;
  void export_some(std::size_t count) noexcept;
  void export_full_batches() noexcept;
  void export_all() noexcept;
  bool finish() noexcept;
};

void LogPipeline::Core::enqueue_foreign(RecordablePtr recordable) noexcept {
  std::lock_guard<std::mutex> lock(foreign_mutex);
  if (closed || foreign.size() >= options.max_queue_size) {
    foreign_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    foreign.push_back(std::move(recordable));
    foreign_accepted.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    foreign_dropped.fetch_add(1, std::memory_order_relaxed);
  }
}

bool LogPipeline::Core::shutdown(std::chrono::microseconds timeout) noexcept {
  std::call_once(shutdown_once, [&] {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::min(timeout, std::chrono::microseconds(std::chrono::hours(24)));
    registry->close();
    {
      std::lock_guard<std::mutex> lock(foreign_mutex);
      closed = true;
    }
    shutdown_result = loop.stop(deadline);
  });
  return shutdown_result;
}

RecordablePtr LogPipeline::Core::convert(const LogRecordHeader& header,
                                         const char* inline_part) noexcept {
  RecordablePtr out = exporter->MakeRecordable();
  if (out == nullptr) return nullptr;
  try {
    const LogExtras* extras = header.extras;
    const std::string_view event_name = extras != nullptr
                                            ? std::string_view(extras->event_name)
                                            : std::string_view(inline_part, header.event_name_size);
    const std::string_view body =
        extras != nullptr
            ? std::string_view(extras->body)
            : std::string_view(inline_part + header.event_name_size, header.body_size);
    const std::string_view attributes =
        extras != nullptr
            ? std::string_view(extras->attributes)
            : std::string_view(inline_part + header.event_name_size + header.body_size,
                               header.attributes_size);
    out->SetResource(resource);
    out->SetInstrumentationScope(*scope);
    const otel::common::SystemTimestamp at(
        std::chrono::nanoseconds(calibration->unix_nanos(header.ticks)));
    out->SetTimestamp(at);
    out->SetObservedTimestamp(at);
    out->SetSeverity(static_cast<otel::logs::Severity>(header.severity));
    out->SetBody(otel::common::AttributeValue(view(body)));
    const std::optional<std::int64_t>& limit = options.attribute_value_length_limit;
    decode_attributes(attributes.data(), attributes.size(),
                      [&](otel::nostd::string_view key, const otel::common::AttributeValue& value) {
                        using Strings = otel::nostd::span<const otel::nostd::string_view>;
                        if (const auto* s = otel::nostd::get_if<otel::nostd::string_view>(&value)) {
                          out->SetAttribute(key, truncated(*s, limit));
                        } else if (const auto* a = otel::nostd::get_if<Strings>(&value);
                                   a != nullptr && limit) {
                          std::vector<otel::nostd::string_view> cut(a->begin(), a->end());
                          for (auto& item : cut) item = truncated(item, limit);
                          out->SetAttribute(key, Strings(cut.data(), cut.size()));
                        } else {
                          out->SetAttribute(key, value);
                        }
                      });
    if (!event_name.empty()) out->SetEventId(0, view(event_name));
    if (header.has_span) {
      out->SetTraceId(otel::trace::TraceId(
          otel::nostd::span<const std::uint8_t, 16>(header.trace_id.data(), 16)));
      out->SetSpanId(span_id_of(header.span_id));
      out->SetTraceFlags(otel::trace::TraceFlags(header.trace_flags));
    }
  } catch (...) {
    return nullptr;  // out of memory while converting: the record is lost
  }
  return out;
}

void LogPipeline::Core::collect() noexcept {
  try {
    calibration->refresh();
    registry->copy_threads(threads);
    for (const auto& thread : threads) {
      const bool exited = thread->exited.load(std::memory_order_acquire);
      thread->drain(
          [&](const unsigned char* bytes) {
            LogRecordHeader header;
            std::memcpy(&header, bytes, sizeof(header));
            const std::unique_ptr<LogExtras> extras(header.extras);
            RecordablePtr converted =
                convert(header, reinterpret_cast<const char*>(bytes + sizeof(header)));
            if (converted == nullptr) {
              lost.fetch_add(1, std::memory_order_relaxed);
              return;
            }
            batch.push_back(std::move(converted));
            export_full_batches();
          },
          SIZE_MAX);
      // Everything it wrote before exiting was committed before `exited` was set.
      if (exited) registry->remove(thread);
    }
    threads.clear();  // no thread state kept alive between passes
    {
      std::lock_guard<std::mutex> lock(foreign_mutex);
      if (!foreign.empty()) foreign_taken.swap(foreign);
    }
    for (RecordablePtr& record : foreign_taken) {
      batch.push_back(std::move(record));
      export_full_batches();
    }
    foreign_taken.clear();
  } catch (...) {
    // Out of memory: what was taken is lost.
  }
}

void LogPipeline::Core::export_some(std::size_t count) noexcept {
  count = std::min(count, batch.size());
  if (count == 0) return;
  std::vector<RecordablePtr> records;
  try {
    records.reserve(count);
    for (std::size_t i = 0; i < count; ++i) records.push_back(std::move(batch[i]));
    batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(count));
  } catch (...) {
    lost.fetch_add(count, std::memory_order_relaxed);
    batch.clear();
    return;
  }
  static_cast<void>(
      exporter->Export(otel::nostd::span<RecordablePtr>(records.data(), records.size())));
  last_export = std::chrono::steady_clock::now();
}

void LogPipeline::Core::export_full_batches() noexcept {
  const std::size_t size = std::max<std::size_t>(options.max_export_batch_size, 1);
  while (batch.size() >= size) export_some(size);
}

void LogPipeline::Core::export_all() noexcept {
  const std::size_t size = std::max<std::size_t>(options.max_export_batch_size, 1);
  while (!batch.empty()) export_some(size);
}

bool LogPipeline::Core::finish() noexcept {
  collect();
  export_all();
  const auto remaining = std::max(std::chrono::steady_clock::duration::zero(),
                                  loop.deadline() - std::chrono::steady_clock::now());
  const bool ok =
      exporter->Shutdown(std::chrono::duration_cast<std::chrono::microseconds>(remaining));
  // Threads that still hold a state keep only it; the buffers of the others go now.
  registry->release_threads();
  return ok;
}

void LogPipeline::Core::run() noexcept {
  loop.run(
      [this](bool flushing) {
        collect();
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

// opentelemetry-cpp's LoggerProvider in front of the pipeline; it keeps the pipeline alive.
class HandoffProcessor final : public sdklogs::LogRecordProcessor {
 public:
  HandoffProcessor(std::shared_ptr<LogPipeline> pipeline,
                   std::shared_ptr<LogPipeline::Core> core) noexcept
      : pipeline_(std::move(pipeline)), core_(std::move(core)) {}

  RecordablePtr MakeRecordable() noexcept override { return core_->exporter->MakeRecordable(); }
  void OnEmit(RecordablePtr&& record) noexcept override {
    if (record != nullptr) core_->enqueue_foreign(std::move(record));
  }
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override {
    return core_->loop.flush(timeout);
  }
  bool Shutdown(std::chrono::microseconds timeout) noexcept override {
    return pipeline_->shutdown(timeout);
  }

 private:
  std::shared_ptr<LogPipeline> pipeline_;
  std::shared_ptr<LogPipeline::Core> core_;
};

}  // namespace

LogPipeline::LogPipeline(const LogPipelineOptions& options,
                         std::unique_ptr<sdklogs::LogRecordExporter> exporter,
                         const otel::sdk::resource::Resource& resource)
    : core_(std::make_shared<Core>(options, std::move(exporter), resource)) {
  // Log records are few next to spans: a small pool, still one chunk for each of 64 threads.
  const std::size_t pool_bytes = std::max<std::size_t>(options.max_queue_size * 1024, 4 << 20);
  registry_ = std::make_shared<LogRegistry>(std::make_shared<ChunkPool>(pool_bytes),
                                            options.max_queue_size, options.attribute_count_limit);
  core_->registry = registry_;
  // A log record looks its span up through lens's context storage: "none" in one comparison.
  use_context_storage();
  thread_ = std::thread([core = core_] { core->run(); });
}

LogPipeline::~LogPipeline() {
  shutdown(std::chrono::seconds(5));
  if (thread_.joinable()) thread_.detach();  // still exporting: it owns what it uses
}

std::unique_ptr<sdklogs::LogRecordProcessor> LogPipeline::make_processor() {
  return std::make_unique<HandoffProcessor>(shared_from_this(), core_);
}

bool LogPipeline::force_flush(std::chrono::microseconds timeout) noexcept {
  return core_->loop.flush(timeout);
}

bool LogPipeline::shutdown(std::chrono::microseconds timeout) noexcept {
  const bool ok = core_->shutdown(timeout);
  std::lock_guard<std::mutex> guard(join_mutex_);
  if (core_->loop.stopped() && thread_.joinable()) thread_.join();
  return ok;
}

LogPipelineCounts LogPipeline::counts() const noexcept {
  LogPipelineCounts c;
  try {
    const LogTotals totals = registry_->totals();
    c.emitted = totals.written;
    c.dropped = totals.dropped;
  } catch (...) {
  }
  c.emitted += core_->foreign_accepted.load(std::memory_order_relaxed);
  c.dropped += core_->foreign_dropped.load(std::memory_order_relaxed);
  c.lost = core_->lost.load(std::memory_order_relaxed);
  return c;
}

}  // namespace lens::native
