// OtlpSpanRecordable + OtlpSpanBatch against opentelemetry-cpp's own OtlpRecordable +
// PopulateRequest: the same calls must give the same OTLP request, field for field and byte for
// byte.
#include "export/otlp_span_batch.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <opentelemetry/common/key_value_iterable_view.h>
#include <opentelemetry/exporters/otlp/otlp_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "export/unique_attribute_keys.hpp"

namespace {

namespace otel = opentelemetry;
namespace otlp = opentelemetry::exporter::otlp;
namespace sdktrace = opentelemetry::sdk::trace;
using lens::exporters::OtlpSpanBatch;
using lens::exporters::OtlpSpanRecordable;
using otel::proto::collector::trace::v1::ExportTraceServiceRequest;
using RecordablePtr = std::unique_ptr<sdktrace::Recordable>;
using Script = std::function<void(sdktrace::Recordable&)>;

otel::trace::SpanContext context(std::uint8_t seed, const std::string& trace_state = "") {
  std::array<std::uint8_t, 16> trace{};
  std::array<std::uint8_t, 8> span{};
  for (std::size_t i = 0; i < trace.size(); ++i) trace[i] = static_cast<std::uint8_t>(seed + i);
  for (std::size_t i = 0; i < span.size(); ++i) span[i] = static_cast<std::uint8_t>(seed * 3 + i);
  return otel::trace::SpanContext(
      otel::trace::TraceId(otel::nostd::span<const std::uint8_t, 16>(trace.data(), 16)),
      otel::trace::SpanId(otel::nostd::span<const std::uint8_t, 8>(span.data(), 8)),
      otel::trace::TraceFlags(1), false,
      trace_state.empty() ? otel::trace::TraceState::GetDefault()
                          : otel::trace::TraceState::FromHeader(trace_state));
}

otel::trace::SpanId span_id(std::uint8_t seed) {
  std::array<std::uint8_t, 8> id{};
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return otel::trace::SpanId(otel::nostd::span<const std::uint8_t, 8>(id.data(), 8));
}

// Every kind of attribute value opentelemetry-cpp's API has.
void set_every_attribute_type(sdktrace::Recordable& r) {
  static const bool bools[] = {true, false, true};
  static const std::int32_t ints[] = {-1, 0, 2147483647};
  static const std::int64_t longs[] = {-9000000000, 7};
  static const std::uint32_t uints[] = {4000000000u, 1};
  static const std::uint64_t ulongs[] = {18000000000000000000ull, 3};
  static const double doubles[] = {0.5, -1e300};
  static const otel::nostd::string_view strings[] = {"a", "a string longer than fifteen bytes"};
  static const std::uint8_t bytes[] = {0, 127, 255};
  r.SetAttribute("bool", true);
  r.SetAttribute("int32", std::int32_t{-42});
  r.SetAttribute("int64", std::int64_t{-5000000000});
  r.SetAttribute("uint32", std::uint32_t{4000000000u});
  r.SetAttribute("uint64", std::uint64_t{18000000000000000000ull});
  r.SetAttribute("double", 3.25);
  r.SetAttribute("c.string", "from a C string");
  r.SetAttribute("short", otel::nostd::string_view("tiny"));
  r.SetAttribute(
      "a key longer than fifteen bytes",
      otel::nostd::string_view("and a value longer than fifteen bytes, with UTF-8: é 漢"));
  r.SetAttribute("empty", otel::nostd::string_view(""));
  r.SetAttribute("bools", otel::nostd::span<const bool>(bools));
  r.SetAttribute("ints", otel::nostd::span<const std::int32_t>(ints));
  r.SetAttribute("longs", otel::nostd::span<const std::int64_t>(longs));
  r.SetAttribute("uints", otel::nostd::span<const std::uint32_t>(uints));
  r.SetAttribute("ulongs", otel::nostd::span<const std::uint64_t>(ulongs));
  r.SetAttribute("doubles", otel::nostd::span<const double>(doubles));
  r.SetAttribute("strings", otel::nostd::span<const otel::nostd::string_view>(strings));
  r.SetAttribute("bytes", otel::nostd::span<const std::uint8_t>(bytes));
  r.SetAttribute("short", otel::nostd::string_view("set twice"));
}

struct Fixture {
  otel::sdk::resource::Resource resource = otel::sdk::resource::Resource::Create(
      {{"service.name", "trainer"}, {"nemo.rank", std::int64_t{3}}},
      "https://opentelemetry.io/schemas/1.24.0");
  otel::sdk::resource::Resource other_resource =
      otel::sdk::resource::Resource::Create({{"service.name", "other"}});
  std::unique_ptr<otel::sdk::instrumentationscope::InstrumentationScope> lens_scope =
      otel::sdk::instrumentationscope::InstrumentationScope::Create("nemo.lens", "1.2.3",
                                                                    "https://scope/schema");
  std::unique_ptr<otel::sdk::instrumentationscope::InstrumentationScope> third_party =
      otel::sdk::instrumentationscope::InstrumentationScope::Create("third.party");
};

// The same calls on opentelemetry-cpp's recordable and on ours, then both requests.
struct Both {
  ExportTraceServiceRequest reference;
  ExportTraceServiceRequest ours;
};

Both build_both(const std::vector<Script>& scripts, OtlpSpanBatch& batch) {
  std::vector<RecordablePtr> theirs;
  std::vector<RecordablePtr> mine;
  for (const Script& script : scripts) {
    theirs.push_back(std::make_unique<otlp::OtlpRecordable>());
    mine.push_back(std::make_unique<OtlpSpanRecordable>());
    script(*theirs.back());
    script(*mine.back());
  }
  Both both;
  otlp::OtlpRecordableUtils::PopulateRequest(
      otel::nostd::span<RecordablePtr>(theirs.data(), theirs.size()), &both.reference);
  // What lens adds to opentelemetry-cpp's request (docs/exporters.md): unique attribute keys,
  // the last value winning, and links with the linked context's sampled flag (every linked
  // context in these scripts is sampled; opentelemetry-cpp 1.19 leaves link flags at 0).
  lens::exporters::keep_last_value_per_key(&both.reference);
  for (auto& resource_spans : *both.reference.mutable_resource_spans()) {
    for (auto& scope_spans : *resource_spans.mutable_scope_spans()) {
      for (auto& span : *scope_spans.mutable_spans()) {
        for (auto& link : *span.mutable_links()) link.set_flags(1);
      }
    }
  }
  both.ours = batch.build(otel::nostd::span<RecordablePtr>(mine.data(), mine.size()));
  return both;
}

void expect_same(const Both& both) {
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differ.Compare(both.reference, both.ours)) << diff;
  EXPECT_EQ(both.reference.SerializeAsString(), both.ours.SerializeAsString());
}

