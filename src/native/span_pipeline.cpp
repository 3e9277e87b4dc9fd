// The native span signal of the export pipeline (see span_pipeline.hpp): conversion of ring
// records, span limits, the API spans' processor and the open spans at shutdown.
#include "native/span_pipeline.hpp"

#include <opentelemetry/sdk/trace/recordable.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_id.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>

#include "core/span_depth.hpp"
#include "native/attribute_codec.hpp"
#include "native/export_pipeline_impl.hpp"
#include "native/span_depths.hpp"

namespace lens::native {
namespace {

namespace otel = opentelemetry;
namespace sdktrace = opentelemetry::sdk::trace;
namespace common = opentelemetry::common;
namespace nostd = opentelemetry::nostd;
using RecordablePtr = std::unique_ptr<sdktrace::Recordable>;
using Core = ExportPipeline<SpanSignal>::Core;

constexpr std::string_view kTruncated = "nemo.span.truncated";
constexpr std::string_view kTruncatedReasonKey = "nemo.span.truncated.reason";
constexpr std::string_view kTruncatedReason = "still open at telemetry shutdown";

nostd::string_view view(std::string_view s) noexcept { return {s.data(), s.size()}; }

// The big-endian value of an id's 8 bytes, as Identity::span_id holds it.
std::uint64_t span_id_value(const otel::trace::SpanId& id) noexcept {
  std::uint64_t value = 0;
  for (const std::uint8_t byte : id.Id()) value = (value << 8) | byte;
  return value;
}

class OneAttribute final : public common::KeyValueIterable {
 public:
  OneAttribute(std::string_view key, std::string_view value) noexcept : key_(key), value_(value) {}
  bool ForEachKeyValue(nostd::function_ref<bool(nostd::string_view, common::AttributeValue)>
                           callback) const noexcept override {
    return callback(view(key_), common::AttributeValue(view(value_)));
  }
  std::size_t size() const noexcept override { return 1; }

 private:
  std::string_view key_;
  std::string_view value_;
};

common::SystemTimestamp timestamp(std::int64_t unix_ns) noexcept {
  return common::SystemTimestamp(std::chrono::nanoseconds(unix_ns));
}

// At most `max_count` entries of `inner`, values length-limited.
class LimitedAttributes final : public common::KeyValueIterable {
 public:
  LimitedAttributes(const common::KeyValueIterable& inner, std::size_t max_count,
                    const std::optional<std::size_t>& max_chars,
                    PipelineCounters& counters) noexcept
      : inner_(inner), max_count_(max_count), max_chars_(max_chars), counters_(counters) {}

  bool ForEachKeyValue(nostd::function_ref<bool(nostd::string_view, common::AttributeValue)>
                           callback) const noexcept override {
    std::size_t seen = 0;
    return inner_.ForEachKeyValue([&](nostd::string_view key, common::AttributeValue value) {
      if (seen++ >= max_count_) return false;
      bool keep_going = true;
      with_limited_value(value, max_chars_, counters_, [&](const common::AttributeValue& limited) {
        keep_going = callback(key, limited);
      });
      return keep_going;
    });
  }
  std::size_t size() const noexcept override { return std::min(inner_.size(), max_count_); }

 private:
  const common::KeyValueIterable& inner_;
  std::size_t max_count_;
  const std::optional<std::size_t>& max_chars_;
  PipelineCounters& counters_;
};

// One span's limits on the way into an exporter's recordable (see SpanLimits).
class Limiter {
 public:
  Limiter(const SpanLimits& limits, PipelineCounters& counters) noexcept
      : limits_(limits), counters_(counters) {}

  void set_attribute(sdktrace::Recordable& out, nostd::string_view key,
                     const common::AttributeValue& value) noexcept {
    const std::uint64_t hash =
        std::hash<std::string_view>{}(std::string_view(key.data(), key.size()));
    if (!keys_.contains(hash) && (keys_.size() >= limits_.attribute_count || !keys_.insert(hash))) {
      PipelineCounters::add(counters_.dropped_attributes);
      return;
    }
    with_limited_value(
        value, limits_.attribute_value_length, counters_,
        [&](const common::AttributeValue& limited) { out.SetAttribute(key, limited); });
  }

