// The OTLP collector inside `lens run`: the sink writing JSON lines under --out and the gRPC and
// HTTP servers feeding it (collect_server/, as `lens collect` runs them). The run's thread starts
// and stops it.
#pragma once

#include <memory>

#include "collect_server/otlp_receiver.hpp"
#include "collect_server/otlp_sink.hpp"
#include "run/run_options.hpp"
#include "run/signal_reader.hpp"

namespace lens::cli {

struct RunCollector {
  std::unique_ptr<OtlpSink> sink;
  std::unique_ptr<OtlpReceiver> receiver;
};

// Starts the collector on --grpc/--http; false, with the reason on stderr, when it cannot.
bool start_collector(const RunOptions& options, RunCollector& collector);

// Once the ranks ended: with --keep-collector and no stop signal yet, keeps receiving until
// SIGINT or SIGTERM; then stops the servers (requests in flight are written) and prints what the
// collector received.
void stop_collector(RunCollector& collector, const RunOptions& options, SignalReader& signals,
                    bool stop_signal_received);

}  // namespace lens::cli
