// Differential tests of the direct trace-request encoder (codec/src/otlp_json_traces.hpp): on
// hand-built edge cases and a few thousand seeded random requests its line must equal the generic
// path's byte for byte and decode back to the request; where it declines, encode falls back.
// Single-threaded.
#include "otlp_json_traces.hpp"

#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "lens/otlp_json.hpp"
#include "unit/codec/otlp_proto_builders.hpp"

namespace lens {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace trace = opentelemetry::proto::trace::v1;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

// Decodes `line` and compares with `original`, NaN equal to NaN (-0.0 reads back as 0, equal).
void expect_decodes_to(const std::string& line, const ExportTraceServiceRequest& original) {
  ExportTraceServiceRequest decoded;
  const Status status = otlp_json::decode(line, decoded);
  ASSERT_TRUE(status.ok()) << status.message() << "\n" << line;
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(original, decoded)) << differences << "\n" << line;
}

// The direct encoder takes `request` and writes exactly the generic path's line, which decodes
// back to it; encode (the dispatch) writes the same.
void expect_identical(const ExportTraceServiceRequest& request, bool round_trip = true) {
  std::string fast;
  ASSERT_TRUE(otlp_json::encode_trace_request_fast(request, fast)) << request.DebugString();
  const std::string generic = otlp_json::encode_generic(request);
  ASSERT_EQ(fast, generic) << request.DebugString();
  EXPECT_EQ(otlp_json::encode(request), generic);
  if (round_trip) expect_decodes_to(fast, request);
}

// What a call did: its line, or the type of what it threw.
struct Outcome {
  std::string line;
  std::string thrown;
  bool operator==(const Outcome&) const = default;
};

template <class Encode>
Outcome outcome_of(Encode encode) {
  try {
    return {encode(), ""};
  } catch (const std::exception& e) {
    return {"", typeid(e).name()};
  }
}

// The direct encoder declines `request`, leaving its output as it was, and encode behaves
// exactly as the generic path (same line, or the same exception type).
void expect_fallback(const ExportTraceServiceRequest& request) {
  const google::protobuf::LogSilencer quiet;  // protobuf's complaints about invalid UTF-8
  std::string out = "prefix";
  EXPECT_FALSE(otlp_json::encode_trace_request_fast(request, out));
  EXPECT_EQ(out, "prefix");
  const Outcome generic = outcome_of([&] { return otlp_json::encode_generic(request); });
  const Outcome dispatched = outcome_of([&] { return otlp_json::encode(request); });
  EXPECT_EQ(dispatched.line, generic.line);
  EXPECT_EQ(dispatched.thrown, generic.thrown);
}

using test_support::add_attribute;
using test_support::bytes_from;

// A request with one span; `span` and `resource_attributes` point into it.
struct OneSpan {
  ExportTraceServiceRequest request;
  trace::Span* span = nullptr;
  google::protobuf::RepeatedPtrField<common::KeyValue>* resource_attributes = nullptr;

  OneSpan() {
    trace::ResourceSpans* resource_spans = request.add_resource_spans();
    resource_attributes = resource_spans->mutable_resource()->mutable_attributes();
    span = resource_spans->add_scope_spans()->add_spans();
  }
  common::AnyValue* value(const std::string& key = "k") {
    return add_attribute(span->mutable_attributes(), key)->mutable_value();
  }
};

// Every span field, events and links with every field, an error status.
ExportTraceServiceRequest full_request() {
  ExportTraceServiceRequest request = test_support::train_step_request("k=v,a=b", 0xf1, -7);
  trace::ResourceSpans* resource_spans = request.mutable_resource_spans(0);
  resource_spans->mutable_resource()->set_dropped_attributes_count(2);
  trace::ScopeSpans* scope_spans = resource_spans->mutable_scope_spans(0);
  add_attribute(scope_spans->mutable_scope()->mutable_attributes(), "lib")
      ->mutable_value()
      ->set_bool_value(true);
  scope_spans->mutable_scope()->set_dropped_attributes_count(3);
  scope_spans->set_schema_url("https://opentelemetry.io/schemas/1.21.0");
  trace::Span* span = scope_spans->mutable_spans(0);
  span->mutable_events(0)->set_dropped_attributes_count(4);
  span->set_dropped_events_count(5);
  span->mutable_links(0)->set_trace_state("x=y");
  span->mutable_links(0)->set_dropped_attributes_count(6);
  span->set_dropped_links_count(7);
  return request;
}