  void add_event(sdktrace::Recordable& out, nostd::string_view name, common::SystemTimestamp at,
                 const common::KeyValueIterable& attributes) noexcept {
    if (admit(events_, limits_.event_count, counters_.dropped_events, attributes,
              limits_.event_attribute_count)) {
      out.AddEvent(name, at, limited(attributes, limits_.event_attribute_count));
    }
  }

  void add_link(sdktrace::Recordable& out, const otel::trace::SpanContext& context,
                const common::KeyValueIterable& attributes) noexcept {
    if (admit(links_, limits_.link_count, counters_.dropped_links, attributes,
              limits_.link_attribute_count)) {
      out.AddLink(context, limited(attributes, limits_.link_attribute_count));
    }
  }

 private:
  // The distinct attribute keys set so far, as 64-bit hashes: the first eight inline (no
  // allocation for a typical span), further ones in a vector. Two different keys with the same
  // hash (odds 2^-64 per pair) would count as one, letting one extra attribute through.
  class KeySet {
   public:
    bool contains(std::uint64_t hash) const noexcept {
      return std::find(inline_.begin(), inline_.begin() + inline_count_, hash) !=
                 inline_.begin() + inline_count_ ||
             std::find(more_.begin(), more_.end(), hash) != more_.end();
    }
    bool insert(std::uint64_t hash) noexcept {  // false when out of memory
      if (inline_count_ < inline_.size()) {
        inline_[inline_count_++] = hash;
        return true;
      }
      try {
        more_.push_back(hash);
      } catch (...) {
        return false;
      }
      return true;
    }
    std::size_t size() const noexcept { return inline_count_ + more_.size(); }

   private:
    std::array<std::uint64_t, 8> inline_{};
    std::size_t inline_count_ = 0;
    std::vector<std::uint64_t> more_;
  };

  // An event or link within its count (the attributes beyond theirs counted as dropped).
  bool admit(std::size_t& kept, std::size_t max, std::atomic<std::uint64_t>& dropped,
             const common::KeyValueIterable& attributes, std::size_t max_attributes) noexcept {
    if (kept >= max) {
      PipelineCounters::add(dropped);
      return false;
    }
    ++kept;
    const std::size_t count = attributes.size();
    if (count > max_attributes)
      PipelineCounters::add(counters_.dropped_attributes, count - max_attributes);
    return true;
  }
  LimitedAttributes limited(const common::KeyValueIterable& attributes,
                            std::size_t max_count) noexcept {
    return LimitedAttributes(attributes, max_count, limits_.attribute_value_length, counters_);
  }

  const SpanLimits& limits_;
  PipelineCounters& counters_;
  KeySet keys_;
  std::size_t events_ = 0;
  std::size_t links_ = 0;
};

// The recordable of an API span: the exporter's own behind the span limits, pointed at the
// pipeline's copies of its resource and scope (see ForeignOrigins); unwrapped when the
// span ends. Thread-compatible (the SDK's Span serializes its calls).
class LimitingRecordable final : public sdktrace::Recordable {
 public:
  LimitingRecordable(RecordablePtr inner, const SpanLimits& limits,
                     std::shared_ptr<PipelineCounters> counters,
                     std::shared_ptr<ForeignOrigins> origins) noexcept
      : inner_(std::move(inner)),
        limits_(limits),
        counters_(std::move(counters)),
        origins_(std::move(origins)),
        limiter_(limits_, *counters_),
        depth_sink_(dynamic_cast<core::SpanDepthSink*>(inner_.get())) {}

  RecordablePtr release() noexcept { return std::move(inner_); }
  // Where the span's depth goes, when the exporter shows depths; null otherwise.
  core::SpanDepthSink* depth_sink() const noexcept { return depth_sink_; }
  std::uint64_t span_id() const noexcept { return span_id_; }

