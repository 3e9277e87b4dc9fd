// W3C propagation and the NCCL bytes carrier (docs/tracing.md, "Propagating a context between
// processes"): exact traceparent/tracestate/baggage strings, every strict-parsing rejection, and
// the JSON form.
// Contexts are built by hand or from a local SDK TracerProvider; nothing global is installed.
#include "lens/propagation.hpp"

#include <gtest/gtest.h>
#include <opentelemetry/baggage/baggage.h>
#include <opentelemetry/baggage/baggage_context.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/exporters/memory/in_memory_span_data.h>
#include <opentelemetry/exporters/memory/in_memory_span_exporter.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/nostd/span.h>
#include <opentelemetry/sdk/trace/simple_processor.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/scope.h>
#include <opentelemetry/trace/span_context.h>
#include <opentelemetry/trace/trace_state.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/parse.hpp"
#include "core/utf8.hpp"
#include "instrument/propagation_w3c.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

namespace otel = opentelemetry;
using otel::context::Context;
using otel::trace::SpanContext;

constexpr const char* kTraceHex = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* kSpanHex = "00f067aa0ba902b7";
const std::string kTraceParent = std::string("00-") + kTraceHex + "-" + kSpanHex + "-01";

constexpr std::array<std::uint8_t, 16> kTraceBytes = {
    0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
constexpr std::array<std::uint8_t, 8> kSpanBytes = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};

SpanContext make_span_context(std::uint8_t flags = 1, std::string_view trace_state = {}) {
  return SpanContext(otel::trace::TraceId(otel::nostd::span<const std::uint8_t, 16>(kTraceBytes)),
                     otel::trace::SpanId(otel::nostd::span<const std::uint8_t, 8>(kSpanBytes)),
                     otel::trace::TraceFlags(flags), /*is_remote=*/false,
                     otel::trace::TraceState::FromHeader(
                         otel::nostd::string_view(trace_state.data(), trace_state.size())));
}

Context with_span(const SpanContext& span_context, Context base = Context{}) {
  return otel::trace::SetSpan(
      base, otel::nostd::shared_ptr<otel::trace::Span>(new otel::trace::DefaultSpan(span_context)));
}

Context with_baggage(otel::nostd::shared_ptr<otel::baggage::Baggage> baggage,
                     Context base = Context{}) {
  return otel::baggage::SetBaggage(base, baggage);
}

SpanContext span_of(const Context& context) { return otel::trace::GetSpan(context)->GetContext(); }

using lens::test_support::hex;

SpanContext extracted(const Carrier& carrier) {
  return span_of(extract_context(carrier, Context{}));
}

std::optional<std::string> baggage_value(const Context& context, std::string_view key) {
  std::string value;
  if (!otel::baggage::GetBaggage(context)->GetValue(
          otel::nostd::string_view(key.data(), key.size()), value)) {
    return std::nullopt;
  }
  return value;
}

std::size_t baggage_size(const Context& context) {
  std::size_t count = 0;
  otel::baggage::GetBaggage(context)->GetAllEntries([&count](auto, auto) {
    ++count;
    return true;
  });
  return count;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) {
      return parts;
    }
    start = at + 1;
  }
}

bool is_lower_hex(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A local SDK provider whose finished spans land in memory.
struct LocalProvider {
  std::shared_ptr<otel::exporter::memory::InMemorySpanData> spans;
  std::unique_ptr<otel::sdk::trace::TracerProvider> provider;

  LocalProvider() {
    auto exporter = std::make_unique<otel::exporter::memory::InMemorySpanExporter>();
    spans = exporter->GetData();
    provider = std::make_unique<otel::sdk::trace::TracerProvider>(
        std::make_unique<otel::sdk::trace::SimpleSpanProcessor>(std::move(exporter)));
  }
  otel::nostd::shared_ptr<otel::trace::Tracer> tracer() { return provider->GetTracer("test"); }
};

// ---------------------------------------------------------------------------------------------
// inject_context

TEST(PropagationInject, WritesExactTraceparentOnly) {
  Carrier carrier;
  inject_context(carrier, with_span(make_span_context(0x01)));
  EXPECT_EQ(carrier, (Carrier{{"traceparent", kTraceParent}}));
}

TEST(PropagationInject, TraceparentHasFourLowercaseHexPartsStartingWith00) {
  Carrier carrier;
  inject_context(carrier, with_span(make_span_context(0x00)));
  const std::vector<std::string> parts = split(carrier.at("traceparent"), '-');
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[0], "00");
  EXPECT_EQ(parts[1], kTraceHex);
  EXPECT_EQ(parts[2], kSpanHex);
  EXPECT_EQ(parts[3], "00");
  for (const std::string& part : parts) {
    EXPECT_TRUE(is_lower_hex(part)) << part;
  }
}

