// `lens run`: one command for a whole multi-rank training run on this machine. Starts an OTLP
// collector in this process on free loopback ports, launches N ranks of the program with the
// torchrun-style environment, a shared run id and the collector as OTLP endpoint, streams every
// rank's output prefixed with its rank, shows progress, forwards SIGINT/SIGTERM, and at the end
// stops the collector and runs `lens report` on what it received.
// Exit status: 0 when every rank succeeded and the report was written; the first failing rank's
// status (128 + signal when it was killed); 128 + signal after SIGINT/SIGTERM; 1 when the run
// cannot start or the report of successful ranks cannot be written; 2 on bad flags.
// The steps: run_options (flags), run_launch (run id, output, ranks' environment),
// run_collector, rank_supervisor (while the ranks run), run_outcome (status and report).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "run/rank_processes.hpp"
#include "run/rank_supervisor.hpp"
#include "run/run_collector.hpp"
#include "run/run_console.hpp"
#include "run/run_launch.hpp"
#include "run/run_options.hpp"
#include "run/run_outcome.hpp"
#include "run/signal_reader.hpp"

namespace lens::cli {

int run_command(const std::vector<std::string>& args) {
  bool help = false;
  Result<RunOptions> parsed = parse_run_options(args, help);
  if (help) {
    std::cout << kRunUsage;
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << "lens run: " << parsed.message() << "\n";
    return 2;
  }
  RunOptions& options = *parsed;

  const std::string run_id = run_id_for_this_run();
  if (options.out.empty()) options.out = std::filesystem::path("lens-runs") / run_id;
  if (!prepare_output(options)) return 1;

  // Signals are read from here on, so that a Ctrl-C while starting is not lost.
  SignalReader signals;
  RunCollector collector;
  if (!start_collector(options, collector)) return 1;
  const std::string endpoint = "http://" + collector.receiver->grpc_endpoint()->to_string();
  Console console(::isatty(STDOUT_FILENO) == 1);
  console.message("lens run: " + std::to_string(options.ranks) + " rank(s) of " +
                  options.program.front() + ", run id " + run_id + ", collector " + endpoint +
                  ", output " + options.out.string());

  Result<RankProcesses> started = RankProcesses::start(rank_launches(options, run_id, endpoint));
  if (!started.ok()) {
    collector.receiver->stop();
    std::cerr << "lens run: " << started.message() << "\n";
    return 1;
  }
  const RanksEnd end = supervise_ranks(*started, signals, console, options.out);
  console.finish();
  stop_collector(collector, options, signals, end.stop_signal != 0);
  return finish_run(options, *started, end);
}

}  // namespace lens::cli