  void SetIdentity(const otel::trace::SpanContext& context,
                   otel::trace::SpanId parent) noexcept override {
    span_id_ = span_id_value(context.span_id());
    inner_->SetIdentity(context, parent);
  }
  void SetAttribute(nostd::string_view key, const common::AttributeValue& value) noexcept override {
    limiter_.set_attribute(*inner_, key, value);
  }
  void AddEvent(nostd::string_view name, common::SystemTimestamp at,
                const common::KeyValueIterable& attributes) noexcept override {
    limiter_.add_event(*inner_, name, at, attributes);
  }
  void AddLink(const otel::trace::SpanContext& context,
               const common::KeyValueIterable& attributes) noexcept override {
    limiter_.add_link(*inner_, context, attributes);
  }
  void SetStatus(otel::trace::StatusCode code, nostd::string_view description) noexcept override {
    inner_->SetStatus(code, description);
  }
  void SetName(nostd::string_view name) noexcept override { inner_->SetName(name); }
  void SetTraceFlags(otel::trace::TraceFlags flags) noexcept override {
    inner_->SetTraceFlags(flags);
  }
  void SetSpanKind(otel::trace::SpanKind kind) noexcept override { inner_->SetSpanKind(kind); }
  void SetResource(const otel::sdk::resource::Resource& resource) noexcept override {
    inner_->SetResource(origins_->resource(resource));
  }
  void SetStartTime(common::SystemTimestamp start) noexcept override {
    inner_->SetStartTime(start);
  }
  void SetDuration(std::chrono::nanoseconds duration) noexcept override {
    inner_->SetDuration(duration);
  }
  explicit operator sdktrace::SpanData*() const override {
    return static_cast<sdktrace::SpanData*>(*inner_);
  }
  void SetInstrumentationScope(const sdktrace::InstrumentationScope& scope) noexcept override {
    inner_->SetInstrumentationScope(origins_->scope(scope));
  }

 private:
  RecordablePtr inner_;
  const SpanLimits limits_;  // a copy: a span may outlive its pipeline
  const std::shared_ptr<PipelineCounters> counters_;
  const std::shared_ptr<ForeignOrigins> origins_;
  Limiter limiter_;
  core::SpanDepthSink* const depth_sink_;
  std::uint64_t span_id_ = 0;
};

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

std::atomic<std::uint64_t> g_next_generation{1};

class HandoffProcessor final : public sdktrace::SpanProcessor {
 public:
  explicit HandoffProcessor(std::shared_ptr<Core> core) noexcept : core_(std::move(core)) {}

  RecordablePtr MakeRecordable() noexcept override {
    RecordablePtr inner = core_->exporter->MakeRecordable();
    if (inner == nullptr) return nullptr;
    try {
      return std::make_unique<LimitingRecordable>(std::move(inner), core_->options.limits,
                                                  core_->counters, core_->origins);
    } catch (...) {
      return nullptr;
    }
  }
  void OnStart(sdktrace::Recordable& span,
               const otel::trace::SpanContext& parent) noexcept override {
    PipelineCounters::add(core_->counters->foreign_started);
    auto* limited = dynamic_cast<LimitingRecordable*>(&span);
    if (limited == nullptr || limited->depth_sink() == nullptr) return;
    // Below a local parent open now (native or API), else a local root; a remote parent starts
    // this process's part of the trace at 0.
    std::uint8_t depth = 0;
    if (parent.IsValid() && !parent.IsRemote()) {
      depth = core::child_depth(open_span_depth(span_id_value(parent.span_id())).value_or(0));
    }
    limited->depth_sink()->set_depth(depth);
    if (limited->span_id() != 0) remember_span_depth(limited->span_id(), depth);
  }
  void OnEnd(RecordablePtr&& span) noexcept override {
    if (auto* limited = dynamic_cast<LimitingRecordable*>(span.get())) {
      if (limited->depth_sink() != nullptr) forget_span_depth(limited->span_id());
      span = limited->release();
    }
    if (span == nullptr) return;
    core::tsan_publish(span.get());
    core_->enqueue_foreign(std::move(span));
  }
  bool ForceFlush(std::chrono::microseconds timeout) noexcept override {
    return core_->loop.flush(timeout);
  }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

class SpanSignal::State {
 public:
  explicit State(Core& core)
      : registry(std::make_shared<SpanRegistry>(
            g_next_generation.fetch_add(1, std::memory_order_relaxed), core.options.sampler,
            std::make_shared<ChunkPool>(core.options.buffer_bytes))),
        core_(core) {}

