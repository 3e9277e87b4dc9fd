// The transport a signal's settings ask for (see otlp_transport.hpp): OTLP/gRPC in
// otlp_grpc_transport.cpp, OTLP/HTTP in otlp_http_transport.cpp, what both share in
// otlp_transport_shared.cpp and otlp_failure_hints.cpp. Thread-safety: stateless.
#include "export/otlp_transport.hpp"

#include "export/otlp_grpc_transport.hpp"
#include "export/otlp_http_transport.hpp"

namespace lens::exporters {

std::unique_ptr<OtlpTransport> make_otlp_transport(const OtlpSignalSettings& settings,
                                                   Signal signal) {
  if (settings.protocol.value == OtlpProtocol::grpc) return make_grpc_transport(settings, signal);
  return make_http_transport(settings, signal);
}

}  // namespace lens::exporters
