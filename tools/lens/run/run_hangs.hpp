// The hang reports of a `lens run` as they come: the collector's logs.jsonl is followed as it
// grows (report/hangs.hpp reads each line) and one line is due when the ranks' reports change:
// at once when every rank has reported, else once no new report came for kSettle (the ranks
// report within a poll of each other, and one line for all of them is what a person wants);
// "progress resumed" when every reporting rank made progress again. Single-threaded.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "report/hangs.hpp"
#include "run/appended_lines.hpp"

namespace lens::cli {

class RunHangs {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kSettle{1500};

  RunHangs(std::filesystem::path logs, int world_size)
      : logs_(std::move(logs)), world_size_(world_size) {}

  // Reads the lines appended since the last call (a last line without its newline waits).
  void update();
  // "no progress for 42 s: rank 3 in ... (41.8 s); ranks 0,1,2 in ...", after the verdicts
  // joined by collective (report::hang_verdicts), each then on its own "lens run: " line; or
  // "progress resumed after 73 s" when one is due at `now`; empty otherwise.
  std::string line_if_due(Clock::time_point now);

 private:
  AppendedLines logs_;
  int world_size_;
  report::HangLog log_;
  std::uint64_t shown_records_ = 0;
  std::optional<Clock::time_point> changed_at_;  // the first record not shown yet arrived then
  bool hang_shown_ = false;                      // a "no progress" line is the newest shown
};

}  // namespace lens::cli
