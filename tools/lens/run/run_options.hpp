// `lens run`'s flags: the usage text, what the flags ask for, and their parsing (no side
// effects; the parsing is also fuzzed, fuzz/lens_cli_fuzz.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collect_server/listen_options.hpp"
#include "lens/result.hpp"

namespace lens::cli {

extern const char* const kRunUsage;

struct RunOptions {
  int ranks = 1;
  std::filesystem::path out;
  bool keep_collector = false;
  std::optional<Endpoint> grpc;
  std::optional<Endpoint> http;
  std::optional<std::string> threshold;  // handed to lens report, which checks it
  int hosts = 1;                         // --hosts-per-run: fake hosts, a test aid
  std::vector<std::string> program;
};

// Parses what comes before "--"; `program` is what follows it. Sets `help` (and returns the
// defaults) for --help; the error names the flag, the value and what is accepted.
Result<RunOptions> parse_run_options(const std::vector<std::string>& args, bool& help);

}  // namespace lens::cli