TEST(OtlpJsonTraces, FullRequestIsIdentical) {
  expect_identical(full_request());
  // The line of otlp_json_test.cpp's kTraceLine shape, checked independently of the generic path.
  std::string line;
  ASSERT_TRUE(otlp_json::encode_trace_request_fast(full_request(), line));
  EXPECT_NE(line.find(R"("traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718")"
                      R"(,"traceState":"k=v,a=b","parentSpanId":"f1f2f3f4f5f6f7f8")"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("status":{"message":"nan loss","code":2},"flags":769})"),
            std::string::npos)
      << line;
}

TEST(OtlpJsonTraces, AppendsToTheOutput) {
  std::string out = "prefix:";
  ASSERT_TRUE(otlp_json::encode_trace_request_fast(full_request(), out));
  EXPECT_EQ(out, "prefix:" + otlp_json::encode_generic(full_request()));
}

TEST(OtlpJsonTraces, EmptyAndDefaultMessages) {
  expect_identical(ExportTraceServiceRequest());
  {
    ExportTraceServiceRequest request;
    request.add_resource_spans();
    request.add_resource_spans()->mutable_resource();
    trace::ResourceSpans* resource_spans = request.add_resource_spans();
    resource_spans->add_scope_spans();
    resource_spans->add_scope_spans()->mutable_scope();
    trace::ScopeSpans* scope_spans = resource_spans->add_scope_spans();
    scope_spans->add_spans();
    trace::Span* span = scope_spans->add_spans();
    span->mutable_status();
    span->add_events();
    span->add_links();
    span->add_attributes();                   // no key, no value
    span->add_attributes()->mutable_value();  // a value with nothing set
    span->add_attributes()->set_key("only");  // a key without a value
    expect_identical(request);
  }
  {
    // Fields explicitly set to their defaults are still omitted.
    OneSpan one;
    one.span->set_name("");
    one.span->set_trace_id("");
    one.span->set_kind(trace::Span::SPAN_KIND_UNSPECIFIED);
    one.span->set_start_time_unix_nano(0);
    one.span->set_flags(0);
    one.span->mutable_status()->set_code(trace::Status::STATUS_CODE_UNSET);
    expect_identical(one.request);
  }
  for (const bool with_message : {false, true}) {
    for (const int code : {0, 1, 2}) {
      OneSpan one;
      if (with_message) one.span->mutable_status()->set_message("boom");
      one.span->mutable_status()->set_code(static_cast<trace::Status::StatusCode>(code));
      expect_identical(one.request);
    }
  }
}

