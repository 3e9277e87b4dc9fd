// Listening addresses of `lens collect` (see listen_options.hpp).
#include "collect_server/listen_options.hpp"

#include <charconv>

namespace lens::cli {

std::string Endpoint::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string host = text.substr(0, colon);
  const std::string port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.find(':') == std::string::npos) return std::nullopt;
  } else if (host.find_first_of(":[]") != std::string::npos) {
    return std::nullopt;  // an IPv6 address needs brackets
  }
  if (host.empty() || host.find_first_of(" \t/") != std::string::npos) return std::nullopt;
  int port = -1;
  const char* end = port_text.data() + port_text.size();
  auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
  if (port_text.empty() || ec != std::errc() || ptr != end || port < 0 || port > 65535) {
    return std::nullopt;
  }
  return Endpoint{host, port};
}

}  // namespace lens::cli
