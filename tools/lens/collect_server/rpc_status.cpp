// google.rpc.Status encodings of `lens collect`'s error answers (see rpc_status.hpp).
#include "collect_server/rpc_status.hpp"

#include <google/protobuf/unknown_field_set.h>

#include <cstdint>
#include <nlohmann/json.hpp>

namespace lens::cli {
namespace {

using google::protobuf::UnknownFieldSet;

std::string serialized(const UnknownFieldSet& fields) {
  std::string out;
  fields.SerializeToString(&out);
  return out;
}

// google.rpc.Status {code = 1, message = 2}.
void add_status_fields(UnknownFieldSet& status, int code, const std::string& message) {
  status.AddVarint(1, static_cast<std::uint64_t>(code));
  status.AddLengthDelimited(2, message);
}

}  // namespace

std::string status_protobuf(int code, const std::string& message) {
  UnknownFieldSet status;
  add_status_fields(status, code, message);
  return serialized(status);
}

std::string status_with_retry_info(int code, const std::string& message, int seconds) {
  UnknownFieldSet duration;  // google.protobuf.Duration {seconds = 1}
  duration.AddVarint(1, static_cast<std::uint64_t>(seconds));
  UnknownFieldSet retry_info;  // google.rpc.RetryInfo {retry_delay = 1}
  retry_info.AddLengthDelimited(1, serialized(duration));
  UnknownFieldSet any;  // google.protobuf.Any {type_url = 1, value = 2}
  any.AddLengthDelimited(1, "type.googleapis.com/google.rpc.RetryInfo");
  any.AddLengthDelimited(2, serialized(retry_info));
  UnknownFieldSet status;
  add_status_fields(status, code, message);
  status.AddLengthDelimited(3, serialized(any));  // details = 3
  return serialized(status);
}

std::string status_json(int code, const std::string& message) {
  const nlohmann::json body = {{"code", code}, {"message", message}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lens::cli
