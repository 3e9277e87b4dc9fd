// How complete a run's telemetry is, per rank and signal: what the directory holds (received)
// against what the rank says of itself in its lens.exporter.* self-metrics (exported, dropped,
// failed). Those counters are cumulative and read at each metric collection, the last one at
// shutdown after the spans and log records are flushed: a rank that shut down cleanly accounts
// for every span and log record. Its final metric export is not in its own count, so received
// metric points exceed exported; the reverse means records the rank delivered are not here.
// Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/run_model.hpp"

namespace lens::report {

struct SignalCompleteness {
  std::string signal;  // "spans", "metric points", "log records"
  std::uint64_t received = 0;
  bool reported = false;  // the rank's self-metrics for this signal are in the directory
  std::uint64_t exported = 0;
  std::uint64_t dropped = 0;  // never delivered, whatever the reason (failed included)
  std::uint64_t failed = 0;   // in exports that failed after their retries
  std::uint64_t missing = 0;  // exported by the rank's count and not in the directory
};

struct RankCompleteness {
  int rank = 0;
  std::vector<SignalCompleteness> signals;
  // false when something was dropped or is missing; else true when every signal was reported,
  // nullopt (unknown) when some was not.
  std::optional<bool> complete() const;
};

struct Completeness {
  std::vector<RankCompleteness> ranks;
  std::vector<int> silent_ranks;  // below the world size and absent from the directory
  bool any_reported = false;      // some rank's self-metrics arrived (metrics were on)
};

Completeness telemetry_completeness(const RunData& data, const std::vector<int>& missing_ranks);

// One sentence per kind of loss, naming the ranks (at most a few each), for stdout and the top of
// the HTML; empty when nothing was lost or nothing can be said.
std::vector<std::string> completeness_lines(const Completeness& completeness);

}  // namespace lens::report
