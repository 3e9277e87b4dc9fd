// Owning log recordable (see log_record_data.hpp).
#include "export/log_record_data.hpp"

namespace lens::exporters {

void LogRecordData::SetBody(const opentelemetry::common::AttributeValue& message) noexcept {
  try {
    body_ = opentelemetry::nostd::visit(opentelemetry::sdk::common::AttributeConverter(), message);
    has_body_ = true;
  } catch (...) {
    // Out of memory while copying: the record keeps no body rather than a dangling one.
  }
}

void LogRecordData::SetAttribute(opentelemetry::nostd::string_view key,
                                 const opentelemetry::common::AttributeValue& value) noexcept {
  try {
    attributes_[std::string(key)] =
        opentelemetry::nostd::visit(opentelemetry::sdk::common::AttributeConverter(), value);
  } catch (...) {
    // Out of memory: the attribute is lost, the record is not.
  }
}

// Only the name is kept: no exporter writes the id (OTLP has no field for it).
void LogRecordData::SetEventId(std::int64_t, opentelemetry::nostd::string_view name) noexcept {
  try {
    event_name_ = std::string(name);
  } catch (...) {
  }
}

}  // namespace lens::exporters