  const std::shared_ptr<SpanRegistry> registry;

  RecordablePtr convert(const unsigned char* bytes, std::uint64_t& end_ticks,
                        std::unordered_set<std::uint64_t>* seen) noexcept {
    RecordHeader header;
    std::memcpy(&header, bytes, sizeof(header));
    const std::unique_ptr<SpanExtras> extras(header.extras);
    if (seen != nullptr) {
      try {
        seen->insert(header.id.span_id);
      } catch (...) {
      }
    }
    const char* payload = reinterpret_cast<const char*>(bytes + sizeof(header));
    end_ticks = header.end_ticks;
    const std::size_t name = name_bytes(header);
    return convert({&header.id, record_name(header, payload, extras.get()), payload + name,
                    header.payload_size - name, header.status, header.start_ticks, header.end_ticks,
                    extras.get(), false});
  }

  // Open spans first, then the registry closes: a span that ends in between is written to its
  // ring and the export thread keeps that record instead of the truncated copy.
  void prepare_shutdown(const ThreadSpans* caller) noexcept {
    if (detail::g_span_pipeline_generation.load(std::memory_order_acquire) == registry->generation()) {
      native::deactivate();
    }
    try {
      registry->snapshot_open(open_at_shutdown_, caller);
    } catch (...) {
    }
    shutdown_ticks_ = read_ticks();
  }

  // The spans still open at shutdown, truncated, but those that ended before the last drain.
  void add_at_finish(const std::unordered_set<std::uint64_t>& ended) noexcept {
    // Newest first, so that children precede their parents.
    std::stable_sort(open_at_shutdown_.begin(), open_at_shutdown_.end(),
                     [](const ThreadSpans::OpenSpan& a, const ThreadSpans::OpenSpan& b) {
                       return a.data.record.start_ticks > b.data.record.start_ticks;
                     });
    for (const ThreadSpans::OpenSpan& span : open_at_shutdown_) {
      if (ended.count(span.data.record.id.span_id) != 0) continue;
      const FrameData& d = span.data;
      const std::size_t name = name_bytes(d.record);
      RecordablePtr converted =
          convert({&d.record.id, record_name(d.record, d.payload, &span.extras), d.payload + name,
                   d.record.payload_size - name, d.record.status, d.record.start_ticks,
                   std::max(shutdown_ticks_, d.record.start_ticks), &span.extras, true});
      if (converted == nullptr) continue;
      try {
        core_.batch.push_back({shutdown_ticks_, std::move(converted)});
        PipelineCounters::add(core_.counters->truncated);
      } catch (...) {
      }
    }
  }

  void count(PipelineCounts& counts) const {
    const SpanTotals totals = registry->totals();
    counts.started = totals.started;
    counts.accepted = totals.ended;
    counts.dropped_full_buffer = totals.dropped;
  }

  std::unique_ptr<sdktrace::SpanProcessor> make_processor(
      const std::shared_ptr<ExportPipeline<SpanSignal>>&, std::shared_ptr<Core> core) const {
    return std::make_unique<HandoffProcessor>(std::move(core));
  }