TEST(PropagationInject, WritesNothingWithoutAValidSpanContextAndKeepsOtherHeaders) {
  Carrier carrier{{"x-other", "1"}};
  inject_context(carrier, Context{});
  EXPECT_EQ(carrier, (Carrier{{"x-other", "1"}}));
}

TEST(PropagationInject, WritesTracestateOnlyWhenNonEmpty) {
  Carrier with_state;
  inject_context(with_state, with_span(make_span_context(1, "rojo=00f067aa0ba902b7,congo=t61")));
  EXPECT_EQ(with_state, (Carrier{{"traceparent", kTraceParent},
                                 {"tracestate", "rojo=00f067aa0ba902b7,congo=t61"}}));

  Carrier without_state;
  inject_context(without_state, with_span(make_span_context(1, "")));
  EXPECT_EQ(without_state.count("tracestate"), 0u);
}

TEST(PropagationInject, ReplacesTraceHeadersInAnyLetterCase) {
  Carrier carrier{{"TraceParent", "stale"}, {"TRACESTATE", "a=1"}, {"x-other", "1"}};
  inject_context(carrier, with_span(make_span_context()));
  EXPECT_EQ(carrier, (Carrier{{"traceparent", kTraceParent}, {"x-other", "1"}}));
}

TEST(PropagationInject, DefaultsToTheCurrentContext) {
  LocalProvider local;
  auto span = local.tracer()->StartSpan("step");
  Carrier inside;
  {
    otel::trace::Scope scope(span);
    inject_context(inside);
  }
  Carrier outside;
  inject_context(outside);
  span->End();

  const SpanContext context = span->GetContext();
  EXPECT_EQ(inside, (Carrier{{"traceparent", "00-" + hex(context.trace_id()) + "-" +
                                                 hex(context.span_id()) + "-01"}}));
  EXPECT_TRUE(outside.empty());
}

// ---------------------------------------------------------------------------------------------
// extract_context: traceparent

TEST(PropagationExtract, RoundTripPreservesTraceIdSpanIdAndFlags) {
  for (std::uint8_t flags : {std::uint8_t{0x00}, std::uint8_t{0x01}}) {
    Carrier carrier;
    inject_context(carrier, with_span(make_span_context(flags)));
    const SpanContext context = extracted(carrier);
    ASSERT_TRUE(context.IsValid());
    EXPECT_EQ(hex(context.trace_id()), kTraceHex);
    EXPECT_EQ(hex(context.span_id()), kSpanHex);
    EXPECT_EQ(context.trace_flags().flags(), flags);
    EXPECT_EQ(context.IsSampled(), flags == 0x01);
  }
}

TEST(PropagationExtract, ExtractedSpanIsRemoteAndNonRecording) {
  const Context context = extract_context(Carrier{{"traceparent", kTraceParent}}, Context{});
  auto span = otel::trace::GetSpan(context);
  EXPECT_TRUE(span->GetContext().IsRemote());
  EXPECT_FALSE(span->IsRecording());
}

TEST(PropagationExtract, EmptyCarrierGivesInvalidSpanContext) {
  EXPECT_FALSE(extracted(Carrier{}).IsValid());
  EXPECT_FALSE(extracted(Carrier{{"x-other", kTraceParent}}).IsValid());
}

