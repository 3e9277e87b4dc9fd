// Console JSON-lines span exporter (see console_span_exporter.hpp).
#include "export/console_span_exporter.hpp"

#include <opentelemetry/sdk/common/attribute_utils.h>

#include <atomic>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace lens::exporters {
namespace {

namespace sdktrace = opentelemetry::sdk::trace;
using Json = nlohmann::ordered_json;

template <std::size_t N>
std::string hex(const opentelemetry::nostd::span<const std::uint8_t, N> id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "0x";
  for (std::uint8_t byte : id) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0xf]);
  }
  return out;
}

// UTC ISO-8601 with microseconds, e.g. 2026-08-12T10:11:12.123456Z.
std::string iso8601(std::chrono::nanoseconds since_epoch) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(micros % 1000000));
  return buffer;
}

Json value_json(const opentelemetry::sdk::common::OwnedAttributeValue& value) {
  return opentelemetry::nostd::visit(
      [](const auto& v) -> Json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::vector<std::uint8_t>>) {
          return Json(std::vector<unsigned>(v.begin(), v.end()));
        } else {
          return Json(v);
        }
      },
      value);
}

template <class Map>
Json attributes_json(const Map& attributes) {
  // Sorted keys: the SDK's map is unordered, a line should not depend on hashing.
  std::map<std::string, Json> sorted;
  for (const auto& [key, value] : attributes) {
    sorted.emplace(key, value_json(value));
  }
  Json out = Json::object();
  for (auto& [key, value] : sorted) {
    out[key] = std::move(value);
  }
  return out;
}

Json context_json(const opentelemetry::trace::SpanContext& context) {
  std::string state = "[]";
  if (context.trace_state() != nullptr && !context.trace_state()->Empty()) {
    state = context.trace_state()->ToHeader();
  }
  return Json{{"trace_id", hex(context.trace_id().Id())},
              {"span_id", hex(context.span_id().Id())},
              {"trace_state", state}};
}

const char* kind_name(opentelemetry::trace::SpanKind kind) {
  switch (kind) {
    case opentelemetry::trace::SpanKind::kServer:
      return "SpanKind.SERVER";
    case opentelemetry::trace::SpanKind::kClient:
      return "SpanKind.CLIENT";
    case opentelemetry::trace::SpanKind::kProducer:
      return "SpanKind.PRODUCER";
    case opentelemetry::trace::SpanKind::kConsumer:
      return "SpanKind.CONSUMER";
    default:
      return "SpanKind.INTERNAL";
  }
}

const char* status_name(opentelemetry::trace::StatusCode code) {
  switch (code) {
    case opentelemetry::trace::StatusCode::kOk:
      return "OK";
    case opentelemetry::trace::StatusCode::kError:
      return "ERROR";
    default:
      return "UNSET";
  }
}

class ConsoleSpanExporter final : public sdktrace::SpanExporter {
 public:
  explicit ConsoleSpanExporter(std::FILE* out) : out_(out) {}

  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<sdktrace::SpanData>();
  }

  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>& spans) noexcept
      override {
    if (shut_down_.load(std::memory_order_relaxed)) {
      return opentelemetry::sdk::common::ExportResult::kFailure;
    }
    std::string lines;
    for (const auto& recordable : spans) {
      if (const auto* span = dynamic_cast<const sdktrace::SpanData*>(recordable.get())) {
        try {
          lines += console_span_line(*span);
          lines += '\n';
        } catch (...) {
          // A value the JSON writer rejects (invalid UTF-8) loses that span, not the batch.
        }
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const bool written = std::fwrite(lines.data(), 1, lines.size(), out_) == lines.size();
    std::fflush(out_);
    return written ? opentelemetry::sdk::common::ExportResult::kSuccess
                   : opentelemetry::sdk::common::ExportResult::kFailure;
  }

  bool ForceFlush(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::fflush(out_) == 0;
  }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_relaxed);
    return true;
  }

 private:
  std::FILE* out_;
  std::mutex mutex_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace

std::string console_span_line(const sdktrace::SpanData& span) {
  const auto start = span.GetStartTime().time_since_epoch();
  Json events = Json::array();
  for (const auto& event : span.GetEvents()) {
    events.push_back(Json{{"name", std::string(event.GetName())},
                          {"timestamp", iso8601(event.GetTimestamp().time_since_epoch())},
                          {"attributes", attributes_json(event.GetAttributes())}});
  }
  Json links = Json::array();
  for (const auto& link : span.GetLinks()) {
    links.push_back(Json{{"context", context_json(link.GetSpanContext())},
                         {"attributes", attributes_json(link.GetAttributes())}});
  }
  Json status{{"status_code", status_name(span.GetStatus())}};
  if (!span.GetDescription().empty()) {
    status["description"] = std::string(span.GetDescription());
  }
  Json line;
  line["name"] = std::string(span.GetName());
  line["context"] = context_json(span.GetSpanContext());
  line["kind"] = kind_name(span.GetSpanKind());
  line["parent_id"] =
      span.GetParentSpanId().IsValid() ? Json(hex(span.GetParentSpanId().Id())) : Json(nullptr);
  line["start_time"] = iso8601(start);
  line["end_time"] = iso8601(start + span.GetDuration());
  line["status"] = status;
  line["attributes"] = attributes_json(span.GetAttributes());
  line["events"] = events;
  line["links"] = links;
  line["resource"] = Json{{"attributes", attributes_json(span.GetResource().GetAttributes())},
                          {"schema_url", span.GetResource().GetSchemaURL()}};
  return line.dump();
}

std::unique_ptr<sdktrace::SpanExporter> make_console_span_exporter(std::FILE* out) {
  return std::make_unique<ConsoleSpanExporter>(out);
}

}  // namespace lens::exporters