Script full_span(const Fixture& f, std::uint8_t seed, otel::trace::SpanId parent,
                 otel::trace::SpanKind kind) {
  return [&f, seed, parent, kind](sdktrace::Recordable& r) {
    r.SetIdentity(context(seed), parent);
    r.SetTraceFlags(otel::trace::TraceFlags(1));
    r.SetResource(f.resource);
    r.SetInstrumentationScope(*f.lens_scope);
    r.SetName("megatron.train_step");
    r.SetSpanKind(kind);
    r.SetStartTime(
        otel::common::SystemTimestamp(std::chrono::nanoseconds(1'700'000'000'123'456'789)));
    set_every_attribute_type(r);
    r.SetDuration(std::chrono::nanoseconds(2'500'000 + seed));
  };
}

TEST(OtlpSpanBatch, AChildSpanWithEveryAttributeTypeEncodesLikeOpentelemetryCpp) {
  Fixture f;
  OtlpSpanBatch batch;
  const Both both =
      build_both({full_span(f, 1, span_id(9), otel::trace::SpanKind::kInternal)}, batch);
  ASSERT_EQ(both.ours.resource_spans_size(), 1);
  ASSERT_EQ(both.ours.resource_spans(0).scope_spans_size(), 1);
  const auto& span = both.ours.resource_spans(0).scope_spans(0).spans(0);
  EXPECT_EQ(span.name(), "megatron.train_step");
  // 19 set, "short" twice: once, with its last value, in its first place.
  ASSERT_EQ(span.attributes_size(), 18);
  EXPECT_EQ(span.attributes(7).key(), "short");
  EXPECT_EQ(span.attributes(7).value().string_value(), "set twice");
  EXPECT_EQ(span.parent_span_id().size(), 8u);
  EXPECT_EQ(span.end_time_unix_nano(), 1'700'000'000'123'456'789u + 2'500'001u);
  expect_same(both);
}

