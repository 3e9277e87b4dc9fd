// The end of `lens run` (see run_outcome.hpp).
#include "run/run_outcome.hpp"

#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace lens::cli {
namespace {

// The ranks' part of the exit status.
int ranks_status(const RunOptions& options, const RankProcesses& ranks, const RanksEnd& end) {
  if (end.failed_rank >= 0) {
    const int status = *ranks.exit_code(end.failed_rank);
    std::cerr << "lens run: rank " << end.failed_rank << " failed with exit status " << status
              << "; its last lines:\n";
    for (const std::string& text : ranks.last_lines(end.failed_rank)) {
      std::cerr << "  " << text << "\n";
    }
    std::cerr << "  (whole output: " << (options.out / "logs").string() << "/rank"
              << end.failed_rank << ".log)\n";
    return status;
  }
  return end.stop_signal != 0 ? 128 + end.stop_signal : 0;
}

}  // namespace

int finish_run(const RunOptions& options, const RankProcesses& ranks, const RanksEnd& end) {
  int status = ranks_status(options, ranks, end);
  std::vector<std::string> report_args = {options.out.string()};
  if (options.threshold) report_args.insert(report_args.end(), {"--threshold", *options.threshold});
  const int report_status = report_command(report_args);
  if (report_status != 0) {
    std::cerr << "lens run: no report was written (lens report exited with " << report_status
              << ")\n";
    if (status == 0) status = 1;  // the ranks succeeded, the run's result did not
  }
  // The report's path only when this run wrote it (a failed report may leave an older one).
  std::cout << "lens run: "
            << (status == 0 ? "done" : "ended with status " + std::to_string(status))
            << (report_status == 0 ? "; report: " + (options.out / "report.html").string()
                                   : std::string("; no report was written"))
            << std::endl;
  return status;
}

}  // namespace lens::cli
