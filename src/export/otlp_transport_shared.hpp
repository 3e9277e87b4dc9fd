// What the OTLP/gRPC and OTLP/HTTP transports share: the cap on an answer, the user agent, the
// Export*ServiceResponse of a signal and its partial_success, and the set of calls in flight
// that cancel() ends. Thread-safety: the functions are pure; InFlight is safe from any thread.
#pragma once

#include <google/protobuf/message.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "export/otlp_retry.hpp"
#include "lens/otel_settings.hpp"

namespace lens::exporters::transport {

// The most an exporter reads of one answer: an Export*ServiceResponse is a few hundred bytes
// (partial_success and its message), so a receiver that answers more (an endless body or
// endless headers, a huge gRPC message) is cut off there instead of growing the training
// process. gRPC applies it to the message (its metadata is bounded by gRPC's own default, 8 KiB);
// curl to the body and, separately, to the headers.
constexpr std::size_t kMaxResponseBytes = 64 * 1024;

// "lens-cpp/<version>".
std::string user_agent();

// An attempt that failed with `kind`, its cause key and its one-line message.
Attempt failure(Attempt::Kind kind, std::string cause, std::string message);

// The attempt ended because the transport was cancelled (shutdown).
Attempt cancelled();

// An empty Export*ServiceResponse of `signal`.
std::unique_ptr<google::protobuf::Message> new_response(Signal signal);

// Copies the partial_success of an Export*ServiceResponse of `signal` into `attempt`.
void read_partial_success(Signal signal, const google::protobuf::Message& response,
                          Attempt& attempt);

// The calls on the wire, so that cancel() can end them; after it, none starts.
template <class Call>
class InFlight {
 public:
  // False once cancelled.
  bool add(Call* call) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_) return false;
    calls_.insert(call);
    return true;
  }
  void remove(Call* call) {
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.erase(call);
  }
  template <class Cancel>
  void cancel(Cancel&& cancel_call) {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    for (Call* call : calls_) cancel_call(call);
  }

 private:
  std::mutex mutex_;
  bool cancelled_ = false;
  std::set<Call*> calls_;
};

}  // namespace lens::exporters::transport
