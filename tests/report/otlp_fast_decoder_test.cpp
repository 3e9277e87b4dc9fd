// The fast decoder gives exactly otlp_json::decode's message on the trace and metrics lines it
// accepts, and declines every form outside its subset (those lines take the general decoder).
#include "report/otlp_fast_decoder.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "lens/otlp_json.hpp"
#include "report_fixtures.hpp"

namespace lens::report {
namespace {

using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using DecodeResult = FastOtlpDecoder::Result;

// Decodes `line` both ways; fails the test unless the fast decoder accepts it as `Message` and
// agrees.
template <class Message>
void expect_same_as_general(const std::string& line) {
  Message general;
  const Status status = otlp_json::decode(line, general);
  ASSERT_TRUE(status.ok()) << status.message();
  FastOtlpDecoder decoder;
  std::string copy = line;
  ExportTraceServiceRequest traces;
  ExportMetricsServiceRequest metrics;
  const DecodeResult result = decoder.decode(copy, traces, metrics);
  EXPECT_EQ(copy, line);  // the padding does not change the text
  const Message* fast = nullptr;
  if constexpr (std::is_same_v<Message, ExportTraceServiceRequest>) {
    ASSERT_EQ(result, DecodeResult::traces) << line;
    fast = &traces;
  } else {
    ASSERT_EQ(result, DecodeResult::metrics) << line;
    fast = &metrics;
  }
  std::string difference;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&difference);
  EXPECT_TRUE(differencer.Compare(general, *fast)) << difference;
  EXPECT_EQ(fast->SerializeAsString(), general.SerializeAsString());
}

// `form` (a request broken over lines for reading) on one line, and `empty`: each decoded
// alike both ways.
template <class Message>
void expect_forms_same_as_general(std::string form, const std::string& empty) {
  std::erase(form, '\n');
  expect_same_as_general<Message>(form);
  expect_same_as_general<Message>(empty);
}

bool declines(const std::string& line) {
  FastOtlpDecoder decoder;
  std::string copy = line;
  ExportTraceServiceRequest traces;
  ExportMetricsServiceRequest metrics;
  return decoder.decode(copy, traces, metrics) == DecodeResult::declined;
}

TEST(ReportFastTraces, AgreesWithTheGeneralDecoderOnLensCollectLines) {
  for (const testing::RunSpec& spec :
       {testing::RunSpec{.ranks = 3, .iterations = 4}, testing::RunSpec{.ranks = 2,
                                                       .iterations = 3,
                                                       .slow_rank = 1,
                                                       .slow_ms = 50.0,
                                                       .steps_are_roots = false}}) {
    for (const auto& request : testing::make_traces(spec)) {
      ASSERT_GT(request.resource_spans(0).scope_spans(0).spans_size(), 10);
      expect_same_as_general<ExportTraceServiceRequest>(otlp_json::encode(request));
    }
  }
}

// Every form the fast decoder accepts, in one line: snake_case names, uppercase hex, 64-bit
// integers as numbers and strings, negative integers, every AnyValue kind nested, status,
// counts, flags, empty event and link lists, unset ids.
constexpr const char* kEveryForm = R"({"resource_spans":[{"resource":{"attributes":[
 {"key":"dl.rank","value":{"int_value":7}},{"key":"s","value":{"stringValue":"a\"\u00e9\n"}},
 {"key":"neg","value":{"intValue":"-9223372036854775808"}},{"key":"d","value":{"doubleValue":-0.0}},
 {"key":"d2","value":{"doubleValue":1e-300}},{"key":"i2","value":{"doubleValue":3}},
 {"key":"b","value":{"boolValue":false}},{"key":"empty","value":{}},
 {"key":"arr","value":{"arrayValue":{"values":[{"intValue":"1"},{"arrayValue":{}},
   {"kvlistValue":{"values":[{"key":"k","value":{"boolValue":true}}]}}]}}}],
 "droppedAttributesCount":2},
 "scopeSpans":[{"scope":{"name":"lens","version":"1.0","attributes":[],
  "dropped_attributes_count":1},
  "spans":[{"trace_id":"0123456789ABCDEF0123456789abcdef","span_id":"00000000000000FF",
   "parent_span_id":"","traceState":"k=v","name":"megatron.train_step","kind":3,
   "start_time_unix_nano":1700000000000000000,"endTimeUnixNano":"18446744073709551615",
   "attributes":[{"key":"megatron.iteration","value":{"intValue":12}}],
   "droppedAttributesCount":0,"events":[],"dropped_events_count":4,"links":[],
   "droppedLinksCount":5,"status":{"code":2,"message":"boom"},"flags":257},
   {"traceId":"","spanId":"","name":""}],"schemaUrl":"https://x"}],
 "schema_url":"https://y"}]})";

