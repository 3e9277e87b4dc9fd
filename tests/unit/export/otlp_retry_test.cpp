// The OTLP retry rules: which answers are retried, the server's delay hints (Retry-After,
// google.rpc.RetryInfo) and the loop bounded by the export timeout and by shutdown.
#include "export/otlp_retry.hpp"

#include <google/protobuf/any.pb.h>
#include <google/protobuf/duration.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "export/export_report.hpp"

namespace lens::exporters {
namespace {

using namespace std::chrono_literals;
using Kind = Attempt::Kind;

// google.rpc.Status {code = 1, message = 2, details = 3 (Any)}, as fields of no message type.
std::string rpc_status(int code, const std::string& message,
                       const std::vector<google::protobuf::Any>& details) {
  google::protobuf::UnknownFieldSet status;
  status.AddVarint(1, static_cast<std::uint64_t>(code));
  status.AddLengthDelimited(2, message);
  for (const auto& any : details) status.AddLengthDelimited(3, any.SerializeAsString());
  std::string out;
  status.SerializeToString(&out);
  return out;
}

// google.rpc.RetryInfo {retry_delay = 1 (Duration)} in an Any.
google::protobuf::Any retry_info(std::int64_t seconds, std::int32_t nanos) {
  google::protobuf::Duration delay;
  delay.set_seconds(seconds);
  delay.set_nanos(nanos);
  const std::string duration = delay.SerializeAsString();
  std::string info;
  info.push_back(static_cast<char>((1 << 3) | 2));
  info.push_back(static_cast<char>(duration.size()));
  info += duration;
  google::protobuf::Any any;
  any.set_type_url("type.googleapis.com/google.rpc.RetryInfo");
  any.set_value(info);
  return any;
}

TEST(OtlpRetryAfter, SecondsAndHttpDates) {
  const auto now = std::chrono::system_clock::from_time_t(1445412480);  // 2015-10-21 07:28:00
  EXPECT_EQ(parse_retry_after("3", now), Millis(3000));
  EXPECT_EQ(parse_retry_after(" 0 ", now), Millis(0));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:05 GMT", now), Millis(5000));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), Millis(0));
  EXPECT_EQ(parse_retry_after("", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("-1", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("soon", now), std::nullopt);
}

TEST(OtlpRetryHttp, RetryableStatusesFollowOtlp) {
  for (int status : {429, 502, 503, 504}) {
    const Attempt attempt = classify_http_status(status, "", "");
    EXPECT_EQ(attempt.kind, Kind::kRetryable) << status;
    EXPECT_EQ(attempt.cause, "http-" + std::to_string(status));
    EXPECT_EQ(attempt.retry_after, std::nullopt);
  }
  for (int status : {400, 401, 403, 404, 413, 415, 500}) {
    EXPECT_EQ(classify_http_status(status, "1", "").kind, Kind::kPermanent) << status;
  }
  EXPECT_EQ(classify_http_status(200, "", "").kind, Kind::kSuccess);
  EXPECT_EQ(classify_http_status(204, "", "").cause, "");
  const Attempt throttled = classify_http_status(429, "2", "slow down\nplease");
  EXPECT_EQ(throttled.retry_after, Millis(2000));
  EXPECT_EQ(throttled.retry_after_asked, "");
  EXPECT_EQ(throttled.message, "HTTP 429 (slow down please)");
}

// A Retry-After beyond what lens waits (a day) is capped; the export's line says both what the
// server asked for and what was applied.
TEST(OtlpRetryHttp, ACappedRetryAfterSaysWhatWasAskedAndWhatWasApplied) {
  const Attempt throttled = classify_http_status(429, "100000000", "");
  EXPECT_EQ(throttled.retry_after, Millis(86'400'000));
  EXPECT_EQ(throttled.retry_after_asked, "100000000 s");
  Interrupt interrupt;
  const Attempt result = send_with_retries(
      {}, std::chrono::steady_clock::now() + 10s, interrupt, [&](Millis) { return throttled; },
      [] {});
  EXPECT_EQ(result.message,
            "HTTP 429; the server asked to retry after 100000000 s (capped at 86400000 ms), past "
            "the export timeout");
}

TEST(OtlpRetryGrpc, RetryableCodesFollowOtlp) {
  // CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS
  for (int code : {1, 4, 10, 11, 14, 15}) {
    EXPECT_EQ(classify_grpc_status(code, "", "").kind, Kind::kRetryable) << code;
  }
  // UNKNOWN, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED, UNIMPLEMENTED, INTERNAL,
  // UNAUTHENTICATED
  for (int code : {2, 3, 5, 7, 12, 13, 16}) {
    EXPECT_EQ(classify_grpc_status(code, "", "").kind, Kind::kPermanent) << code;
  }
  const Attempt unavailable = classify_grpc_status(14, "connection refused", "");
  EXPECT_EQ(unavailable.cause, "grpc-UNAVAILABLE");
  EXPECT_EQ(unavailable.message, "gRPC status UNAVAILABLE (connection refused)");
  EXPECT_EQ(classify_grpc_status(0, "", "").kind, Kind::kSuccess);
}

TEST(OtlpRetryGrpc, ResourceExhaustedIsRetriedOnlyWithRetryInfo) {
  EXPECT_EQ(classify_grpc_status(8, "quota", "").kind, Kind::kPermanent);
  EXPECT_EQ(classify_grpc_status(8, "quota", rpc_status(8, "quota", {})).kind, Kind::kPermanent);
  google::protobuf::Any other;
  other.set_type_url("type.googleapis.com/google.rpc.DebugInfo");
  other.set_value("x");
  const Attempt hinted =
      classify_grpc_status(8, "quota", rpc_status(8, "quota", {other, retry_info(1, 500'000'000)}));
  EXPECT_EQ(hinted.kind, Kind::kRetryable);
  EXPECT_EQ(hinted.retry_after, Millis(1500));
  EXPECT_EQ(retry_info_delay("\xff\xff"), std::nullopt);
  EXPECT_EQ(rpc_status_message(rpc_status(3, "bad id", {})), "bad id");
}

Attempt make(Kind kind, std::optional<Millis> after = std::nullopt) {
  Attempt attempt;
  attempt.kind = kind;
  attempt.retry_after = after;
  attempt.cause = kind == Kind::kSuccess ? "" : "test";
  attempt.message = kind == Kind::kSuccess ? "" : "failed";
  return attempt;
}

TEST(OtlpRetryLoop, RetriesUntilSuccessWithTheServersDelay) {
  Interrupt interrupt;
  int calls = 0;
  int retries = 0;
  const auto start = std::chrono::steady_clock::now();
  const Attempt result = send_with_retries(
      {10ms, 20ms, 2.0}, start + 5s, interrupt,
      [&](Millis) { return ++calls < 3 ? make(Kind::kRetryable, 150ms) : make(Kind::kSuccess); },
      [&] { ++retries; });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(retries, 2);
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 2s);
}

TEST(OtlpRetryLoop, PermanentFailuresAreNotRetried) {
  Interrupt interrupt;
  int calls = 0;
  const Attempt result = send_with_retries(
      {}, std::chrono::steady_clock::now() + 5s, interrupt,
      [&](Millis) {
        ++calls;
        return make(Kind::kPermanent);
      },
      [] {});
  EXPECT_EQ(result.kind, Kind::kPermanent);
  EXPECT_EQ(calls, 1);
}

TEST(OtlpRetryLoop, TheDeadlineBoundsBackoffAndEachAttempt) {
  Interrupt interrupt;
  std::vector<Millis> given;
  const auto start = std::chrono::steady_clock::now();
  const Attempt result = send_with_retries(
      {20ms, 40ms, 2.0}, start + 400ms, interrupt,
      [&](Millis left) {
        given.push_back(left);
        return make(Kind::kRetryable);
      },
      [] {});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(result.kind, Kind::kRetryable);
  EXPECT_EQ(result.message, "failed; retried until the export timeout");
  // Not retried past the deadline (the loop would go on for ever): the bound leaves a loaded
  // sanitizer build room, while the attempts' own timeouts below pin the deadline exactly.
  EXPECT_LT(elapsed, 1s);
  ASSERT_GE(given.size(), 5u);
  EXPECT_LE(given.front(), 400ms);
  for (std::size_t i = 1; i < given.size(); ++i) EXPECT_LT(given[i], given[i - 1]);
}

// An export (default policy) whose every attempt asks to retry after `hint`; counts attempts.
Attempt always_retry_after(Millis hint, std::chrono::steady_clock::time_point deadline,
                           Interrupt& interrupt, int& calls) {
  return send_with_retries(
      {}, deadline, interrupt,
      [&](Millis) {
        ++calls;
        return make(Kind::kRetryable, hint);
      },
      [] {});
}

TEST(OtlpRetryLoop, AHintPastTheDeadlineEndsTheExportAtOnce) {
  Interrupt interrupt;
  int calls = 0;
  const auto start = std::chrono::steady_clock::now();
  const Attempt result = always_retry_after(30s, start + 10s, interrupt, calls);
  EXPECT_EQ(calls, 1);
  // Not a wait for the 10 s deadline (nor the 30 s hint); the margin is for loaded machines.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(result.message,
            "failed; the server asked to retry after 30000 ms, past the export timeout");
}

TEST(OtlpRetryLoop, ShutdownEndsABackoffWait) {
  Interrupt interrupt;
  const auto start = std::chrono::steady_clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    interrupt.trigger();
  });
  const Attempt result = send_with_retries(
      {}, start + 10s, interrupt, [&](Millis) { return make(Kind::kRetryable, 5s); }, [] {});
  stopper.join();
  EXPECT_EQ(result.message, "failed; stopped retrying at shutdown");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

// Shutdown began with 2 s left: the last export keeps retrying within them and is delivered.
TEST(OtlpRetryLoop, AShutdownDeadlineStillLetsTheExportRetry) {
  Interrupt interrupt;
  const auto start = std::chrono::steady_clock::now();
  interrupt.trigger(start + 2s);
  int calls = 0;
  std::vector<Millis> given;
  const Attempt result = send_with_retries(
      {Millis(50), Millis(100), 2.0}, start + 10s, interrupt,
      [&](Millis left) {
        given.push_back(left);
        return ++calls == 1 ? make(Kind::kRetryable) : make(Kind::kSuccess);
      },
      [] {});
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(calls, 2);
  // Each attempt is bounded by the shutdown deadline, not the 10 s export timeout.
  ASSERT_EQ(given.size(), 2u);
  EXPECT_LE(given[0], 2000ms);
  EXPECT_GT(given[0], 1500ms);
}

TEST(OtlpRetryLoop, AShutdownDeadlineEndsRetriesThatWouldPassIt) {
  Interrupt interrupt;
  const auto start = std::chrono::steady_clock::now();
  interrupt.trigger(start + 300ms);
  int calls = 0;
  const Attempt hinted = always_retry_after(1s, start + 10s, interrupt, calls);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(hinted.message,
            "failed; the server asked to retry after 1000 ms, past the shutdown timeout");
  const Attempt backing_off = send_with_retries(
      {Millis(40), Millis(40), 1.0}, start + 10s, interrupt,
      [&](Millis) { return make(Kind::kRetryable); }, [] {});
  EXPECT_EQ(backing_off.message, "failed; retried until the shutdown timeout");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 1s);
}