TEST(OtlpSpanBatch, RootSpansOfEveryKindWithTraceStateEncodeLikeOpentelemetryCpp) {
  Fixture f;
  OtlpSpanBatch batch;
  std::vector<Script> scripts;
  const otel::trace::SpanKind kinds[] = {
      otel::trace::SpanKind::kInternal, otel::trace::SpanKind::kServer,
      otel::trace::SpanKind::kClient, otel::trace::SpanKind::kProducer,
      otel::trace::SpanKind::kConsumer};
  std::uint8_t seed = 10;
  for (const otel::trace::SpanKind kind : kinds) {
    scripts.push_back([&f, kind, s = seed++](sdktrace::Recordable& r) {
      r.SetIdentity(context(s, "vendor=abc,other=1"), otel::trace::SpanId());
      r.SetTraceFlags(otel::trace::TraceFlags(0));
      r.SetResource(f.resource);
      r.SetInstrumentationScope(*f.lens_scope);
      r.SetName("root");
      r.SetSpanKind(kind);
      r.SetStartTime(otel::common::SystemTimestamp(std::chrono::nanoseconds(5)));
      r.SetDuration(std::chrono::nanoseconds(0));
    });
  }
  const Both both = build_both(scripts, batch);
  ASSERT_EQ(both.ours.resource_spans(0).scope_spans(0).spans_size(), 5);
  EXPECT_EQ(both.ours.resource_spans(0).scope_spans(0).spans(0).trace_state(),
            "vendor=abc,other=1");
  expect_same(both);
}

TEST(OtlpSpanBatch, EventsLinksAndStatusEncodeLikeOpentelemetryCpp) {
  Fixture f;
  OtlpSpanBatch batch;
  auto with = [&f](otel::trace::StatusCode code, std::uint8_t seed) -> Script {
    return [&f, code, seed](sdktrace::Recordable& r) {
      full_span(f, seed, span_id(seed), otel::trace::SpanKind::kClient)(r);
      const std::map<std::string, std::string> attributes = {{"exception.type", "OOM"}, {"k", "v"}};
      r.AddEvent(
          "exception", otel::common::SystemTimestamp(std::chrono::nanoseconds(77)),
          otel::common::KeyValueIterableView<std::map<std::string, std::string>>(attributes));
      r.AddEvent("plain", otel::common::SystemTimestamp(std::chrono::nanoseconds(78)),
                 otel::common::KeyValueIterableView<std::map<std::string, int>>({}));
      r.AddLink(context(99, "link=state"),
                otel::common::KeyValueIterableView<std::map<std::string, std::string>>(attributes));
      r.SetStatus(code, "what went wrong");
    };
  };
  const Both both =
      build_both({with(otel::trace::StatusCode::kError, 20), with(otel::trace::StatusCode::kOk, 21),
                  with(otel::trace::StatusCode::kUnset, 22)},
                 batch);
  const auto& spans = both.ours.resource_spans(0).scope_spans(0).spans();
  ASSERT_EQ(spans.size(), 3);
  EXPECT_EQ(spans[0].events_size(), 2);
  EXPECT_EQ(spans[0].links_size(), 1);
  EXPECT_EQ(spans[0].status().code(), otel::proto::trace::v1::Status_StatusCode_STATUS_CODE_ERROR);
  EXPECT_EQ(spans[0].status().message(), "what went wrong");
  expect_same(both);
}

