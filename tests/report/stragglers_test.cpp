// Straggler detection: a rank slow in one phase is named with the phase, in a synchronous run
// (every step as long as the slowest) and an unsynchronised one; none without one; too few
// ranks; the window and the threshold.
#include "report/stragglers.hpp"

#include <gtest/gtest.h>

#include <set>

#include "report_test_support.hpp"

namespace lens::report {
namespace {

using testing::analyze_spec;
using testing::RunSpec;
using Lines = std::vector<std::string>;

TEST(ReportStragglers, NoneWithoutASlowRank) {
  const RunAnalysis analysis = analyze_spec({.ranks = 4, .iterations = 20});
  EXPECT_EQ(straggler_lines(analysis.stragglers), Lines{"stragglers: none (threshold 10%)"});
  ASSERT_EQ(analysis.stragglers.ranks.size(), 4u);
  EXPECT_EQ(analysis.stragglers.iterations.size(), 20u);
  EXPECT_DOUBLE_EQ(analysis.stragglers.step_median_ms, 290.0);
}

TEST(ReportStragglers, ASynchronousRunNamesTheSlowRankAndItsPhase) {
  // Every step lasts 390 ms; rank 2 spends the extra 100 ms in the forward pass, the others
  // wait for it in grad_sync.finish.
  const RunAnalysis analysis =
      analyze_spec({.ranks = 4, .iterations = 20, .slow_rank = 2, .slow_ms = 100});
  EXPECT_EQ(straggler_lines(analysis.stragglers),
            Lines{"straggler: rank 2 step median 390.0 ms vs 390.0 ms across ranks (+0.0%), lag "
                  "in phase forward_backward (median 280.0 ms vs 180.0 ms)"});
  const RankLag& slow = analysis.stragglers.ranks.at(2);
  EXPECT_TRUE(slow.straggler);
  EXPECT_EQ(slow.lag_phase, Phase::forward_backward);
  for (const int fast : {0, 1, 3}) {
    EXPECT_FALSE(analysis.stragglers.ranks.at(static_cast<std::size_t>(fast)).straggler);
  }
}

TEST(ReportStragglers, AnUnsynchronisedRunComparesStepTimes) {
  const RunAnalysis analysis = analyze_spec(
      {.ranks = 4, .iterations = 20, .slow_rank = 1, .slow_ms = 100, .synchronous = false});
  EXPECT_EQ(straggler_lines(analysis.stragglers),
            Lines{"straggler: rank 1 step median 390.0 ms vs 290.0 ms across ranks (+34.5%), lag "
                  "in phase forward_backward (median 280.0 ms vs 180.0 ms)"});
}

TEST(ReportStragglers, TheLagPhaseIsWhereTheExtraTimeIs) {
  const RunAnalysis analysis = analyze_spec({.ranks = 4,
                                             .iterations = 20,
                                             .slow_rank = 3,
                                             .slow_ms = 60,
                                             .slow_in_optimizer = true,
                                             .synchronous = false});
  EXPECT_EQ(straggler_lines(analysis.stragglers),
            Lines{"straggler: rank 3 step median 350.0 ms vs 290.0 ms across ranks (+20.7%), lag "
                  "in phase optimizer (median 110.0 ms vs 50.0 ms)"});
}

TEST(ReportStragglers, ALagUnderTheThresholdIsNotFlagged) {
  // 20 ms of 290 is 6.9%: under 10%, over 5%.
  const RunSpec spec{
      .ranks = 4, .iterations = 20, .slow_rank = 0, .slow_ms = 20, .synchronous = false};
  EXPECT_EQ(straggler_lines(analyze_spec(spec).stragglers),
            Lines{"stragglers: none (threshold 10%)"});
  EXPECT_EQ(straggler_lines(analyze_spec(spec, {.threshold = 0.05}).stragglers),
            Lines{"straggler: rank 0 step median 310.0 ms vs 290.0 ms across ranks (+6.9%), lag "
                  "in phase forward_backward (median 200.0 ms vs 180.0 ms)"});
  EXPECT_EQ(straggler_lines(analyze_spec(spec, {.threshold = 0.125}).stragglers),
            Lines{"stragglers: none (threshold 12.5%)"});
}

TEST(ReportStragglers, OneRankIsNotEnough) {
  const RunAnalysis analysis = analyze_spec({.ranks = 4, .iterations = 5, .only_ranks = {2}});
  EXPECT_EQ(straggler_lines(analysis.stragglers),
            Lines{"stragglers: not enough ranks (1 rank with steps; need 2)"});
  EXPECT_FALSE(analysis.stragglers.enough_ranks);
}

TEST(ReportStragglers, MissingRanksAndSampledIterationsStillCompare) {
  const RunAnalysis analysis = analyze_spec({.ranks = 8,
                                             .iterations = 20,
                                             .slow_rank = 5,
                                             .slow_ms = 100,
                                             .synchronous = false,
                                             .only_ranks = {0, 3, 5},
                                             .iteration_stride = 3});
  EXPECT_EQ(analysis.stragglers.iterations, (std::vector<std::int64_t>{1, 4, 7, 10, 13, 16, 19}));
  EXPECT_EQ(straggler_lines(analysis.stragglers),
            Lines{"straggler: rank 5 step median 390.0 ms vs 290.0 ms across ranks (+34.5%), lag "
                  "in phase forward_backward (median 280.0 ms vs 180.0 ms)"});
  EXPECT_EQ(analysis.info.missing_ranks, (std::vector<int>{1, 2, 4, 6, 7}));
}

TEST(ReportStragglers, TheWindowKeepsTheMostRecentIterations) {
  RunBuilder builder;
  // Rank 1 was slow for the first 15 iterations only.
  auto slow = testing::make_traces(
      {.ranks = 2, .iterations = 20, .slow_rank = 1, .slow_ms = 100, .synchronous = false});
  auto fast = testing::make_traces({.ranks = 2, .iterations = 20});
  builder.on_traces(slow[0]);
  // Rank 1: the slow run's iterations 1..15 and the fast run's 16..20.
  auto keep = [](opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request,
                 auto wanted) {
    auto* spans = request.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans();
    std::set<std::string> steps;  // trace ids of the wanted steps (each step is a trace root)
    for (const auto& span : *spans) {
      if (span.name() != "megatron.train_step") continue;
      for (const auto& attribute : span.attributes()) {
        if (attribute.key() == "megatron.iteration" && wanted(attribute.value().int_value())) {
          steps.insert(span.trace_id());
        }
      }
    }
    for (int i = spans->size() - 1; i >= 0; --i) {
      if (steps.count(spans->Get(i).trace_id()) == 0) spans->DeleteSubrange(i, 1);
    }
    return request;
  };
  builder.on_traces(keep(slow[1], [](std::int64_t i) { return i <= 15; }));
  builder.on_traces(keep(fast[1], [](std::int64_t i) { return i > 15; }));
  const RunData data = builder.take();
  const auto all = analyze(data, {});
  EXPECT_EQ(straggler_lines(all.stragglers).at(0).rfind("straggler: rank 1 ", 0), 0u);
  const auto recent = analyze(data, {.threshold = 0.10, .window = 5});
  EXPECT_EQ(recent.stragglers.iterations, (std::vector<std::int64_t>{16, 17, 18, 19, 20}));
  EXPECT_EQ(straggler_lines(recent.stragglers), Lines{"stragglers: none (threshold 10%)"});
}

TEST(ReportStragglers, PercentText) {
  EXPECT_EQ(percent_text(0.10), "10%");
  EXPECT_EQ(percent_text(0.125), "12.5%");
  EXPECT_EQ(percent_text(2), "200%");
}

}  // namespace
}  // namespace lens::report
