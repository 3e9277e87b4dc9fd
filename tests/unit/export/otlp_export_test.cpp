// The OTLP exporters of the three signals on the wire: every OTEL_EXPORTER_OTLP_* setting seen by
// a receiver, the content of spans decoded with the generated protobuf classes, the same spans
// over grpc, http/protobuf and http/json giving identical lines in `lens collect`, retries as
// OTLP prescribes, partial_success, and faults (receiver down, killed, hanging, refusing).
// Loopback only; every wait is bounded.
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>
#include <opentelemetry/logs/severity.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/logs/batch_log_record_processor.h>
#include <opentelemetry/sdk/logs/logger_provider.h>
#include <opentelemetry/sdk/metrics/meter_provider.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>

#include <array>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "export/exporters.hpp"
#include "export/otlp_exporters.hpp"
#include "lens/env.hpp"
#include "lens/otel_settings.hpp"
#include "lens/otlp_json.hpp"
#include "metrics/periodic_metric_reader.hpp"
#include "native/span_pipeline.hpp"
#include "telemetry/logger_provider.hpp"
#include "telemetry/plan.hpp"
#include "unit/export/otlp_exporter_support.hpp"
#include "unit/support/otlp_test_servers.hpp"

namespace lens::exporters {
namespace {

using namespace std::chrono_literals;
using test_servers::CollectProcess;
using test_servers::ScriptedHttpReceiver;
using test_servers::ScriptedResponse;
namespace common = opentelemetry::common;
namespace sdkresource = opentelemetry::sdk::resource;
namespace sdktrace = opentelemetry::sdk::trace;
namespace trace_api = opentelemetry::trace;
namespace proto_trace = opentelemetry::proto::trace::v1;
namespace collector_trace = opentelemetry::proto::collector::trace::v1;
using opentelemetry::sdk::common::ExportResult;

using test_support::Captured;
using test_support::kFastRetry;
using test_support::settings_from;

// Spans with every field OTLP carries, in two resources and three scopes.
class SpanBatch {
 public:
  static constexpr std::array<std::uint8_t, 16> kTrace = {1, 2,  3,  4,  5,  6,  7,  8,
                                                          9, 10, 11, 12, 13, 14, 15, 16};
  static constexpr std::array<std::uint8_t, 8> kSpan = {0xa1, 0xb2, 0xc3, 0xd4,
                                                        0xe5, 0xf6, 0x07, 0x18};
  static constexpr std::array<std::uint8_t, 8> kParent = {0x10, 0x20, 0x30, 0x40,
                                                          0x50, 0x60, 0x70, 0x80};
  static constexpr std::array<std::uint8_t, 8> kLinked = {9, 9, 9, 9, 9, 9, 9, 9};
  static constexpr std::uint64_t kStart = 1'700'000'000'123'456'789ull;

  SpanBatch()
      : resource_a_(sdkresource::Resource::Create(
            {{"service.name", "trainer"}, {"dl.rank", std::int64_t{3}}})),
        resource_b_(sdkresource::Resource::Create(
            {{"service.name", "loader"}, {"dl.rank", std::int64_t{4}}})),
        scope_a_(opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create(
            "nemo.lens", "1.2.3", "https://schema/1", {{"scope.attr", "x"}})),
        scope_b_(opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create(
            "third.party", "0.1")),
        scope_c_(opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create(
            "loader.scope")) {}

  // Four spans: rich one and a sibling in (A, scope a), one in (A, scope b), one in (B, c).
  std::vector<std::unique_ptr<sdktrace::Recordable>> make(sdktrace::SpanExporter& exporter) {
    std::vector<std::unique_ptr<sdktrace::Recordable>> spans;
    spans.push_back(rich(exporter));
    spans.push_back(simple(exporter, "sibling", 2, resource_a_, *scope_a_));
    spans.push_back(simple(exporter, "other-scope", 3, resource_a_, *scope_b_));
    spans.push_back(simple(exporter, "other-resource", 4, resource_b_, *scope_c_));
    return spans;
  }

  static std::string bytes(const std::uint8_t* data, std::size_t size) {
    return std::string(reinterpret_cast<const char*>(data), size);
  }

