// Builders for hand-made OTLP protobuf messages in the codec tests: id bytes that read well as
// hex, and an attribute appended to a repeated KeyValue field.
#pragma once

#include <opentelemetry/proto/common/v1/common.pb.h>

#include <string>

namespace lens::test_support {

// Bytes first, first + 1, ...: ids whose hex form is easy to read (0x01..0x10 and friends).
inline std::string bytes_from(int first, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += static_cast<char>(first + i);
  return out;
}

// A new attribute named `key` at the end of `to`; the caller sets its value.
inline opentelemetry::proto::common::v1::KeyValue* add_attribute(
    google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>* to,
    const std::string& key) {
  auto* attribute = to->Add();
  attribute->set_key(key);
  return attribute;
}

}  // namespace lens::test_support