// A wait that began before shutdown ends when shutdown's deadline falls inside it; one that
// ends before the deadline goes on.
TEST(OtlpRetryLoop, AShutdownDeadlineInsideAWaitEndsIt) {
  Interrupt interrupt;
  const auto start = std::chrono::steady_clock::now();
  std::thread shutdown([&] {
    std::this_thread::sleep_for(100ms);
    interrupt.trigger(std::chrono::steady_clock::now() + 200ms);
  });
  const Attempt result = send_with_retries(
      {}, start + 10s, interrupt, [&](Millis) { return make(Kind::kRetryable, 5s); }, [] {});
  shutdown.join();
  EXPECT_EQ(result.message, "failed; retried until the shutdown timeout");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);

  Interrupt later;
  later.trigger(std::chrono::steady_clock::now() + 5s);
  EXPECT_TRUE(later.wait_for(50ms));
  later.trigger(std::chrono::steady_clock::now() + 10s);  // never moves the end later
  EXPECT_LT(later.limit(std::chrono::steady_clock::now() + 1h),
            std::chrono::steady_clock::now() + 6s);
}

TEST(ExportReport, EachCauseIsWrittenOnceAndEverythingIsCounted) {
  std::vector<std::string> lines;
  ExportReport report(Signal::traces, [&](std::string_view line) { lines.emplace_back(line); });
  report.add_succeeded(3);
  report.add_failed(2);
  report.add_failed(5);
  report.add_rejected(1);
  report.add_retry();
  report.report("http-503", "traces export failed: HTTP 503");
  report.report("http-503", "traces export failed: HTTP 503 again");
  report.report("http-400", "traces export failed: HTTP 400");
  const ExportReportCounts counts = report.counts();
  EXPECT_EQ(counts.exports_succeeded, 1u);
  EXPECT_EQ(counts.exports_failed, 2u);
  EXPECT_EQ(counts.items_exported, 3u);
  EXPECT_EQ(counts.items_failed, 7u);
  EXPECT_EQ(counts.items_rejected, 1u);
  EXPECT_EQ(counts.retries, 1u);
  EXPECT_EQ(report.reports(), 3u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "lens: traces export failed: HTTP 503 (further occurrences are counted, not shown; "
            "totals at shutdown)");
  EXPECT_EQ(lines[1],
            "lens: traces export failed: HTTP 400 (further occurrences are counted, not shown; "
            "totals at shutdown)");
}

}  // namespace
}  // namespace lens::exporters