 private:
  std::unique_ptr<sdktrace::Recordable> rich(sdktrace::SpanExporter& exporter) {
    auto span = exporter.MakeRecordable();
    const trace_api::SpanContext context(trace_api::TraceId(kTrace), trace_api::SpanId(kSpan),
                                         trace_api::TraceFlags(trace_api::TraceFlags::kIsSampled),
                                         false, trace_api::TraceState::FromHeader("vendor=value"));
    span->SetIdentity(context, trace_api::SpanId(kParent));
    span->SetTraceFlags(context.trace_flags());  // as the SDK does when a span ends
    span->SetName("step");
    span->SetSpanKind(trace_api::SpanKind::kServer);
    span->SetStartTime(common::SystemTimestamp(std::chrono::nanoseconds(kStart)));
    span->SetDuration(std::chrono::nanoseconds(2'500'000'001));
    static const bool kBools[] = {true, false};
    static const std::int64_t kInts[] = {-1, 0, 9'007'199'254'740'993};
    static const double kDoubles[] = {0.5, -2.25};
    static const opentelemetry::nostd::string_view kStrings[] = {"a", "b"};
    span->SetAttribute("attr.bool", true);
    span->SetAttribute("attr.int", std::int64_t{-9'007'199'254'740'993});
    span->SetAttribute("attr.int32", std::int32_t{-7});
    span->SetAttribute("attr.uint32", std::uint32_t{7});
    span->SetAttribute("attr.double", 3.25);
    span->SetAttribute("attr.nan", std::numeric_limits<double>::quiet_NaN());
    span->SetAttribute("attr.string", "héllo \"quoted\"");
    span->SetAttribute("attr.bools", opentelemetry::nostd::span<const bool>(kBools));
    span->SetAttribute("attr.ints", opentelemetry::nostd::span<const std::int64_t>(kInts));
    span->SetAttribute("attr.doubles", opentelemetry::nostd::span<const double>(kDoubles));
    span->SetAttribute(
        "attr.strings",
        opentelemetry::nostd::span<const opentelemetry::nostd::string_view>(kStrings));
    const std::map<std::string, common::AttributeValue> event_attributes{
        {"event.n", std::int64_t{1}}};
    span->AddEvent("checkpoint", common::SystemTimestamp(std::chrono::nanoseconds(kStart + 5)),
                   common::KeyValueIterableView<decltype(event_attributes)>(event_attributes));
    const trace_api::SpanContext linked(trace_api::TraceId(kTrace), trace_api::SpanId(kLinked),
                                        trace_api::TraceFlags(0), true);
    const std::map<std::string, common::AttributeValue> link_attributes{{"link.kind", "pp"}};
    span->AddLink(linked, common::KeyValueIterableView<decltype(link_attributes)>(link_attributes));
    span->SetStatus(trace_api::StatusCode::kError, "out of memory");
    span->SetResource(resource_a_);
    span->SetInstrumentationScope(*scope_a_);
    return span;
  }

  static std::unique_ptr<sdktrace::Recordable> simple(
      sdktrace::SpanExporter& exporter, const std::string& name, std::uint8_t id,
      const sdkresource::Resource& resource,
      const opentelemetry::sdk::instrumentationscope::InstrumentationScope& scope) {
    auto span = exporter.MakeRecordable();
    const std::array<std::uint8_t, 8> span_id = {0, 0, 0, 0, 0, 0, 0, id};
    span->SetIdentity(trace_api::SpanContext(trace_api::TraceId(kTrace), trace_api::SpanId(span_id),
                                             trace_api::TraceFlags(1), false),
                      trace_api::SpanId());
    span->SetName(name);
    span->SetSpanKind(trace_api::SpanKind::kInternal);
    span->SetStartTime(common::SystemTimestamp(std::chrono::nanoseconds(kStart)));
    span->SetDuration(std::chrono::nanoseconds(1000));
    span->SetResource(resource);
    span->SetInstrumentationScope(scope);
    return span;
  }

  sdkresource::Resource resource_a_;
  sdkresource::Resource resource_b_;
  std::unique_ptr<opentelemetry::sdk::instrumentationscope::InstrumentationScope> scope_a_;
  std::unique_ptr<opentelemetry::sdk::instrumentationscope::InstrumentationScope> scope_b_;
  std::unique_ptr<opentelemetry::sdk::instrumentationscope::InstrumentationScope> scope_c_;
};

ExportResult export_batch(sdktrace::SpanExporter& exporter, SpanBatch& batch) {
  auto spans = batch.make(exporter);
  return exporter.Export(opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>(
      spans.data(), spans.size()));
}

std::string gunzip(const std::string& data) {
  google::protobuf::io::ArrayInputStream raw(data.data(), static_cast<int>(data.size()));
  google::protobuf::io::GzipInputStream stream(&raw, google::protobuf::io::GzipInputStream::GZIP);
  std::string out;
  const void* buffer = nullptr;
  int size = 0;
  while (stream.Next(&buffer, &size)) out.append(static_cast<const char*>(buffer), size);
  return out;
}

const proto_trace::Span* find_span(const collector_trace::ExportTraceServiceRequest& request,
                                   const std::string& name) {
  for (const auto& rs : request.resource_spans()) {
    for (const auto& ss : rs.scope_spans()) {
      for (const auto& span : ss.spans()) {
        if (span.name() == name) return &span;
      }
    }
  }
  return nullptr;
}

const opentelemetry::proto::common::v1::AnyValue* attribute(
    const google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>& list,
    const std::string& key) {
  for (const auto& kv : list) {
    if (kv.key() == key) return &kv.value();
  }
  return nullptr;
}

// Every field of the batch as the generated classes decode it.
void expect_batch_content(const collector_trace::ExportTraceServiceRequest& request) {
  ASSERT_EQ(request.resource_spans_size(), 2);
  std::map<std::int64_t, const proto_trace::ResourceSpans*> by_rank;
  for (const auto& rs : request.resource_spans()) {
    const auto* rank = attribute(rs.resource().attributes(), "dl.rank");
    ASSERT_NE(rank, nullptr);
    by_rank[rank->int_value()] = &rs;
  }
  ASSERT_EQ(by_rank.size(), 2u);
  const auto& a = *by_rank.at(3);
  EXPECT_EQ(attribute(a.resource().attributes(), "service.name")->string_value(), "trainer");
  ASSERT_EQ(a.scope_spans_size(), 2);
  EXPECT_EQ(by_rank.at(4)->scope_spans_size(), 1);
  EXPECT_EQ(by_rank.at(4)->scope_spans(0).scope().name(), "loader.scope");
  EXPECT_EQ(by_rank.at(4)->scope_spans(0).spans(0).name(), "other-resource");
  const proto_trace::ScopeSpans* lens_scope = nullptr;
  for (const auto& ss : a.scope_spans()) {
    if (ss.scope().name() == "nemo.lens") lens_scope = &ss;
  }
  ASSERT_NE(lens_scope, nullptr);
  EXPECT_EQ(lens_scope->scope().version(), "1.2.3");
  EXPECT_EQ(lens_scope->schema_url(), "https://schema/1");
  EXPECT_EQ(lens_scope->spans_size(), 2);

  const proto_trace::Span* span = find_span(request, "step");
  ASSERT_NE(span, nullptr);
  EXPECT_EQ(span->trace_id(), SpanBatch::bytes(SpanBatch::kTrace.data(), 16));
  EXPECT_EQ(span->span_id(), SpanBatch::bytes(SpanBatch::kSpan.data(), 8));
  EXPECT_EQ(span->parent_span_id(), SpanBatch::bytes(SpanBatch::kParent.data(), 8));
  EXPECT_EQ(span->trace_state(), "vendor=value");
  EXPECT_EQ(span->kind(), proto_trace::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(span->start_time_unix_nano(), SpanBatch::kStart);
  EXPECT_EQ(span->end_time_unix_nano(), SpanBatch::kStart + 2'500'000'001ull);
  EXPECT_EQ(attribute(span->attributes(), "attr.bool")->bool_value(), true);
  EXPECT_EQ(attribute(span->attributes(), "attr.int")->int_value(), -9'007'199'254'740'993);
  EXPECT_EQ(attribute(span->attributes(), "attr.int32")->int_value(), -7);
  EXPECT_EQ(attribute(span->attributes(), "attr.uint32")->int_value(), 7);
  EXPECT_EQ(attribute(span->attributes(), "attr.double")->double_value(), 3.25);
  EXPECT_TRUE(std::isnan(attribute(span->attributes(), "attr.nan")->double_value()));
  EXPECT_EQ(attribute(span->attributes(), "attr.string")->string_value(), "héllo \"quoted\"");
  const auto& bools = attribute(span->attributes(), "attr.bools")->array_value();
  ASSERT_EQ(bools.values_size(), 2);
  EXPECT_TRUE(bools.values(0).bool_value());
  EXPECT_FALSE(bools.values(1).bool_value());
  const auto& ints = attribute(span->attributes(), "attr.ints")->array_value();
  ASSERT_EQ(ints.values_size(), 3);
  EXPECT_EQ(ints.values(2).int_value(), 9'007'199'254'740'993);
  const auto& doubles = attribute(span->attributes(), "attr.doubles")->array_value();
  ASSERT_EQ(doubles.values_size(), 2);
  EXPECT_EQ(doubles.values(1).double_value(), -2.25);
  const auto& strings = attribute(span->attributes(), "attr.strings")->array_value();
  ASSERT_EQ(strings.values_size(), 2);
  EXPECT_EQ(strings.values(1).string_value(), "b");
  ASSERT_EQ(span->events_size(), 1);
  EXPECT_EQ(span->events(0).name(), "checkpoint");
  EXPECT_EQ(span->events(0).time_unix_nano(), SpanBatch::kStart + 5);
  EXPECT_EQ(attribute(span->events(0).attributes(), "event.n")->int_value(), 1);
  ASSERT_EQ(span->links_size(), 1);
  EXPECT_EQ(span->links(0).trace_id(), SpanBatch::bytes(SpanBatch::kTrace.data(), 16));
  EXPECT_EQ(span->links(0).span_id(), SpanBatch::bytes(SpanBatch::kLinked.data(), 8));
  EXPECT_EQ(attribute(span->links(0).attributes(), "link.kind")->string_value(), "pp");
  EXPECT_EQ(span->status().code(), proto_trace::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(span->status().message(), "out of memory");
  // The W3C trace flags (sampled); opentelemetry-cpp 1.19 does not set the is-remote bits.
  EXPECT_EQ(span->flags(), 1u);

  const proto_trace::Span* sibling = find_span(request, "sibling");
  ASSERT_NE(sibling, nullptr);
  EXPECT_EQ(sibling->parent_span_id(), "");
  EXPECT_EQ(sibling->kind(), proto_trace::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(sibling->status().code(), proto_trace::Status::STATUS_CODE_UNSET);
}

TEST(OtlpHttpExport, EverySettingReachesTheWire) {
  ScriptedHttpReceiver receiver;
  for (const bool gzip : {false, true}) {
    Captured captured;
    const auto settings = settings_from(
        {{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
         {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url("/base")},
         {"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret%20value,Authorization=Bearer%20tok"},
         {"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", gzip ? "gzip" : "none"},
         {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}});
    auto exporter = make_otlp_exporter<Signal::traces>(settings, captured.report, kFastRetry);
    SpanBatch batch;
    ASSERT_EQ(export_batch(*exporter, batch), ExportResult::kSuccess);
    ASSERT_TRUE(receiver.wait_for_requests(gzip ? 2 : 1, 3s));
    const auto request = receiver.requests().back();
    EXPECT_EQ(request.method, "POST");
    EXPECT_EQ(request.path, "/base/v1/traces");
    EXPECT_EQ(request.headers.at("x-api-key"), "s3cret value");
    EXPECT_EQ(request.headers.at("authorization"), "Bearer tok");
    EXPECT_EQ(request.headers.at("content-type"), "application/x-protobuf");
    EXPECT_EQ(request.headers.at("user-agent").rfind("lens-cpp/", 0), 0u);
    EXPECT_EQ(request.headers.count("content-encoding"), gzip ? 1u : 0u);
    std::string body = request.body;
    if (gzip) {
      EXPECT_EQ(request.headers.at("content-encoding"), "gzip");
      ASSERT_GE(body.size(), 2u);
      EXPECT_EQ(static_cast<unsigned char>(body[0]), 0x1f);  // gzip magic
      EXPECT_EQ(static_cast<unsigned char>(body[1]), 0x8b);
      body = gunzip(body);
    }
    collector_trace::ExportTraceServiceRequest decoded;
    ASSERT_TRUE(decoded.ParseFromString(body));
    expect_batch_content(decoded);
    EXPECT_TRUE(exporter->Shutdown(1s));
    EXPECT_EQ(captured.report->counts().items_exported, 4u);
    EXPECT_TRUE(captured.lines.empty());
  }
}

TEST(OtlpHttpExport, JsonIsTheOtlpJsonMapping) {
  ScriptedHttpReceiver receiver;
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"},
                     {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url("/v1/traces")}}),
      captured.report, kFastRetry);
  SpanBatch batch;
  ASSERT_EQ(export_batch(*exporter, batch), ExportResult::kSuccess);
  ASSERT_TRUE(receiver.wait_for_requests(1, 3s));
  const auto request = receiver.requests().front();
  EXPECT_EQ(request.headers.at("content-type"), "application/json");
  // Hex ids, integer enums, lowerCamelCase, 64-bit integers as strings.
  const std::string& json = request.body;
  EXPECT_NE(json.find("\"traceId\":\"0102030405060708090a0b0c0d0e0f10\""), std::string::npos);
  EXPECT_NE(json.find("\"spanId\":\"a1b2c3d4e5f60718\""), std::string::npos);
  EXPECT_NE(json.find("\"parentSpanId\":\"1020304050607080\""), std::string::npos);
  EXPECT_NE(json.find("\"kind\":2"), std::string::npos);
  EXPECT_NE(json.find("\"startTimeUnixNano\":\"1700000000123456789\""), std::string::npos);
  EXPECT_NE(json.find("\"intValue\":\"-9007199254740993\""), std::string::npos);
  EXPECT_NE(json.find("\"code\":2"), std::string::npos);
  // opentelemetry-cpp 1.19's own JSON writes NaN as null; the mapping says "NaN".
  EXPECT_NE(json.find("{\"key\":\"attr.nan\",\"value\":{\"doubleValue\":\"NaN\"}}"),
            std::string::npos);
  EXPECT_EQ(json.find("trace_id"), std::string::npos);
  collector_trace::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(otlp_json::decode(json, decoded).ok());
  expect_batch_content(decoded);
}

TEST(OtlpHttpExport, RetryableAnswersAreRetriedWithTheirRetryAfter) {
  ScriptedHttpReceiver receiver;
  receiver.push({503, {{"Retry-After", "1"}}, "", "text/plain"});
  receiver.push({429, {{"Retry-After", "0"}}, "", "text/plain"});
  receiver.push({502, {}, "", "text/plain"});
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url("")},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "5000"}}),
      captured.report, kFastRetry);
  SpanBatch batch;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kSuccess);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 1s);  // Retry-After: 1 was honoured
  EXPECT_LT(elapsed, 4s);
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].body, requests[3].body);  // the same batch, resent
  const ExportReportCounts counts = captured.report->counts();
  EXPECT_EQ(counts.retries, 3u);
  EXPECT_EQ(counts.exports_succeeded, 1u);
  EXPECT_EQ(counts.items_exported, 4u);
  EXPECT_EQ(counts.exports_failed, 0u);
  EXPECT_TRUE(captured.lines.empty());
}

TEST(OtlpHttpExport, BadRequestIsDroppedAndReportedOnce) {
  ScriptedHttpReceiver receiver;
  collector_trace::ExportTraceServiceResponse unused;
  // google.rpc.Status {code: 3, message: "bad span"} in protobuf.
  const std::string status_body = std::string("\x08\x03\x12\x08", 4) + "bad span";
  receiver.push({400, {}, status_body});
  receiver.push({400, {}, status_body});
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url("")},
                     {"OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=topsecret"}}),
      captured.report, kFastRetry);
  SpanBatch batch;
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure);
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure);
  EXPECT_EQ(receiver.requests().size(), 2u);  // not retried
  const ExportReportCounts counts = captured.report->counts();
  EXPECT_EQ(counts.exports_failed, 2u);
  EXPECT_EQ(counts.items_failed, 8u);
  EXPECT_EQ(counts.retries, 0u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_EQ(captured.lines[0],
            "lens: traces export to " + receiver.url("/v1/traces") +
                " (http/protobuf) failed: HTTP 400 (bad span); 4 spans "
                "dropped (further occurrences are counted, not shown; totals at shutdown)");
  EXPECT_EQ(captured.lines[0].find("topsecret"), std::string::npos);
}

