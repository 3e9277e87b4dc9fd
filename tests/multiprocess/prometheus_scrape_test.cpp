// A real Prometheus (Debian's /usr/bin/prometheus, on loopback, its own configuration and data
// directory, 1 s scrape interval) scrapes the two ranks of the example trainer, each serving its
// metrics with OTEL_METRICS_EXPORTER=prometheus on port + local rank; PromQL over the HTTP API
// then finds the training loss and the step-time histogram of both ranks with their job,
// instance and rank (from target_info), and `promtool check metrics` accepts a rank's scrape.
// Skipped when /usr/bin/prometheus is absent. Bounded: Prometheus must answer within 15 s.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/spawn_logged.hpp"
#include "test_directory.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kPrometheus = "/usr/bin/prometheus";
constexpr const char* kPromtool = "/usr/bin/promtool";

// Binds 127.0.0.1:port (0: any); the bound port, or -1 when it is taken.
int bind_loopback(int port, int& fd) {
  fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    fd = -1;
    return -1;
  }
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

// `count` consecutive ports free right now.
int free_ports(int count) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::vector<int> fds(count, -1);
    const int base = bind_loopback(0, fds[0]);
    bool all = base > 0 && base + count <= 65535;
    for (int i = 1; all && i < count; ++i) all = bind_loopback(base + i, fds[i]) > 0;
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
    if (all) return base;
  }
  return -1;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// SIGTERM, then SIGKILL if the process is still there after `grace`.
void stop(pid_t pid, std::chrono::milliseconds grace) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  const auto deadline = Clock::now() + grace;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

class PrometheusScrape : public TestDirectory {
 protected:
  PrometheusScrape() : TestDirectory("lens-prometheus", /*keep_after_failure=*/true) {}

  void TearDown() override {
    for (pid_t pid : ranks_) stop(pid, std::chrono::seconds(5));
    stop(prometheus_, std::chrono::seconds(5));
    TestDirectory::TearDown();
  }

  // The result vector of an instant query, or an empty array when Prometheus did not answer.
  json query(httplib::Client& client, const std::string& promql) {
    const auto response =
        client.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!response || response->status != 200) return json::array();
    const json body = json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || body.value("status", "") != "success") return json::array();
    return body.at("data").at("result");
  }

  std::vector<pid_t> ranks_;
  pid_t prometheus_ = -1;
};

