// Part of the lens_cli fuzz target: `lens run`'s option parsing is file-local to
// tools/lens/run_command.cpp, so that file is compiled here once more with one named entry added
// (collect_command.cpp goes into lens_cli_fuzz.cpp: the two define helpers of the same name).
#include "run/run_command.cpp"  // NOLINT(bugprone-suspicious-include)

namespace lens::fuzz {

// parse_run_options, with the --help flag folded into the result.
Result<bool> parse_run_flags(const std::vector<std::string>& args) {
  bool help = false;
  Result<cli::RunOptions> options = cli::parse_run_options(args, help);
  if (!options.ok()) {
    return options.error();
  }
  return help;
}

}  // namespace lens::fuzz
