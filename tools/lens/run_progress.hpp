// The progress of a `lens run`, read from what the ranks export: the collector's traces.jsonl is
// followed as it grows, and each rank's highest `megatron.iteration` on a `megatron.train_step`
// span (its rank from the resource attribute `dl.rank`) and the run length from the resource
// attribute `megatron.train_iters` are kept. Rendered as a progress bar on a terminal, or as a
// plain line when the slowest rank moves on. Single-threaded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace lens::cli {

class RunProgress {
 public:
  explicit RunProgress(std::filesystem::path traces, int world_size)
      : traces_(std::move(traces)), world_size_(world_size) {}

  // Reads the lines appended since the last call (a last line without its newline waits).
  void update();

  // The iteration every rank has reached (the slowest rank's), and that rank; nullopt until each
  // rank exported a step.
  std::optional<std::int64_t> slowest_iteration() const;
  std::optional<int> slowest_rank() const;
  std::optional<std::int64_t> total_iterations() const { return total_; }
  const std::map<int, std::int64_t>& iterations() const { return iterations_; }

  // "[########------------]  12/50 iterations (slowest: rank 2)" for a `width`-column terminal;
  // without a total, "iteration 12 (slowest: rank 2)"; "waiting for the first step" before.
  std::string bar(int width) const;
  // "lens run: iteration 12/50 (slowest: rank 2)" or empty when nothing changed since the last
  // call (for output that is not a terminal).
  std::string line_if_changed();

 private:
  void consume(const std::string& line);

  std::filesystem::path traces_;
  int world_size_;
  std::uintmax_t offset_ = 0;
  std::string partial_;
  std::map<int, std::int64_t> iterations_;
  std::optional<std::int64_t> total_;
  std::optional<std::int64_t> last_reported_;
};

}  // namespace lens::cli