TEST(OtlpJsonTraces, EveryAnyValueKind) {
  OneSpan one;
  one.value("s")->set_string_value("text");
  one.value("empty_s")->set_string_value("");
  one.value("t")->set_bool_value(true);
  one.value("f")->set_bool_value(false);
  one.value("i")->set_int_value(-12345);
  one.value("zero_i")->set_int_value(0);
  one.value("min_i")->set_int_value(std::numeric_limits<std::int64_t>::min());
  one.value("max_i")->set_int_value(std::numeric_limits<std::int64_t>::max());
  one.value("d")->set_double_value(0.5);
  one.value("zero_d")->set_double_value(0.0);
  one.value("empty_array")->mutable_array_value();
  one.value("empty_kvlist")->mutable_kvlist_value();
  one.value("unset");
  for (int length = 0; length <= 7; ++length) {
    one.value("bytes" + std::to_string(length))->set_bytes_value(bytes_from(0xfb, length));
  }
  std::string all_bytes;
  for (int c = 0; c < 256; ++c) all_bytes += static_cast<char>(c);
  one.value("all_bytes")->set_bytes_value(all_bytes);
  common::ArrayValue* array = one.value("array")->mutable_array_value();
  array->add_values()->set_int_value(1);
  array->add_values()->set_string_value("two");
  array->add_values();
  array->add_values()->mutable_array_value()->add_values()->set_double_value(3.5);
  common::KeyValueList* nested = array->add_values()->mutable_kvlist_value();
  add_attribute(nested->mutable_values(), "inner")->mutable_value()->set_bytes_value("\x01\x02");
  add_attribute(nested->mutable_values(), "");
  common::KeyValueList* kvlist = one.value("kvlist")->mutable_kvlist_value();
  add_attribute(kvlist->mutable_values(), "a")->mutable_value()->set_bool_value(false);
  add_attribute(kvlist->mutable_values(), "b")
      ->mutable_value()
      ->mutable_kvlist_value()
      ->add_values()
      ->mutable_value()
      ->mutable_array_value();
  // The same values on the resource, the scope, an event and a link.
  *one.resource_attributes = one.span->attributes();
  *one.request.mutable_resource_spans(0)
       ->mutable_scope_spans(0)
       ->mutable_scope()
       ->mutable_attributes() = one.span->attributes();
  *one.span->add_events()->mutable_attributes() = one.span->attributes();
  *one.span->add_links()->mutable_attributes() = one.span->attributes();
  expect_identical(one.request);
}

TEST(OtlpJsonTraces, SpanKindsFlagsCountsAndTimes) {
  for (const int kind : {0, 1, 2, 3, 4, 5, 6, 99, -1}) {
    OneSpan one;
    one.span->set_kind(static_cast<trace::Span::SpanKind>(kind));
    expect_identical(one.request);
  }
  OneSpan one;
  one.span->set_start_time_unix_nano(std::numeric_limits<std::uint64_t>::max());
  one.span->set_end_time_unix_nano(1);
  one.span->set_flags(std::numeric_limits<std::uint32_t>::max());
  one.span->set_dropped_attributes_count(std::numeric_limits<std::uint32_t>::max());
  one.span->set_dropped_events_count(1);
  one.span->set_dropped_links_count(4000000000U);
  trace::Span::Event* event = one.span->add_events();
  event->set_time_unix_nano(std::numeric_limits<std::uint64_t>::max() - 1);
  trace::Span::Link* link = one.span->add_links();
  link->set_flags(1);
  one.span->mutable_status()->set_code(static_cast<trace::Status::StatusCode>(-5));
  expect_identical(one.request);
}

TEST(OtlpJsonTraces, IdsOfAnyLength) {
  for (const int length : {1, 2, 3, 8, 15, 16, 17, 32}) {
    OneSpan one;
    one.span->set_trace_id(bytes_from(0xf0, length));
    one.span->set_span_id(std::string(static_cast<std::size_t>(length), '\0'));
    one.span->set_parent_span_id(bytes_from(0x7e, length));
    trace::Span::Link* link = one.span->add_links();
    link->set_trace_id(bytes_from(0x00, length));
    link->set_span_id(bytes_from(0x80, length));
    // decode takes only ids of 16 and 8 bytes.
    expect_identical(one.request, /*round_trip=*/false);
  }
}

TEST(OtlpJsonTraces, ManyResourcesAndScopes) {
  ExportTraceServiceRequest request;
  for (int r = 0; r < 3; ++r) {
    trace::ResourceSpans* resource_spans = request.add_resource_spans();
    add_attribute(resource_spans->mutable_resource()->mutable_attributes(), "dl.rank")
        ->mutable_value()
        ->set_int_value(r);
    if (r != 1) resource_spans->set_schema_url("https://example.com/" + std::to_string(r));
    for (int s = 0; s < 3; ++s) {
      trace::ScopeSpans* scope_spans = resource_spans->add_scope_spans();
      if (s != 0) scope_spans->mutable_scope()->set_name("scope" + std::to_string(s));
      if (s == 2) scope_spans->set_schema_url("https://example.com/scope");
      for (int i = 0; i < s; ++i) {
        scope_spans->add_spans()->set_name("span" + std::to_string(i));
      }
    }
  }
  expect_identical(request);
}