TEST(PropagationExtract, InvalidTraceparentsAreRejected) {
  const std::string t = kTraceHex;
  const std::string s = kSpanHex;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"uppercase trace id", "00-4BF92F3577B34DA6A3CE929D0E0E4736-" + s + "-01"},
      {"uppercase span id", "00-" + t + "-00F067AA0BA902B7-01"},
      {"uppercase flags", "00-" + t + "-" + s + "-0A"},
      {"uppercase version", "0A-" + t + "-" + s + "-01"},
      {"short trace id", "00-" + t.substr(1) + "-" + s + "-01"},
      {"long trace id", "00-" + t + "0-" + s + "-01"},
      {"short span id", "00-" + t + "-" + s.substr(1) + "-01"},
      {"long span id", "00-" + t + "-" + s + "0-01"},
      {"short flags", "00-" + t + "-" + s + "-1"},
      {"long flags", "00-" + t + "-" + s + "-001"},
      {"short version", "0-" + t + "-" + s + "-01"},
      {"long version", "000-" + t + "-" + s + "-01"},
      {"version ff", "ff-" + t + "-" + s + "-01"},
      {"all-zero trace id", "00-00000000000000000000000000000000-" + s + "-01"},
      {"all-zero span id", "00-" + t + "-0000000000000000-01"},
      {"00 with trailing dash", kTraceParent + "-"},
      {"00 with trailing field", kTraceParent + "-extra"},
      {"00 with trailing character", kTraceParent + "x"},
      {"non-hex version", "0g-" + t + "-" + s + "-01"},
      {"non-hex trace id", "00-4bf92f3577b34da6a3ce929d0e0e473g-" + s + "-01"},
      {"non-hex span id", "00-" + t + "-00f067aa0ba902bz-01"},
      {"non-hex flags", "00-" + t + "-" + s + "-0x"},
      {"missing flags", "00-" + t + "-" + s},
      {"missing flags after dash", "00-" + t + "-" + s + "-"},
      {"missing version", t + "-" + s + "-01"},
      {"three parts", "00-" + t + s + "-01"},
      {"wrong separator", "00_" + t + "_" + s + "_01"},
      {"future version, non-dash after flags", "01-" + t + "-" + s + "-01x"},
      {"inner whitespace", "00- " + t.substr(1) + "-" + s + "-01"},
      {"empty", ""},
      {"whitespace only", "   "},
      {"dashes only", "---"},
  };
  for (const auto& [name, value] : cases) {
    SCOPED_TRACE(name + ": '" + value + "'");
    EXPECT_FALSE(extracted(Carrier{{"traceparent", value}}).IsValid());
  }
}

TEST(PropagationExtract, FutureVersionMayCarryExtraFields) {
  const std::string tail = std::string(kTraceHex) + "-" + kSpanHex + "-01";
  for (const std::string& value :
       {"01-" + tail + "-what-the-future-holds", "cc-" + tail + "-x", "fe-" + tail}) {
    SCOPED_TRACE(value);
    const SpanContext context = extracted(Carrier{{"traceparent", value}});
    ASSERT_TRUE(context.IsValid());
    EXPECT_EQ(hex(context.trace_id()), kTraceHex);
    EXPECT_EQ(hex(context.span_id()), kSpanHex);
    EXPECT_TRUE(context.IsSampled());
  }
}

TEST(PropagationExtract, HeaderKeysMatchCaseInsensitively) {
  const SpanContext context =
      extracted(Carrier{{"TraceParent", kTraceParent}, {"TRACESTATE", "a=1"}});
  ASSERT_TRUE(context.IsValid());
  EXPECT_EQ(hex(context.trace_id()), kTraceHex);
  EXPECT_EQ(context.trace_state()->ToHeader(), "a=1");
}

TEST(PropagationExtract, SurroundingWhitespaceIsTrimmed) {
  const SpanContext context = extracted(Carrier{{"traceparent", " \t" + kTraceParent + "  "}});
  ASSERT_TRUE(context.IsValid());
  EXPECT_EQ(hex(context.span_id()), kSpanHex);
}

TEST(PropagationExtract, TraceparentRepeatedInAnotherCaseIsRejected) {
  EXPECT_FALSE(
      extracted(Carrier{{"traceparent", kTraceParent}, {"Traceparent", kTraceParent}}).IsValid());
}