 private:
  RecordablePtr convert(const RecordView& r) noexcept {
    RecordablePtr out = core_.exporter->MakeRecordable();
    if (out == nullptr) return nullptr;
    try {
      Limiter limit(core_.options.limits, *core_.counters);
      const SharedTickCalibration& clock = *core_.calibration;
      const otel::trace::TraceId trace_id(
          nostd::span<const std::uint8_t, 16>(r.id->trace_id.data(), 16));
      const otel::trace::TraceFlags flags(r.id->flags);
      const bool has_state = r.extras != nullptr && !r.extras->trace_state.empty();
      const otel::trace::SpanContext context(
          trace_id, span_id_of(r.id->span_id), flags, false,
          has_state ? otel::trace::TraceState::FromHeader(view(r.extras->trace_state))
                    : default_trace_state_);
      out->SetIdentity(context, span_id_of(r.id->parent_span_id));
      if (exporter_shows_depth(*out)) {
        dynamic_cast<core::SpanDepthSink&>(*out).set_depth(r.id->depth);
      }
      out->SetTraceFlags(flags);
      out->SetResource(core_.resource);
      out->SetInstrumentationScope(*core_.scope);
      out->SetName(view(r.name));
      out->SetSpanKind(otel::trace::SpanKind::kInternal);
      // Times the caller gave (SpanExtras) win over the ticks read at start and end.
      const std::int64_t given_start = r.extras != nullptr ? r.extras->start_unix_nanos : 0;
      const std::int64_t given_end = r.extras != nullptr ? r.extras->end_unix_nanos : 0;
      const std::int64_t start_nanos =
          given_start != 0 ? given_start : clock.unix_nanos(r.start_ticks);
      out->SetStartTime(timestamp(start_nanos));
      auto set = [&](nostd::string_view key, const common::AttributeValue& value) {
        limit.set_attribute(*out, key, value);
      };
      decode_attributes(r.attributes, r.attributes_size, set);
      if (r.extras != nullptr) {
        decode_attributes(r.extras->attributes.data(), r.extras->attributes.size(), set);
      }
      if (r.truncated) set(view(kTruncated), true);
      if (r.extras != nullptr) {
        for (const SpanExtras::Event& event : r.extras->events) {
          const std::int64_t at =
              event.unix_nanos != 0 ? event.unix_nanos : clock.unix_nanos(event.ticks);
          limit.add_event(*out, view(event.name), timestamp(at),
                          EncodedAttributes(event.attributes.data(), event.attributes.size()));
        }
        for (const otel::trace::SpanContext& link : r.extras->links) {
          limit.add_link(*out, link, NoAttributes());
        }
      }
      if (r.truncated) {
        limit.add_event(*out, view(kTruncated), timestamp(clock.unix_nanos(r.end_ticks)),
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
      if (given_start == 0 && given_end == 0) {
        out->SetDuration(std::chrono::nanoseconds(clock.nanos_between(r.start_ticks, r.end_ticks)));
      } else {
        const std::int64_t end_nanos = given_end != 0 ? given_end : clock.unix_nanos(r.end_ticks);
        out->SetDuration(
            std::chrono::nanoseconds(std::max<std::int64_t>(0, end_nanos - start_nanos)));
      }
    } catch (...) {
      return nullptr;  // out of memory while converting: the span is lost
    }
    return out;
  }

  // Whether the exporter's recordables take a depth (asked of the first one: they are all of one
  // type). Export thread only.
  bool exporter_shows_depth(sdktrace::Recordable& recordable) noexcept {
    int shows = shows_depth_.load(std::memory_order_relaxed);
    if (shows < 0) {
      shows = dynamic_cast<core::SpanDepthSink*>(&recordable) != nullptr ? 1 : 0;
      shows_depth_.store(shows, std::memory_order_relaxed);
    }
    return shows == 1;
  }

  Core& core_;
  std::atomic<int> shows_depth_{-1};  // unknown until the first conversion
  // Shared by every span without a trace state (one reference count less per span).
  const nostd::shared_ptr<otel::trace::TraceState> default_trace_state_ =
      otel::trace::TraceState::GetDefault();
  // Written by prepare_shutdown before the export thread is told to stop.
  std::vector<ThreadSpans::OpenSpan> open_at_shutdown_;
  std::uint64_t shutdown_ticks_ = 0;
};

template class ExportPipeline<SpanSignal>;

}  // namespace lens::native
