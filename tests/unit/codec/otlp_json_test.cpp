// The OTLP JSON codec: the exact encoding of hand-built trace, metrics and logs requests (ids
// as hex, 64-bit integers as strings, enums as integers, defaults omitted, one line), round
// trips, and what decode accepts (snake_case names, enum names, numbers for 64-bit integers,
// unknown fields) and rejects (ids that are not hex of the right length, base64 ids, non-JSON).
#include "lens/otlp_json.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "unit/codec/otlp_proto_builders.hpp"

namespace lens {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace trace = opentelemetry::proto::trace::v1;
namespace proto_metrics = opentelemetry::proto::metrics::v1;
namespace logs = opentelemetry::proto::logs::v1;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;

using test_support::add_attribute;
using test_support::bytes_from;

ExportTraceServiceRequest trace_request() {
  ExportTraceServiceRequest request =
      test_support::train_step_request("k=v", 0x21, -9007199254740993);
  trace::Span* span = request.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0);
  add_attribute(span->mutable_attributes(), "phase")->mutable_value()->set_string_value("fwd");
  add_attribute(span->mutable_attributes(), "ok")->mutable_value()->set_bool_value(true);
  common::ArrayValue* dims =
      add_attribute(span->mutable_attributes(), "dims")->mutable_value()->mutable_array_value();
  dims->add_values()->set_int_value(8);
  dims->add_values()->set_int_value(1024);
  return request;
}

const std::string kTraceLine =
    R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}}]},)"
    R"("scopeSpans":[{"scope":{"name":"nemo.lens","version":"0.1.0"},"spans":[{)"
    R"("traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","traceState":"k=v",)"
    R"("parentSpanId":"2122232425262728","name":"train_step","kind":2,)"
    R"("startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000250000000",)"
    R"("attributes":[{"key":"step","value":{"intValue":"42"}},{"key":"loss","value":{"doubleValue":0.25}},)"
    R"({"key":"phase","value":{"stringValue":"fwd"}},{"key":"ok","value":{"boolValue":true}},)"
    R"({"key":"dims","value":{"arrayValue":{"values":[{"intValue":"8"},{"intValue":"1024"}]}}}],)"
    R"("droppedAttributesCount":1,)"
    R"("events":[{"timeUnixNano":"1700000000100000000","name":"checkpoint",)"
    R"("attributes":[{"key":"bytes","value":{"intValue":"-9007199254740993"}}]}],)"
    R"("links":[{"traceId":"a1a2a3a4a5a6a7a8a9aaabacadaeafb0","spanId":"b1b2b3b4b5b6b7b8",)"
    R"("attributes":[{"key":"kind","value":{"stringValue":"data"}}],"flags":256}],)"
    R"("status":{"message":"nan loss","code":2},"flags":769}]}],)"
    R"("schemaUrl":"https://opentelemetry.io/schemas/1.24.0"}]})";

ExportMetricsServiceRequest metrics_request() {
  ExportMetricsServiceRequest request;
  proto_metrics::ScopeMetrics* scope_metrics = test_support::add_trainer_scope(
      request.add_resource_metrics(), &proto_metrics::ResourceMetrics::add_scope_metrics);
  proto_metrics::Metric* metric = scope_metrics->add_metrics();
  metric->set_name("tokens");
  metric->set_unit("{token}");
  proto_metrics::Sum* sum = metric->mutable_sum();
  sum->set_aggregation_temporality(proto_metrics::AGGREGATION_TEMPORALITY_CUMULATIVE);
  sum->set_is_monotonic(true);
  proto_metrics::NumberDataPoint* point = sum->add_data_points();
  point->set_start_time_unix_nano(1700000000000000000);
  point->set_time_unix_nano(1700000001000000000);
  point->set_as_int(4096);
  add_attribute(point->mutable_attributes(), "rank")->mutable_value()->set_int_value(3);
  proto_metrics::Exemplar* exemplar = point->add_exemplars();
  exemplar->set_time_unix_nano(1700000000500000000);
  exemplar->set_as_double(1.5);
  exemplar->set_span_id(bytes_from(0x11, 8));
  exemplar->set_trace_id(bytes_from(0x01, 16));
  return request;
}

