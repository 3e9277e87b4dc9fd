// `lens report A B ...`: what the comparison page shows of each run. Per iteration, the median
// across ranks of the step time (exact, from the megatron.train_step spans) and of the loss (the
// steps' megatron.loss attribute), and a few totals. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "report/run_model.hpp"

namespace lens::report {

struct ComparedRun {
  std::string dir;     // where it was read from
  std::string run_id;  // nemo.run.id ("" when absent; joined with ", " when the ranks differ)
  std::size_t ranks = 0;
  std::size_t iterations = 0;  // distinct iterations with a step on any rank
  std::optional<std::int64_t> first_iteration, last_iteration;
  // (iteration, value), by iteration.
  std::vector<std::pair<std::int64_t, double>> step_ms;  // median across ranks
  std::vector<std::pair<std::int64_t, double>> loss;     // median across the ranks that record it
  std::optional<double> median_step_ms;                  // median of every rank's steps
  std::optional<double> final_loss;  // the loss of the last iteration that has one
};

ComparedRun compare_run(const RunData& data, std::string dir);

// The legend's name of a run: "RUN_ID (DIR)", "(no run id) (DIR)" without one.
std::string run_label(const ComparedRun& run);

// The run's table cells and stdout line: "390.0" (ms) and "8.0000", "-" when absent.
std::string median_step_text(const ComparedRun& run);
std::string final_loss_text(const ComparedRun& run);
std::string iterations_text(const ComparedRun& run);  // "20 (1-20)", "0" without steps

// "LABEL: 4 ranks, 20 iterations (1-20), median step 390.0 ms, final loss 8.0000".
std::string run_summary_line(const ComparedRun& run);

}  // namespace lens::report
