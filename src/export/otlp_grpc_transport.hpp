// The OTLP/gRPC transport (see otlp_transport.hpp for what a transport does).
// Thread-safety: send() may run on several threads at once; cancel() from any thread.
#pragma once

#include <memory>

#include "export/otlp_transport.hpp"

namespace lens::exporters {

// A transport to `settings.endpoint` over gRPC; a channel that cannot be made (a bad endpoint,
// an unreadable TLS file) makes every send fail permanently with the reason.
std::unique_ptr<OtlpTransport> make_grpc_transport(const OtlpSignalSettings& settings,
                                                   Signal signal);

}  // namespace lens::exporters