TEST(OtlpHttpExport, PartialSuccessIsCountedAndReportedOnce) {
  ScriptedHttpReceiver receiver;
  collector_trace::ExportTraceServiceResponse response;
  response.mutable_partial_success()->set_rejected_spans(3);
  response.mutable_partial_success()->set_error_message("spans too old");
  receiver.push({200, {}, response.SerializeAsString()});
  receiver.push({200, {}, response.SerializeAsString()});
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url("")}}),
      captured.report, kFastRetry);
  SpanBatch batch;
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kSuccess);
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kSuccess);
  EXPECT_EQ(receiver.requests().size(), 2u);
  EXPECT_EQ(captured.report->counts().items_rejected, 6u);
  EXPECT_EQ(captured.report->counts().items_exported, 8u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_EQ(captured.lines[0], "lens: traces export to " + receiver.url("/v1/traces") +
                                   " (http/protobuf): the receiver rejected 3 of 4 spans "
                                   "(partial_success: 'spans too old') (further occurrences "
                                   "are counted, not shown; totals at shutdown)");
}

TEST(OtlpHttpExport, AReceiverThatNeverAnswersEndsEachExportAtItsTimeout) {
  ScriptedHttpReceiver receiver(/*answer=*/false);
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url("")},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "400"}}),
      captured.report, kFastRetry);
  SpanBatch batch;
  for (int i = 0; i < 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_GE(elapsed, 350ms);
    EXPECT_LT(elapsed, 1500ms);
  }
  EXPECT_EQ(captured.report->counts().exports_failed, 2u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("no answer before the timeout"), std::string::npos)
      << captured.lines[0];
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(exporter->Shutdown(500ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 500ms);
}

