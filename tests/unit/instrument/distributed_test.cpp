// broadcast_trace_context, extract_nccl_context and the pipeline-parallel carrier slot
// (docs/distributed.md): four ranks in four threads over an in-process collective get the source's
// exact carrier; failures of the collective give nullopt, never an exception. The trace seed
// (TraceSeed, share_trace_seed): the same ids from the same seed, the source's seed everywhere.
#include "lens/distributed.hpp"

#include <gtest/gtest.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/nostd/shared_ptr.h>
#include <opentelemetry/nostd/span.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/span_context.h>

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "unit/support/test_support.hpp"
#include "unit/support/thread_collective.hpp"

namespace lens {
namespace {

namespace otel = opentelemetry;
using otel::context::Context;
using test_support::hex;
using test_support::run_ranks;
using test_support::ThreadCollective;

constexpr std::array<std::uint8_t, 16> kTraceBytes = {
    0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
constexpr std::array<std::uint8_t, 8> kSpanBytes = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
const std::string kTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03";

Context context_with_span() {
  otel::trace::SpanContext span_context(
      otel::trace::TraceId(otel::nostd::span<const std::uint8_t, 16>(kTraceBytes)),
      otel::trace::SpanId(otel::nostd::span<const std::uint8_t, 8>(kSpanBytes)),
      otel::trace::TraceFlags(3), /*is_remote=*/false);
  Context base;
  return otel::trace::SetSpan(
      base, otel::nostd::shared_ptr<otel::trace::Span>(new otel::trace::DefaultSpan(span_context)));
}

// One rank whose broadcast answers with a fixed result, or throws.
class FixedCollective final : public Collective {
 public:
  explicit FixedCollective(Result<std::string> answer, bool throws = false)
      : answer_(std::move(answer)), throws_(throws) {}
  int rank() const override { return 1; }
  int world_size() const override { return 2; }
  Result<std::string> broadcast(const std::string&, int) override {
    if (throws_) throw std::runtime_error("connection reset by peer");
    return answer_;
  }

 private:
  Result<std::string> answer_;
  bool throws_;
};

TEST(BroadcastTraceContext, EveryRankGetsTheSourcesCarrier) {
  constexpr int kRanks = 4;
  for (int source : {0, 2}) {
    ThreadCollective::Shared shared;
    std::vector<std::optional<Carrier>> results(kRanks);
    const auto collectives = run_ranks(kRanks, shared, [&](int rank, Collective& collective) {
      // Only the source has an active span; the others' contexts must not matter.
      const Context context = rank == source ? context_with_span() : Context{};
      results[rank] = broadcast_trace_context(&collective, source, context);
    });
    for (int rank = 0; rank < kRanks; ++rank) {
      ASSERT_TRUE(results[rank].has_value()) << "rank " << rank;
      EXPECT_EQ(*results[rank], (Carrier{{"traceparent", kTraceParent}})) << "rank " << rank;
      // Receivers put nothing on the wire; the source sends the JSON bytes.
      EXPECT_EQ(collectives[rank].sent,
                rank == source ? "{\"traceparent\":\"" + kTraceParent + "\"}" : "")
          << "rank " << rank;
    }
  }
}

TEST(BroadcastTraceContext, SourceWithoutActiveSpanGivesAnEmptyCarrier) {
  ThreadCollective::Shared shared;
  ThreadCollective only(0, 1, shared);
  const std::optional<Carrier> carrier = broadcast_trace_context(&only, 0, Context{});
  ASSERT_TRUE(carrier.has_value());
  EXPECT_TRUE(carrier->empty());
  EXPECT_EQ(only.sent, "{}");
}

TEST(BroadcastTraceContext, NoCollectiveGivesNullopt) {
  EXPECT_EQ(broadcast_trace_context(nullptr, 0, context_with_span()), std::nullopt);
}

TEST(BroadcastTraceContext, FailedOrThrowingBroadcastGivesNullopt) {
  FixedCollective failing(Error("MPI_Bcast failed: MPI_ERR_COMM"));
  EXPECT_EQ(broadcast_trace_context(&failing, 0), std::nullopt);
  FixedCollective throwing(std::string("{}"), /*throws=*/true);
  EXPECT_EQ(broadcast_trace_context(&throwing, 0), std::nullopt);
}

TEST(BroadcastTraceContext, PayloadThatIsNotACarrierGivesNullopt) {
  for (const char* payload : {"", "[1]", "{\"traceparent\":1}", "\xff\xfe", "{\"a\":\"b\""}) {
    FixedCollective garbled{std::string(payload)};
    EXPECT_EQ(broadcast_trace_context(&garbled, 0), std::nullopt) << payload;
  }
}

TEST(ExtractNcclContext, BytesOfASerialisedContextGiveItsSpanContext) {
  const std::string bytes = serialize_context(context_with_span());
  const Context extracted = extract_nccl_context(bytes, Context{});
  const auto span_context = otel::trace::GetSpan(extracted)->GetContext();
  ASSERT_TRUE(span_context.IsValid());
  EXPECT_TRUE(span_context.IsRemote());
  std::array<char, 32> trace_hex{};
  span_context.trace_id().ToLowerBase16(trace_hex);
  EXPECT_EQ(std::string(trace_hex.data(), trace_hex.size()), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(span_context.trace_flags().flags(), 3);
}

TEST(ExtractNcclContext, UndecodableBytesGiveTheBaseContext) {
  const Context base = context_with_span();
  for (const char* bytes : {"", "not json", "[1]", "\xc3\x28"}) {
    const Context extracted = extract_nccl_context(bytes, base);
    EXPECT_EQ(otel::trace::GetSpan(extracted)->GetContext().span_id(),
              otel::trace::GetSpan(base)->GetContext().span_id())
        << bytes;
    EXPECT_FALSE(otel::trace::GetSpan(extracted)->GetContext().IsRemote()) << bytes;
  }
}

TEST(PpTraceCarrier, HoldsWhatWasSetUntilCleared) {
  set_pp_trace_carrier(std::nullopt);
  EXPECT_EQ(get_pp_trace_carrier(), std::nullopt);
  set_pp_trace_carrier(Carrier{{"traceparent", kTraceParent}});
  EXPECT_EQ(get_pp_trace_carrier(), (Carrier{{"traceparent", kTraceParent}}));
  // Visible from another thread (the pipeline schedule may run elsewhere).
  std::optional<Carrier> seen;
  std::thread([&] { seen = get_pp_trace_carrier(); }).join();
  EXPECT_EQ(seen, (Carrier{{"traceparent", kTraceParent}}));
  set_pp_trace_carrier(std::nullopt);
  EXPECT_EQ(get_pp_trace_carrier(), std::nullopt);
}

TEST(TraceSeed, IdsAreDeterministicDistinctAndNeverZero) {
  const TraceSeed seed(kTraceBytes);
  EXPECT_FALSE(seed.empty());
  std::set<std::string> ids;
  for (std::uint64_t n = 0; n < 10000; ++n) {
    const auto id = seed.trace_id_for(n);
    EXPECT_EQ(id, seed.trace_id_for(n));
    EXPECT_NE(id, (std::array<std::uint8_t, 16>{}));
    ids.insert(hex(id));
  }
  EXPECT_EQ(ids.size(), 10000u);
  // Another seed gives other ids for the same n.
  std::array<std::uint8_t, 16> other_bytes = kTraceBytes;
  other_bytes[0] ^= 1;
  EXPECT_NE(TraceSeed(other_bytes).trace_id_for(5), seed.trace_id_for(5));
  // An empty seed asks for random ids.
  EXPECT_TRUE(TraceSeed().empty());
  EXPECT_EQ(TraceSeed().trace_id_for(5), (std::array<std::uint8_t, 16>{}));
}

TEST(TraceSeed, SharedOverACollectiveIsTheSourcesOnEveryRank) {
  ThreadCollective::Shared shared;
  std::vector<TraceSeed> seeds(4);
  run_ranks(4, shared, [&](int rank, Collective& collective) {
    seeds[rank] = share_trace_seed(&collective, 2);
  });
  ASSERT_TRUE(shared.payload.has_value());
  ASSERT_EQ(shared.payload->size(), 16u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_FALSE(seeds[rank].empty());
    EXPECT_EQ(seeds[rank].bytes(), seeds[2].bytes()) << "rank " << rank;
    EXPECT_EQ(std::string(seeds[rank].bytes().begin(), seeds[rank].bytes().end()), *shared.payload);
  }
}

TEST(TraceSeed, WithoutAWorkingCollectiveEachRankHasItsOwnRandomSeed) {
  const TraceSeed a = share_trace_seed(nullptr);
  const TraceSeed b = share_trace_seed(nullptr);
  EXPECT_FALSE(a.empty());
  EXPECT_NE(a.bytes(), b.bytes());
  FixedCollective failing(Error("MPI_Bcast failed: MPI_ERR_COMM"));
  const TraceSeed c = share_trace_seed(&failing);
  EXPECT_FALSE(c.empty());
  EXPECT_NE(c.bytes(), a.bytes());
}

}  // namespace
}  // namespace lens