TEST(OtlpJsonTraces, StringEscapingAndUnicode) {
  std::vector<std::string> strings = {
      "plain",
      "a/b</script>",
      "quote\" backslash\\ both\\\"",
      "\b\f\n\r\t",
      "\x7f",
      "<>&'=+",
      "h\xc3\xa9llo \xe2\x82\xac",             // 2- and 3-byte sequences
      "\xe2\x80\xa8\xe2\x80\xa9",              // U+2028, U+2029
      "\xc2\xad\xc2\x80\xc2\x9f",              // soft hyphen, C1 controls
      "\xf0\x9f\x98\x80",                      // U+1F600
      "\xf4\x8f\xbf\xbf",                      // U+10FFFF
      "\xef\xbb\xbf\xef\xbf\xbf\xef\xbf\xbe",  // BOM, U+FFFF, U+FFFE
      "\xed\x9f\xbf\xee\x80\x80",              // U+D7FF, U+E000 (around the surrogates)
      "\xe0\xa0\x80\xf0\x90\x80\x80",          // the smallest 3- and 4-byte forms
      std::string("nul\0inside", 10),
      std::string(1, '\0'),
  };
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls += static_cast<char>(c);
  strings.push_back(controls);
  std::string all_ascii;
  for (int c = 1; c < 0x80; ++c) all_ascii += static_cast<char>(c);
  strings.push_back(all_ascii);
  for (const std::string& text : strings) {
    OneSpan one;
    one.span->set_name(text);
    one.span->set_trace_state(text);
    one.value(text)->set_string_value(text);
    one.span->mutable_status()->set_message(text);
    one.span->add_events()->set_name(text);
    one.span->add_links()->set_trace_state(text);
    one.request.mutable_resource_spans(0)->set_schema_url(text);
    common::InstrumentationScope* scope =
        one.request.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_scope();
    scope->set_name(text);
    scope->set_version(text);
    one.request.mutable_resource_spans(0)->mutable_scope_spans(0)->set_schema_url(text);
    expect_identical(one.request);
  }
}

