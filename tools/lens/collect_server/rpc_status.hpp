// The google.rpc.Status bodies `lens collect` answers errors with: binary protobuf or its JSON
// form for OTLP/HTTP, and the grpc-status-details-bin of a RESOURCE_EXHAUSTED that asks for a
// retry (RetryInfo). Thread-safety: pure functions.
#pragma once

#include <string>

namespace lens::cli {

// google.rpc.Code values used in error bodies.
inline constexpr int kCodeInvalidArgument = 3;
inline constexpr int kCodeNotFound = 5;
inline constexpr int kCodeResourceExhausted = 8;
inline constexpr int kCodeUnavailable = 14;
inline constexpr int kCodeUnauthenticated = 16;

// google.rpc.Status {code = 1, message = 2} in the binary protobuf encoding.
std::string status_protobuf(int code, const std::string& message);

// google.rpc.Status {code, message, details: [Any google.rpc.RetryInfo {retry_delay: seconds}]}
// in the binary encoding: the grpc-status-details-bin of a RESOURCE_EXHAUSTED that asks for a
// retry (OTLP exporters retry RESOURCE_EXHAUSTED only when it carries RetryInfo).
std::string status_with_retry_info(int code, const std::string& message, int seconds);

// {"code": code, "message": message}, invalid UTF-8 replaced.
std::string status_json(int code, const std::string& message);

}  // namespace lens::cli
