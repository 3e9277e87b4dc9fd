// The report's telemetry completeness: received records against the ranks' own lens.exporter.*
// counts, read from OTLP metrics the way lens collect stores them.
#include "report/completeness.hpp"

#include <gtest/gtest.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>

#include <string>
#include <vector>

#include "report/run_builder.hpp"

namespace lens::report {
namespace {

namespace collector = opentelemetry::proto::collector::metrics::v1;

struct Counts {
  std::int64_t exported, failed, dropped;
};

// One collection of a rank's self-metrics at `time_ns`: 3 counters x 3 signals = 9 points.
collector::ExportMetricsServiceRequest self_metrics(int rank, std::uint64_t time_ns, Counts spans,
                                                    Counts points, Counts logs) {
  collector::ExportMetricsServiceRequest request;
  auto* resource_metrics = request.add_resource_metrics();
  auto* attribute = resource_metrics->mutable_resource()->add_attributes();
  attribute->set_key("dl.rank");
  attribute->mutable_value()->set_int_value(rank);
  auto* scope = resource_metrics->add_scope_metrics();
  const std::pair<const char*, std::int64_t Counts::*> fields[] = {
      {"lens.exporter.exported", &Counts::exported},
      {"lens.exporter.failed", &Counts::failed},
      {"lens.exporter.dropped", &Counts::dropped}};
  for (const auto& [name, field] : fields) {
    auto* metric = scope->add_metrics();
    metric->set_name(name);
    for (const auto& [signal, counts] :
         {std::pair{"traces", spans}, std::pair{"metrics", points}, std::pair{"logs", logs}}) {
      auto* point = metric->mutable_sum()->add_data_points();
      point->set_time_unix_nano(time_ns);
      point->set_as_int(counts.*field);
      auto* key = point->add_attributes();
      key->set_key("signal");
      key->mutable_value()->set_string_value(signal);
    }
  }
  return request;
}

// The run a builder makes of `collections` (self-metrics requests), read in this order.
RunData run_with_self_metrics(
    const std::vector<collector::ExportMetricsServiceRequest>& collections) {
  RunBuilder builder;
  for (const auto& request : collections) builder.on_metrics(request);
  return builder.take();
}

void add_spans(RunData& data, int rank, std::size_t count) {
  data.ranks[rank].rank = rank;
  data.ranks[rank].spans.resize(count);
}

TEST(ReportCompleteness, TheNewestSelfReportOfARankIsItsAccount) {
  // Out of order on purpose: the collection at t=2000 is the newest.
  const RunData data =
      run_with_self_metrics({self_metrics(0, 2000, {100, 0, 0}, {9, 0, 0}, {7, 0, 0}),
                             self_metrics(0, 1000, {40, 0, 0}, {0, 0, 0}, {3, 0, 0}),
                             self_metrics(1, 1000, {90, 30, 30}, {0, 0, 0}, {5, 0, 2})});
  const ReportedTotals& spans0 = data.ranks.at(0).reported.at("traces");
  EXPECT_EQ(spans0.exported, 100U);
  EXPECT_EQ(spans0.time_ns, 2000);
  const ReportedTotals& logs1 = data.ranks.at(1).reported.at("logs");
  EXPECT_EQ(logs1.exported, 5U);
  EXPECT_EQ(logs1.dropped, 2U);
  EXPECT_EQ(data.ranks.at(0).reported.at("metrics").exported, 9U);
  EXPECT_EQ(data.ranks.at(0).metric_points, 18U);  // 2 collections x 9 points
}

TEST(ReportCompleteness, LossesAreCountedPerRankAndSignalAndSaidInTwoSentences) {
  // Each rank's 9 points arrive; rank 0 counted 6 of them (its final export is not in its count).
  RunData data = run_with_self_metrics({self_metrics(0, 1000, {100, 0, 0}, {6, 0, 0}, {7, 0, 0}),
                                        self_metrics(1, 1000, {90, 30, 1560}, {0, 0, 0}, {5, 0, 2}),
                                        self_metrics(2, 1000, {50, 0, 0}, {0, 0, 0}, {0, 0, 0})});
  add_spans(data, 0, 100);
  data.ranks[0].log_records = 9;  // more than counted: flushed after the last collection
  add_spans(data, 1, 90);
  data.ranks[1].log_records = 5;
  add_spans(data, 2, 42);  // 8 exported spans are not here
  add_spans(data, 3, 10);  // no self-metrics from rank 3

  const Completeness result = telemetry_completeness(data, {4});
  ASSERT_EQ(result.ranks.size(), 4U);
  EXPECT_TRUE(result.any_reported);
  EXPECT_EQ(result.silent_ranks, std::vector<int>{4});

  EXPECT_EQ(result.ranks[0].complete(), std::optional<bool>(true));
  ASSERT_EQ(result.ranks[0].signals.size(), 3U);
  EXPECT_EQ(result.ranks[0].signals[0].signal, "spans");
  EXPECT_EQ(result.ranks[0].signals[1].signal, "metric points");
  EXPECT_EQ(result.ranks[0].signals[1].received, 9U);
  EXPECT_EQ(result.ranks[0].signals[1].exported, 6U);
  EXPECT_EQ(result.ranks[0].signals[1].missing, 0U);
  EXPECT_EQ(result.ranks[0].signals[2].received, 9U);
  EXPECT_EQ(result.ranks[0].signals[2].missing, 0U);

  const SignalCompleteness& spans1 = result.ranks[1].signals[0];
  EXPECT_EQ(spans1.exported, 90U);
  EXPECT_EQ(spans1.dropped, 1560U);
  EXPECT_EQ(spans1.failed, 30U);
  EXPECT_EQ(result.ranks[1].complete(), std::optional<bool>(false));
  EXPECT_EQ(result.ranks[2].signals[0].missing, 8U);
  EXPECT_FALSE(result.ranks[3].signals[0].reported);
  EXPECT_EQ(result.ranks[3].complete(), std::nullopt) << "unknown: no self-metrics";

  EXPECT_EQ(completeness_lines(result),
            (std::vector<std::string>{
                "telemetry lost by the ranks (their own count): rank 1 (1560 spans, 2 log records)",
                "telemetry exported by the ranks and not in this directory: rank 2 (8 spans)"}));
}

TEST(ReportCompleteness, ACompleteRunSaysNothingAndARunWithoutSelfMetricsIsUnreported) {
  RunData data;
  add_spans(data, 0, 5);
  const Completeness unreported = telemetry_completeness(data, {});
  EXPECT_FALSE(unreported.any_reported);
  EXPECT_TRUE(completeness_lines(unreported).empty());
  ASSERT_EQ(unreported.ranks.at(0).signals.size(), 1U);  // spans only: nothing else arrived
  EXPECT_EQ(unreported.ranks.at(0).signals[0].received, 5U);
}

TEST(ReportCompleteness, ManyLossyRanksAreNamedUpToEightAndCounted) {
  RunData data;
  for (int rank = 0; rank < 10; ++rank) {
    data.ranks[rank].rank = rank;
    data.ranks[rank].reported["traces"] = ReportedTotals{0, 0, 1, 1};
  }
  const std::vector<std::string> lines = completeness_lines(telemetry_completeness(data, {}));
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0],
            "telemetry lost by the ranks (their own count): rank 0 (1 span), rank 1 (1 span), "
            "rank 2 (1 span), rank 3 (1 span), rank 4 (1 span), rank 5 (1 span), rank 6 (1 "
            "span), rank 7 (1 span) and 2 more ranks");
}

}  // namespace
}  // namespace lens::report