TEST(OtlpJsonTraces, SpecialDoubles) {
  const double max = std::numeric_limits<double>::max();
  const double min = std::numeric_limits<double>::min();
  const double denorm = std::numeric_limits<double>::denorm_min();
  const double two53 = 9007199254740992.0;
  std::vector<double> values = {0.0,
                                -0.0,
                                0.5,
                                -0.5,
                                1.0,
                                -1.0,
                                0.1,
                                0.2 + 0.1,
                                1.0 / 3,
                                2.0 / 3,
                                100.0,
                                123.456,
                                1e-4,
                                1e-5,
                                2.5e-7,
                                1e14,
                                99999999999999.0,
                                999999999999999.0,
                                999999999999999.9,
                                1e15,
                                -1e15,
                                1e15 + 1,
                                1234567890123456.0,
                                4503599627370495.5,
                                two53,
                                two53 + 2,
                                -two53 - 2,
                                12345678901234567.0,
                                99999999999999984.0,
                                1e16,
                                1e17,
                                -1e17,
                                123456789012345678.0,
                                1e20,
                                1e21,
                                1e22,
                                1e300,
                                -1e-300,
                                max,
                                -max,
                                min,
                                denorm,
                                -denorm,
                                std::numeric_limits<double>::quiet_NaN(),
                                -std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
  // Integers around each power of ten, and a power of ten times each digit.
  for (int exponent = 0; exponent <= 22; ++exponent) {
    const double power = std::pow(10.0, exponent);
    for (const double value : {power, power - 1, power + 1, 7 * power, -3 * power}) {
      values.push_back(value);
      values.push_back(std::nextafter(value, 0.0));
      values.push_back(std::nextafter(value, max));
    }
    values.push_back(1.0 / power);
    values.push_back(-4.5 / power);
  }
  for (const double value : values) {
    OneSpan one;
    one.value("d")->set_double_value(value);
    expect_identical(one.request);
  }
}

// -0.0 keeps its sign through both encoders and back: in a span attribute (the direct
// encoder), in a metric point and a string that looks like it (the generic one).
TEST(OtlpJsonTraces, NegativeZeroKeepsItsSign) {
  OneSpan one;
  one.value("d")->set_double_value(-0.0);
  one.value("z")->set_double_value(0.0);
  one.value("s")->set_string_value("x\":-0,");
  const std::string line = otlp_json::encode(one.request);
  EXPECT_NE(line.find(R"({"key":"d","value":{"doubleValue":-0.0}})"), std::string::npos) << line;
  EXPECT_NE(line.find(R"({"key":"z","value":{"doubleValue":0}})"), std::string::npos) << line;
  EXPECT_NE(line.find(R"({"key":"s","value":{"stringValue":"x\":-0,"}})"), std::string::npos)
      << line;
  EXPECT_EQ(line, otlp_json::encode_generic(one.request));
  ExportTraceServiceRequest decoded;
  ASSERT_TRUE(otlp_json::decode(line, decoded).ok());
  const double d =
      decoded.resource_spans(0).scope_spans(0).spans(0).attributes(0).value().double_value();
  EXPECT_EQ(d, 0.0);
  EXPECT_TRUE(std::signbit(d));

  opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest metrics;
  auto* point = metrics.add_resource_metrics()
                    ->add_scope_metrics()
                    ->add_metrics()
                    ->mutable_gauge()
                    ->add_data_points();
  point->set_as_double(-0.0);
  const std::string metric_line = otlp_json::encode(metrics);
  EXPECT_NE(metric_line.find(R"("asDouble":-0.0)"), std::string::npos) << metric_line;
}

TEST(OtlpJsonTraces, RandomBitPatternDoubles) {
  std::mt19937_64 random(20240607);
  OneSpan one;
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t bits = random();
    double value = 0;
    static_assert(sizeof(value) == sizeof(bits));
    std::memcpy(&value, &bits, sizeof(value));
    one.value()->set_double_value(value);
    // Integers of every magnitude, where the generic path writes integers.
    one.value()->set_double_value(std::trunc(
        std::ldexp(static_cast<double>(random() >> 11), static_cast<int>(random() % 70) - 53)));
  }
  expect_identical(one.request);
}

TEST(OtlpJsonTraces, InvalidUtf8FallsBackToTheGenericPath) {
  const std::vector<std::string> invalid = {
      "bad\xff",
      "bad\xc3",
      "\xc3(",
      "\xc0\xaf",
      "\xc1\xbf",
      "\xe0\x80\xaf",
      "\xed\xa0\x80",
      "\xed\xbf\xbf",
      "\xf0\x80\x80\xaf",
      "\xf4\x90\x80\x80",
      "\xf5\x80\x80\x80",
      "\x80",
      "\xbf",
      "\xfe",
      "\xe2\x82",
      "\xf0\x9f\x98",
      "ok\xe2\x28\xa1",
  };
  for (const std::string& text : invalid) {
    SCOPED_TRACE(::testing::PrintToString(text));
    const std::vector<void (*)(OneSpan&, const std::string&)> places = {
        [](OneSpan& one, const std::string& s) { one.span->set_name(s); },
        [](OneSpan& one, const std::string& s) { one.span->set_trace_state(s); },
        [](OneSpan& one, const std::string& s) { one.value(s)->set_int_value(1); },
        [](OneSpan& one, const std::string& s) { one.value()->set_string_value(s); },
        [](OneSpan& one, const std::string& s) { one.span->mutable_status()->set_message(s); },
        [](OneSpan& one, const std::string& s) { one.span->add_events()->set_name(s); },
        [](OneSpan& one, const std::string& s) { one.span->add_links()->set_trace_state(s); },
        [](OneSpan& one, const std::string& s) {
          one.request.mutable_resource_spans(0)->set_schema_url(s);
        },
        [](OneSpan& one, const std::string& s) {
          one.request.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_scope()->set_name(
              s);
        },
        [](OneSpan& one, const std::string& s) {
          add_attribute(one.resource_attributes, "r")
              ->mutable_value()
              ->mutable_kvlist_value()
              ->add_values()
              ->set_key(s);
        },
    };
    for (const auto& place : places) {
      OneSpan one;
      one.span->set_name("before");
      place(one, text);
      expect_fallback(one.request);
    }
  }
}