TEST(OtlpGrpcExport, BeginDrainBoundsRetriesByTheShutdownDeadline) {
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_ENDPOINT",
                      "http://127.0.0.1:" + std::to_string(test_servers::free_port())},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "10000"}}),
      captured.report, kFastRetry);
  const auto start = std::chrono::steady_clock::now();
  std::thread drainer([&] {
    std::this_thread::sleep_for(300ms);
    captured.report->begin_drain(start + 800ms);
  });
  SpanBatch batch;
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  drainer.join();
  // Retried past the drain's start, ended by its deadline rather than the 10 s export timeout.
  EXPECT_GE(elapsed, 600ms);
  EXPECT_LT(elapsed, 2s);
  EXPECT_GE(captured.report->counts().retries, 3u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_NE(captured.lines[0].find("gRPC status UNAVAILABLE"), std::string::npos)
      << captured.lines[0];
  EXPECT_NE(captured.lines[0].find("; retried until the shutdown timeout; 4 spans dropped"),
            std::string::npos)
      << captured.lines[0];
  // After the exporter's own shutdown: not even an attempt.
  EXPECT_TRUE(exporter->Shutdown(100ms));
  EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure);
  EXPECT_EQ(captured.report->counts().exports_failed, 2u);
}

// A scheme-less gRPC endpoint means TLS: against a plain-text receiver the line says so (not
// a client-certificate hint). A receiver of the other protocol names the protocol variable.
TEST(OtlpExportHints, SchemelessEndpointAndProtocolMismatchSayWhatToSet) {
  CollectProcess collector;
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
  SpanBatch batch;
  struct Case {
    Env::Map variables;
    std::string expected;
  };
  const std::string grpc_address = collector.address("grpc");
  const std::vector<Case> cases = {
      {{{"OTEL_EXPORTER_OTLP_ENDPOINT", grpc_address}},
       "; the endpoint " + grpc_address +
           " has no scheme, which means TLS: for a plain-text receiver use http://" + grpc_address +
           " or OTEL_EXPORTER_OTLP_INSECURE=true"},
      {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + collector.address("http")}},
       "; the endpoint answers HTTP/1.x, not gRPC: for an OTLP/HTTP receiver (port 4318 by "
       "default) set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"},
      {{{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + grpc_address}},
       "; the endpoint does not answer HTTP/1.1 (a gRPC receiver?): for OTLP/gRPC (port 4317 "
       "by default) set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc"},
  };
  for (const Case& c : cases) {
    Env::Map variables = c.variables;
    variables["OTEL_EXPORTER_OTLP_TIMEOUT"] = "2000";
    Captured captured;
    auto exporter = make_otlp_exporter<Signal::traces>(
        settings_from(variables), captured.report, RetryPolicy{Millis(5000), Millis(5000), 1.0});
    EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure) << c.expected;
    ASSERT_EQ(captured.lines.size(), 1u) << c.expected;
    EXPECT_NE(captured.lines[0].find(c.expected), std::string::npos) << captured.lines[0];
    EXPECT_EQ(captured.lines[0].find("client certificate"), std::string::npos) << captured.lines[0];
  }
  EXPECT_EQ(collector.stop(), 0) << collector.err();
}

