// Retries of OTLP exports as the OTLP specification prescribes: which answers are retryable
// (gRPC UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, DATA_LOSS, and
// RESOURCE_EXHAUSTED only with a google.rpc.RetryInfo; HTTP 429, 502, 503, 504 and network
// errors), the server's delay hint (RetryInfo, Retry-After) and exponential backoff with jitter,
// all bounded by one deadline (OTEL_EXPORTER_OTLP_TIMEOUT per batch).
//
// opentelemetry-cpp 1.19 as Debian builds it has no retries (ENABLE_OTLP_RETRY_PREVIEW is off:
// the retry_policy_* options are ignored), so lens does this itself.
// Thread-safety: the functions are pure; an Interrupt may be triggered from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace lens::exporters {

using Millis = std::chrono::milliseconds;

struct RetryPolicy {
  Millis initial_backoff{500};
  Millis max_backoff{5000};
  double multiplier = 2.0;
};

// The outcome of one attempt to send one export request.
struct Attempt {
  enum class Kind { kSuccess, kRetryable, kPermanent };
  Kind kind = Kind::kPermanent;
  std::optional<Millis> retry_after;  // the server's hint, when it gave one (capped at a day)
  // What the server asked for when lens capped it ("100000000 s"); empty otherwise.
  std::string retry_after_asked;
  // Stable key of the failure's cause (e.g. "http-503", "grpc-UNAVAILABLE"), for reporting
  // each cause once; empty on success.
  std::string cause;
  // One line saying what happened (never a header value); empty on success.
  std::string message;
  // partial_success of a successful answer: items the receiver rejected, and why.
  std::int64_t rejected = 0;
  std::string rejected_message;

  bool ok() const noexcept { return kind == Kind::kSuccess; }
};

// Seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT") relative to `now`;
// nullopt when it is neither. A date in the past gives 0.
std::optional<Millis> parse_retry_after(std::string_view value,
                                        std::chrono::system_clock::time_point now);

// The delay of a google.rpc.RetryInfo inside a serialized google.rpc.Status (the binary
// grpc-status-details-bin that grpc::Status::error_details() holds); nullopt when absent.
std::optional<Millis> retry_info_delay(std::string_view status_details);

// The message (field 2) of a google.rpc.Status in the binary protobuf encoding; "" if none.
std::string rpc_status_message(std::string_view status);

// HTTP answers. `retry_after` is the Retry-After header ("" when absent).
Attempt classify_http_status(int status, std::string_view retry_after, std::string_view body_hint);
// gRPC answers; `code` is the grpc::StatusCode value.
Attempt classify_grpc_status(int code, std::string_view message, std::string_view details);

// Shutdown's say over exports in flight. trigger(deadline): shutdown has begun and must finish
// by `deadline`; exports keep retrying, but no attempt or wait reaches past it (so that the
// run's last batch survives one 503 at shutdown). trigger(): stop retrying now (the exporter is
// shut down); the attempt in progress keeps its own timeout. A later trigger only ever moves
// the end earlier.
class Interrupt {
 public:
  using Clock = std::chrono::steady_clock;

  void trigger() noexcept;
  void trigger(Clock::time_point deadline) noexcept;
  // True after trigger() without a deadline: no further attempt.
  bool stopped() const noexcept;
  // `deadline`, or the shutdown deadline when that comes first.
  Clock::time_point limit(Clock::time_point deadline) const noexcept;
  // Waits `delay`; false when a trigger ends the wait early (stop, or a shutdown deadline that
  // falls before the wait would end).
  bool wait_for(Millis delay) noexcept;

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::optional<Clock::time_point> until_;
};

// Sends with `attempt` (given the time left) until it succeeds, fails permanently, the deadline
// (or shutdown's, when `interrupt` set one that comes first) passes or `interrupt` stops it.
// Waits before each retry: the server's hint when it gave one, else the backoff, uniformly
// jittered over [backoff/2, backoff]. A hint beyond the deadline ends the export at once.
// `on_retry` is called before each further attempt. Returns the last attempt (with the reason it
// stopped in `message` when the deadline or a stop ended it).
Attempt send_with_retries(const RetryPolicy& policy, std::chrono::steady_clock::time_point deadline,
                          Interrupt& interrupt, const std::function<Attempt(Millis)>& attempt,
                          const std::function<void()>& on_retry);

}  // namespace lens::exporters
