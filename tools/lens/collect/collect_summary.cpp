// What `lens collect` shows (see collect_summary.hpp).
#include "collect/collect_summary.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <iostream>
#include <map>
#include <utility>
#include <vector>

namespace lens::cli {
namespace {

// Rank labels in numeric order ("2" before "10"), anything else after them.
std::vector<std::pair<std::string, RankCounts>> sorted_ranks(
    const std::map<std::string, RankCounts>& ranks) {
  std::vector<std::pair<std::string, RankCounts>> out(ranks.begin(), ranks.end());
  auto numeric = [](const std::string& s) {
    return !s.empty() && s.size() < 10 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    const bool na = numeric(a.first);
    const bool nb = numeric(b.first);
    if (na != nb) return na;
    if (na) return std::stol(a.first) < std::stol(b.first);
    return a.first < b.first;
  });
  return out;
}

std::string rank_text(const std::string& rank, const RankCounts& counts) {
  return "rank " + rank + ": " + std::to_string(counts.spans) + " spans, " +
         std::to_string(counts.points) + " points, " + std::to_string(counts.logs) + " logs";
}

std::string requests_text(const SinkStats& sink, const ReceiverStats& receiver) {
  const std::uint64_t rejected = receiver.malformed + receiver.unauthenticated;
  std::string text = std::to_string(sink.requests + rejected) + " requests";
  if (rejected != 0) text += ", " + std::to_string(rejected) + " rejected";
  if (sink.dropped_requests != 0) {
    text += ", " + std::to_string(sink.dropped_items) + " items dropped";
  }
  if (receiver.grpc_connections_refused != 0) {
    text += ", " + std::to_string(receiver.grpc_connections_refused) +
            " gRPC connections closed (--grpc-max-connections)";
  }
  if (receiver.over_budget != 0) {
    text += ", " + std::to_string(receiver.over_budget) +
            " refused for a retry (--max-memory-in-flight)";
  }
  if (receiver.http_timed_out != 0) {
    text += ", " + std::to_string(receiver.http_timed_out) +
            " HTTP connections closed (--http-request-timeout)";
  }
  if (receiver.http_over_peer_cap != 0) {
    text += ", " + std::to_string(receiver.http_over_peer_cap) +
            " HTTP connections closed (--http-max-connections-per-peer)";
  }
  if (sink.retry_requests != 0) {
    // Answered 503 / UNAVAILABLE: lost unless the client sent them again.
    text += ", " + std::to_string(sink.retry_items) + " items refused for a retry (write failed)";
  }
  return text;
}

// The live line: totals, then up to eight ranks.
std::string summary_line(const SinkStats& sink, const ReceiverStats& receiver) {
  constexpr std::size_t kShownRanks = 8;
  std::string line = "lens collect: " + requests_text(sink, receiver);
  const auto ranks = sorted_ranks(sink.ranks);
  for (std::size_t i = 0; i < ranks.size() && i < kShownRanks; ++i) {
    line += " | " + rank_text(ranks[i].first, ranks[i].second);
  }
  if (ranks.size() > kShownRanks) {
    line += " | +" + std::to_string(ranks.size() - kShownRanks) + " more ranks";
  }
  return line;
}

// The terminal's width on stderr, less one column (200 when it is not a terminal).
std::size_t stderr_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) {
    return size.ws_col - 1;
  }
  return 200;
}

}  // namespace

bool show_summary_until_stopped(const sigset_t& stop_signals, const OtlpSink& sink,
                                const OtlpReceiver& server) {
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const timespec wait = tty ? timespec{0, 500'000'000} : timespec{5, 0};
  std::string last_line;
  int signal_number = -1;
  while (signal_number < 0) {
    signal_number = sigtimedwait(&stop_signals, nullptr, &wait);
    if (signal_number < 0 && errno != EAGAIN && errno != EINTR) {
      break;
    }
    const std::string line = summary_line(sink.stats(), server.stats());
    if (line == last_line) continue;
    last_line = line;
    if (tty) {
      std::cerr << "\r" << line.substr(0, stderr_width()) << "\x1b[K" << std::flush;
    } else if (signal_number < 0) {
      std::cerr << line << "\n";
    }
  }
  return tty && !last_line.empty();
}

void print_stopped(const SinkStats& stats, const ReceiverStats& receiver_stats,
                   const std::string& out) {
  std::cerr << "lens collect: stopped; " << requests_text(stats, receiver_stats) << " ("
            << receiver_stats.malformed << " malformed, " << receiver_stats.unauthenticated
            << " unauthenticated, " << stats.dropped_requests << " dropped); " << stats.bytes
            << " bytes in " << out << "\n";
  for (const auto& [rank, counts] : sorted_ranks(stats.ranks)) {
    std::cerr << "lens collect: " << rank_text(rank, counts) << "\n";
  }
}

}  // namespace lens::cli