TEST(PropagationExtract, ReturnsBaseWithTheRemoteSpanAdded) {
  const std::array<std::uint8_t, 16> trace_bytes = {1, 2,  3,  4,  5,  6,  7,  8,
                                                    9, 10, 11, 12, 13, 14, 15, 16};
  const std::array<std::uint8_t, 8> span_bytes = {1, 2, 3, 4, 5, 6, 7, 8};
  const SpanContext local(
      otel::trace::TraceId(otel::nostd::span<const std::uint8_t, 16>(trace_bytes)),
      otel::trace::SpanId(otel::nostd::span<const std::uint8_t, 8>(span_bytes)),
      otel::trace::TraceFlags(1), false, otel::trace::TraceState::GetDefault());
  const Context base =
      with_baggage(otel::baggage::Baggage::GetDefault()->Set("k", "v"), with_span(local));

  const Context replaced = extract_context(Carrier{{"traceparent", kTraceParent}}, base);
  EXPECT_EQ(hex(span_of(replaced).trace_id()), kTraceHex);
  EXPECT_EQ(baggage_value(replaced, "k"), "v");

  // An invalid header adds nothing: the base (and any span it holds) comes back unchanged.
  const Context kept = extract_context(Carrier{{"traceparent", "garbage"}}, base);
  EXPECT_EQ(hex(span_of(kept).trace_id()), "0102030405060708090a0b0c0d0e0f10");
}

TEST(PropagationExtract, DefaultsToTheCurrentContextAsBase) {
  LocalProvider local;
  auto span = local.tracer()->StartSpan("outer");
  otel::trace::Scope scope(span);
  EXPECT_EQ(span_of(extract_context(Carrier{})).span_id(), span->GetContext().span_id());
  EXPECT_EQ(hex(span_of(extract_context(Carrier{{"traceparent", kTraceParent}})).trace_id()),
            kTraceHex);
  span->End();
}

TEST(PropagationExtract, NewSpansContinueTheRemoteTraceOrStartAFreshOne) {
  LocalProvider local;
  otel::trace::StartSpanOptions options;
  options.parent = extract_context(Carrier{{"traceparent", kTraceParent}}, Context{});
  auto child = local.tracer()->StartSpan("child", options);
  options.parent =
      extract_context(Carrier{{"traceparent", "ff-" + kTraceParent.substr(3)}}, Context{});
  auto fresh = local.tracer()->StartSpan("fresh", options);
  child->End();
  fresh->End();

  EXPECT_EQ(hex(child->GetContext().trace_id()), kTraceHex);
  EXPECT_TRUE(fresh->GetContext().IsValid());
  EXPECT_NE(hex(fresh->GetContext().trace_id()), kTraceHex);
  auto spans = local.spans->GetSpans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(hex(spans[0]->GetParentSpanId()), kSpanHex);
  EXPECT_FALSE(spans[1]->GetParentSpanId().IsValid());
}

// ---------------------------------------------------------------------------------------------
// extract_context: tracestate

std::string extracted_trace_state(const std::string& header) {
  const SpanContext context =
      extracted(Carrier{{"traceparent", kTraceParent}, {"tracestate", header}});
  EXPECT_TRUE(context.IsValid()) << "the traceparent is kept whatever the tracestate";
  return context.trace_state()->ToHeader();
}

TEST(PropagationTraceState, ValidListIsKeptAndReinjected) {
  EXPECT_EQ(extracted_trace_state("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
  const Context context = extract_context(
      Carrier{{"traceparent", kTraceParent}, {"tracestate", "rojo=1,congo=2"}}, Context{});
  Carrier out;
  inject_context(out, context);
  EXPECT_EQ(out, (Carrier{{"traceparent", kTraceParent}, {"tracestate", "rojo=1,congo=2"}}));
}

TEST(PropagationTraceState, AcceptsW3CListSyntax) {
  EXPECT_EQ(extracted_trace_state(" a=1 ,, \t,b=2\t"), "a=1,b=2");
  EXPECT_EQ(extracted_trace_state("tenant@vendor=x,1digit=y,a_-*/z=v"),
            "tenant@vendor=x,1digit=y,a_-*/z=v");
  EXPECT_EQ(extracted_trace_state("k= inner space!"), "k= inner space!");
  EXPECT_EQ(extracted_trace_state(""), "");
}

TEST(PropagationTraceState, ThirtyTwoMembersAreKept) {
  std::string header;
  for (int i = 0; i < 32; ++i) {
    header += (i == 0 ? "" : ",") + ("k" + std::to_string(i)) + "=v";
  }
  EXPECT_EQ(extracted_trace_state(header), header);
  EXPECT_EQ(extracted_trace_state(header + ",k32=v"), "");
}

TEST(PropagationTraceState, InvalidListIsDroppedButTraceparentKept) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"uppercase key", "a=1,B=2"},
      {"member without =", "a=1,b"},
      {"duplicate key", "a=1,a=2"},
      {"= in value", "a=b=c"},
      {", missing between members", "a=1 b=2"},
      {"empty value", "a="},
      {"empty key", "=1"},
      {"space in key", "a b=1"},
      {"key starting with _", "_a=1"},
      {"two @", "a@b@c=1"},
      {"system id starting with digit", "t@1v=1"},
      {"system id over 14", "t@abcdefghijklmno=1"},
      {"key over 256", std::string(257, 'a') + "=1"},
      {"value over 256", "a=" + std::string(257, 'v')},
      {"non-printable value", "a=\x01"},
      {"non-ASCII value", "a=\xc3\xbc"},
  };
  for (const auto& [name, header] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(extracted_trace_state(header), "");
  }
}

