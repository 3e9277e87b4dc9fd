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

// One counted process group's state in a hang report (lens/collectives.hpp).
struct GroupState {
  std::string name;       // "dp"
  std::string ranks;      // its ranks as "0-3"
  std::string operation;  // the newest entered collective ("" when none)
  std::int64_t seq = 0;   // its sequence number
  std::int64_t bytes = 0;
  std::int64_t finished_seq = 0;  // the newest finished
  std::string finished_operation;
  double open_s = 0.0;  // how long the newest has been open (0: finished)
  bool inside() const { return seq > finished_seq; }
};

// A rank's newest hang report and, once a step finished again, how the episode ended.
struct RankHang {
  int rank = 0;
  std::int64_t time_ns = 0;  // when the report was made (Unix ns)
  int report = 1;            // 1, then 2, 3... for the repeats of one episode
  double stalled_s = 0.0;    // no step for this long when reported
  double timeout_s = 0.0;
  std::int64_t steps = 0;           // steps finished before the hang
  std::vector<OpenSpanAge> stack;   // the stuck thread's open spans, outermost first
  std::vector<std::string> others;  // the other threads' stacks, as text
  bool resumed = false;
  double resumed_after_s = 0.0;  // the whole gap, when resumed
  bool startup = false;          // before the first step (start-up timeout)
  std::int64_t iteration = 0;    // the iteration running (0: not said)
  std::vector<GroupState> groups;
};

class HangLog {
 public:
  // Only records whose resource has nemo.run.id `run_id`, when given.
  explicit HangLog(std::optional<std::string> run_id = std::nullopt) : run_id_(std::move(run_id)) {}

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

// The hang joined across ranks by process group and sequence number, one line per group with a
// collective open on a hanging rank (most telling first: a group with ranks that never entered
// it, then the longest wait):
//   "hang in dp all_reduce #1234 (iteration 57): ranks 0-2,4-7 waiting 612 s; rank 3 never
//    entered it — last finished all_reduce #1233, now in megatron.data.next_batch for 640 s"
//   "hang in dp all_reduce #12 (iteration 3): every rank entered it and none finished (stuck
//    inside the collective): rank 1 in megatron.grad_sync.start for 4 s; ranks 0,2 in ..."
//   "hang in dp: mismatched collectives: ranks 0,2 in all_reduce #12; rank 1 in broadcast #12"
//   "hang in pp (ranks 1,3) point-to-point (iteration 3): rank 3 waiting in recv for 2 s; rank 1
//    now in megatron.data.next_batch for 2 s" (sends and receives are numbered per rank, so
//    their sequence numbers are not matched; such a verdict comes after the collectives' ones)
// Before the first step "hang during start-up ..." instead of "hang ...", and with no collective
// open "hang during start-up (no step for 12 s): rank 0 in ...". Empty when no rank hangs.
std::vector<std::string> hang_verdicts(const std::map<int, RankHang>& ranks);

// summary.json's "hangs": one object per rank that reported (rank, report, stalled_s, timeout_s,
// steps, span, span_open_s, stack [{name, open_s}], other_threads, resumed, resumed_after_s).
nlohmann::json hangs_json(const std::map<int, RankHang>& ranks);

// The page's "Hangs" section (an h2, the verdicts, the line, a table per rank); empty when no rank
// reported.
std::string hangs_html(const std::map<int, RankHang>& ranks);

}  // namespace lens::report