const std::string kMetricsLine =
    R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}}]},)"
    R"("scopeMetrics":[{"scope":{"name":"nemo.lens"},"metrics":[{"name":"tokens","unit":"{token}",)"
    R"("sum":{"dataPoints":[{"startTimeUnixNano":"1700000000000000000","timeUnixNano":"1700000001000000000",)"
    R"("exemplars":[{"timeUnixNano":"1700000000500000000","asDouble":1.5,"spanId":"1112131415161718",)"
    R"("traceId":"0102030405060708090a0b0c0d0e0f10"}],"asInt":"4096",)"
    R"("attributes":[{"key":"rank","value":{"intValue":"3"}}]}],)"
    R"("aggregationTemporality":2,"isMonotonic":true}}]}]}]})";

ExportLogsServiceRequest logs_request() {
  ExportLogsServiceRequest request;
  logs::ScopeLogs* scope_logs = test_support::add_trainer_scope(
      request.add_resource_logs(), &logs::ResourceLogs::add_scope_logs);
  logs::LogRecord* record = scope_logs->add_log_records();
  record->set_time_unix_nano(1700000000000000000);
  record->set_severity_number(logs::SEVERITY_NUMBER_WARN);
  record->set_severity_text("WARN");
  record->mutable_body()->set_string_value("loss spike");
  add_attribute(record->mutable_attributes(), "step")->mutable_value()->set_int_value(7);
  record->set_flags(1);
  record->set_trace_id(bytes_from(0x01, 16));
  record->set_span_id(bytes_from(0x11, 8));
  record->set_observed_time_unix_nano(1700000000000000001);
  return request;
}

const std::string kLogsLine =
    R"({"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}}]},)"
    R"("scopeLogs":[{"scope":{"name":"nemo.lens"},"logRecords":[{"timeUnixNano":"1700000000000000000",)"
    R"("severityNumber":13,"severityText":"WARN","body":{"stringValue":"loss spike"},)"
    R"("attributes":[{"key":"step","value":{"intValue":"7"}}],"flags":1,)"
    R"("traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718",)"
    R"("observedTimeUnixNano":"1700000000000000001"}]}]}]})";

template <class Message>
void expect_round_trip(const Message& original) {
  Message decoded;
  const Status status = otlp_json::decode(otlp_json::encode(original), decoded);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(original, decoded))
      << decoded.DebugString();
}

// The trace line with the span's traceId replaced by `value` (a JSON literal).
std::string trace_line_with_trace_id(const std::string& value) {
  std::string line = kTraceLine;
  const std::string original = R"("traceId":"0102030405060708090a0b0c0d0e0f10")";
  line.replace(line.find(original), original.size(), R"("traceId":)" + value);
  return line;
}

TEST(OtlpJson, EncodesTraceRequestAsOneExactLine) {
  const std::string line = otlp_json::encode(trace_request());
  EXPECT_EQ(line, kTraceLine);
  EXPECT_EQ(line.find('\n'), std::string::npos);

  // The same facts, read back independently of the codec.
  const auto json = nlohmann::json::parse(line);
  const auto& span = json["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(span["traceId"], "0102030405060708090a0b0c0d0e0f10");
  EXPECT_EQ(span["spanId"], "1112131415161718");
  EXPECT_EQ(span["parentSpanId"], "2122232425262728");
  EXPECT_EQ(span["kind"], 2);
  EXPECT_EQ(span["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(span["attributes"][0]["value"]["intValue"], "42");
  EXPECT_EQ(span["status"]["code"], 2);
  EXPECT_EQ(span["links"][0]["traceId"], "a1a2a3a4a5a6a7a8a9aaabacadaeafb0");
}

TEST(OtlpJson, OmitsDefaultValues) {
  ExportTraceServiceRequest request;
  trace::Span* span = request.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_name("root");
  span->set_kind(trace::Span::SPAN_KIND_UNSPECIFIED);
  span->set_parent_span_id("");
  EXPECT_EQ(otlp_json::encode(request),
            R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"root"}]}]}]})");
  EXPECT_EQ(otlp_json::encode(ExportTraceServiceRequest()), "{}");
}