TEST(ReportFastTraces, AgreesWithTheGeneralDecoderOnEveryAcceptedForm) {
  expect_forms_same_as_general<ExportTraceServiceRequest>(kEveryForm, R"({"resourceSpans":[]})");
}

TEST(ReportFastTraces, DeclinesWhatItDoesNotKnow) {
  const std::string span_prefix = R"({"resourceSpans":[{"scopeSpans":[{"spans":[)"
                                  R"({"traceId":"0123456789abcdef0123456789abcdef",)";
  const std::string suffix = "}]}]}]}";
  const char* cases[] = {
      R"("name":"x","events":[{"name":"e","timeUnixNano":"1"}])",     // an event
      R"("name":"x","links":[{"traceId":""}])",                       // a link
      R"("name":"x","kind":"SPAN_KIND_SERVER")",                      // an enum by name
      R"("name":"x","unknownField":1)",                               // unknown field
      R"("name":"x","name":"y")",                                     // repeated key
      R"("name":"x","trace_id":"0123456789abcdef0123456789abcdef")",  // both spellings
      R"("spanId":"0123")",                                           // id of the wrong length
      R"("spanId":"0123456789abcdeg")",                               // not hex
      R"("parentSpanId":null)",                                       // null
      R"("startTimeUnixNano":"007")",                                 // leading zeros
      R"("startTimeUnixNano":"1e9")",                                 // not digits
      R"("startTimeUnixNano":-1)",                                    // negative unsigned
      R"("startTimeUnixNano":"18446744073709551616")",                // out of range
      R"("kind":1.5)",                                                // not an integer
      R"("flags":4294967296)",                                        // out of uint32
      R"("attributes":[{"key":"b","value":{"bytesValue":"AAE="}}])",  // base64 bytes
      R"("attributes":[{"key":"d","value":{"doubleValue":"NaN"}}])",  // double as a string
      R"("attributes":[{"key":"i","value":{"intValue":"1","stringValue":"a"}}])",  // two values
      R"("attributes":[{"key":"i","value":{"intValue":"-0"}}])",  // negative zero integer
      R"("status":{"code":"STATUS_CODE_ERROR"})",                 // status by name
  };
  for (const char* fields : cases) {
    EXPECT_TRUE(declines(span_prefix + fields + suffix)) << fields;
  }
  EXPECT_TRUE(declines(R"({"resourceLogs":[]})"));
  EXPECT_TRUE(declines(R"({"resourceSpans":[],"resourceMetrics":[]})"));
  EXPECT_TRUE(declines(R"({"resourceSpans":[],"extra":1})"));
  EXPECT_TRUE(declines(R"({"resourceSpans":[]})"
                       "x"));
  EXPECT_TRUE(declines(R"({"resourceSpans":[)"));
  EXPECT_TRUE(declines("[]"));
  EXPECT_TRUE(declines("{}"));
  EXPECT_TRUE(declines(""));
  EXPECT_TRUE(declines("{\"resourceSpans\":[{\"schemaUrl\":\"\xff\"}]}"));  // invalid UTF-8
  // Nesting beyond the decoder's depth goes the general way.
  std::string deep = R"({"stringValue":"x"})";
  for (int i = 0; i < 20; ++i) deep = R"({"arrayValue":{"values":[)" + deep + "]}}";
  EXPECT_TRUE(
      declines(span_prefix + R"("attributes":[{"key":"deep","value":)" + deep + "}]" + suffix));
}

TEST(ReportFastTraces, OneDecoderReadsLineAfterLine) {
  FastOtlpDecoder decoder;
  ExportTraceServiceRequest traces;
  ExportMetricsServiceRequest metrics;
  std::string first =
      R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a"},{"name":"b"}]}]}]})";
  ASSERT_EQ(decoder.decode(first, traces, metrics), DecodeResult::traces);
  EXPECT_EQ(traces.resource_spans(0).scope_spans(0).spans_size(), 2);
  std::string declined = R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"kind":"X"}]}]}]})";
  EXPECT_EQ(decoder.decode(declined, traces, metrics), DecodeResult::declined);
  std::string gauge = R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"g"}]}]}]})";
  ASSERT_EQ(decoder.decode(gauge, traces, metrics), DecodeResult::metrics);
  std::string second = R"({"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"c"}]}]}]})";
  ASSERT_EQ(decoder.decode(second, traces, metrics), DecodeResult::traces);  // cleared first
  ASSERT_EQ(traces.resource_spans_size(), 1);
  ASSERT_EQ(traces.resource_spans(0).scope_spans(0).spans_size(), 1);
  EXPECT_EQ(traces.resource_spans(0).scope_spans(0).spans(0).name(), "c");
  ASSERT_EQ(decoder.decode(gauge, traces, metrics), DecodeResult::metrics);
  EXPECT_EQ(metrics.resource_metrics_size(), 1);
}

