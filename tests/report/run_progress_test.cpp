// `lens run`'s progress: the iteration every rank reached, and the rank the others wait for —
// the one with the most work outside communication, not the one with the lowest iteration or
// the longest step (in a synchronous run all steps last the same).
#include "run/run_progress.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "report_fixtures.hpp"

namespace lens::cli {
namespace {

using nlohmann::json;

json int_attribute(const std::string& key, std::int64_t value) {
  return {{"key", key}, {"value", {{"intValue", std::to_string(value)}}}};
}

json span(const std::string& name, const std::string& trace, std::int64_t start_ms,
          std::int64_t end_ms, std::optional<std::int64_t> iteration = std::nullopt) {
  constexpr std::int64_t kOrigin = 1'700'000'000'000'000'000;
  json out = {{"traceId", trace},
              {"spanId", "0000000000000001"},
              {"name", name},
              {"startTimeUnixNano", std::to_string(kOrigin + start_ms * 1'000'000)},
              {"endTimeUnixNano", std::to_string(kOrigin + end_ms * 1'000'000)}};
  if (iteration) out["attributes"] = json::array({int_attribute("megatron.iteration", *iteration)});
  return out;
}

// One traces.jsonl line per rank and iteration of a synchronous run: every step lasts 40 ms;
// rank `slow` computes 30 ms and waits 0, the others compute 30 - `lag` and wait `lag`.
void append_iteration(const std::filesystem::path& file, int ranks, int iteration, int slow,
                      std::int64_t lag) {
  std::ofstream out(file, std::ios::app);
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string trace = std::string(31, '0') + std::to_string(iteration % 10);
    const std::int64_t start = iteration * 100;
    const std::int64_t wait = rank == slow ? 1 : lag + 1;
    json resource = {{"attributes", json::array({int_attribute("dl.rank", rank),
                                                 int_attribute("megatron.train_iters", 50)})}};
    json spans = json::array({span("megatron.grad_sync.finish", trace, start + 30, start + 30 + wait),
                              span("megatron.train_step", trace, start, start + 40, iteration)});
    out << json{{"resourceSpans",
                 json::array({{{"resource", resource},
                               {"scopeSpans", json::array({{{"spans", spans}}})}}})}}
               .dump()
        << "\n";
  }
}

TEST(RunProgress, NamesTheRankTheOthersWaitFor) {
  const lens::report::testing::TempDir dir("run_progress_wait");
  const auto file = dir.path() / "traces.jsonl";
  RunProgress progress(file, 4);
  progress.update();
  EXPECT_EQ(progress.bar(80), "waiting for the first step of every rank");
  for (int i = 1; i <= 12; ++i) append_iteration(file, 4, i, 2, 12);
  progress.update();
  EXPECT_EQ(progress.slowest_iteration(), 12);
  ASSERT_TRUE(progress.waited_for().has_value());
  EXPECT_EQ(progress.waited_for()->rank, 2);
  EXPECT_DOUBLE_EQ(progress.waited_for()->excess_ms, 12.0);
  EXPECT_EQ(progress.line_if_changed(),
            "lens run: iteration 12/50 (waiting for rank 2: +12.0 ms per step)");
  EXPECT_EQ(progress.line_if_changed(), "");
  EXPECT_EQ(progress.bar(120),
            "[#########-------------------------------] 12/50 iterations (waiting for rank 2: "
            "+12.0 ms per step)");
}

TEST(RunProgress, ABalancedRunNamesNoRank) {
  const lens::report::testing::TempDir dir("run_progress_balanced");
  const auto file = dir.path() / "traces.jsonl";
  RunProgress progress(file, 3);
  // A lag under max(1 ms, 5% of the 40 ms step) is noise.
  for (int i = 1; i <= 5; ++i) append_iteration(file, 3, i, 0, 1);
  progress.update();
  EXPECT_FALSE(progress.waited_for().has_value());
  EXPECT_EQ(progress.line_if_changed(), "lens run: iteration 5/50");
}

TEST(RunProgress, TheLowestIterationIsNotTheRankWaitedFor) {
  const lens::report::testing::TempDir dir("run_progress_lowest");
  const auto file = dir.path() / "traces.jsonl";
  RunProgress progress(file, 2);
  for (int i = 1; i <= 6; ++i) append_iteration(file, 2, i, 1, 10);
  append_iteration(file, 1, 7, 1, 10);  // rank 0's export of iteration 7 arrived first
  progress.update();
  EXPECT_EQ(progress.slowest_iteration(), 6);
  ASSERT_TRUE(progress.waited_for().has_value());
  EXPECT_EQ(progress.waited_for()->rank, 1);
}

}  // namespace
}  // namespace lens::cli
