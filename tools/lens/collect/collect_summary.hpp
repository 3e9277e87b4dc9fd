// What `lens collect` shows while it runs and once stopped: the live summary line (totals and
// up to eight ranks, on stderr) and the final totals. Reads the sink's and the servers' counters;
// one thread (the command's).
#pragma once

#include <signal.h>

#include <string>

#include "collect_server/otlp_receiver.hpp"
#include "collect_server/otlp_sink.hpp"

namespace lens::cli {

// The live summary until a stop signal: rewritten in place on a terminal, else a line every few
// seconds when it changed (log files stay readable). True when a line is left open on the
// terminal.
bool show_summary_until_stopped(const sigset_t& stop_signals, const OtlpSink& sink,
                                const OtlpReceiver& server);

// The totals once stopped, and a line per rank.
void print_stopped(const SinkStats& stats, const ReceiverStats& receiver_stats,
                   const std::string& out);

}  // namespace lens::cli
