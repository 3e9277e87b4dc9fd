// The hang reports of a run (HANG_TIMEOUT, docs/configuration.md): the log records `lens.hang`
// (a rank found no step finished for its timeout; its stuck thread's open spans) and
// `lens.hang.resumed` (a step finished again) that each rank exports, read from OTLP JSON log
// lines. `lens run` follows logs.jsonl with it while the ranks hang; `lens report` reads
// DIR/logs.jsonl for the page's "Hangs" section and summary.json's "hangs".
// Not thread-safe (one reader).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lens::report {

struct OpenSpanAge {
  std::string name;
  double open_s = 0.0;
};

// A rank's newest hang report and, once a step finished again, how the episode ended.
struct RankHang {
  int rank = 0;
  std::int64_t time_ns = 0;  // when the report was made (Unix ns)
  int report = 1;            // 1, then 2, 3... for the repeats of one episode
  double stalled_s = 0.0;    // no step for this long when reported
  double timeout_s = 0.0;
  std::int64_t steps = 0;            // steps finished before the hang
  std::vector<OpenSpanAge> stack;    // the stuck thread's open spans, outermost first
  std::vector<std::string> others;   // the other threads' stacks, as text
  bool resumed = false;
  double resumed_after_s = 0.0;  // the whole gap, when resumed
};

class HangLog {
 public:
  // Only records whose resource has nemo.run.id `run_id`, when given.
  explicit HangLog(std::optional<std::string> run_id = std::nullopt)
      : run_id_(std::move(run_id)) {}

  // One OTLP JSON ExportLogsServiceRequest line; other lines are ignored.
  void consume_line(std::string_view line);
  // Every line of `path` (nothing when it does not exist).
  void consume_file(const std::filesystem::path& path);

  // Per rank, its newest episode.
  const std::map<int, RankHang>& ranks() const { return ranks_; }
  // Hang and resumption records consumed so far.
  std::uint64_t records() const { return records_; }

 private:
  std::optional<std::string> run_id_;
  std::map<int, RankHang> ranks_;
  std::uint64_t records_ = 0;
};

// The ranks still hanging, grouped by the span they are stuck in, the smallest group (the odd
// one out) first: "no progress for 42 s: rank 3 in megatron.data.next_batch (41.8 s); ranks
// 0,1,2 in megatron.grad_sync.finish". Empty when no rank is hanging.
std::string no_progress_line(const std::map<int, RankHang>& ranks);

// summary.json's "hangs": one object per rank that reported (rank, report, stalled_s, timeout_s,
// steps, span, span_open_s, stack [{name, open_s}], other_threads, resumed, resumed_after_s).
nlohmann::json hangs_json(const std::map<int, RankHang>& ranks);

// The page's "Hangs" section (an h2, the line, a table per rank); empty when no rank reported.
std::string hangs_html(const std::map<int, RankHang>& ranks);

}  // namespace lens::report
