// The OTLP/HTTP transport, http/protobuf or http/json (see otlp_transport.hpp for what a
// transport does). Thread-safety: send() may run on several threads at once; cancel() from any.
#pragma once

#include <memory>

#include "export/otlp_transport.hpp"

namespace lens::exporters {

// A transport that POSTs to `settings.endpoint` (the signal's full URL) with libcurl.
std::unique_ptr<OtlpTransport> make_http_transport(const OtlpSignalSettings& settings,
                                                   Signal signal);

}  // namespace lens::exporters
