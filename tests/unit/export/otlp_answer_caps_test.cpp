// What an OTLP exporter reads of an answer is bounded (issue 24 point 9): a receiver that
// answers 200 with an endless body or endless headers, or a gRPC answer of a megabyte, ends that
// export as failed (not retried) as soon as the cap is passed, instead of growing the training
// process until the timeout. The process's peak RSS (VmHWM, reset before) stays bounded.
// Loopback only; every wait is bounded.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <opentelemetry/sdk/trace/recordable.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "export/otlp_exporters.hpp"
#include "unit/export/grpc_trace_receiver.hpp"
#include "unit/export/otlp_exporter_support.hpp"
#include "unit/support/otlp_test_servers.hpp"

namespace lens::exporters {
namespace {

using namespace std::chrono_literals;
using opentelemetry::sdk::common::ExportResult;
using test_support::Captured;
using test_support::kFastRetry;
using test_support::settings_from;

// A receiver that reads each request, then answers 200 and never stops: an endless chunked body
// or endless header lines. Counts the requests it read.
class EndlessAnswerReceiver {
 public:
  enum class Kind { kBody, kHeaders };
  explicit EndlessAnswerReceiver(Kind kind) : kind_(kind) {
    fd_ = test_servers::listen_on(0, &port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~EndlessAnswerReceiver() {
    running_ = false;
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }

 private:
  void serve() {
    while (running_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      if (read_request(client)) {
        ++requests_;
        answer(client);
      }
      ::close(client);
    }
  }

  // Reads up to the end of the body that Content-Length announces.
  bool read_request(int fd) {
    std::string buffer;
    char chunk[65536];
    for (int polls = 0; polls < 250 && running_; ++polls) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
      const auto head_end = buffer.find("\r\n\r\n");
      if (head_end == std::string::npos) continue;
      const auto length_at = buffer.find("Content-Length: ");
      const std::size_t length =
          length_at == std::string::npos ? 0 : std::stoul(buffer.substr(length_at + 16));
      if (buffer.size() >= head_end + 4 + length) return true;
    }
    return false;
  }

  // Writes until the client hangs up (or the test ends).
  void answer(int fd) {
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n";
    if (kind_ == Kind::kBody) head += "Transfer-Encoding: chunked\r\n\r\n";
    if (!write_all(fd, head)) return;
    const std::string payload(60000, 'x');
    std::string piece;
    if (kind_ == Kind::kBody) {
      char size[16];
      std::snprintf(size, sizeof(size), "%zx\r\n", payload.size());
      piece = size + payload + "\r\n";
    } else {
      piece = "X-Filler: " + std::string(1000, 'y') + "\r\n";
    }
    while (running_ && write_all(fd, piece)) {
    }
  }

  bool write_all(int fd, const std::string& data) {
    std::size_t written = 0;
    while (written < data.size()) {
      pollfd p{fd, POLLOUT, 0};
      if (!running_) return false;
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::send(fd, data.data() + written, data.size() - written, MSG_NOSIGNAL);
      if (n <= 0) return false;
      written += static_cast<std::size_t>(n);
    }
    return true;
  }

  const Kind kind_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> running_{true};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

// Resets the process's peak RSS to its current RSS (Linux >= 4.0); false where it cannot.
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return static_cast<bool>(clear);
}

// A field of /proc/self/status in KiB ("VmHWM", "VmRSS").
std::uint64_t status_kib(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  }
  return 0;
}

ExportResult export_one_span(opentelemetry::sdk::trace::SpanExporter& exporter) {
  std::unique_ptr<opentelemetry::sdk::trace::Recordable> spans[] = {exporter.MakeRecordable()};
  spans[0]->SetName("step");
  return exporter.Export(
      opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>(spans, 1));
}

// Exports one span to an endless HTTP answer: the export fails once, at once, with `what` said.
void expect_capped_http_answer(EndlessAnswerReceiver::Kind kind, const std::string& what) {
  EndlessAnswerReceiver receiver(kind);
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url()},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}}),
      captured.report, kFastRetry);
  const bool peak_reset = reset_peak_rss();
  const std::uint64_t rss_before_kib = status_kib("VmRSS");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(export_one_span(*exporter), ExportResult::kFailure);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const std::uint64_t peak_kib = status_kib("VmHWM");
  // Cut off at the cap, well before the export timeout; not retried.
  EXPECT_LT(elapsed, test_servers::kSanitized ? 2500ms : 1000ms);
  EXPECT_EQ(receiver.requests(), 1);
  EXPECT_EQ(captured.report->counts().exports_failed, 1u);
  EXPECT_EQ(captured.report->counts().retries, 0u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_EQ(captured.lines[0],
            "lens: traces export to " + receiver.url() +
                "/v1/traces (http/protobuf) failed: the receiver's answer exceeded 64 KiB of " +
                what +
                "; lens stopped reading it and counts the export as failed; 1 spans dropped "
                "(further occurrences are counted, not shown; totals at shutdown)");
  if (test_servers::kRssIsMeaningful && peak_reset) {
    EXPECT_LT(peak_kib, rss_before_kib + 32 * 1024)
        << "peak RSS grew by " << (peak_kib - rss_before_kib) << " KiB";
  }
  EXPECT_TRUE(exporter->Shutdown(1000ms));
}

TEST(OtlpAnswerCaps, AnEndlessHttpBodyEndsTheExportAtTheCap) {
  expect_capped_http_answer(EndlessAnswerReceiver::Kind::kBody, "body");
}

TEST(OtlpAnswerCaps, EndlessHttpHeadersEndTheExportAtTheCap) {
  expect_capped_http_answer(EndlessAnswerReceiver::Kind::kHeaders, "headers");
}

TEST(OtlpAnswerCaps, AMegabyteGrpcAnswerFailsTheExportWithoutRetry) {
  test_servers::ScriptedGrpcTraceReceiver receiver;
  receiver.set_partial_success_message(std::string(1 << 20, 'z'));
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url()},
                     {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}}),
      captured.report, kFastRetry);
  EXPECT_EQ(export_one_span(*exporter), ExportResult::kFailure);
  EXPECT_EQ(receiver.answers().size(), 1u);
  EXPECT_EQ(captured.report->counts().retries, 0u);
  ASSERT_EQ(captured.lines.size(), 1u);
  EXPECT_EQ(captured.lines[0].rfind("lens: traces export to " + receiver.url() +
                                        " (grpc) failed: the receiver's answer exceeded 64 KiB; "
                                        "lens stopped reading it and counts the export as "
                                        "failed (",
                                    0),
            0u)
      << captured.lines[0];
  EXPECT_TRUE(exporter->Shutdown(1000ms));
}

}  // namespace
}  // namespace lens::exporters