TEST(OtlpSpanBatch, SpansAreGroupedByResourceAndScopeInOrderOfFirstAppearance) {
  Fixture f;
  OtlpSpanBatch batch;
  auto span = [&f](std::uint8_t seed, const otel::sdk::resource::Resource& resource,
                   const otel::sdk::instrumentationscope::InstrumentationScope& scope) -> Script {
    return [&resource, &scope, seed](sdktrace::Recordable& r) {
      r.SetIdentity(context(seed), otel::trace::SpanId());
      r.SetResource(resource);
      r.SetInstrumentationScope(scope);
      r.SetName("s" + std::to_string(seed));
      r.SetSpanKind(otel::trace::SpanKind::kInternal);
    };
  };
  const Both both =
      build_both({span(1, f.resource, *f.lens_scope), span(2, f.resource, *f.third_party),
                  span(3, f.resource, *f.lens_scope), span(4, f.other_resource, *f.lens_scope),
                  span(5, f.resource, *f.third_party)},
                 batch);
  // opentelemetry-cpp groups through hash maps (its group order is unspecified): compare
  // as sets of groups, and our order exactly.
  std::string diff;
  google::protobuf::util::MessageDifferencer differ;
  differ.ReportDifferencesToString(&diff);
  differ.TreatAsSet(ExportTraceServiceRequest::descriptor()->FindFieldByName("resource_spans"));
  differ.TreatAsSet(
      otel::proto::trace::v1::ResourceSpans::descriptor()->FindFieldByName("scope_spans"));
  EXPECT_TRUE(differ.Compare(both.reference, both.ours)) << diff;

  ASSERT_EQ(both.ours.resource_spans_size(), 2);
  const auto& first = both.ours.resource_spans(0);
  EXPECT_EQ(first.schema_url(), "https://opentelemetry.io/schemas/1.24.0");
  ASSERT_EQ(first.scope_spans_size(), 2);
  EXPECT_EQ(first.scope_spans(0).scope().name(), "nemo.lens");
  EXPECT_EQ(first.scope_spans(0).scope().version(), "1.2.3");
  EXPECT_EQ(first.scope_spans(0).schema_url(), "https://scope/schema");
  ASSERT_EQ(first.scope_spans(0).spans_size(), 2);
  EXPECT_EQ(first.scope_spans(0).spans(0).name(), "s1");
  EXPECT_EQ(first.scope_spans(0).spans(1).name(), "s3");
  EXPECT_EQ(first.scope_spans(1).scope().name(), "third.party");
  ASSERT_EQ(first.scope_spans(1).spans_size(), 2);
  EXPECT_EQ(first.scope_spans(1).spans(0).name(), "s2");
  EXPECT_EQ(first.scope_spans(1).spans(1).name(), "s5");
  ASSERT_EQ(both.ours.resource_spans(1).scope_spans_size(), 1);
  EXPECT_EQ(both.ours.resource_spans(1).scope_spans(0).spans(0).name(), "s4");
}

TEST(OtlpSpanBatch, EachBuildReplacesThePreviousRequestAndBigBatchesOutgrowTheFirstBlock) {
  Fixture f;
  OtlpSpanBatch batch;
  std::vector<Script> big;
  for (int i = 0; i < 3000; ++i) {
    big.push_back(full_span(f, static_cast<std::uint8_t>(i), span_id(static_cast<std::uint8_t>(i)),
                            otel::trace::SpanKind::kInternal));
  }
  const Both first = build_both(big, batch);  // several MiB: beyond the reused first block
  EXPECT_EQ(first.ours.resource_spans(0).scope_spans(0).spans_size(), 3000);
  expect_same(first);
  const Both second =
      build_both({full_span(f, 7, otel::trace::SpanId(), otel::trace::SpanKind::kServer)}, batch);
  EXPECT_EQ(second.ours.resource_spans(0).scope_spans(0).spans_size(), 1);
  expect_same(second);
}

TEST(OtlpSpanBatch, RecordablesOfOtherExportersAreSkipped) {
  Fixture f;
  OtlpSpanBatch batch;
  std::vector<RecordablePtr> spans;
  spans.push_back(std::make_unique<otlp::OtlpRecordable>());
  spans.push_back(std::make_unique<OtlpSpanRecordable>());
  full_span(f, 1, otel::trace::SpanId(), otel::trace::SpanKind::kInternal)(*spans[1]);
  const ExportTraceServiceRequest& request =
      batch.build(otel::nostd::span<RecordablePtr>(spans.data(), spans.size()));
  ASSERT_EQ(request.resource_spans_size(), 1);
  EXPECT_EQ(request.resource_spans(0).scope_spans(0).spans_size(), 1);
}

}  // namespace
