// `lens` subcommand dispatch, usage text and version.
#include "cli/commands.hpp"

#include <iostream>

#include "lens/version.hpp"

namespace lens::cli {
namespace {

constexpr const char* kUsage =
    "usage: lens <command> [options]\n"
    "\n"
    "commands:\n"
    "  config    print the resolved telemetry configuration (lens config --help)\n"
    "  collect   receive OTLP over gRPC/HTTP into JSON line files (lens collect --help)\n"
    "  report    HTML report, Perfetto trace and stragglers of a run, or runs compared\n"
    "            (lens report --help)\n"
    "  run       launch N ranks with a collector, then report (lens run --help)\n"
    "\n"
    "options:\n"
    "  --help     show this help\n"
    "  --version  print the lens version\n";

}  // namespace

int run(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string& command = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (command == "--version") {
    std::cout << "lens " << kVersion << "\n";
    return 0;
  }
  if (command == "config") {
    return config_command(rest);
  }
  if (command == "collect") {
    return collect_command(rest);
  }
  if (command == "report") {
    return report_command(rest);
  }
  if (command == "run") {
    return run_command(rest);
  }
  std::cerr << "lens: unknown command '" << command
            << "'; accepted: config, collect, report, run\n";
  return 2;
}

}  // namespace lens::cli
