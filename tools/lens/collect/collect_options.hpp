// `lens collect`'s flags: the usage text, what the flags ask for, and their checks (files named
// by --token-file and --tls-* are read; nothing else is touched). The checks are also fuzzed
// (fuzz/lens_cli_fuzz.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/options.hpp"
#include "collect_server/otlp_receiver.hpp"

namespace lens::cli {

extern const char* const kCollectUsage;
// The flags `lens collect` accepts.
extern const OptionSpec kCollectFlags;

// What `lens collect`'s flags ask for.
struct CollectOptions {
  ReceiverOptions receiver;
  std::string out;
  std::uint64_t max_bytes = 0;
};

// All of `lens collect`'s flags, in the order their errors are reported; the error for the first
// bad one ("" when all are valid).
std::string parse_collect_options(const ParsedOptions& options, CollectOptions& collect);

// N, NK, NM or NG (powers of 1024); nullopt when `text` is not one.
std::optional<std::uint64_t> parse_bytes(const std::string& text);

// A token read from a file or the environment: surrounding whitespace (a trailing newline) is
// not part of it.
std::string trimmed(std::string text);

}  // namespace lens::cli