TEST(PropagationTraceState, RepeatedHeadersCombineInCarrierOrder) {
  // std::map orders "TraceState" before "tracestate".
  const SpanContext context = extracted(
      Carrier{{"traceparent", kTraceParent}, {"tracestate", "a=1"}, {"TraceState", "b=2"}});
  EXPECT_EQ(context.trace_state()->ToHeader(), "b=2,a=1");
}

// ---------------------------------------------------------------------------------------------
// Baggage

TEST(PropagationBaggage, RoundTripWithPercentEncoding) {
  auto baggage = otel::baggage::Baggage::GetDefault()
                     ->Set("user.id", "alice smith")
                     ->Set("path", "a,b;c=d%e+f");
  Carrier carrier;
  inject_context(carrier, with_baggage(baggage));
  // opentelemetry's Baggage::Set puts the newest entry first.
  EXPECT_EQ(carrier, (Carrier{{"baggage", "path=a%2Cb%3Bc%3Dd%25e%2Bf,user.id=alice%20smith"}}));

  const Context context = extract_context(carrier, Context{});
  EXPECT_EQ(baggage_value(context, "user.id"), "alice smith");
  EXPECT_EQ(baggage_value(context, "path"), "a,b;c=d%e+f");
  EXPECT_EQ(baggage_size(context), 2u);
  EXPECT_FALSE(span_of(context).IsValid());
}

TEST(PropagationBaggage, Utf8ValuesRoundTrip) {
  const std::vector<std::pair<std::string, std::string>> entries = {{"city", "Z\xc3\xbcrich"}};
  Carrier carrier;
  inject_context(carrier, with_baggage(otel::nostd::shared_ptr<otel::baggage::Baggage>(
                              new otel::baggage::Baggage(entries))));
  EXPECT_EQ(carrier, (Carrier{{"baggage", "city=Z%C3%BCrich"}}));
  EXPECT_EQ(baggage_value(extract_context(carrier, Context{}), "city"), "Z\xc3\xbcrich");
}

TEST(PropagationBaggage, TravelsWithTheTraceparent) {
  const Context source = with_baggage(otel::baggage::Baggage::GetDefault()->Set("rank", "3"),
                                      with_span(make_span_context()));
  Carrier carrier;
  inject_context(carrier, source);
  EXPECT_EQ(carrier, (Carrier{{"baggage", "rank=3"}, {"traceparent", kTraceParent}}));
  const Context context = extract_context(carrier, Context{});
  EXPECT_EQ(hex(span_of(context).trace_id()), kTraceHex);
  EXPECT_EQ(baggage_value(context, "rank"), "3");
}

TEST(PropagationBaggage, DecodesW3CValues) {
  const Context context = extract_context(
      Carrier{{"Baggage", "a=1%2b1+2, b = %E2%9C%93 ;prop=x;flag,c=x/y:z?,d=,a=last"}}, Context{});
  EXPECT_EQ(baggage_value(context, "a"), "last");  // a repeated key keeps its last value
  EXPECT_EQ(baggage_value(context, "b"), "\xe2\x9c\x93");
  EXPECT_EQ(baggage_value(context, "c"), "x/y:z?");
  EXPECT_EQ(baggage_value(context, "d"), "");
  EXPECT_EQ(baggage_size(context), 4u);
  EXPECT_EQ(baggage_value(extract_context(Carrier{{"baggage", "a=1%2b1+2"}}, Context{}), "a"),
            "1+1+2");  // "+" is literal in W3C Baggage
}

