// `lens run` while its ranks run: their output to the console, progress and hang lines, the
// stop signals forwarded, the other ranks stopped when one fails, and the output of ranks that
// ended read to its end (or given up after a short drain). One thread (the run's).
#pragma once

#include <filesystem>

#include "run/rank_processes.hpp"
#include "run/run_console.hpp"
#include "run/signal_reader.hpp"

namespace lens::cli {

// How the ranks ended, as `lens run` saw it.
struct RanksEnd {
  int stop_signal = 0;   // SIGINT/SIGTERM received
  int failed_rank = -1;  // the first rank that failed (not counting our own stop)
};

// Returns once every rank has ended and its output was read. `out` is where the collector
// writes (traces.jsonl and logs.jsonl, read for the progress and hang lines).
RanksEnd supervise_ranks(RankProcesses& ranks, SignalReader& signals, Console& console,
                         const std::filesystem::path& out);

}  // namespace lens::cli
