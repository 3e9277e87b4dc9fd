// OTLP retry rules and the retry loop (see otlp_retry.hpp).
#include "export/otlp_retry.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <random>

namespace lens::exporters {
namespace {

using google::protobuf::internal::WireFormatLite;
using Clock = std::chrono::steady_clock;

// Calls `field(number, bytes)` for each length-delimited field of a message and
// `varint(number, value)` for each varint; false on malformed input.
bool for_each_field(std::string_view bytes,
                    const std::function<void(int, std::string_view)>& length_delimited,
                    const std::function<void(int, std::uint64_t)>& varint) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  while (true) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage() || in.CurrentPosition() == int(bytes.size());
    const int number = static_cast<int>(WireFormatLite::GetTagFieldNumber(tag));
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        std::uint32_t size = 0;
        std::string value;
        if (!in.ReadVarint32(&size) || !in.ReadString(&value, static_cast<int>(size))) return false;
        length_delimited(number, value);
        break;
      }
      case WireFormatLite::WIRETYPE_VARINT: {
        std::uint64_t value = 0;
        if (!in.ReadVarint64(&value)) return false;
        varint(number, value);
        break;
      }
      default:
        if (!WireFormatLite::SkipField(&in, tag)) return false;
    }
  }
}

const auto kIgnoreVarint = [](int, std::uint64_t) {};
const auto kIgnoreBytes = [](int, std::string_view) {};

// google.protobuf.Duration {int64 seconds = 1; int32 nanos = 2;}
std::optional<Millis> duration_of(std::string_view bytes) {
  std::int64_t seconds = 0;
  std::int64_t nanos = 0;
  const bool ok = for_each_field(bytes, kIgnoreBytes, [&](int number, std::uint64_t value) {
    if (number == 1) seconds = static_cast<std::int64_t>(value);
    if (number == 2) nanos = static_cast<std::int32_t>(value);
  });
  if (!ok || seconds < 0 || nanos < 0) return std::nullopt;
  return Millis(seconds * 1000 + nanos / 1'000'000);
}

std::string grpc_code_name(int code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  if (code >= 0 && code < static_cast<int>(std::size(kNames))) return kNames[code];
  return "code " + std::to_string(code);
}

// Messages from servers go into one stderr line: no newlines, bounded length.
std::string one_line(std::string_view text) {
  std::string out(text.substr(0, 200));
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return out;
}

Millis jittered(Millis backoff) {
  thread_local std::minstd_rand random{std::random_device{}()};
  const auto half = backoff.count() / 2;
  std::uniform_int_distribution<std::int64_t> pick(half,
                                                   std::max<std::int64_t>(half, backoff.count()));
  return Millis(pick(random));
}

}  // namespace

// The longest wait lens takes for a server's Retry-After (a day).
constexpr std::int64_t kMaxRetryAfterSeconds = 86400;

std::optional<Millis> parse_retry_after(std::string_view value,
                                        std::chrono::system_clock::time_point now) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!value.empty() && blank(value.front())) value.remove_prefix(1);
  while (!value.empty() && blank(value.back())) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  std::int64_t seconds = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec == std::errc() && end == value.data() + value.size()) {
    if (seconds < 0) return std::nullopt;
    return Millis(std::min<std::int64_t>(seconds, kMaxRetryAfterSeconds) * 1000);
  }
  std::tm tm{};
  const std::string text(value);
  const char* parsed = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (parsed == nullptr || *parsed != '\0') return std::nullopt;
  const auto at = std::chrono::system_clock::from_time_t(timegm(&tm));
  return std::max(Millis(0), std::chrono::duration_cast<Millis>(at - now));
}

std::string rpc_status_message(std::string_view status) {
  std::string message;
  const bool ok = for_each_field(
      status,
      [&](int number, std::string_view bytes) {
        if (number == 2) message = std::string(bytes);
      },
      kIgnoreVarint);
  return ok ? message : std::string();
}

std::optional<Millis> retry_info_delay(std::string_view status_details) {
  std::optional<Millis> delay;
  // google.rpc.Status {int32 code = 1; string message = 2; repeated google.protobuf.Any details
  // = 3;}, Any {string type_url = 1; bytes value = 2;}, RetryInfo {Duration retry_delay = 1;}
  for_each_field(
      status_details,
      [&](int number, std::string_view any) {
        if (number != 3) return;
        bool is_retry_info = false;
        std::string value;
        for_each_field(
            any,
            [&](int field, std::string_view bytes) {
              if (field == 1) is_retry_info = bytes.ends_with("/google.rpc.RetryInfo");
              if (field == 2) value = std::string(bytes);
            },
            kIgnoreVarint);
        if (!is_retry_info) return;
        for_each_field(
            value,
            [&](int field, std::string_view duration) {
              if (field == 1) delay = duration_of(duration);
            },
            kIgnoreVarint);
      },
      kIgnoreVarint);
  return delay;
}