TEST(OtlpJson, EncodesResponses) {
  ExportTraceServiceResponse response;
  response.mutable_partial_success()->set_rejected_spans(3);
  response.mutable_partial_success()->set_error_message("queue full");
  EXPECT_EQ(otlp_json::encode(response),
            R"({"partialSuccess":{"rejectedSpans":"3","errorMessage":"queue full"}})");
}

TEST(OtlpJson, EscapesStringsOnOneLine) {
  ExportTraceServiceRequest request;
  trace::Span* span = request.add_resource_spans()->add_scope_spans()->add_spans();
  span->set_name("line1\nline2\t\"quoted\" \\ caf\xc3\xa9");
  const std::string line = otlp_json::encode(request);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"],
            span->name());
  expect_round_trip(request);
}

TEST(OtlpJson, TraceRequestRoundTrips) { expect_round_trip(trace_request()); }

TEST(OtlpJson, EncodesMetricsRequestWithHexExemplarIds) {
  EXPECT_EQ(otlp_json::encode(metrics_request()), kMetricsLine);
  expect_round_trip(metrics_request());
}

TEST(OtlpJson, EncodesLogsRequestWithHexIds) {
  EXPECT_EQ(otlp_json::encode(logs_request()), kLogsLine);
  expect_round_trip(logs_request());
}

TEST(OtlpJson, DecodesTheExactLines) {
  ExportTraceServiceRequest traces;
  ASSERT_TRUE(otlp_json::decode(kTraceLine, traces).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(traces, trace_request()));
  ExportMetricsServiceRequest metrics_decoded;
  ASSERT_TRUE(otlp_json::decode(kMetricsLine, metrics_decoded).ok());
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(metrics_decoded, metrics_request()));
  ExportLogsServiceRequest logs_decoded;
  ASSERT_TRUE(otlp_json::decode(kLogsLine, logs_decoded).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(logs_decoded, logs_request()));
}

TEST(OtlpJson, DecodeAcceptsSnakeCaseEnumNamesNumbersAndUppercaseHex) {
  const std::string json =
      R"({"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"0102030405060708090A0B0C0D0E0F10",)"
      R"("span_id":"1112131415161718","parent_span_id":"","name":"s","kind":"SPAN_KIND_CLIENT",)"
      R"("start_time_unix_nano":1700000000000000000,"status":{"code":"STATUS_CODE_OK"}}]}]}]})";
  ExportTraceServiceRequest request;
  const Status status = otlp_json::decode(json, request);
  ASSERT_TRUE(status.ok()) << status.message();
  const trace::Span& span = request.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(span.trace_id(), bytes_from(0x01, 16));
  EXPECT_EQ(span.span_id(), bytes_from(0x11, 8));
  EXPECT_EQ(span.parent_span_id(), "");
  EXPECT_EQ(span.kind(), trace::Span::SPAN_KIND_CLIENT);
  EXPECT_EQ(span.start_time_unix_nano(), 1700000000000000000U);
  EXPECT_EQ(span.status().code(), trace::Status::STATUS_CODE_OK);
}

TEST(OtlpJson, DecodeIgnoresUnknownFields) {
  const std::string json =
      R"({"resourceSpans":[{"futureField":{"spanId":"not hex"},"scopeSpans":[{"spans":[)"
      R"({"name":"s","extra":[1,{"traceId":"zz"}],"spanId":"1112131415161718"}]}]}],"other":true})";
  ExportTraceServiceRequest request;
  const Status status = otlp_json::decode(json, request);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(request.resource_spans(0).scope_spans(0).spans(0).name(), "s");
  EXPECT_EQ(request.resource_spans(0).scope_spans(0).spans(0).span_id(), bytes_from(0x11, 8));
}

