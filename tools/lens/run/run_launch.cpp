// What `lens run` prepares before its ranks start (see run_launch.hpp).
#include "run/run_launch.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <utility>

#include "collect_server/otlp_sink.hpp"

extern char** environ;

namespace lens::cli {
namespace {

namespace fs = std::filesystem;

// A free TCP port on loopback (the rendezvous port of the ranks' process group).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

std::string generated_run_id() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &utc);
  std::random_device device;
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", device() & 0xffffu);
  return std::string("run-") + stamp + "-" + suffix;
}

// The variables `lens run` sets itself: the launcher's, and the exporter's, whose collector is
// ours (per-signal endpoints, protocols and credentials would send the data elsewhere or fail).
const std::set<std::string>& replaced_variables() {
  static const std::set<std::string> replaced = {"RANK",
                                                 "WORLD_SIZE",
                                                 "LOCAL_RANK",
                                                 "LOCAL_WORLD_SIZE",
                                                 "GROUP_RANK",
                                                 "MASTER_ADDR",
                                                 "MASTER_PORT",
                                                 "NEMO_LENS_RUN_ID",
                                                 "OTEL_EXPORTER_OTLP_ENDPOINT",
                                                 "OTEL_EXPORTER_OTLP_PROTOCOL",
                                                 "NEMO_LENS_EXPORTER",
                                                 "MEGATRON_OTEL_EXPORTER",
                                                 "OTEL_RESOURCE_ATTRIBUTES",
                                                 "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                                                 "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                                                 "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                                                 "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                                                 "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                                                 "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
                                                 "OTEL_EXPORTER_OTLP_HEADERS",
                                                 "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                                                 "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
                                                 "OTEL_EXPORTER_OTLP_LOGS_HEADERS"};
  return replaced;
}

// Our environment without the replaced variables: its entries, the names kept, and the value of
// OTEL_RESOURCE_ATTRIBUTES (extended, not replaced).
struct InheritedEnvironment {
  std::vector<std::string> entries;
  std::set<std::string> names;
  std::string resource_attributes;
};

InheritedEnvironment inherited_environment() {
  InheritedEnvironment inherited;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string item = *entry;
    const std::string key = item.substr(0, item.find('='));
    if (key == "OTEL_RESOURCE_ATTRIBUTES") {
      inherited.resource_attributes = item.substr(key.size() + 1);
    }
    if (replaced_variables().count(key) != 0) continue;
    inherited.names.insert(key);
    inherited.entries.push_back(item);
  }
  return inherited;
}

}  // namespace

std::string run_id_for_this_run() {
  const char* given_run_id = std::getenv("NEMO_LENS_RUN_ID");
  return given_run_id != nullptr && *given_run_id != '\0' ? given_run_id : generated_run_id();
}

bool prepare_output(const RunOptions& options) {
  for (const fs::path& dir : {options.out, options.out / "logs"}) {
    if (std::string problem = output_directory_problem(dir); !problem.empty()) {
      std::cerr << "lens run: cannot use the output directory: " << problem << "\n";
      return false;
    }
  }
  for (int rank = 0; rank < options.ranks; ++rank) {
    const fs::path log = options.out / "logs" / ("rank" + std::to_string(rank) + ".log");
    if (std::string problem = output_file_problem(log); !problem.empty()) {
      std::cerr << "lens run: cannot write the log of rank " << rank << ": " << problem << "\n";
      return false;
    }
  }
  std::error_code error;
  fs::create_directories(options.out / "logs", error);
  if (error) {
    std::cerr << "lens run: cannot create " << (options.out / "logs").string() << ": "
              << error.message() << "\n";
    return false;
  }
  return true;
}

std::vector<std::string> rank_environment(int rank, int world_size, int master_port,
                                          const std::string& run_id, const std::string& endpoint,
                                          int hosts) {
  InheritedEnvironment inherited = inherited_environment();
  std::vector<std::string>& env = inherited.entries;
  std::string& resource_attributes = inherited.resource_attributes;
  const int per_host = world_size / std::max(1, hosts);
  const int host = hosts > 1 ? rank / per_host : 0;
  if (hosts > 1) {
    resource_attributes += (resource_attributes.empty() ? "" : ",") +
                           std::string("host.name=host") + std::to_string(host);
  }
  if (!resource_attributes.empty())
    env.push_back("OTEL_RESOURCE_ATTRIBUTES=" + resource_attributes);
  const std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(world_size)},
      {"LOCAL_RANK", std::to_string(hosts > 1 ? rank % per_host : rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(hosts > 1 ? per_host : world_size)},
      {"GROUP_RANK", std::to_string(host)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(master_port)},
      {"NEMO_LENS_RUN_ID", run_id},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
      {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
      {"NEMO_LENS_EXPORTER", "otlp"},
      {"MEGATRON_OTEL_EXPORTER", "otlp"}};
  for (const auto& [key, value] : set) env.push_back(key + "=" + value);
  const std::vector<std::pair<std::string, std::string>> defaults = {
      {"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
      {"NEMO_LENS_SPAN_GROUPS", "per_step"},
      // Hang reports (HANG_TIMEOUT) are log records: this run shows them while the ranks hang.
      {"NEMO_LENS_LOGS_ENABLED", "1"},
      {"OTEL_BSP_SCHEDULE_DELAY", "1000"},
      {"OTEL_METRIC_EXPORT_INTERVAL", "2000"}};
  for (const auto& [key, value] : defaults) {
    if (inherited.names.count(key) == 0) env.push_back(key + "=" + value);
  }
  return std::move(env);
}

std::vector<RankLaunch> rank_launches(const RunOptions& options, const std::string& run_id,
                                      const std::string& endpoint) {
  const int master_port = free_port();
  std::vector<RankLaunch> launches;
  for (int rank = 0; rank < options.ranks; ++rank) {
    launches.push_back(
        {options.program,
         rank_environment(rank, options.ranks, master_port, run_id, endpoint, options.hosts),
         options.out / "logs" / ("rank" + std::to_string(rank) + ".log")});
  }
  return launches;
}

}  // namespace lens::cli
