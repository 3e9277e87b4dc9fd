// Stall attribution's sensitivity and blame (docs/report.md, "Stall attribution"): a seeded
// evaluation on hard synthetic runs (1-3 ms of per-step noise on the ~20 ms phase, 2-16 ms
// faults that start and stop mid-run, 4-256 ranks, two slow ranks, balanced runs) with its exact
// counts, the false-alarm rate on many balanced runs, and the groups: a slow node, a slow
// pipeline stage, a slow tensor-parallel group named once, a single slow rank still a rank.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "report/analysis.hpp"
#include "report/html_writer.hpp"
#include "report/rank_selection.hpp"
#include "report/stall_attribution.hpp"
#include "report/summary.hpp"
#include "report/summary_json.hpp"
#include "report_test_support.hpp"
#include "synthetic_runs.hpp"

namespace lens::report {
namespace {

using testing::InjectedStall;
using testing::SyntheticRun;

StallResult sensitivity_attribute(const SyntheticRun& spec, const StallOptions& options = {}) {
  const RunData data = testing::make_synthetic_run(spec);
  std::map<int, RankSteps> steps;
  for (const auto& [rank, rank_data] : data.ranks) steps.emplace(rank, find_steps(rank_data));
  return attribute_stalls(steps, rank_coordinates(data.ranks), options);
}

// The attribution's only suspect; when there is not exactly one, a test failure that lists them
// and an empty suspect, which fails the caller's own checks.
StallSuspect only_suspect(const StallResult& result) {
  if (result.suspects.size() == 1) return result.suspects[0];
  ADD_FAILURE() << result.suspects.size()
                << " suspects: " << ::testing::PrintToString(stall_lines(result));
  return StallSuspect{};
}

// Whether (rank, phase) is among the first `top` suspects.
bool in_top(const StallResult& result, int rank, Phase phase, std::size_t top) {
  for (std::size_t i = 0; i < result.suspects.size() && i < top; ++i) {
    const StallSuspect& s = result.suspects[i];
    if (s.phase == phase && std::find(s.ranks.begin(), s.ranks.end(), rank) != s.ranks.end()) {
      return true;
    }
  }
  return false;
}

// The hard set: ranks 4-256, 1-3 ms of noise per step on forward_backward (20 ms), one fault of
// 2-16 ms lasting 40-120 of 160 iterations (starting and stopping anywhere), or two at once.
SyntheticRun hard_case(std::uint64_t seed, int slow_ranks) {
  std::mt19937_64 random(seed);
  const auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(random);
  };
  const auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(random);
  };
  static const int kRanks[] = {4, 8, 16, 32, 64, 128, 256};
  static const Phase kPhases[] = {Phase::data_loading, Phase::forward_backward, Phase::optimizer};
  SyntheticRun spec;
  spec.seed = seed;
  spec.ranks = kRanks[pick(slow_ranks == 2 ? 1 : 0, 6)];
  spec.iterations = 160;
  spec.forward_backward_ms = 20.0;
  spec.noise_ms = uniform(1.0, 3.0);
  for (int s = 0; s < slow_ranks; ++s) {
    InjectedStall stall;
    do {
      stall.rank = pick(0, spec.ranks - 1);
    } while (s == 1 && stall.rank == spec.stalls[0].rank);
    stall.phase = kPhases[pick(0, 2)];
    stall.ms = uniform(2.0, 16.0);
    const int length = pick(40, 120);
    stall.from = pick(1, spec.iterations - length + 1);
    stall.to = stall.from + length - 1;
    spec.stalls.push_back(stall);
  }
  return spec;
}

struct Tally {
  int hits = 0;
  int runs = 0;
};

