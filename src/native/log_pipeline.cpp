// The native log signal of the export pipeline (see log_pipeline.hpp): conversion of ring
// records, the value length limit and the API records' processor.
#include "native/log_pipeline.hpp"

#include <opentelemetry/logs/severity.h>
#include <opentelemetry/sdk/logs/recordable.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_flags.h>
#include <opentelemetry/trace/trace_id.h>

#include <string_view>

#include "native/attribute_codec.hpp"
#include "native/export_pipeline_impl.hpp"
#include "native/log_record.hpp"
#include "native/thread_spans.hpp"

namespace lens::native {
namespace {

namespace otel = opentelemetry;
namespace sdklogs = opentelemetry::sdk::logs;
using RecordablePtr = std::unique_ptr<sdklogs::Recordable>;
using Core = ExportPipeline<LogSignal>::Core;
using Pipeline = ExportPipeline<LogSignal>;

otel::nostd::string_view view(std::string_view s) noexcept { return {s.data(), s.size()}; }

// The recordable of an API log record: the exporter's own, pointed at the pipeline's copies of
// its resource and scope (see ForeignOrigins); unwrapped when the record is emitted.
class OriginRecordable final : public sdklogs::Recordable {
 public:
  OriginRecordable(RecordablePtr inner, std::shared_ptr<ForeignOrigins> origins) noexcept
      : inner_(std::move(inner)), origins_(std::move(origins)) {}

  RecordablePtr release() noexcept { return std::move(inner_); }

  void SetTimestamp(otel::common::SystemTimestamp at) noexcept override {
    inner_->SetTimestamp(at);
  }
  void SetObservedTimestamp(otel::common::SystemTimestamp at) noexcept override {
    inner_->SetObservedTimestamp(at);
  }
  void SetSeverity(otel::logs::Severity severity) noexcept override {
    inner_->SetSeverity(severity);
  }
  void SetBody(const otel::common::AttributeValue& body) noexcept override {
    inner_->SetBody(body);
  }
  void SetAttribute(otel::nostd::string_view key,
                    const otel::common::AttributeValue& value) noexcept override {
    inner_->SetAttribute(key, value);
  }
  void SetEventId(std::int64_t id, otel::nostd::string_view name) noexcept override {
    inner_->SetEventId(id, name);
  }
  void SetTraceId(const otel::trace::TraceId& id) noexcept override { inner_->SetTraceId(id); }
  void SetSpanId(const otel::trace::SpanId& id) noexcept override { inner_->SetSpanId(id); }
  void SetTraceFlags(const otel::trace::TraceFlags& flags) noexcept override {
    inner_->SetTraceFlags(flags);
  }
  void SetResource(const otel::sdk::resource::Resource& resource) noexcept override {
    inner_->SetResource(origins_->resource(resource));
  }
  void SetInstrumentationScope(
      const otel::sdk::instrumentationscope::InstrumentationScope& scope) noexcept override {
    inner_->SetInstrumentationScope(origins_->scope(scope));
  }

 private:
  RecordablePtr inner_;
  const std::shared_ptr<ForeignOrigins> origins_;
};

// opentelemetry-cpp's LoggerProvider in front of the pipeline; it keeps the pipeline alive.
class HandoffProcessor final : public sdklogs::LogRecordProcessor {
 public:
  HandoffProcessor(std::shared_ptr<Pipeline> pipeline, std::shared_ptr<Core> core) noexcept
      : pipeline_(std::move(pipeline)), core_(std::move(core)) {}

  RecordablePtr MakeRecordable() noexcept override {
    RecordablePtr inner = core_->exporter->MakeRecordable();
    if (inner == nullptr) return nullptr;
    try {
      return std::make_unique<OriginRecordable>(std::move(inner), core_->origins);
    } catch (...) {
      return nullptr;
    }
  }
  void OnEmit(RecordablePtr&& record) noexcept override {
    if (auto* wrapped = dynamic_cast<OriginRecordable*>(record.get())) record = wrapped->release();
    if (record != nullptr) core_->enqueue_foreign(std::move(record));
  }
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override {
    return core_->loop.flush(timeout);
  }
  bool Shutdown(std::chrono::microseconds timeout) noexcept override {
    return pipeline_->shutdown(timeout);
  }

 private:
  std::shared_ptr<Pipeline> pipeline_;
  std::shared_ptr<Core> core_;
};

}  // namespace

class LogSignal::State {
 public:
  explicit State(Core& core)
      // Log records are few next to spans: a small pool, still one chunk for each of 64 threads.
      : registry(std::make_shared<LogRegistry>(std::make_shared<ChunkPool>(std::max<std::size_t>(
                                                   core.options.max_queue_size * 1024, 4 << 20)),
                                               core.options.max_queue_size,
                                               core.options.limits.attribute_count)),
        value_length_(core.options.limits.attribute_value_length),
        core_(core) {
    // A log record looks its span up through lens's context storage: "none" in one comparison.
    use_context_storage();
  }

  const std::shared_ptr<LogRegistry> registry;

  RecordablePtr convert(const unsigned char* bytes, std::uint64_t& ticks,
                        std::unordered_set<std::uint64_t>*) noexcept {
    LogRecordHeader header;
    std::memcpy(&header, bytes, sizeof(header));
    const std::unique_ptr<LogExtras> extras(header.extras);
    ticks = header.ticks;
    RecordablePtr out = core_.exporter->MakeRecordable();
    if (out == nullptr) return nullptr;
    try {
      const char* inline_part = reinterpret_cast<const char*>(bytes + sizeof(header));
      const std::string_view event_name =
          extras != nullptr ? std::string_view(extras->event_name)
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
      out->SetResource(core_.resource);
      out->SetInstrumentationScope(*core_.scope);
      const otel::common::SystemTimestamp at(
          std::chrono::nanoseconds(core_.calibration->unix_nanos(header.ticks)));
      out->SetTimestamp(at);
      out->SetObservedTimestamp(at);
      out->SetSeverity(static_cast<otel::logs::Severity>(header.severity));
      out->SetBody(otel::common::AttributeValue(view(body)));
      decode_attributes(
          attributes.data(), attributes.size(),
          [&](otel::nostd::string_view key, const otel::common::AttributeValue& value) {
            with_limited_value(value, value_length_, *core_.counters,
                               [&](const otel::common::AttributeValue& limited) {
                                 out->SetAttribute(key, limited);
                               });
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

  // Threads that still hold a state keep only it; the buffers of the others go now.
  void after_shutdown() noexcept { registry->release_threads(); }

  void count(PipelineCounts& counts) const {
    const LogTotals totals = registry->totals();
    counts.started = counts.accepted = totals.written;
    counts.dropped_full_buffer = totals.dropped;
  }

  std::unique_ptr<sdklogs::LogRecordProcessor> make_processor(
      const std::shared_ptr<Pipeline>& pipeline, std::shared_ptr<Core> core) const {
    return std::make_unique<HandoffProcessor>(pipeline, std::move(core));
  }

 private:
  // OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT, in code points.
  const std::optional<std::size_t> value_length_;
  Core& core_;
};

template class ExportPipeline<LogSignal>;

}  // namespace lens::native