TEST(OtlpJsonTraces, DeepNestingIsIdenticalOrFallsBack) {
  // protobuf's printer fails past 64 levels of messages; the direct encoder leaves values nested
  // that deep to the generic path (which throws, as before).
  for (const bool kvlist : {false, true}) {
    for (const bool on_event : {false, true}) {
      for (int levels = 1; levels <= 40; ++levels) {
        SCOPED_TRACE(testing::Message()
                     << "kvlist " << kvlist << " event " << on_event << " levels " << levels);
        OneSpan one;
        common::AnyValue* value =
            on_event ? add_attribute(one.span->add_events()->mutable_attributes(), "deep")
                           ->mutable_value()
                     : add_attribute(one.resource_attributes, "deep")->mutable_value();
        for (int i = 0; i < levels; ++i) {
          value = kvlist ? add_attribute(value->mutable_kvlist_value()->mutable_values(), "k")
                               ->mutable_value()
                         : value->mutable_array_value()->add_values();
        }
        value->set_int_value(levels);
        std::string fast;
        if (otlp_json::encode_trace_request_fast(one.request, fast)) {
          expect_identical(one.request);
        } else {
          EXPECT_GT(levels, 10);
          expect_fallback(one.request);
        }
      }
    }
  }
}

TEST(OtlpJsonTraces, UnknownFieldsAreSkippedLikeTheGenericPath) {
  // Unknown fields (say, from a newer client) in the request, a span and an attribute value.
  const std::string unknown_varint("\xa0\x06\x05", 3);  // field 100, varint 5
  const std::string unknown_bytes(
      "\xaa\x06\x03"
      "abc",
      6);  // field 101, "abc"
  OneSpan one;
  one.span->set_name("s");
  one.value()->set_int_value(3);
  trace::Span span_with_unknowns;
  ASSERT_TRUE(span_with_unknowns.ParseFromString(one.span->SerializeAsString() + unknown_varint));
  *one.span = span_with_unknowns;
  common::AnyValue value_with_unknowns;
  ASSERT_TRUE(value_with_unknowns.ParseFromString(
      one.span->attributes(0).value().SerializeAsString() + unknown_bytes));
  *one.span->mutable_attributes(0)->mutable_value() = value_with_unknowns;
  ExportTraceServiceRequest request;
  ASSERT_TRUE(request.ParseFromString(one.request.SerializeAsString() + unknown_bytes));
  expect_identical(request, /*round_trip=*/false);
}

// Seeded random requests: every field present or not, values from the edge cases above.
class RandomRequests {
 public:
  explicit RandomRequests(std::uint64_t seed) : random_(seed) {}

  // Whether the last request's ids all have their OTLP length (or none), as decode requires.
  bool ids_decodable() const { return ids_decodable_; }