// Runs `count` cases from `first_seed`: a hit when every injected (rank, phase) is in the top
// `top` suspects (balanced: when there is no suspect).
Tally evaluate(std::uint64_t first_seed, int count, int slow_ranks, std::size_t top) {
  Tally tally;
  for (int i = 0; i < count; ++i) {
    const SyntheticRun spec = hard_case(first_seed + static_cast<std::uint64_t>(i), slow_ranks);
    const StallResult result = sensitivity_attribute(spec);
    bool hit = slow_ranks > 0 || result.suspects.empty();
    for (const InjectedStall& stall : spec.stalls) {
      hit = hit && in_top(result, stall.rank, stall.phase, top);
    }
    ++tally.runs;
    if (hit) {
      ++tally.hits;
    } else {
      std::cout << (slow_ranks > 0 ? "missed: " : "false alarm: ") << testing::describe(spec)
                << "; suspects: " << ::testing::PrintToString(stall_lines(result)) << "\n";
    }
  }
  return tally;
}

TEST(ReportStallSensitivity, FindsSmallSingleStragglersUnderNoise) {
  const Tally tally = evaluate(32000, 45, 1, 2);
  EXPECT_EQ(tally.runs, 45);
  // Measured on these seeds (BENCHMARKS.md); the issue's goal is at least 44.
  EXPECT_EQ(tally.hits, 45);
}

TEST(ReportStallSensitivity, FindsBothOfTwoSlowRanksInTheTopThree) {
  const Tally tally = evaluate(33000, 15, 2, 3);
  EXPECT_EQ(tally.runs, 15);
  EXPECT_EQ(tally.hits, 15);
}

TEST(ReportStallSensitivity, BalancedNoisyRunsStayQuiet) {
  const Tally tally = evaluate(34000, 15, 0, 0);
  EXPECT_EQ(tally.runs, 15);
  EXPECT_EQ(tally.hits, 15);
}

TEST(ReportStallSensitivity, TheFalseAlarmRateHoldsOnManyBalancedRuns) {
  // 200 balanced 8-rank runs at 3 ms of noise: at a 1% false-alarm rate per run, about 2 could
  // show a suspect; the Bonferroni bound is conservative.
  int alarms = 0;
  for (int i = 0; i < 200; ++i) {
    const SyntheticRun spec{.seed = 35000 + static_cast<std::uint64_t>(i),
                            .ranks = 8,
                            .iterations = 80,
                            .noise_ms = 3.0};
    const StallResult result = sensitivity_attribute(spec);
    if (!result.suspects.empty()) {
      ++alarms;
      std::cout << "false alarm: " << testing::describe(spec) << "; "
                << ::testing::PrintToString(stall_lines(result)) << "\n";
    }
  }
  EXPECT_EQ(alarms, 0);
}

TEST(ReportStallSensitivity, ReportsTheExcessWithItsConfidenceInterval) {
  // 8 ranks, 2 ms of noise, rank 5 +3 ms in forward_backward in iterations 41-120 of 160.
  const SyntheticRun spec{
      .seed = 36001,
      .ranks = 8,
      .iterations = 160,
      .noise_ms = 2.0,
      .stalls = {{.rank = 5, .phase = Phase::forward_backward, .ms = 3.0, .from = 41, .to = 120}}};
  const StallResult result = sensitivity_attribute(spec);
  const StallSuspect suspect = only_suspect(result);
  EXPECT_EQ(suspect.kind, SuspectKind::rank);
  EXPECT_EQ(suspect.rank, 5);
  EXPECT_EQ(suspect.phase, Phase::forward_backward);
  EXPECT_NEAR(suspect.first_iteration, 41, 3);
  EXPECT_NEAR(suspect.last_iteration, 120, 3);
  EXPECT_LT(suspect.ci_low_ms, 3.0);
  EXPECT_GT(suspect.ci_high_ms, 3.0);
  EXPECT_NEAR(suspect.ci_high_ms - suspect.ci_low_ms, 2 * 1.96 * 2.0 / std::sqrt(80.0), 0.25);
  EXPECT_GE(suspect.z, result.z_critical);
  EXPECT_EQ(result.false_alarm_rate, 0.01);
  EXPECT_GT(result.tests, 1000u);
  // A practical floor above the excess silences it; a laxer false-alarm rate lowers the bar.
  EXPECT_TRUE(sensitivity_attribute(spec, {.min_excess = 0.2}).suspects.empty());
  EXPECT_LT(sensitivity_attribute(spec, {.false_alarm_rate = 0.2}).z_critical, result.z_critical);
}

