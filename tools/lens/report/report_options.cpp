// `lens report` options (see report_options.hpp).
#include "report/report_options.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace lens::report {
namespace {

constexpr const char* kAccepted =
    "-o, --perfetto, --perfetto-all-ranks, --threshold, --window, --run-id, --min-excess, "
    "--false-alarm-rate, --job, --help";
constexpr double kMaxThreshold = 10.0;

Result<double> parse_threshold(const std::string& value) {
  double parsed = 0.0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || !std::isfinite(parsed) || parsed <= 0.0 ||
      parsed > kMaxThreshold) {
    return Error("invalid value for --threshold: '" + value +
                 "'; accepted: a fraction > 0 and <= 10 (0.10 = 10%)");
  }
  return parsed;
}

// A fraction in (0, max]; max < 1 excludes 1 itself.
Result<double> parse_fraction(const std::string& flag, const std::string& value, double max,
                              const char* accepted) {
  double parsed = 0.0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || !std::isfinite(parsed) || parsed <= 0.0 ||
      parsed > max || (max < 1.0 && parsed >= max)) {
    return Error("invalid value for " + flag + ": '" + value + "'; accepted: " + accepted);
  }
  return parsed;
}

Result<int> parse_window(const std::string& value) {
  int parsed = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, parsed);
  if (value.empty() || ec != std::errc() || ptr != end || parsed < 1) {
    return Error("invalid value for --window: '" + value + "'; accepted: an integer >= 1");
  }
  return parsed;
}

// An output file must go into an existing directory.
Status check_output(const std::string& flag, const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path parent = path.has_parent_path() ? path.parent_path() : ".";
  if (path.filename().empty() || std::filesystem::is_directory(path, ec) ||
      !std::filesystem::is_directory(parent, ec)) {
    return Error("invalid value for " + flag + ": '" + path.string() +
                 "'; accepted: a file path in an existing directory");
  }
  return {};
}

}  // namespace

Result<ReportOptions> parse_report_options(const std::vector<std::string>& args) {
  ReportOptions options;
  std::vector<std::string> dirs, run_ids, single_run_flags;
  std::optional<std::string> html, perfetto;
  bool job = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> value;
    if (name == "--help" || name == "-h") {
      options.help = true;
      return options;
    }
    if (name.rfind("-", 0) != 0 || name == "-") {
      dirs.push_back(name);
      continue;
    }
    if (auto eq = name.find('='); eq != std::string::npos && name.rfind("--", 0) == 0) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "--job") {
      if (value) return Error("option '--job' takes no value");
      job = true;
      continue;
    }
    if (name == "--perfetto-all-ranks") {
      if (value) return Error("option '--perfetto-all-ranks' takes no value");
      options.perfetto_all_ranks = true;
      single_run_flags.push_back(name);
      continue;
    }
    if (name != "-o" && name != "--perfetto" && name != "--threshold" && name != "--window" &&
        name != "--run-id" && name != "--min-excess" && name != "--false-alarm-rate") {
      return Error("unknown option '" + name + "'; accepted: " + kAccepted);
    }
    if (!value) {
      if (i + 1 >= args.size()) return Error("option '" + name + "' needs a value");
      value = args[++i];
    }
    if (name == "--perfetto" || name == "--threshold" || name == "--window" ||
        name == "--min-excess" || name == "--false-alarm-rate") {
      single_run_flags.push_back(name);
    }
    if (name == "-o") {
      html = *value;
    } else if (name == "--perfetto") {
      perfetto = *value;
    } else if (name == "--run-id") {
      if (value->empty()) {
        return Error("invalid value for --run-id: ''; accepted: a run id (nemo.run.id)");
      }
      for (const std::string& seen : run_ids) {
        if (seen == *value) {
          return Error("invalid value for --run-id: '" + *value +
                       "' given twice; accepted: distinct run ids");
        }
      }
      run_ids.push_back(*value);
    } else if (name == "--min-excess") {
      Result<double> parsed = parse_fraction(
          name, *value, 1.0, "a fraction of the median step > 0 and <= 1 (0.02 = 2%)");
      if (!parsed.ok()) return parsed.error();
      options.min_excess = *parsed;
    } else if (name == "--false-alarm-rate") {
      Result<double> parsed =
          parse_fraction(name, *value, 0.5, "a probability > 0 and < 0.5 (0.01 = 1%)");
      if (!parsed.ok()) return parsed.error();
      options.false_alarm_rate = *parsed;
    } else if (name == "--threshold") {
      Result<double> threshold = parse_threshold(*value);
      if (!threshold.ok()) return threshold.error();
      options.threshold = *threshold;
    } else {
      Result<int> window = parse_window(*value);
      if (!window.ok()) return window.error();
      options.window = *window;
    }
  }
  if (dirs.empty()) return Error("missing DIR; accepted: lens report DIR [options] (see --help)");
  options.dir = dirs.front();
  if (job) {
    if (!single_run_flags.empty() || !run_ids.empty()) {
      return Error("option '" + (run_ids.empty() ? single_run_flags.front() : "--run-id") +
                   "' does not apply with --job; accepted there: -o, --help");
    }
    for (const std::string& dir : dirs) options.job.emplace_back(dir);
    options.html = html ? std::filesystem::path(*html) : options.dir / "job.html";
    if (html) {
      if (Status status = check_output("-o", options.html); !status.ok())
        return Error(status.message());
    }
    return options;
  }
  if (dirs.size() > 1 || run_ids.size() > 1) {
    if (dirs.size() > 1 && run_ids.size() > 1) {
      return Error("invalid use of --run-id: given " + std::to_string(run_ids.size()) +
                   " times with " + std::to_string(dirs.size()) +
                   " DIRs; accepted: several DIRs (one --run-id at most, applied to each) or "
                   "one DIR with several --run-id");
    }
    if (!single_run_flags.empty()) {
      return Error("option '" + single_run_flags.front() +
                   "' does not apply when comparing runs; accepted there: -o, --run-id, --help");
    }
    for (const std::string& dir : dirs) {
      if (run_ids.empty()) {
        options.compare.push_back({dir, std::nullopt});
      } else if (dirs.size() > 1) {
        options.compare.push_back({dir, run_ids.front()});
      } else {
        for (const std::string& id : run_ids) options.compare.push_back({dir, id});
      }
    }
    options.html = html ? std::filesystem::path(*html) : options.dir / "compare.html";
    if (html) {
      if (Status status = check_output("-o", options.html); !status.ok())
        return Error(status.message());
    }
    return options;
  }
  if (!run_ids.empty()) options.run_id = run_ids.front();
  options.html = html ? std::filesystem::path(*html) : options.dir / "report.html";
  options.perfetto = perfetto ? std::filesystem::path(*perfetto) : options.dir / "trace.json";
  // The defaults live in DIR, whose checks come with reading it.
  if (html) {
    if (Status status = check_output("-o", options.html); !status.ok())
      return Error(status.message());
  }
  if (perfetto) {
    if (Status status = check_output("--perfetto", options.perfetto); !status.ok()) {
      return Error(status.message());
    }
  }
  return options;
}

}  // namespace lens::report