  ExportTraceServiceRequest request() {
    ids_decodable_ = true;
    ExportTraceServiceRequest request;
    for (int r = below(3); r > 0; --r) {
      trace::ResourceSpans* resource_spans = request.add_resource_spans();
      if (chance(4)) {
        auto* resource = resource_spans->mutable_resource();
        attributes(resource->mutable_attributes(), 0);
        if (chance(4)) resource->set_dropped_attributes_count(u32());
      }
      if (chance(3)) resource_spans->set_schema_url(text());
      for (int s = below(3); s > 0; --s) {
        trace::ScopeSpans* scope_spans = resource_spans->add_scope_spans();
        if (chance(2)) {
          auto* scope = scope_spans->mutable_scope();
          if (chance(2)) scope->set_name(text());
          if (chance(3)) scope->set_version(text());
          attributes(scope->mutable_attributes(), 0);
          if (chance(4)) scope->set_dropped_attributes_count(u32());
        }
        if (chance(3)) scope_spans->set_schema_url(text());
        for (int n = below(5); n > 0; --n) span(scope_spans->add_spans());
      }
    }
    return request;
  }

 private:
  int below(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n + 1)); }
  bool chance(int one_in) { return random_() % static_cast<std::uint64_t>(one_in) == 0; }
  std::uint32_t u32() { return chance(2) ? static_cast<std::uint32_t>(random_()) : 1 + below(9); }
  std::uint64_t u64() { return chance(2) ? random_() : 1700000000000000000 + below(1000000); }

  std::string id(int usual_length) {
    std::string out;
    const int length = chance(10) ? below(20) : usual_length;
    if (length != 0 && length != usual_length) ids_decodable_ = false;
    for (int i = 0; i < length; ++i) out += static_cast<char>(random_());
    return out;
  }

  void utf8(std::string& out, std::uint32_t code_point) {
    if (code_point < 0x80) {
      out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
      out += static_cast<char>(0xc0 | code_point >> 6);
      out += static_cast<char>(0x80 | (code_point & 0x3f));
    } else if (code_point < 0x10000) {
      out += static_cast<char>(0xe0 | code_point >> 12);
      out += static_cast<char>(0x80 | (code_point >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (code_point & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | code_point >> 18);
      out += static_cast<char>(0x80 | (code_point >> 12 & 0x3f));
      out += static_cast<char>(0x80 | (code_point >> 6 & 0x3f));
      out += static_cast<char>(0x80 | (code_point & 0x3f));
    }
  }

  // Valid UTF-8: mostly ASCII, with control characters, quotes and code points of every length.
  std::string text() {
    std::string out;
    if (chance(8)) return out;
    for (int n = below(24); n > 0; --n) {
      switch (below(9)) {
        case 0:
          out += static_cast<char>(below(0x1f));
          break;
        case 1:
          out += "\"\\/"[below(2)];
          break;
        case 2:
          utf8(out, 0x80 + static_cast<std::uint32_t>(random_() % (0x800 - 0x80)));
          break;
        case 3: {
          std::uint32_t code_point =
              0x800 + static_cast<std::uint32_t>(random_() % (0x10000 - 0x800));
          if (code_point >= 0xd800 && code_point <= 0xdfff) code_point += 0x800;  // no surrogates
          utf8(out, code_point);
          break;
        }
        case 4:
          utf8(out, 0x10000 + static_cast<std::uint32_t>(random_() % (0x110000 - 0x10000)));
          break;
        default:
          out += static_cast<char>(0x20 + below(0x5f));  // printable ASCII and DEL
          break;
      }
    }
    return out;
  }

  double number() {
    static const double kSpecial[] = {0.0,
                                      -0.0,
                                      0.5,
                                      1e15,
                                      1e17,
                                      1e20,
                                      9007199254740993.0,
                                      std::numeric_limits<double>::quiet_NaN(),
                                      std::numeric_limits<double>::infinity(),
                                      -std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::denorm_min(),
                                      std::numeric_limits<double>::max()};
    switch (below(3)) {
      case 0:
        return kSpecial[below(static_cast<int>(std::size(kSpecial)) - 1)];
      case 1: {
        const std::uint64_t bits = random_();
        double value = 0;
        std::memcpy(&value, &bits, sizeof(value));
        return value;
      }
      default:
        return static_cast<double>(static_cast<std::int64_t>(random_()) >> below(63)) /
               (chance(2) ? 1.0 : 1000.0);
    }
  }

  void any_value(common::AnyValue* value, int depth) {
    switch (below(depth < 3 ? 8 : 5)) {
      case 0:
        value->set_string_value(text());
        break;
      case 1:
        value->set_bool_value(chance(2));
        break;
      case 2:
        value->set_int_value(static_cast<std::int64_t>(random_()) >> below(63));
        break;
      case 3:
        value->set_double_value(number());
        break;
      case 4: {
        std::string bytes;
        for (int n = below(6); n > 0; --n) bytes += static_cast<char>(random_());
        value->set_bytes_value(bytes);
        break;
      }
      case 5: {
        common::ArrayValue* array = value->mutable_array_value();
        for (int n = below(3); n > 0; --n) any_value(array->add_values(), depth + 1);
        break;
      }
      case 6:
        attributes(value->mutable_kvlist_value()->mutable_values(), depth + 1);
        break;
      default:
        break;  // nothing set
    }
  }

  void attributes(google::protobuf::RepeatedPtrField<common::KeyValue>* to, int depth) {
    for (int n = below(4); n > 0; --n) {
      common::KeyValue* attribute = to->Add();
      if (!chance(10)) attribute->set_key(text());
      if (!chance(10)) any_value(attribute->mutable_value(), depth);
    }
  }

  void span(trace::Span* span) {
    if (chance(8) == false) span->set_trace_id(id(16));
    if (chance(8) == false) span->set_span_id(id(8));
    if (chance(4)) span->set_trace_state(text());
    if (chance(2)) span->set_parent_span_id(id(8));
    if (chance(8) == false) span->set_name(text());
    if (chance(2)) span->set_kind(static_cast<trace::Span::SpanKind>(below(6)));
    if (chance(8) == false) span->set_start_time_unix_nano(u64());
    if (chance(8) == false) span->set_end_time_unix_nano(u64());
    attributes(span->mutable_attributes(), 0);
    if (chance(4)) span->set_dropped_attributes_count(u32());
    for (int n = chance(3) ? below(3) : 0; n > 0; --n) {
      trace::Span::Event* event = span->add_events();
      if (chance(4) == false) event->set_time_unix_nano(u64());
      if (chance(4) == false) event->set_name(text());
      attributes(event->mutable_attributes(), 0);
      if (chance(4)) event->set_dropped_attributes_count(u32());
    }
    if (chance(4)) span->set_dropped_events_count(u32());
    for (int n = chance(3) ? below(2) : 0; n > 0; --n) {
      trace::Span::Link* link = span->add_links();
      if (chance(4) == false) link->set_trace_id(id(16));
      if (chance(4) == false) link->set_span_id(id(8));
      if (chance(4)) link->set_trace_state(text());
      attributes(link->mutable_attributes(), 0);
      if (chance(4)) link->set_dropped_attributes_count(u32());
      if (chance(2)) link->set_flags(u32());
    }
    if (chance(4)) span->set_dropped_links_count(u32());
    if (chance(2)) {
      trace::Status* status = span->mutable_status();
      if (chance(2)) status->set_message(text());
      if (chance(2)) status->set_code(static_cast<trace::Status::StatusCode>(below(2)));
    }
    if (chance(2)) span->set_flags(u32());
  }

  std::mt19937_64 random_;
  bool ids_decodable_ = true;
};

TEST(OtlpJsonTraces, RandomRequestsAreIdentical) {
  RandomRequests random(0x1e25);
  for (int i = 0; i < 3000; ++i) {
    SCOPED_TRACE(i);
    const ExportTraceServiceRequest request = random.request();
    expect_identical(request, random.ids_decodable());
    if (HasFatalFailure() || HasNonfatalFailure()) break;  // one report is enough
  }
}

}  // namespace
}  // namespace lens
