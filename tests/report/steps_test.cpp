// The step phase split: exclusive time per phase adds up to the step, communication nested in
// forward_backward counts once, steps found as trace roots or as children, repeated iterations.
#include "report/steps.hpp"

#include <gtest/gtest.h>

#include "report/run_builder.hpp"
#include "report_fixtures.hpp"

namespace lens::report {
namespace {

using testing::RunSpec;

RunData build(const RunSpec& spec) {
  RunBuilder builder;
  for (const auto& request : testing::make_traces(spec)) builder.on_traces(request);
  return builder.take();
}

void expect_fast_step(const Step& step) {
  EXPECT_DOUBLE_EQ(step.duration_ms, 290.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::forward_backward)], 180.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::data_loading)], 10.0);
  // The gradient sync (25 ms); the pipeline send inside forward_backward has its own phase.
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::communication)], 25.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::pipeline)], 10.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::optimizer)], 50.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::other)], 15.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::checkpoint)], 0.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::evaluation)], 0.0);
}

TEST(ReportSteps, StepsThatAreTraceRootsSplitIntoExclusivePhaseTimes) {
  const RunData data = build({.ranks = 1, .iterations = 3});
  const RankSteps steps = find_steps(data.ranks.at(0));
  ASSERT_EQ(steps.steps.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(steps.steps[static_cast<std::size_t>(i)].iteration, i + 1);
    expect_fast_step(steps.steps[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(steps.repeated, 0u);
  EXPECT_EQ(steps.without_iteration, 0u);
}

TEST(ReportSteps, StepsUnderMegatronTrainSplitTheSameWay) {
  const RunData data = build({.ranks = 1, .iterations = 2, .steps_are_roots = false});
  const RankSteps steps = find_steps(data.ranks.at(0));
  ASSERT_EQ(steps.steps.size(), 2u);
  expect_fast_step(steps.steps[0]);
  expect_fast_step(steps.steps[1]);
}

TEST(ReportSteps, PhaseTimesAddUpToTheStepDuration) {
  const RunData data = build({.ranks = 4, .iterations = 4, .slow_rank = 1, .slow_ms = 37.5});
  for (const auto& [rank, rank_data] : data.ranks) {
    for (const Step& step : find_steps(rank_data).steps) {
      double total = 0.0;
      for (const double ms : step.phase_ms) total += ms;
      EXPECT_NEAR(total, step.duration_ms, 1e-9) << "rank " << rank;
    }
  }
}

TEST(ReportSteps, TheSlowPhaseAndTheWaitLandInTheirPhases) {
  const RunData data = build({.ranks = 2, .iterations = 1, .slow_rank = 1, .slow_ms = 100});
  const Step slow = find_steps(data.ranks.at(1)).steps.at(0);
  EXPECT_DOUBLE_EQ(slow.duration_ms, 390.0);
  EXPECT_DOUBLE_EQ(slow.phase_ms[index_of(Phase::forward_backward)], 280.0);
  EXPECT_DOUBLE_EQ(slow.phase_ms[index_of(Phase::communication)], 25.0);
  const Step fast = find_steps(data.ranks.at(0)).steps.at(0);
  EXPECT_DOUBLE_EQ(fast.duration_ms, 390.0);
  EXPECT_DOUBLE_EQ(fast.phase_ms[index_of(Phase::forward_backward)], 180.0);
  EXPECT_DOUBLE_EQ(fast.phase_ms[index_of(Phase::communication)], 125.0);
  EXPECT_DOUBLE_EQ(fast.phase_ms[index_of(Phase::pipeline)], 10.0);
}

TEST(ReportSteps, PhaseSpansForTheTimelineAreThoseThatChangePhase) {
  const RunData data = build({.ranks = 1, .iterations = 1});
  const RankData& rank = data.ranks.at(0);
  const Step step = find_steps(rank).steps.at(0);
  std::vector<std::string> names;
  for (const auto& [index, phase] : step.phase_spans) names.push_back(rank.spans[index].name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"megatron.forward_backward", "megatron.data.next_batch",
                                      "megatron.p2p.send_forward", "megatron.grad_sync.start",
                                      "megatron.grad_sync.finish", "megatron.optimizer_step"}));
}

TEST(ReportSteps, CheckpointAndEvaluationOutsideStepsAreCounted) {
  const RunData data = build({.ranks = 1, .iterations = 10});
  const RankSteps steps = find_steps(data.ranks.at(0));
  EXPECT_DOUBLE_EQ(steps.outside_ms[index_of(Phase::evaluation)], 6.0);
  EXPECT_DOUBLE_EQ(steps.outside_ms[index_of(Phase::checkpoint)], 50.0);
  EXPECT_EQ(steps.outside_spans.size(), 2u);
}

TEST(ReportSteps, TheNextStepCarriesTheEvaluationBetweenSteps) {
  // The evaluation (6 ms) runs after step 10: step 11 carries it; the idle rest of the gap and
  // the checkpoint after the last step are on no step.
  const RankSteps steps = find_steps(build({.ranks = 1, .iterations = 12}).ranks.at(0));
  ASSERT_EQ(steps.steps.size(), 12u);
  for (const Step& step : steps.steps) {
    const double evaluation = *step.iteration == 11 ? 6.0 : 0.0;
    EXPECT_DOUBLE_EQ(step.gap_ms[index_of(Phase::evaluation)], evaluation) << *step.iteration;
    EXPECT_DOUBLE_EQ(step.gap_ms[index_of(Phase::checkpoint)], 0.0);
    EXPECT_DOUBLE_EQ(step.gap_ms[index_of(Phase::other)], 0.0);
  }
}

TEST(ReportSteps, ARepeatedIterationKeepsItsLatestRun) {
  RunData data = build({.ranks = 1, .iterations = 2});
  RankData& rank = data.ranks.at(0);
  // A restart re-runs iteration 2 later and faster.
  SpanRecord again = rank.spans.at(0);
  again.name = kStepSpanName;
  again.trace_id = std::string(32, 'a');
  again.span_id = std::string(16, 'b');
  again.parent_span_id.clear();
  again.start_ns = testing::kOriginNs + testing::step_offset_ns(5);
  again.end_ns = again.start_ns + 100 * testing::kMs;
  again.attributes = {{"megatron.iteration", 2}};
  rank.spans.push_back(again);
  const RankSteps steps = find_steps(rank);
  ASSERT_EQ(steps.steps.size(), 2u);
  EXPECT_EQ(steps.repeated, 1u);
  EXPECT_EQ(steps.steps[1].iteration, 2);
  EXPECT_DOUBLE_EQ(steps.steps[1].duration_ms, 100.0);
  EXPECT_DOUBLE_EQ(steps.steps[1].phase_ms[index_of(Phase::other)], 100.0);
}

TEST(ReportSteps, OverlappingSiblingsCountTheOverlapOnce) {
  RankData rank;
  auto span = [&](const std::string& id, const std::string& parent, const std::string& name,
                  std::int64_t start_ms, std::int64_t end_ms) {
    SpanRecord s;
    s.trace_id = "t";
    s.span_id = id;
    s.parent_span_id = parent;
    s.name = name;
    s.start_ns = start_ms * testing::kMs;
    s.end_ns = end_ms * testing::kMs;
    rank.spans.push_back(s);
  };
  span("1", "", kStepSpanName, 0, 100);
  span("2", "1", "megatron.forward_backward", 0, 60);
  span("3", "1", "megatron.grad_sync.finish", 40, 90);  // overlaps the backward pass
  const Step step = find_steps(rank).steps.at(0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::forward_backward)], 60.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::communication)], 30.0);
  EXPECT_DOUBLE_EQ(step.phase_ms[index_of(Phase::other)], 10.0);
  EXPECT_FALSE(step.iteration.has_value());
}

}  // namespace
}  // namespace lens::report
