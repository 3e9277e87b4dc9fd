// Option parsing for the `lens` subcommands (see options.hpp).
#include "cli/options.hpp"

#include <charconv>
#include <iostream>

namespace lens::cli {
namespace {

std::string accepted_list(const OptionSpec& spec) {
  std::set<std::string> all = spec.with_value;
  all.insert(spec.flags.begin(), spec.flags.end());
  std::string out;
  for (const auto& name : all) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

}  // namespace

std::optional<std::string> ParsedOptions::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) {
    return std::nullopt;
  }
  return it->second;
}

Result<ParsedOptions> parse_options(const std::vector<std::string>& args, const OptionSpec& spec,
                                    const std::string& command) {
  ParsedOptions out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      out.positional.push_back(arg);
      continue;
    }
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    if (spec.flags.count(name) != 0) {
      if (inline_value) {
        return Error("option '" + name + "' of 'lens " + command + "' takes no value (got '" +
                     *inline_value + "')");
      }
      out.flags.insert(name);
      continue;
    }
    if (spec.with_value.count(name) == 0) {
      return Error("unknown option '" + name + "' for 'lens " + command +
                   "'; accepted: " + accepted_list(spec));
    }
    if (inline_value) {
      out.values[name] = *inline_value;
      continue;
    }
    if (i + 1 >= args.size()) {
      return Error("option '" + name + "' of 'lens " + command + "' needs a value");
    }
    out.values[name] = args[++i];
  }
  return out;
}

Result<int> parse_int_option(const std::string& name, const std::string& value, int minimum) {
  int parsed = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || parsed < minimum) {
    return Error("invalid value for " + name + ": '" + value +
                 "'; accepted: an integer >= " + std::to_string(minimum));
  }
  return parsed;
}

std::variant<ParsedOptions, int> parse_command_options(const std::vector<std::string>& args,
                                                       const OptionSpec& spec,
                                                       const std::string& command,
                                                       std::string_view usage) {
  auto parsed = parse_options(args, spec, command);
  std::string error;
  if (!parsed.ok()) {
    error = parsed.message();
  } else if (parsed->has("--help")) {
    std::cout << usage;
    return 0;
  } else if (!parsed->positional.empty()) {
    error = "unexpected argument '" + parsed->positional.front() + "' for 'lens " + command +
            "'; see lens " + command + " --help";
  } else {
    return std::move(*parsed);
  }
  std::cerr << "lens: " << error << "\n";
  return 2;
}

}  // namespace lens::cli
