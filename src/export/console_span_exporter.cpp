// Console JSON-lines span exporter (see console_span_exporter.hpp).
#include "export/console_span_exporter.hpp"

#include <opentelemetry/sdk/common/attribute_utils.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>

#include "export/console_json.hpp"

namespace lens::exporters {
namespace {

namespace sdktrace = opentelemetry::sdk::trace;
using Json = nlohmann::ordered_json;

using console_json::attributes;
using console_json::iso8601;

template <std::size_t N>
std::string hex(const opentelemetry::nostd::span<const std::uint8_t, N> id) {
  return console_json::hex_id(opentelemetry::nostd::span<const std::uint8_t>(id.data(), N));
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
                          {"attributes", attributes(event.GetAttributes())}});
  }
  Json links = Json::array();
  for (const auto& link : span.GetLinks()) {
    links.push_back(Json{{"context", context_json(link.GetSpanContext())},
                         {"attributes", attributes(link.GetAttributes())}});
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
  line["attributes"] = attributes(span.GetAttributes());
  line["events"] = events;
  line["links"] = links;
  line["resource"] = console_json::resource(span.GetResource());
  // Invalid UTF-8 in a value becomes U+FFFD rather than an exception that would lose the line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::unique_ptr<sdktrace::SpanExporter> make_console_span_exporter(std::FILE* out) {
  return std::make_unique<ConsoleSpanExporter>(out);
}

}  // namespace lens::exporters
