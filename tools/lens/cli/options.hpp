// A small command-line option parser for the `lens` subcommands: `--name value`,
// `--name=value` and boolean `--flag`; errors name the option and what is accepted.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lens/result.hpp"

namespace lens::cli {

struct OptionSpec {
  std::set<std::string> with_value;  // e.g. "--prefix"
  std::set<std::string> flags;       // e.g. "--otel-enabled"
};

struct ParsedOptions {
  std::map<std::string, std::string> values;  // last occurrence wins
  std::set<std::string> flags;
  std::vector<std::string> positional;

  std::optional<std::string> get(const std::string& name) const;
  bool has(const std::string& name) const { return flags.count(name) != 0; }
};

// `command` names the subcommand in error messages ("config").
Result<ParsedOptions> parse_options(const std::vector<std::string>& args, const OptionSpec& spec,
                                    const std::string& command);

// parse_options for a subcommand that takes no positional arguments and has a "--help" flag:
// the options, or the exit status once it has printed `usage` on stdout for --help (0) or
// "lens: " and the error on stderr (2).
std::variant<ParsedOptions, int> parse_command_options(const std::vector<std::string>& args,
                                                       const OptionSpec& spec,
                                                       const std::string& command,
                                                       std::string_view usage);

// Parses an integer option value; the error names the option and the value.
Result<int> parse_int_option(const std::string& name, const std::string& value, int minimum);

}  // namespace lens::cli
