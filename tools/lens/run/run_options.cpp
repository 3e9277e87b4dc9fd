// `lens run`'s flags (see run_options.hpp).
#include "run/run_options.hpp"

#include <cstdlib>
#include <string>

#include "cli/options.hpp"

namespace lens::cli {

const char* const kRunUsage =
    "usage: lens run [--nproc-per-node N] [--out DIR] [--keep-collector] [--threshold X]\n"
    "                [--grpc HOST:PORT] [--http HOST:PORT] [--hosts-per-run N]\n"
    "                -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs N ranks of PROGRAM on this machine with an OTLP collector in this process, then\n"
    "writes the run report (lens report) into DIR.\n"
    "\n"
    "options:\n"
    "  --nproc-per-node N  ranks to launch (default 1)\n"
    "  --out DIR           where telemetry, rank logs and the report go (default\n"
    "                      ./lens-runs/RUN_ID)\n"
    "  --keep-collector    after the ranks end, keep receiving until SIGINT/SIGTERM, then\n"
    "                      write the report\n"
    "  --threshold X       the report's straggler threshold (default 0.10, see lens report)\n"
    "  --grpc HOST:PORT    the collector's OTLP/gRPC address (default 127.0.0.1:0, a free port)\n"
    "  --http HOST:PORT    the collector's OTLP/HTTP address (default 127.0.0.1:0; 'off')\n"
    "  --hosts-per-run N   a test aid: present the ranks as N hosts (host.name host0...,\n"
    "                      ranks split evenly, LOCAL_RANK and GROUP_RANK to match; default 1)\n"
    "  --help              show this help\n"
    "\n"
    "Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK=0,\n"
    "MASTER_ADDR=127.0.0.1, MASTER_PORT (free), NEMO_LENS_RUN_ID (yours if set, else\n"
    "generated), OTEL_EXPORTER_OTLP_ENDPOINT and _PROTOCOL=grpc (the collector), and\n"
    "NEMO_LENS_EXPORTER=otlp, MEGATRON_OTEL_EXPORTER=otlp. Unless already set:\n"
    "NEMO_LENS_ENABLED=1, NEMO_LENS_RANK_STRATEGY=all_ranks, NEMO_LENS_SPAN_GROUPS=per_step,\n"
    "NEMO_LENS_LOGS_ENABLED=1, OTEL_BSP_SCHEDULE_DELAY=1000, OTEL_METRIC_EXPORT_INTERVAL=2000.\n"
    "When the ranks report a hang (NEMO_LENS_HANG_TIMEOUT), one line says where each rank is.\n";

namespace {

// --nproc-per-node, then --hosts-per-run, which must divide it.
Status parse_rank_counts(const ParsedOptions& parsed, RunOptions& options) {
  if (auto value = parsed.get("--nproc-per-node")) {
    Result<int> n = parse_int_option("--nproc-per-node", *value, 1);
    if (!n.ok()) return n.error();
    options.ranks = *n;
  }
  if (auto value = parsed.get("--hosts-per-run")) {
    Result<int> n = parse_int_option("--hosts-per-run", *value, 1);
    if (!n.ok()) return n.error();
    if (options.ranks % *n != 0) {
      return Error("invalid value for --hosts-per-run: '" + *value +
                   "'; accepted: a divisor of --nproc-per-node (" + std::to_string(options.ranks) +
                   "), so that every host has as many ranks");
    }
    options.hosts = *n;
  }
  return Status();
}

// --threshold: checked here so that a bad value fails before any rank starts.
Status parse_threshold(const ParsedOptions& parsed, RunOptions& options) {
  if (auto value = parsed.get("--threshold")) {
    char* end = nullptr;
    const double threshold = std::strtod(value->c_str(), &end);
    if (value->empty() || *end != '\0' || !(threshold > 0.0 && threshold <= 10.0)) {
      return Error("invalid value for --threshold: '" + *value +
                   "'; accepted: a fraction 0 < X <= 10 (0.10 = 10%)");
    }
    options.threshold = *value;
  }
  return Status();
}

// --grpc and --http (free loopback ports by default; --http may be 'off').
Status parse_collector_endpoints(const ParsedOptions& parsed, RunOptions& options) {
  options.grpc = Endpoint{"127.0.0.1", 0};
  options.http = Endpoint{"127.0.0.1", 0};
  for (const char* name : {"--grpc", "--http"}) {
    const auto value = parsed.get(name);
    if (!value) continue;
    std::optional<Endpoint>& target = std::string(name) == "--grpc" ? options.grpc : options.http;
    if (*value == "off" && std::string(name) == "--http") {
      target.reset();
      continue;
    }
    target = parse_endpoint(*value);
    if (!target) {
      return Error("invalid value for " + std::string(name) + ": '" + *value +
                   "'; accepted: HOST:PORT such as 127.0.0.1:4317 (port 0 picks a free port)" +
                   (std::string(name) == "--http" ? " or 'off'" : ""));
    }
  }
  return Status();
}

}  // namespace

Result<RunOptions> parse_run_options(const std::vector<std::string>& args, bool& help) {
  std::vector<std::string> before;
  RunOptions options;
  bool separator = false;
  for (const std::string& arg : args) {
    if (separator) {
      options.program.push_back(arg);
    } else if (arg == "--") {
      separator = true;
    } else {
      before.push_back(arg);
    }
  }
  OptionSpec spec;
  spec.with_value = {"--nproc-per-node", "--out",       "--grpc",
                     "--http",           "--threshold", "--hosts-per-run"};
  spec.flags = {"--keep-collector", "--help"};
  Result<ParsedOptions> parsed = parse_options(before, spec, "run");
  if (!parsed.ok()) return parsed.error();
  if (parsed->has("--help")) {
    help = true;
    return options;
  }
  if (!parsed->positional.empty()) {
    return Error("unexpected argument '" + parsed->positional.front() +
                 "'; the program and its arguments go after '--' (lens run [options] -- "
                 "PROGRAM ARGS...)");
  }
  if (options.program.empty()) {
    return Error("no program given; accepted: lens run [options] -- PROGRAM ARGS...");
  }
  if (Status status = parse_rank_counts(*parsed, options); !status.ok())
    return Error(status.message());
  if (auto value = parsed->get("--out")) options.out = *value;
  if (Status status = parse_threshold(*parsed, options); !status.ok())
    return Error(status.message());
  options.keep_collector = parsed->has("--keep-collector");
  if (Status status = parse_collector_endpoints(*parsed, options); !status.ok()) {
    return Error(status.message());
  }
  return options;
}

}  // namespace lens::cli
