// The OTLP collector inside `lens run` (see run_collector.hpp).
#include "run/run_collector.hpp"

#include <unistd.h>

#include <iostream>
#include <string>

namespace lens::cli {

bool start_collector(const RunOptions& options, RunCollector& collector) {
  Result<std::unique_ptr<OtlpSink>> sink = OtlpSink::open(options.out.string(), 0);
  if (!sink.ok()) {
    std::cerr << "lens run: " << sink.message() << "\n";
    return false;
  }
  collector.sink = std::move(*sink);
  ReceiverOptions receiver_options;
  receiver_options.grpc = options.grpc;
  receiver_options.http = options.http;
  Result<std::unique_ptr<OtlpReceiver>> receiver =
      OtlpReceiver::start(receiver_options, *collector.sink);
  if (!receiver.ok()) {
    std::cerr << "lens run: cannot start the collector: " << receiver.message()
              << "; choose other addresses with --grpc/--http\n";
    return false;
  }
  collector.receiver = std::move(*receiver);
  return true;
}

void stop_collector(RunCollector& collector, const RunOptions& options, SignalReader& signals,
                    bool stop_signal_received) {
  OtlpReceiver& receiver = *collector.receiver;
  if (options.keep_collector && !stop_signal_received) {
    std::cout << "lens run: the ranks ended; the collector keeps listening on grpc="
              << receiver.grpc_endpoint()->to_string()
              << (receiver.http_endpoint() ? " http=" + receiver.http_endpoint()->to_string()
                                           : std::string())
              << " until SIGINT or SIGTERM" << std::endl;
    while (signals.take() == 0) ::usleep(100 * 1000);
  }
  receiver.stop();
  const SinkStats received = collector.sink->stats();
  std::cout << "lens run: collector received " << received.requests << " requests ("
            << received.bytes << " bytes) in " << options.out.string() << std::endl;
}

}  // namespace lens::cli
