// Fuzz target: the `lens` command's flag parsing: `lens config` run whole (flags, environment,
// validation, JSON output), and the flags of `lens collect`, `lens run` and `lens report`.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "collect/collect_options.hpp"
#include "collect_server/otlp_receiver.hpp"
#include "fuzz_input.hpp"
#include "report/report_options.hpp"
#include "run/run_options.hpp"

namespace {

// An exporter header that `lens config` must never print (it shows "[REDACTED]").
constexpr std::string_view kCanary = "Yk4CanaryTokenNeverPrinted9";

// A fixed environment, whatever the fuzzing host's: lens on, a secret header planted.
void set_environment() {
  ::clearenv();
  ::setenv("NEMO_LENS_ENABLED", "1", 1);
  ::setenv("OTEL_EXPORTER_OTLP_HEADERS", ("authorization=Bearer%20" + std::string(kCanary)).c_str(),
           1);
}

// `lens config` with its output captured: exit status 0 or 2, no secret in any output, and the
// JSON form parses.
void config(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  std::streambuf* const cout_buffer = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const cerr_buffer = std::cerr.rdbuf(err.rdbuf());
  const int status = lens::cli::config_command(args);
  std::cout.rdbuf(cout_buffer);
  std::cerr.rdbuf(cerr_buffer);
  if (status != 0 && status != 2) {
    lens::fuzz::fail("lens config exited with " + std::to_string(status));
  }
  if (out.str().find(kCanary) != std::string::npos ||
      err.str().find(kCanary) != std::string::npos) {
    lens::fuzz::fail("lens config printed a header value:\n" + out.str() + err.str());
  }
  if (status == 2 && err.str().rfind("lens: ", 0) != 0) {
    lens::fuzz::fail("lens config failed without a 'lens: ' line: " + err.str());
  }
  const bool json = out.str().rfind("{", 0) == 0;
  if (status == 0 && json && !nlohmann::json::accept(out.str())) {
    lens::fuzz::fail("lens config printed JSON that does not parse:\n" + out.str());
  }
}

// An endpoint that parses prints as text that parses back to itself.
void endpoint(const std::string& text) {
  const auto parsed = lens::cli::parse_endpoint(text);
  if (!parsed) {
    return;
  }
  const auto again = lens::cli::parse_endpoint(parsed->to_string());
  if (!again || again->host != parsed->host || again->port != parsed->port) {
    lens::fuzz::fail("endpoint '" + text + "' prints as '" + parsed->to_string() +
                     "', which does not parse back");
  }
}

// The checks collect_command makes on its flags before it starts anything.
void collect(const std::vector<std::string>& args) {
  const lens::cli::OptionSpec spec{{"--grpc", "--http", "--out", "--max-bytes", "--token",
                                    "--token-file", "--tls-cert", "--tls-key", "--tls-client-ca"},
                                   {"--help"}};
  const auto parsed = lens::cli::parse_options(args, spec, "collect");
  if (!parsed.ok()) {
    return;
  }
  for (const char* flag : {"--grpc", "--http"}) {
    if (auto value = parsed->get(flag); value && *value != "off") {
      endpoint(*value);
    }
  }
  if (auto value = parsed->get("--max-bytes")) {
    (void)lens::cli::parse_bytes(*value);
  }
  (void)lens::cli::trimmed(parsed->get("--token").value_or(""));
}

}  // namespace

// Input: byte 0 % 4 picks config, collect, run or report; the rest is argv, NUL-separated.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool environment_set = (set_environment(), true);
  (void)environment_set;
  const std::string_view text = lens::fuzz::as_text(data, size);
  if (size == 0 || text.find(kCanary) != std::string_view::npos) {
    return 0;  // an input that names the canary itself would be echoed in error messages
  }
  const std::vector<std::string> args =
      lens::fuzz::split(lens::fuzz::as_text(data + 1, size - 1), '\0');
  switch (data[0] % 4) {
    case 0:
      config(args);
      break;
    case 1:
      collect(args);
      break;
    case 2: {
      bool help = false;
      (void)lens::cli::parse_run_options(args, help);
      for (const std::string& arg : args) {
        endpoint(arg);  // the HOST:PORT grammar of --grpc and --http, on every argument
      }
      break;
    }
    default:
      (void)lens::report::parse_report_options(args);
      break;
  }
  return 0;
}
