// OTLP value conversions (see otlp_values.hpp).
#include "report/otlp_values.hpp"

namespace lens::report {
namespace {

namespace common = opentelemetry::proto::common::v1;

// Bounds the recursion on nested arrays and kvlists from untrusted files.
constexpr int kMaxDepth = 32;

nlohmann::json to_json_at(const common::AnyValue& value, int depth) {
  if (depth > kMaxDepth) return nullptr;
  switch (value.value_case()) {
    case common::AnyValue::kStringValue:
      return value.string_value();
    case common::AnyValue::kBoolValue:
      return value.bool_value();
    case common::AnyValue::kIntValue:
      return value.int_value();
    case common::AnyValue::kDoubleValue:
      return value.double_value();
    case common::AnyValue::kBytesValue:
      return to_hex(value.bytes_value());
    case common::AnyValue::kArrayValue: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : value.array_value().values()) {
        array.push_back(to_json_at(item, depth + 1));
      }
      return array;
    }
    case common::AnyValue::kKvlistValue: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& item : value.kvlist_value().values()) {
        object[item.key()] = to_json_at(item.value(), depth + 1);
      }
      return object;
    }
    case common::AnyValue::VALUE_NOT_SET:
      break;
  }
  return nullptr;
}

}  // namespace

nlohmann::json to_json(const common::AnyValue& value) { return to_json_at(value, 0); }

AttributeList to_attributes(const google::protobuf::RepeatedPtrField<common::KeyValue>& list) {
  AttributeList out;
  out.reserve(static_cast<std::size_t>(list.size()));
  for (const auto& item : list) out.emplace_back(item.key(), to_json(item.value()));
  return out;
}

std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0x0f];
  }
  return out;
}

}  // namespace lens::report