TEST(ReportFastMetrics, AgreesWithTheGeneralDecoderOnLensCollectLines) {
  for (const bool cumulative : {true, false}) {
    for (const auto& request : testing::make_metrics({.ranks = 2, .iterations = 10}, cumulative)) {
      ASSERT_GT(request.resource_metrics(0).scope_metrics(0).metrics_size(), 2);
      expect_same_as_general<ExportMetricsServiceRequest>(otlp_json::encode(request));
    }
  }
}

// Every metrics form the fast decoder accepts: gauges and sums with int and double points,
// histograms with sum, min, max, bounds and counts as strings or numbers, snake_case names.
constexpr const char* kEveryMetricsForm = R"({"resource_metrics":[{"resource":{"attributes":[
 {"key":"dl.rank","value":{"intValue":"3"}}]},"schemaUrl":"s",
 "scope_metrics":[{"scope":{"name":"lens"},"schema_url":"t","metrics":[
  {"name":"g","description":"d","unit":"ms","metadata":[{"key":"m","value":{"boolValue":true}}],
   "gauge":{"dataPoints":[{"attributes":[{"key":"a","value":{"stringValue":"x"}}],
    "startTimeUnixNano":"1","timeUnixNano":2,"asDouble":2.5,"exemplars":[],"flags":1},
    {"time_unix_nano":"3","as_int":"-7"},{"asDouble":0},{"asInt":9}]}},
  {"name":"s","sum":{"data_points":[{"asInt":"5"}],"aggregationTemporality":2,"isMonotonic":true}},
  {"name":"s0","sum":{}},
  {"name":"h","histogram":{"aggregation_temporality":1,"dataPoints":[
   {"count":"7","sum":0,"bucketCounts":["1",2,"4"],"explicitBounds":[1,2.5],"min":-1,"max":9.5},
   {"count":0,"bucket_counts":[],"explicit_bounds":[]}]}}]}]}]})";

TEST(ReportFastMetrics, AgreesWithTheGeneralDecoderOnEveryAcceptedForm) {
  expect_forms_same_as_general<ExportMetricsServiceRequest>(kEveryMetricsForm,
                                                            R"({"resourceMetrics":[]})");
}

TEST(ReportFastMetrics, DeclinesWhatItDoesNotKnow) {
  const std::string prefix = R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m",)";
  const std::string suffix = "}]}]}]}";
  const char* cases[] = {
      R"("exponentialHistogram":{})",                                // not read fast
      R"("summary":{})",                                             // not read fast
      R"("gauge":{},"sum":{})",                                      // two members of the oneof
      R"("gauge":{"dataPoints":[{"asDouble":1,"asInt":"1"}]})",      // two values
      R"("gauge":{"dataPoints":[{"asDouble":"NaN"}]})",              // a double as a string
      R"("gauge":{"dataPoints":[{"exemplars":[{"asDouble":1}]}]})",  // an exemplar
      R"("gauge":{"dataPoints":[{"flags":-1}]})",                    // negative flags
      R"("gauge":{"aggregationTemporality":1})",                     // not a gauge field
      R"("sum":{"aggregationTemporality":"AGGREGATION_TEMPORALITY_DELTA"})",  // enum by name
      R"("sum":{"isMonotonic":1})",                                           // not a bool
      R"("histogram":{"dataPoints":[{"bucketCounts":[-1]}]})",                // negative count
      R"("histogram":{"dataPoints":[{"explicitBounds":["1"]}]})",             // bound as a string
      R"("histogram":{"dataPoints":[{"count":"1","count":"2"}]})",            // repeated key
      R"("histogram":{"isMonotonic":true})",  // not a histogram field
      R"("unknown":1)",                       // unknown field
  };
  for (const char* fields : cases) {
    EXPECT_TRUE(declines(prefix + fields + suffix)) << fields;
  }
}

}  // namespace
}  // namespace lens::report