SyntheticRun grouped(int ranks, int per_host, int tensor, int pipeline) {
  return {.seed = 37001,
          .ranks = ranks,
          .iterations = 80,
          .noise_ms = 1.0,
          .ranks_per_host = per_host,
          .tensor_size = tensor,
          .pipeline_size = pipeline};
}

void slow(SyntheticRun& spec, int first, int last, Phase phase, double ms, int from) {
  for (int r = first; r <= last; ++r) {
    spec.stalls.push_back({.rank = r, .phase = phase, .ms = ms, .from = from});
  }
}

TEST(ReportStallGroups, ASlowNodeIsNamedOnce) {
  SyntheticRun spec = grouped(32, 8, 1, 1);
  slow(spec, 8, 15, Phase::data_loading, 3.0, 40);
  const StallResult result = sensitivity_attribute(spec);
  const StallSuspect node = only_suspect(result);
  EXPECT_EQ(node.kind, SuspectKind::node);
  EXPECT_EQ(node.group, "node gpu-b");
  EXPECT_EQ(node.ranks, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(node.phase, Phase::data_loading);
  EXPECT_EQ(node.first_iteration, 40);
  EXPECT_EQ(node.last_iteration, 80);
  EXPECT_NEAR(node.excess_ms_per_step, 3.0, 0.3);
  const std::string sentence = suspect_sentence(node, result);
  EXPECT_EQ(sentence.rfind("node gpu-b (ranks 8-15): +", 0), 0u) << sentence;
  EXPECT_NE(sentence.find(" ms per step in data_loading from iteration 40 on; the other ranks "
                          "wait for them in communication ("),
            std::string::npos)
      << sentence;
}

TEST(ReportStallGroups, TheSummaryJsonAndThePageSayTheSame) {
  SyntheticRun spec = grouped(32, 8, 1, 1);
  slow(spec, 8, 15, Phase::data_loading, 3.0, 40);
  const RunAnalysis analysis = analyze(testing::make_synthetic_run(spec), {});
  const StallSuspect node = only_suspect(analysis.stalls);
  const nlohmann::json json = summary_json(analysis);
  ASSERT_EQ(json["suspects"].size(), 1u);
  const nlohmann::json& suspect = json["suspects"][0];
  EXPECT_EQ(suspect["kind"], "node");
  EXPECT_EQ(suspect["rank"], nullptr);
  EXPECT_EQ(suspect["ranks"], nlohmann::json({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(suspect["group"], "node gpu-b");
  EXPECT_EQ(suspect["phase"], "data_loading");
  EXPECT_EQ(suspect["ci_ms"].size(), 2u);
  EXPECT_LT(suspect["ci_ms"][0].get<double>(), suspect["excess_ms_per_step"].get<double>());
  EXPECT_GT(suspect["ci_ms"][1].get<double>(), suspect["excess_ms_per_step"].get<double>());
  EXPECT_EQ(suspect["sentence"], suspect_sentence(node, analysis.stalls));
  EXPECT_EQ(json["suspect_test"]["false_alarm_rate"], 0.01);
  EXPECT_EQ(json["suspect_test"]["windows_tested"], analysis.stalls.tests);
  // The terminal's first line and the page's table name the node once.
  EXPECT_EQ(summary_lines(analysis).at(0), suspect_sentence(node, analysis.stalls));
  HtmlContext context;
  context.summary_lines = summary_lines(analysis);
  EXPECT_NE(testing::html_page(analysis, context)
                .find("<tr class=\"straggler\"><td>node gpu-b: ranks 8-15</td>"
                      "<td>data_loading</td>"),
            std::string::npos);
}

TEST(ReportStallGroups, ALargeRunKeepsFourRanksOfASlowNodeInTheTrace) {
  SyntheticRun spec = grouped(64, 8, 1, 1);
  spec.iterations = 40;
  slow(spec, 8, 15, Phase::forward_backward, 4.0, 1);
  const RunAnalysis analysis = analyze(testing::make_synthetic_run(spec), {});
  ASSERT_EQ(analysis.stalls.suspects.size(), 1u);
  const RankSelection selection = select_ranks(analysis, RankSelectionLimits{}, false);
  EXPECT_FALSE(selection.all);
  EXPECT_EQ(selection.suspects, (std::vector<int>{8, 9, 10, 11}));
}

TEST(ReportStallGroups, ASlowRankInsideANodeIsStillARank) {
  SyntheticRun spec = grouped(32, 8, 1, 1);
  slow(spec, 10, 10, Phase::forward_backward, 4.0, 1);
  const StallResult result = sensitivity_attribute(spec);
  const StallSuspect suspect = only_suspect(result);
  EXPECT_EQ(suspect.kind, SuspectKind::rank);
  EXPECT_EQ(suspect.rank, 10);
  EXPECT_EQ(suspect.ranks, std::vector<int>{10});
}

TEST(ReportStallGroups, ASlowPipelineStageIsNamedAndTheOthersWaitInPipelineReceives) {
  // 16 ranks as TP 2 x DP 2 x PP 4; stage 2 is ranks 8-11, 8.4 ms slower in forward_backward;
  // the other stages of each pipeline wait for it in megatron.p2p.recv_forward.
  SyntheticRun spec = grouped(16, 0, 2, 4);
  spec.pipeline_waits = true;
  slow(spec, 8, 11, Phase::forward_backward, 8.4, 1);
  const StallResult result = sensitivity_attribute(spec);
  const StallSuspect stage = only_suspect(result);
  EXPECT_EQ(stage.kind, SuspectKind::stage);
  EXPECT_EQ(stage.group, "pipeline stage 2 of 4");
  EXPECT_EQ(stage.ranks, (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(stage.wait_phase, Phase::pipeline);
  EXPECT_EQ(stage.other_stages, (std::vector<std::int64_t>{0, 1, 3}));
  const std::string sentence = suspect_sentence(stage, result);
  // The others' median in each iteration sits a little above the fast stages' median.
  EXPECT_NEAR(stage.excess_ms_per_step, 8.4, 0.8);
  EXPECT_EQ(sentence.rfind("pipeline stage 2 of 4 (ranks 8-11): +", 0), 0u) << sentence;
  EXPECT_NE(sentence.find(" ms per step in forward_backward from iteration 1 on; stages 0, 1, 3 "
                          "wait in pipeline receives ("),
            std::string::npos)
      << sentence;
  // Per stage: the slow stage computes ~8.4 ms more and waits ~0; the others wait ~8.4 ms.
  ASSERT_EQ(result.stages.size(), 4u);
  for (const StageTime& time : result.stages) {
    EXPECT_EQ(time.stages, 4);
    EXPECT_EQ(time.ranks.size(), 4u);
    if (time.stage == 2) {
      EXPECT_NEAR(time.compute_ms - result.stages[0].compute_ms, 8.4, 1.0);
      EXPECT_NEAR(time.bubble_ms, 0.0, 0.5);
    } else {
      EXPECT_NEAR(time.bubble_ms, 8.4, 1.5) << "stage " << time.stage;
    }
  }
}

TEST(ReportStallGroups, TheStagesGoToSummaryJsonAndThePage) {
  SyntheticRun spec = grouped(8, 0, 1, 2);
  spec.noise_ms = 0.0;
  spec.noise = 0.0;
  spec.shared_noise = 0.0;
  spec.spike_probability = 0.0;
  spec.pipeline_waits = true;
  slow(spec, 4, 7, Phase::forward_backward, 6.0, 1);
  const RunAnalysis analysis = analyze(testing::make_synthetic_run(spec), {});
  // 22 ms forward_backward, 3 data, 4 optimizer, 1 untraced: 30 ms of compute; stage 1 has 6
  // more, stage 0 waits 6 in pipeline receives; every step lasts 39 ms (3 ms all-reduce).
  EXPECT_EQ(summary_json(analysis)["stages"], nlohmann::json::parse(R"json([
      {"stage": 0, "stages": 2, "ranks": [0, 1, 2, 3], "step_ms": 39.0, "compute_ms": 30.0,
       "bubble_ms": 6.0},
      {"stage": 1, "stages": 2, "ranks": [4, 5, 6, 7], "step_ms": 39.0, "compute_ms": 36.0,
       "bubble_ms": 0.0}])json"));
  EXPECT_EQ(stall_lines(analysis.stalls),
            std::vector<std::string>{
                "pipeline stage 1 of 2 (ranks 4-7): +6.0 ms per step in forward_backward from "
                "iteration 1 on; stage 0 waits in pipeline receives (15% of the run; 95% CI +6.0 "
                "to +6.0 ms)"});
  EXPECT_NE(testing::html_page(analysis).find(
                "<tr><td>0 of 2</td><td>0-3</td><td class=\"num\">39.0</td>"
                "<td class=\"num\">30.0</td><td class=\"num\">6.0</td></tr>"),
            std::string::npos);
}

TEST(ReportStallGroups, ABalancedPipelineRunIsQuiet) {
  SyntheticRun spec = grouped(16, 4, 2, 4);
  spec.pipeline_waits = true;
  const StallResult result = sensitivity_attribute(spec);
  EXPECT_TRUE(result.suspects.empty()) << ::testing::PrintToString(stall_lines(result));
  EXPECT_EQ(result.stages.size(), 4u);
}

TEST(ReportStallGroups, ASlowTensorParallelGroupIsNamed) {
  // 16 ranks as TP 2 x DP 4 x PP 2: ranks 2 and 3 are the tensor-parallel group of DP rank 1,
  // stage 0.
  SyntheticRun spec = grouped(16, 0, 2, 2);
  slow(spec, 2, 3, Phase::optimizer, 3.0, 1);
  const StallResult result = sensitivity_attribute(spec);
  const StallSuspect suspect = only_suspect(result);
  EXPECT_EQ(suspect.kind, SuspectKind::group);
  EXPECT_EQ(suspect.group, "tensor-parallel group [dp 1, pp 0]");
  EXPECT_EQ(suspect.ranks, (std::vector<int>{2, 3}));
}

TEST(ReportStallGroups, ANodeThatIsAlsoAStageSaysSo) {
  // 8 ranks, 2 hosts of 4, PP 2 (TP 1, DP 4): host gpu-b is stage 1.
  SyntheticRun spec = grouped(8, 4, 1, 2);
  spec.noise_ms = 0.0;
  spec.noise = 0.0;
  spec.shared_noise = 0.0;
  spec.spike_probability = 0.0;
  slow(spec, 4, 7, Phase::forward_backward, 3.0, 21);
  const StallResult result = sensitivity_attribute(spec);
  const StallSuspect suspect = only_suspect(result);
  EXPECT_EQ(suspect.kind, SuspectKind::node);
  EXPECT_EQ(suspect.also, "pipeline stage 1 of 2");
  EXPECT_EQ(stall_lines(result),
            std::vector<std::string>{
                "node gpu-b (ranks 4-7; also pipeline stage 1 of 2): +3.0 ms per step in "
                "forward_backward from iteration 21 on; the other ranks wait for them in "
                "communication (6.4% of the run; 95% CI +3.0 to +3.0 ms)"});
}

TEST(ReportStallGroups, ASlowNodeAndASlowRankElsewhereAreBothNamed) {
  SyntheticRun spec = grouped(32, 8, 1, 1);
  slow(spec, 24, 31, Phase::forward_backward, 6.0, 1);
  slow(spec, 3, 3, Phase::data_loading, 4.0, 41);
  const StallResult result = sensitivity_attribute(spec);
  ASSERT_EQ(result.suspects.size(), 2u) << ::testing::PrintToString(stall_lines(result));
  EXPECT_EQ(result.suspects[0].group, "node gpu-d");
  EXPECT_EQ(result.suspects[1].kind, SuspectKind::rank);
  EXPECT_EQ(result.suspects[1].rank, 3);
  EXPECT_EQ(result.suspects[1].phase, Phase::data_loading);
}

// Seeded group cases: a slow node (hosts of 8, 16-128 ranks) or a slow pipeline stage (PP 2 or
// 4, the other stages waiting in pipeline receives), 2-6 ms for 40-120 of 160 iterations under
// 1-3 ms of noise; or the same layouts balanced.
struct GroupCase {
  SyntheticRun spec;
  std::string group;  // the expected top suspect's group ("" for a balanced run)
  std::vector<int> ranks;
};

GroupCase group_case(std::uint64_t seed, int kind) {  // 0 node, 1 stage, 2 balanced
  std::mt19937_64 random(seed);
  const auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(random);
  };
  GroupCase out;
  SyntheticRun& spec = out.spec;
  spec.seed = seed;
  spec.iterations = 160;
  spec.forward_backward_ms = 20.0;
  spec.noise_ms = std::uniform_real_distribution<double>(1.0, 3.0)(random);
  const bool stage = kind == 1 || (kind == 2 && pick(0, 1) == 1);
  static const int kRanks[] = {16, 32, 64, 128};
  spec.ranks = kRanks[pick(0, 3)];
  spec.ranks_per_host = 8;
  spec.tensor_size = 1;
  spec.pipeline_size = stage ? (pick(0, 1) == 0 ? 2 : 4) : 1;
  spec.pipeline_waits = stage;
  if (kind == 2) return out;
  const double ms = std::uniform_real_distribution<double>(2.0, 6.0)(random);
  const int length = pick(40, 120);
  const int from = pick(1, spec.iterations - length + 1);
  int first = 0, count = 0;
  Phase phase = Phase::forward_backward;
  if (stage) {
    const int k = pick(0, spec.pipeline_size - 1);
    count = spec.ranks / spec.pipeline_size;
    first = k * count;
    out.group = "pipeline stage " + std::to_string(k) + " of " + std::to_string(spec.pipeline_size);
  } else {
    static const Phase kPhases[] = {Phase::data_loading, Phase::forward_backward, Phase::optimizer};
    phase = kPhases[pick(0, 2)];
    const int host = pick(0, spec.ranks / 8 - 1);
    first = host * 8;
    count = 8;
    out.group = "node " + testing::host_name(host);
  }
  for (int r = first; r < first + count; ++r) {
    spec.stalls.push_back(
        {.rank = r, .phase = phase, .ms = ms, .from = from, .to = from + length - 1});
    out.ranks.push_back(r);
  }
  return out;
}

Tally evaluate_groups(std::uint64_t first_seed, int count, int kind) {
  Tally tally;
  for (int i = 0; i < count; ++i) {
    const GroupCase c = group_case(first_seed + static_cast<std::uint64_t>(i), kind);
    const StallResult result = sensitivity_attribute(c.spec);
    const bool hit = kind == 2 ? result.suspects.empty()
                               : !result.suspects.empty() &&
                                     (result.suspects[0].group == c.group ||
                                      result.suspects[0].also == c.group) &&
                                     result.suspects[0].ranks == c.ranks;
    ++tally.runs;
    if (hit) {
      ++tally.hits;
    } else {
      std::cout << "group case " << kind << " " << c.group << ": " << testing::describe(c.spec)
                << "; suspects: " << ::testing::PrintToString(stall_lines(result)) << "\n";
    }
  }
  return tally;
}

TEST(ReportStallGroups, SeededSlowNodesAreNamedFirst) {
  const Tally tally = evaluate_groups(38000, 15, 0);
  EXPECT_EQ(tally.hits, 15);
}

TEST(ReportStallGroups, SeededSlowStagesAreNamedFirst) {
  const Tally tally = evaluate_groups(39000, 15, 1);
  EXPECT_EQ(tally.hits, 15);
}

TEST(ReportStallGroups, SeededBalancedGroupedRunsStayQuiet) {
  const Tally tally = evaluate_groups(40000, 15, 2);
  EXPECT_EQ(tally.hits, 15);
}

TEST(ReportStallGroups, RankRanges) {
  EXPECT_EQ(rank_ranges({0, 1, 2, 3, 8, 10, 11}), "0-3, 8, 10-11");
  EXPECT_EQ(rank_ranges({5}), "5");
  EXPECT_EQ(rank_ranges({}), "");
}

}  // namespace
}  // namespace lens::report