TEST(OtlpGrpcExport, ReceiverDownAtStartThenUpGetsTheData) {
  const int port = test_servers::free_port();
  Captured captured;
  // The data arrives at gRPC's first reconnect attempt after the collector listens, and those
  // attempts are up to 5 s apart (make_channel). Alone the export takes 4-5 s; run after the
  // other unit tests in one process (scripts/test.sh's shards) 8 s ended it before delivery in
  // 3 of 3 runs, 20 s delivered in about 4 s, but not always on a loaded machine (issue 36
  // point 8). The timeout only bounds a failure; the export returns as soon as the batch is
  // delivered, so it is generous.
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:" + std::to_string(port)},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "60000"}}),
      captured.report, kFastRetry);
  std::unique_ptr<CollectProcess> collector;
  std::thread starter([&] {
    std::this_thread::sleep_for(500ms);
    collector = std::make_unique<CollectProcess>(std::vector<std::string>{},
                                                 "127.0.0.1:" + std::to_string(port), "off");
  });
  SpanBatch batch;
  const ExportResult result = export_batch(*exporter, batch);
  starter.join();
  EXPECT_EQ(result, ExportResult::kSuccess);
  EXPECT_GE(captured.report->counts().retries, 1u);
  EXPECT_TRUE(captured.lines.empty());
  // An exporter still connected must not hold the collector's stop (it would hold it until the
  // exporter is destroyed, after this test's end: the bound tells a hang from a slow machine).
  const auto stop_start = std::chrono::steady_clock::now();
  ASSERT_EQ(collector->stop(), 0) << collector->err();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_start, 15s);
  const auto lines = collector->lines("traces.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  collector_trace::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(otlp_json::decode(lines[0], decoded).ok());
  expect_batch_content(decoded);
}

