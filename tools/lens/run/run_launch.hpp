// What `lens run` prepares before its ranks start: the run id, the output directory and each
// rank's launch (program, torchrun-style environment, log file). Reads the process environment;
// no other shared state.
#pragma once

#include <string>
#include <vector>

#include "run/rank_processes.hpp"
#include "run/run_options.hpp"

namespace lens::cli {

// NEMO_LENS_RUN_ID when it is set and not empty, else a new one ("run-YYYYmmdd-HHMMSS-xxxx").
std::string run_id_for_this_run();

// Checks the output directory and each rank's log file before anything is opened or started (a
// FIFO would block, a device never ends), then creates the logs directory. False, with the
// reason on stderr, when the run cannot write there.
bool prepare_output(const RunOptions& options);

// The environment of rank `rank`: ours, minus what `lens run` decides, plus that.
// With hosts > 1 (--hosts-per-run), rank `rank` is on fake host rank / (world_size / hosts):
// host.name hostH appended to OTEL_RESOURCE_ATTRIBUTES, LOCAL_RANK, LOCAL_WORLD_SIZE and
// GROUP_RANK as on that host.
std::vector<std::string> rank_environment(int rank, int world_size, int master_port,
                                          const std::string& run_id, const std::string& endpoint,
                                          int hosts = 1);

// Every rank's launch: the program, its environment with a free rendezvous port and the
// collector at `endpoint` as OTLP endpoint, and its log file under --out/logs.
std::vector<RankLaunch> rank_launches(const RunOptions& options, const std::string& run_id,
                                      const std::string& endpoint);

}  // namespace lens::cli
