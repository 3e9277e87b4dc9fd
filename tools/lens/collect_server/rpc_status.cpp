// google.rpc.Status encodings of `lens collect`'s error answers (see rpc_status.hpp).
#include "collect_server/rpc_status.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstdint>
#include <nlohmann/json.hpp>

namespace lens::cli {

std::string status_protobuf(int code, const std::string& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(1 << 3);
    coded.WriteVarint32(static_cast<std::uint32_t>(code));
    coded.WriteTag((2 << 3) | 2);
    coded.WriteVarint32(static_cast<std::uint32_t>(message.size()));
    coded.WriteString(message);
  }
  return out;
}

std::string status_with_retry_info(int code, const std::string& message, int seconds) {
  auto message_field = [](int number, const std::string& bytes) {
    std::string out;
    {
      google::protobuf::io::StringOutputStream stream(&out);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.WriteTag((static_cast<std::uint32_t>(number) << 3) | 2);
      coded.WriteVarint32(static_cast<std::uint32_t>(bytes.size()));
      coded.WriteString(bytes);
    }
    return out;
  };
  std::string duration;  // google.protobuf.Duration {seconds = 1}
  {
    google::protobuf::io::StringOutputStream stream(&duration);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag(1 << 3);
    coded.WriteVarint64(static_cast<std::uint64_t>(seconds));
  }
  const std::string retry_info = message_field(1, duration);
  const std::string any =
      message_field(1, "type.googleapis.com/google.rpc.RetryInfo") + message_field(2, retry_info);
  return status_protobuf(code, message) + message_field(3, any);
}

std::string status_json(int code, const std::string& message) {
  const nlohmann::json body = {{"code", code}, {"message", message}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lens::cli
