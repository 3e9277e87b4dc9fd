// Converts lens resource attributes into an opentelemetry-cpp Resource holding exactly those
// attributes (Resource::Create would merge in the process environment again, bypassing our
// merge order and the injected Env). Stateless.
#pragma once

#include <opentelemetry/sdk/resource/resource.h>

#include "lens/attributes.hpp"

namespace lens::telemetry {

opentelemetry::sdk::resource::Resource to_otel_resource(const Attributes& attributes);

}  // namespace lens::telemetry
