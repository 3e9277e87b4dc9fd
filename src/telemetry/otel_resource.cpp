// lens Attributes -> opentelemetry-cpp Resource (see otel_resource.hpp).
#include "telemetry/otel_resource.hpp"

#include <opentelemetry/sdk/resource/resource_detector.h>

namespace lens::telemetry {
namespace {

namespace resource = opentelemetry::sdk::resource;

// ResourceDetector is the public route to a Resource with exactly the given attributes.
class FixedResource final : public resource::ResourceDetector {
 public:
  explicit FixedResource(resource::ResourceAttributes attributes)
      : attributes_(std::move(attributes)) {}
  resource::Resource Detect() override { return Create(attributes_); }

 private:
  resource::ResourceAttributes attributes_;
};

opentelemetry::sdk::common::OwnedAttributeValue to_owned(const AttributeValue& value) {
  return std::visit(
      [](const auto& v) -> opentelemetry::sdk::common::OwnedAttributeValue { return v; }, value);
}

}  // namespace

resource::Resource to_otel_resource(const Attributes& attributes) {
  resource::ResourceAttributes converted;
  for (const auto& [key, value] : attributes) {
    converted[key] = to_owned(value);
  }
  FixedResource detector(std::move(converted));
  return detector.Detect();
}

}  // namespace lens::telemetry