TEST(PropagationBaggage, InvalidMembersAreSkipped) {
  const Context context = extract_context(
      Carrier{{"baggage",
               "good=1,bad key=2,noequals,pct=%zz,trunc=%4,quote=\"q\",back=a\\b,nul=%00,"
               "=empty,utf=\xc3\xbc,ok=2"}},
      Context{});
  EXPECT_EQ(baggage_value(context, "good"), "1");
  EXPECT_EQ(baggage_value(context, "ok"), "2");
  EXPECT_EQ(baggage_size(context), 2u);
}

TEST(PropagationBaggage, InvalidUtf8AfterDecodingBecomesReplacementCharacter) {
  const Context context = extract_context(Carrier{{"baggage", "a=x%FFy"}}, Context{});
  EXPECT_EQ(baggage_value(context, "a"), "x\xef\xbf\xbdy");
}

TEST(PropagationBaggage, OversizedHeaderIsIgnored) {
  const std::string header = "a=" + std::string(propagation_detail::kMaxBaggageBytes - 1, 'v');
  EXPECT_EQ(baggage_size(extract_context(Carrier{{"baggage", header}}, Context{})), 0u);
  EXPECT_EQ(baggage_size(
                extract_context(Carrier{{"baggage", "b=1," + header.substr(0, 4000)}}, Context{})),
            2u);
}

TEST(PropagationBaggage, AtMost180MembersAreKept) {
  std::string header;
  for (int i = 0; i < 200; ++i) {
    header += (i == 0 ? "" : ",") + ("k" + std::to_string(i)) + "=v";
  }
  const Context context = extract_context(Carrier{{"baggage", header}}, Context{});
  EXPECT_EQ(baggage_size(context), 180u);
  EXPECT_EQ(baggage_value(context, "k179"), "v");
  EXPECT_EQ(baggage_value(context, "k180"), std::nullopt);
}

TEST(PropagationBaggage, InjectLeavesOutMembersThatCannotBeSent) {
  auto baggage = otel::baggage::Baggage::GetDefault()
                     ->Set("bad key", "1")
                     ->Set("big", std::string(5000, 'x'))
                     ->Set("ok", "2");
  Carrier carrier;
  inject_context(carrier, with_baggage(baggage));
  EXPECT_EQ(carrier, (Carrier{{"baggage", "ok=2"}}));

  Carrier nothing;
  inject_context(nothing, with_baggage(otel::baggage::Baggage::GetDefault()->Set("bad key", "1")));
  EXPECT_TRUE(nothing.empty());
}

TEST(PropagationBaggage, IsNeverCopiedToSpanAttributes) {
  LocalProvider local;
  otel::trace::StartSpanOptions options;
  options.parent = extract_context(
      Carrier{{"traceparent", kTraceParent}, {"baggage", "user=alice,rank=3"}}, Context{});
  local.tracer()->StartSpan("child", options)->End();
  auto spans = local.spans->GetSpans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_TRUE(spans[0]->GetAttributes().empty());
}

// ---------------------------------------------------------------------------------------------
// NCCL bytes carrier

TEST(PropagationBytesCarrier, SerializeDeserializeRoundTripContainsTraceparent) {
  const Context source = with_span(make_span_context());
  const std::string bytes = serialize_context(source);
  EXPECT_EQ(bytes, "{\"traceparent\":\"" + kTraceParent + "\"}");

  const std::optional<Carrier> carrier = deserialize_context(bytes);
  ASSERT_TRUE(carrier.has_value());
  EXPECT_EQ(*carrier, (Carrier{{"traceparent", kTraceParent}}));
  EXPECT_EQ(hex(span_of(extract_context(*carrier, Context{})).trace_id()), kTraceHex);
}

TEST(PropagationBytesCarrier, AllHeadersSerializeCompactWithSortedKeys) {
  const Context source = with_baggage(otel::baggage::Baggage::GetDefault()->Set("k", "a b"),
                                      with_span(make_span_context(1, "a=1")));
  EXPECT_EQ(serialize_context(source), "{\"baggage\":\"k=a%20b\",\"traceparent\":\"" +
                                           kTraceParent + "\",\"tracestate\":\"a=1\"}");
}