TEST(OtlpExportThroughCollect, EveryProtocolGivesTheSameLines) {
  CollectProcess collector({"--token", "tok3n"});
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
  struct Case {
    const char* protocol;
    const char* compression;
    std::string endpoint;
  };
  const std::vector<Case> cases = {
      {"grpc", "none", "http://" + collector.address("grpc")},
      {"grpc", "gzip", "http://" + collector.address("grpc")},
      {"http/protobuf", "none", "http://" + collector.address("http")},
      {"http/protobuf", "gzip", "http://" + collector.address("http")},
      {"http/json", "none", "http://" + collector.address("http")},
      {"http/json", "gzip", "http://" + collector.address("http")},
  };
  SpanBatch batch;
  for (const Case& c : cases) {
    Captured captured;
    auto exporter = make_otlp_exporter<Signal::traces>(
        settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", c.protocol},
                       {"OTEL_EXPORTER_OTLP_COMPRESSION", c.compression},
                       {"OTEL_EXPORTER_OTLP_ENDPOINT", c.endpoint},
                       {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20tok3n"}}),
        captured.report, kFastRetry);
    EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kSuccess) << c.protocol;
    EXPECT_TRUE(captured.lines.empty()) << c.protocol << ": " << captured.lines.front();
  }
  // A wrong token is refused over both protocols, reported once each, not retried.
  for (const char* protocol : {"grpc", "http/protobuf"}) {
    Captured captured;
    const std::string endpoint =
        "http://" + collector.address(std::string(protocol) == "grpc" ? "grpc" : "http");
    auto exporter = make_otlp_exporter<Signal::traces>(
        settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol},
                       {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
                       {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20n0t-the-t0ken"}}),
        captured.report, kFastRetry);
    EXPECT_EQ(export_batch(*exporter, batch), ExportResult::kFailure) << protocol;
    EXPECT_EQ(captured.report->counts().retries, 0u);
    ASSERT_EQ(captured.lines.size(), 1u);
    EXPECT_NE(
        captured.lines[0].find(std::string(protocol) == "grpc" ? "UNAUTHENTICATED" : "HTTP 401"),
        std::string::npos)
        << captured.lines[0];
    EXPECT_EQ(captured.lines[0].find("n0t-the-t0ken"), std::string::npos);
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  const auto lines = collector.lines("traces.jsonl");
  ASSERT_EQ(lines.size(), cases.size());
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i], lines[0]) << cases[i].protocol << " " << cases[i].compression;
  }
  collector_trace::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(otlp_json::decode(lines[0], decoded).ok());
  expect_batch_content(decoded);
  EXPECT_NE(collector.err().find("2 unauthenticated"), std::string::npos) << collector.err();
}