TEST(OtlpJson, DecodeRejectsIdsThatAreNotHexOfTheRightLength) {
  ExportTraceServiceRequest request;
  Status status =
      otlp_json::decode(trace_line_with_trace_id(R"("zz02030405060708090a0b0c0d0e0f10")"), request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans[0].traceId "
            "\"zz02030405060708090a0b0c0d0e0f10\": expected 32 hex digits");
  EXPECT_EQ(request.resource_spans_size(), 0);  // cleared

  status = otlp_json::decode(trace_line_with_trace_id(R"("0102")"), request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans[0].traceId \"0102\": "
            "expected 32 hex digits");

  status = otlp_json::decode(trace_line_with_trace_id("12"), request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans[0].traceId 12: expected 32 "
            "hex digits");

  status = otlp_json::decode(
      R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"links":[{},{"span_id":"123"}]}]}]}]})",
      request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans[0].links[1].span_id \"123\": "
            "expected 16 hex digits");
}

TEST(OtlpJson, DecodeRejectsBase64Ids) {
  // protobuf's canonical JSON for bytes; OTLP JSON requires hex.
  ExportTraceServiceRequest request;
  const Status status =
      otlp_json::decode(trace_line_with_trace_id(R"("AQIDBAUGBwgJCgsMDQ4PEA==")"), request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans[0].traceId "
            "\"AQIDBAUGBwgJCgsMDQ4PEA==\": expected 32 hex digits");

  ExportLogsServiceRequest logs_decoded;
  EXPECT_EQ(otlp_json::decode(
                R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[{"spanId":"ERITFBUWFxg="}]}]}]})",
                logs_decoded)
                .message(),
            "OTLP JSON: invalid resourceLogs[0].scopeLogs[0].logRecords[0].spanId "
            "\"ERITFBUWFxg=\": expected 16 hex digits");
}

TEST(OtlpJson, DecodeRejectsWhatIsNotOtlpJson) {
  ExportTraceServiceRequest request;
  Status status = otlp_json::decode("not json", request);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind("OTLP JSON: not valid JSON: ", 0), 0U) << status.message();

  status = otlp_json::decode("", request);
  EXPECT_EQ(status.message().rfind("OTLP JSON: not valid JSON: ", 0), 0U) << status.message();

  status = otlp_json::decode("[1]", request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: expected an object for "
            "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest, got array");

  // Valid JSON of the wrong shape: protobuf's parser names the problem. (Unknown enum names are
  // ignored like unknown fields, as OTLP receivers must; a wrong type is not.)
  status = otlp_json::decode(R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"name":[1]}]}]}]})",
                             request);
  EXPECT_EQ(
      status.message().rfind(
          "OTLP JSON: invalid opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest: ",
          0),
      0U)
      << status.message();
  EXPECT_EQ(request.resource_spans_size(), 0);

  // A value that is not a list where the mapping has one: protobuf's parser alone would read a
  // lone object or scalar as a one-element list.
  status = otlp_json::decode(R"({"resourceSpans":[{"scopeSpans":[{"spans":"FAST"}]}]})", request);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans: expected an array, got "
            "string");
  status = otlp_json::decode(R"({"resourceSpans":{"a":1}})", request);
  EXPECT_EQ(status.message(), "OTLP JSON: invalid resourceSpans: expected an array, got object");
  EXPECT_EQ(request.resource_spans_size(), 0);
  ExportMetricsServiceRequest metrics;
  status = otlp_json::decode(
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"histogram":{"dataPoints":[{"explicitBounds":2.5}]}}]}]}]})",
      metrics);
  EXPECT_EQ(status.message(),
            "OTLP JSON: invalid resourceMetrics[0].scopeMetrics[0].metrics[0].histogram."
            "dataPoints[0].explicitBounds: expected an array, got number");
  // null is an unset field, as the mapping says.
  EXPECT_TRUE(otlp_json::decode(R"({"resourceSpans":null})", request).ok());

  status = otlp_json::decode(std::string(2000, '[') + std::string(2000, ']'), request);
  EXPECT_EQ(status.message(), "OTLP JSON: nested deeper than 1000 levels");
}

TEST(OtlpJson, DecodeClearsTheMessageFirst) {
  ExportTraceServiceRequest request = trace_request();
  ASSERT_TRUE(otlp_json::decode("{}", request).ok());
  EXPECT_EQ(request.ByteSizeLong(), 0U);
}

}  // namespace
}  // namespace lens
