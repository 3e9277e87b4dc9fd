// `lens collect`: an OTLP receiver for one machine. Serves OTLP/gRPC and OTLP/HTTP on loopback
// by default, appends every request as one OTLP JSON line to traces.jsonl, metrics.jsonl or
// logs.jsonl under --out, shows a live per-rank summary on stderr and stops cleanly on SIGINT
// or SIGTERM. Exit status: 0 after a clean stop, 1 when it cannot start, 2 on invalid flags.
// The flags are in collect_options, what it shows in collect_summary.
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "collect/collect_options.hpp"
#include "collect/collect_summary.hpp"
#include "collect_server/otlp_receiver.hpp"
#include "collect_server/otlp_sink.hpp"

namespace lens::cli {
namespace {

int fail(const std::string& message) {
  std::cerr << "lens: " << message << "\n";
  return 2;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Readies the process for serving before any thread starts; returns the stop signals (SIGINT,
// SIGTERM), blocked so that they are taken with sigtimedwait and every thread inherits the mask.
sigset_t prepare_process() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not end the collector
  // A file size limit (ulimit -f) makes a write fail with EFBIG, answered like a full disk,
  // instead of ending the collector.
  std::signal(SIGXFSZ, SIG_IGN);
  // gRPC 1.51 stops accepting for good when accept() fails with EMFILE; connections past
  // --grpc-max-connections are accepted before they are closed, so keep the open-file limit as
  // high as this process may set it.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  return stop_signals;
}

// The start line on stdout, and a warning for each address off loopback without a token.
void print_listening(const OtlpReceiver& server, const CollectOptions& collect) {
  auto bound = [](const std::optional<Endpoint>& e) { return e ? e->to_string() : "off"; };
  const ReceiverOptions& receiver = collect.receiver;
  std::error_code ec;
  const std::filesystem::path out_path = std::filesystem::absolute(collect.out, ec);
  std::cout << "lens collect: listening grpc=" << bound(server.grpc_endpoint())
            << " http=" << bound(server.http_endpoint())
            << (receiver.tls ? (receiver.tls->client_ca_pem.empty() ? " tls=on" : " tls=mtls") : "")
            << " out=" << (ec ? collect.out : out_path.lexically_normal().string()) << std::endl;
  for (const auto& endpoint : {server.grpc_endpoint(), server.http_endpoint()}) {
    if (endpoint && !is_loopback(endpoint->host) && receiver.token.empty()) {
      std::cerr << "lens collect: warning: listening on " << endpoint->to_string()
                << " without --token; anyone who can reach it can write to " << collect.out << "\n";
    }
  }
}

}  // namespace

int collect_command(const std::vector<std::string>& args) {
  auto parsed = parse_command_options(args, kCollectFlags, "collect", kCollectUsage);
  if (const int* exit_status = std::get_if<int>(&parsed)) return *exit_status;
  CollectOptions collect;
  if (std::string error = parse_collect_options(std::get<ParsedOptions>(parsed), collect);
      !error.empty()) {
    return fail(error);
  }

  const sigset_t stop_signals = prepare_process();
  auto sink = OtlpSink::open(collect.out, collect.max_bytes);
  if (!sink.ok()) {
    std::cerr << "lens collect: " << sink.message() << "\n";
    return 1;
  }
  auto receiver = OtlpReceiver::start(collect.receiver, **sink);
  if (!receiver.ok()) {
    std::cerr << "lens collect: " << receiver.message() << "\n";
    return 1;
  }
  OtlpReceiver& server = **receiver;
  print_listening(server, collect);
  const bool line_open = show_summary_until_stopped(stop_signals, **sink, server);

  server.stop();  // requests in flight finish and are written before the files close
  const SinkStats stats = (*sink)->stats();
  const ReceiverStats receiver_stats = server.stats();
  sink->reset();
  if (line_open) std::cerr << "\n";
  print_stopped(stats, receiver_stats, collect.out);
  return 0;
}

}  // namespace lens::cli