Attempt classify_http_status(int status, std::string_view retry_after, std::string_view body_hint) {
  Attempt attempt;
  if (status >= 200 && status < 300) {
    attempt.kind = Attempt::Kind::kSuccess;
    return attempt;
  }
  attempt.cause = "http-" + std::to_string(status);
  attempt.message = "HTTP " + std::to_string(status);
  if (!body_hint.empty()) attempt.message += " (" + one_line(body_hint) + ")";
  const bool retryable = status == 429 || status == 502 || status == 503 || status == 504;
  attempt.kind = retryable ? Attempt::Kind::kRetryable : Attempt::Kind::kPermanent;
  if (retryable) {
    attempt.retry_after = parse_retry_after(retry_after, std::chrono::system_clock::now());
    // A longer wait than lens takes (a day): the line says what was asked and what was applied.
    std::int64_t seconds = 0;
    const auto [end, ec] =
        std::from_chars(retry_after.data(), retry_after.data() + retry_after.size(), seconds);
    if (attempt.retry_after && ec == std::errc() &&
        end == retry_after.data() + retry_after.size() && seconds > kMaxRetryAfterSeconds) {
      attempt.retry_after_asked = std::to_string(seconds) + " s";
    }
  }
  return attempt;
}

Attempt classify_grpc_status(int code, std::string_view message, std::string_view details) {
  Attempt attempt;
  if (code == 0) {
    attempt.kind = Attempt::Kind::kSuccess;
    return attempt;
  }
  const std::string name = grpc_code_name(code);
  attempt.cause = "grpc-" + name;
  attempt.message = "gRPC status " + name;
  if (!message.empty()) attempt.message += " (" + one_line(message) + ")";
  attempt.kind = Attempt::Kind::kPermanent;
  switch (code) {
    case 1:   // CANCELLED
    case 4:   // DEADLINE_EXCEEDED
    case 10:  // ABORTED
    case 11:  // OUT_OF_RANGE
    case 14:  // UNAVAILABLE
    case 15:  // DATA_LOSS
      attempt.kind = Attempt::Kind::kRetryable;
      attempt.retry_after = retry_info_delay(details);
      break;
    case 8:  // RESOURCE_EXHAUSTED: retryable only when the server says when (RetryInfo)
      attempt.retry_after = retry_info_delay(details);
      if (attempt.retry_after) attempt.kind = Attempt::Kind::kRetryable;
      break;
    default:
      break;
  }
  return attempt;
}

void Interrupt::trigger() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  cv_.notify_all();
}

void Interrupt::trigger(Clock::time_point deadline) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!until_ || deadline < *until_) until_ = deadline;
  }
  cv_.notify_all();
}

bool Interrupt::stopped() const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return stopped_;
}

Interrupt::Clock::time_point Interrupt::limit(Clock::time_point deadline) const noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  return until_ ? std::min(deadline, *until_) : deadline;
}

bool Interrupt::wait_for(Millis delay) noexcept {
  const auto end = Clock::now() + delay;
  std::unique_lock<std::mutex> lock(mutex_);
  return !cv_.wait_until(lock, end, [&] { return stopped_ || (until_ && *until_ <= end); });
}

Attempt send_with_retries(const RetryPolicy& policy, Clock::time_point deadline,
                          Interrupt& interrupt, const std::function<Attempt(Millis)>& attempt,
                          const std::function<void()>& on_retry) {
  Millis backoff = policy.initial_backoff;
  while (true) {
    auto limit = interrupt.limit(deadline);
    const auto left = std::chrono::duration_cast<Millis>(limit - Clock::now());
    Attempt result = attempt(std::max(left, Millis(1)));
    if (result.kind != Attempt::Kind::kRetryable) return result;
    if (interrupt.stopped()) {
      result.message += "; not retried: the exporter was shut down";
      return result;
    }
    const Millis wait = result.retry_after ? *result.retry_after : jittered(backoff);
    backoff = std::min(policy.max_backoff,
                       Millis(static_cast<std::int64_t>(backoff.count() * policy.multiplier)));
    limit = interrupt.limit(deadline);
    const bool shutdown_first = limit < deadline;
    if (Clock::now() + wait >= limit) {
      const std::string timeout = shutdown_first ? "the shutdown timeout" : "the export timeout";
      const std::string applied = std::to_string(wait.count()) + " ms";
      result.message +=
          result.retry_after
              ? "; the server asked to retry after " +
                    (result.retry_after_asked.empty()
                         ? applied
                         : result.retry_after_asked + " (capped at " + applied + ")") +
                    ", past " + timeout
              : "; retried until " + timeout;
      return result;
    }
    if (!interrupt.wait_for(wait)) {
      result.message += interrupt.stopped() ? "; stopped retrying at shutdown"
                                            : "; retried until the shutdown timeout";
      return result;
    }
    on_retry();
  }
}

}  // namespace lens::exporters