TEST_F(PrometheusScrape, PrometheusQueriesTheLossAndStepTimeOfTwoTrainerRanks) {
  if (!fs::exists(kPrometheus)) GTEST_SKIP() << kPrometheus << " is absent";
  const int base = free_ports(2);
  const int prometheus_port = free_ports(1);
  ASSERT_GT(base, 0);
  ASSERT_GT(prometheus_port, 0);
  const std::string rank0 = "127.0.0.1:" + std::to_string(base);
  const std::string rank1 = "127.0.0.1:" + std::to_string(base + 1);

  // Prometheus first, so that it scrapes from the trainer's first second.
  std::ofstream(dir_ / "prometheus.yml") << "global:\n"
                                            "  scrape_interval: 1s\n"
                                            "  scrape_timeout: 1s\n"
                                            "scrape_configs:\n"
                                            "  - job_name: lens\n"
                                            "    static_configs:\n"
                                            "      - targets: ['"
                                         << rank0 << "', '" << rank1 << "']\n";
  prometheus_ = lens::testing::spawn_logged(
      {kPrometheus, "--config.file=" + (dir_ / "prometheus.yml").string(),
       "--storage.tsdb.path=" + (dir_ / "data").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port), "--log.level=warn"},
      {}, dir_ / "prometheus.log");

  // Two ranks of one node; the trainer runs far longer than the test needs (it is stopped).
  const int master_port = free_ports(1);
  for (int rank = 0; rank < 2; ++rank) {
    const std::map<std::string, std::string> env = {
        {"RANK", std::to_string(rank)},
        {"WORLD_SIZE", "2"},
        {"LOCAL_RANK", std::to_string(rank)},
        {"LOCAL_WORLD_SIZE", "2"},
        {"GROUP_RANK", "0"},
        {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(master_port)},
        {"MEGATRON_OTEL_ENABLED", "1"},
        {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"},
        {"MEGATRON_OTEL_EXPORTER", "none"},
        {"MEGATRON_OTEL_RUN_ID", "prometheus-test"},
        {"OTEL_METRICS_EXPORTER", "prometheus"},
        {"OTEL_EXPORTER_PROMETHEUS_HOST", "127.0.0.1"},
        {"OTEL_EXPORTER_PROMETHEUS_PORT", std::to_string(base)},
        {"OTEL_METRIC_EXPORT_INTERVAL", "200"}};
    ranks_.push_back(lens::testing::spawn_logged(
        {LENS_TRAIN_LOOP_PATH, "--train-iters", "1000", "--log-interval", "1", "--eval-interval",
         "1000", "--slow-rank", "0", "--slow-ms", "40"},
        env, dir_ / ("rank" + std::to_string(rank) + ".log")));
  }

  httplib::Client prometheus("127.0.0.1", prometheus_port);
  prometheus.set_connection_timeout(1);
  prometheus.set_read_timeout(2);
  const std::string loss_by_rank =
      "megatron_training_loss * on(job, instance) group_left(dl_rank) target_info";
  const std::string step_time_count = "megatron_training_step_duration_ms_milliseconds_count";
  json losses = json::array();
  json step_times = json::array();
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < deadline) {
    losses = query(prometheus, loss_by_rank);
    step_times = query(prometheus, step_time_count);
    if (losses.size() == 2 && step_times.size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  ASSERT_EQ(losses.size(), 2U) << "query: " << loss_by_rank << "\nanswer: " << losses.dump()
                               << "\nprometheus.log:\n"
                               << read_file(dir_ / "prometheus.log") << "\nrank0.log:\n"
                               << read_file(dir_ / "rank0.log");
  ASSERT_EQ(step_times.size(), 2U) << step_times.dump();

  // Each rank's series: job from the scrape configuration, instance its own port, dl_rank its
  // rank (from target_info), and a loss a trainer can have.
  std::map<std::string, std::string> rank_of_instance;
  for (const json& series : losses) {
    const json& labels = series.at("metric");
    EXPECT_EQ(labels.value("job", ""), "lens") << series.dump();
    rank_of_instance[labels.value("instance", "")] = labels.value("dl_rank", "");
    const double loss = std::stod(series.at("value").at(1).get<std::string>());
    EXPECT_TRUE(std::isfinite(loss) && loss > 0.0) << series.dump();
  }
  EXPECT_EQ(rank_of_instance, (std::map<std::string, std::string>{{rank0, "0"}, {rank1, "1"}}));
  std::set<std::string> step_instances;
  for (const json& series : step_times) {
    const json& labels = series.at("metric");
    EXPECT_EQ(labels.value("job", ""), "lens");
    EXPECT_EQ(labels.value("otel_scope_name", ""), "nemo.lens") << series.dump();
    step_instances.insert(labels.value("instance", ""));
    EXPECT_GE(std::stod(series.at("value").at(1).get<std::string>()), 1.0) << series.dump();
  }
  EXPECT_EQ(step_instances, (std::set<std::string>{rank0, rank1}));

  // What Prometheus scraped passes promtool's checks (a rank's endpoint, scraped directly). Its
  // only remarks may be lint advice on two names Megatron chose, which the OpenTelemetry rules
  // keep and suffix with the unit in words ("step_duration_ms" in ms, "tokens_per_sec" in
  // {token}/s); never a parse error (status 1) nor a remark on any other metric.
  httplib::Client rank_endpoint("127.0.0.1", base);
  rank_endpoint.set_read_timeout(2);
  const auto scrape = rank_endpoint.Get("/metrics");
  ASSERT_TRUE(scrape);
  std::ofstream(dir_ / "scrape.txt") << scrape->body;
  const std::string check = std::string(kPromtool) + " check metrics < " +
                            (dir_ / "scrape.txt").string() + " > " +
                            (dir_ / "promtool.log").string() + " 2>&1";
  const int status = std::system(check.c_str());
  const std::string remarks = read_file(dir_ / "promtool.log");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) << remarks;
  std::istringstream lines(remarks);
  const std::set<std::string> megatron_naming = {
      "megatron_training_step_duration_ms_milliseconds metric names should not contain "
      "abbreviated units",
      "megatron_training_step_duration_ms_milliseconds use base unit \"seconds\" instead of "
      "\"milliseconds\"",
      "megatron_training_tokens_per_sec_per_second metric names should not contain abbreviated "
      "units"};
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      EXPECT_EQ(megatron_naming.count(line), 1U) << line << "\n" << scrape->body;
    }
  }
  EXPECT_NE(scrape->body.find("# TYPE megatron_training_step_duration_ms_milliseconds histogram"),
            std::string::npos);

  // Each rank printed its scrape URL once.
  for (pid_t pid : ranks_) stop(pid, std::chrono::seconds(10));
  ranks_.clear();
  const std::string log0 = read_file(dir_ / "rank0.log");
  const std::string line = "lens: rank 0 serves Prometheus metrics at http://" + rank0 + "/metrics";
  EXPECT_NE(log0.find(line), std::string::npos) << log0;
  EXPECT_EQ(log0.find(line), log0.rfind(line)) << log0;
  EXPECT_NE(read_file(dir_ / "rank1.log")
                .find("lens: rank 1 serves Prometheus metrics at http://" + rank1 + "/metrics"),
            std::string::npos);
}

}  // namespace
