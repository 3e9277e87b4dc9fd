// Conversions from OTLP protobuf values to the report's model: AnyValue to JSON, attribute lists,
// and the bytes ids to lowercase hex. Stateless and thread-safe.
#pragma once

#include <google/protobuf/repeated_ptr_field.h>
#include <opentelemetry/proto/common/v1/common.pb.h>

#include <nlohmann/json.hpp>
#include <string>

#include "report/run_model.hpp"

namespace lens::report {

// Scalars map to JSON scalars, arrays to arrays, kvlists to objects, bytes to lowercase hex.
nlohmann::json to_json(const opentelemetry::proto::common::v1::AnyValue& value);

AttributeList to_attributes(
    const google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>& list);

std::string to_hex(const std::string& bytes);

}  // namespace lens::report