TEST(PropagationBytesCarrier, NothingToPropagateIsAnEmptyObject) {
  EXPECT_EQ(serialize_context(Context{}), "{}");
  const std::optional<Carrier> carrier = deserialize_context("{}");
  ASSERT_TRUE(carrier.has_value());
  EXPECT_TRUE(carrier->empty());
}

TEST(PropagationBytesCarrier, SerializeDefaultsToTheCurrentContext) {
  EXPECT_EQ(serialize_context(), "{}");
  LocalProvider local;
  auto span = local.tracer()->StartSpan("step");
  otel::trace::Scope scope(span);
  const std::optional<Carrier> carrier = deserialize_context(serialize_context());
  ASSERT_TRUE(carrier.has_value());
  EXPECT_EQ(span_of(extract_context(*carrier, Context{})).span_id(), span->GetContext().span_id());
  span->End();
}

TEST(PropagationBytesCarrier, DeserializeAcceptsJsonEscapesWhitespaceAndUtf8) {
  const std::optional<Carrier> carrier =
      deserialize_context(" {\n \"k\" : \"\\u00fc\xc3\xbc\\\"\", \"k\":\"last\", \"e\":\"\"} ");
  ASSERT_TRUE(carrier.has_value());
  EXPECT_EQ(*carrier, (Carrier{{"e", ""}, {"k", "last"}}));
  EXPECT_EQ(deserialize_context("{\"k\":\"\\u00fc\xc3\xbc\\\"\"}"),
            (Carrier{{"k", "\xc3\xbc\xc3\xbc\""}}));
}

TEST(PropagationBytesCarrier, DeserializeRejectsInvalidInput) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"invalid UTF-8 byte", "\xff"},
      {"invalid UTF-8 in a string", "{\"a\":\"\xff\"}"},
      {"overlong UTF-8", "{\"a\":\"\xc0\xaf\"}"},
      {"UTF-16 surrogate in UTF-8", "{\"a\":\"\xed\xa0\x80\"}"},
      {"truncated UTF-8", "{\"a\":\"\xe2\x9c\"}"},
      {"empty", ""},
      {"not JSON", "traceparent"},
      {"unterminated object", "{\"a\":\"b\""},
      {"trailing data", "{\"a\":\"b\"} x"},
      {"two objects", "{}{}"},
      {"array", "[1]"},
      {"array of strings", "[\"a\"]"},
      {"number", "1"},
      {"string", "\"s\""},
      {"null", "null"},
      {"number value", "{\"a\":1}"},
      {"null value", "{\"a\":null}"},
      {"bool value", "{\"a\":true}"},
      {"object value", "{\"a\":{\"b\":\"c\"}}"},
      {"array value", "{\"a\":[\"x\"]}"},
      {"deep nesting", std::string(100000, '[')},
  };
  for (const auto& [name, bytes] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(deserialize_context(bytes), std::nullopt);
  }
}

// ---------------------------------------------------------------------------------------------
// Codec internals

TEST(PropagationCodec, Utf8Validation) {
  EXPECT_TRUE(core::is_valid_utf8(""));
  EXPECT_TRUE(core::is_valid_utf8("a\xc3\xbc\xe2\x9c\x93\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(core::is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(core::is_valid_utf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(core::is_valid_utf8("\x80"));              // lone continuation
  EXPECT_EQ(core::replace_invalid_utf8("a\xff\xc3\xbc\xc3"), "a\xef\xbf\xbd\xc3\xbc\xef\xbf\xbd");
}

TEST(PropagationCodec, PercentEncodingKeepsOnlyUnreservedCharacters) {
  namespace pd = propagation_detail;
  EXPECT_EQ(detail::percent_encode("aZ09-._~ +%,;=\"\\\x7f\xc3\xbc"),
            "aZ09-._~%20%2B%25%2C%3B%3D%22%5C%7F%C3%BC");
  EXPECT_EQ(pd::percent_decode("aZ09-._~%20%2B%25%2C%3B%3D%22%5C%7F%C3%BC"),
            "aZ09-._~ +%,;=\"\\\x7f\xc3\xbc");
}

}  // namespace
}  // namespace lens