TEST(OtlpExportThroughCollect, ReceiverKilledMidRunCountsDropsWithoutCrashing) {
  auto collector = std::make_unique<CollectProcess>();
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + collector->address("grpc")},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "300"}}),
      captured.report, kFastRetry);
  native::SpanPipelineOptions options;
  options.max_queue_size = 256;
  options.max_export_batch_size = 64;
  options.schedule_delay = std::chrono::milliseconds(20);
  options.concurrent_exports = 1;
  // The native pipeline's processor in the provider, as setup builds them.
  auto pipeline = std::make_shared<native::SpanPipeline>(options, std::move(exporter),
                                                         sdkresource::Resource::Create({}));
  auto provider = std::make_shared<sdktrace::TracerProvider>(pipeline->make_processor());
  auto tracer = provider->GetTracer("killed");
  for (int i = 0; i < 200; ++i) tracer->StartSpan("before")->End();
  EXPECT_TRUE(provider->ForceFlush(5s));
  const std::uint64_t exported_before = captured.report->counts().items_exported;
  EXPECT_EQ(exported_before, 200u);
  collector->stop(SIGKILL);
  // The training thread keeps going: the queue is bounded, the rest is dropped and counted.
  // (How fast it goes is the benchmarks' business: a wall-clock bound here failed under
  // AddressSanitizer on a loaded machine, issue 36 point 8; the time is printed.)
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20000; ++i) tracer->StartSpan("after")->End();
  std::cout << "[ measure  ] 20000 spans after the kill in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count()
            << " ms\n";
  provider->ForceFlush(3s);
  provider->Shutdown(3s);
  pipeline->shutdown(3s);
  const ExportReportCounts counts = captured.report->counts();
  const auto queue = pipeline->counts();
  EXPECT_EQ(counts.items_exported, exported_before);
  EXPECT_GT(counts.items_failed, 0u);
  // Every span after the kill is accounted for once: refused by the full queue, or queued and
  // failed at export (or still in an export that never returned).
  EXPECT_EQ(queue.dropped_full_queue + counts.items_failed + counts.items_in_flight + queue.lost,
            20000u)
      << "refused " << queue.dropped_full_queue << ", failed " << counts.items_failed
      << ", in flight " << counts.items_in_flight << ", lost " << queue.lost;
  ASSERT_EQ(captured.lines.size(), 1u) << captured.lines.back();
  EXPECT_NE(captured.lines[0].find("gRPC status UNAVAILABLE"), std::string::npos)
      << captured.lines[0];
}

// The OTLP exporter of signal S to `collector` over `protocol` (set by `protocol_variable`),
// counting into `captured`.
template <Signal S>
ExporterPtr<S> exporter_to(CollectProcess& collector, const char* protocol,
                           const Captured& captured, const char* protocol_variable,
                           TemporalityPreference temporality = TemporalityPreference::cumulative) {
  const std::string endpoint =
      "http://" + collector.address(std::string(protocol) == "grpc" ? "grpc" : "http");
  return make_otlp_exporter<S>(
      settings_from({{protocol_variable, protocol}, {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint}}, S),
      captured.report, kFastRetry, temporality);
}

