// A small command-line option parser for the `lens` subcommands: `--name value`,
// `--name=value` and boolean `--flag`; errors name the option and what is accepted.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
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

// Parses an integer option value; the error names the option and the value.
Result<int> parse_int_option(const std::string& name, const std::string& value, int minimum);

}  // namespace lens::cli
