// The progress of a `lens run`, read from what the ranks export: the collector's traces.jsonl is
// followed as it grows, and each rank's highest `megatron.iteration` on a `megatron.train_step`
// span (its rank from the resource attribute `dl.rank`) and the run length from the resource
// attribute `megatron.train_iters` are kept. Rendered as a progress bar on a terminal, or as a
// plain line when the iteration every rank reached moves on. Single-threaded.
//
// The rank the others wait for: in a synchronous run every rank's step lasts as long as the
// slowest rank's, so step time cannot tell; its work can. Each step's work is its duration minus
// the communication spans (megatron.grad_sync.*, megatron.p2p.*, megatron.pp.*) of the same trace
// on that rank. The rank whose median work over its last kRecentSteps steps exceeds the median
// of all ranks' by more than max(1 ms, 5% of the median step) is the one the others wait for.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

#include "run/appended_lines.hpp"

namespace lens::cli {

class RunProgress {
 public:
  explicit RunProgress(std::filesystem::path traces, int world_size)
      : traces_(std::move(traces)), world_size_(world_size) {}

  // Reads the lines appended since the last call (a last line without its newline waits).
  void update();

  static constexpr std::size_t kRecentSteps = 8;

  struct WaitedFor {
    int rank = 0;
    double excess_ms = 0.0;  // its median work minus the median across ranks
  };

  // The iteration every rank has reached; nullopt until each rank exported a step.
  std::optional<std::int64_t> slowest_iteration() const;
  // The rank the others wait for (see above); nullopt when none stands out or before every
  // rank exported a step.
  std::optional<WaitedFor> waited_for() const;
  std::optional<std::int64_t> total_iterations() const { return total_; }
  const std::map<int, std::int64_t>& iterations() const { return iterations_; }

  // "[########------------]  12/50 iterations (waiting for rank 2: +48.0 ms per step)" for a
  // `width`-column terminal; without a total, "iteration 12 (...)"; without a rank that stands
  // out, no parenthesis; "waiting for the first step of every rank" before.
  std::string bar(int width) const;
  // "lens run: iteration 12/50 (waiting for rank 2: +48.0 ms per step)" or empty when the
  // iteration did not change since the last call (for output that is not a terminal).
  std::string line_if_changed();

 private:
  void consume(const std::string& line);
  std::string waited_for_text() const;

  struct RankWork {
    std::unordered_map<std::string, double> communication_ms;  // by trace id, until its step
    std::deque<double> work_ms;                                // the last kRecentSteps steps
    std::deque<double> step_ms;
  };

  AppendedLines traces_;
  int world_size_;
  std::map<int, std::int64_t> iterations_;
  std::map<int, RankWork> work_;
  std::optional<std::int64_t> total_;
  std::optional<std::int64_t> last_reported_;
};

}  // namespace lens::cli