TEST(OtlpMetricsExport, PeriodicReaderSendsOverEveryProtocol) {
  CollectProcess collector;
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
  for (const char* protocol : {"grpc", "http/protobuf", "http/json"}) {
    Captured captured(Signal::metrics);
    auto exporter = exporter_to<Signal::metrics>(collector, protocol, captured,
                                                 "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                                                 TemporalityPreference::delta);
    auto provider = std::make_shared<opentelemetry::sdk::metrics::MeterProvider>(
        std::unique_ptr<opentelemetry::sdk::metrics::ViewRegistry>(
            new opentelemetry::sdk::metrics::ViewRegistry()),
        sdkresource::Resource::Create({{"rank", "0"}}));
    // lens's reader (what setup uses): ForceFlush exports on this thread, every time.
    provider->AddMetricReader(std::make_shared<lens::metrics::PeriodicMetricReader>(
        std::move(exporter), std::chrono::milliseconds(60000)));
    auto counter = provider->GetMeter("lens.test")->CreateUInt64Counter("tokens");
    counter->Add(5, {{"protocol", protocol}});
    counter->Add(7, {{"protocol", protocol}});
    EXPECT_TRUE(provider->ForceFlush(5s));
    // Delta: nothing new since the flush, so the last export at shutdown sends no request.
    EXPECT_TRUE(provider->Shutdown(5s));
    EXPECT_EQ(captured.report->counts().items_exported, 1u) << protocol;
    EXPECT_EQ(captured.report->counts().exports_failed, 0u) << protocol;
    EXPECT_TRUE(captured.lines.empty()) << protocol << ": " << captured.lines.front();
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  const auto lines = collector.lines("metrics.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  for (const std::string& line : lines) {
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest decoded;
    ASSERT_TRUE(otlp_json::decode(line, decoded).ok()) << line;
    ASSERT_EQ(decoded.resource_metrics_size(), 1);
    const auto& metric = decoded.resource_metrics(0).scope_metrics(0).metrics(0);
    EXPECT_EQ(metric.name(), "tokens");
    ASSERT_EQ(metric.sum().data_points_size(), 1);
    EXPECT_EQ(metric.sum().data_points(0).as_int(), 12);
    EXPECT_TRUE(metric.sum().is_monotonic());
    EXPECT_EQ(metric.sum().aggregation_temporality(),
              opentelemetry::proto::metrics::v1::AGGREGATION_TEMPORALITY_DELTA);
  }
}

TEST(OtlpLogsExport, LoggerProviderSendsOverEveryProtocol) {
  CollectProcess collector;
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
  for (const char* protocol : {"grpc", "http/protobuf", "http/json"}) {
    Captured captured(Signal::logs);
    auto exporter = exporter_to<Signal::logs>(collector, protocol, captured,
                                              "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL");
    // The provider setup_telemetry builds: its loggers hand records to lens's log pipeline.
    Config config;
    config.otel.blrp.schedule_delay_ms.value = 20;
    auto provider = telemetry::build_logger_provider(telemetry::log_pipeline_options(config),
                                                     {{"rank", "1"}}, std::move(exporter))
                        .provider;
    auto logger = provider->GetLogger("lens.test", "lens.test");
    logger->EmitLogRecord(opentelemetry::logs::Severity::kWarn, std::string("loss spike"),
                          common::SystemTimestamp(std::chrono::nanoseconds(SpanBatch::kStart)));
    EXPECT_TRUE(provider->ForceFlush(5s));
    // Delta: nothing new since the flush, so the last export at shutdown sends no request.
    EXPECT_TRUE(provider->Shutdown(5s));
    EXPECT_EQ(captured.report->counts().items_exported, 1u) << protocol;
    EXPECT_TRUE(captured.lines.empty()) << protocol << ": " << captured.lines.front();
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  const auto lines = collector.lines("logs.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  for (const std::string& line : lines) {
    opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest decoded;
    ASSERT_TRUE(otlp_json::decode(line, decoded).ok()) << line;
    const auto& record = decoded.resource_logs(0).scope_logs(0).log_records(0);
    EXPECT_EQ(record.body().string_value(), "loss spike");
    EXPECT_EQ(record.severity_number(), opentelemetry::proto::logs::v1::SEVERITY_NUMBER_WARN);
    EXPECT_EQ(record.time_unix_nano(), SpanBatch::kStart);
  }
}

TEST(SpanExporterSelection, EveryExporterCountsIntoTheGivenReport) {
  Captured captured;
  Config config;
  config.exporter = lens::ExporterKind::none;
  auto made = make_exporter<Signal::traces>(telemetry::exporter_options(config, Signal::traces),
                                            captured.report);
  ASSERT_TRUE(made.ok()) << made.message();
  SpanBatch batch;
  EXPECT_EQ(export_batch(**made, batch), ExportResult::kSuccess);
  EXPECT_EQ(captured.report->counts().items_exported, 4u);
  EXPECT_TRUE((*made)->Shutdown(1s));
  EXPECT_EQ(export_batch(**made, batch), ExportResult::kFailure);
  EXPECT_EQ(captured.report->counts().items_failed, 4u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_EQ(captured.lines[0],
            "lens: traces export to none failed; its spans are dropped (further occurrences "
            "are counted, not shown; totals at shutdown)");
}

}  // namespace
}  // namespace lens::exporters
