// A real Prometheus (Debian's /usr/bin/prometheus, on loopback, its own configuration and data
// directory, 1 s scrape interval) scrapes the two ranks of the example trainer, each serving its
// metrics with OTEL_METRICS_EXPORTER=prometheus on port + local rank; PromQL over the HTTP API
// then finds the training loss and the step-time histogram of both ranks with their job,
// instance and rank (from target_info), and `promtool check metrics` accepts a rank's scrape.
// Then the shipped observability/ files: Prometheus runs the scrape configuration of
// observability/prometheus/prometheus.yml (ports and intervals substituted) and every PromQL
// expression of the Grafana dashboard observability/grafana/dashboards/*.json must return series
// of both ranks with plausible values. Skipped when /usr/bin/prometheus is absent. Bounded:
// Prometheus must answer within 15 s (30 s for the dashboard, whose rates need several scrapes).
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
#include <regex>
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

  // Prometheus on 127.0.0.1:port with `config` as its configuration file, its data in the test's
  // directory.
  void start_prometheus(const std::string& config, int port) {
    std::ofstream(dir_ / "prometheus.yml") << config;
    prometheus_ = lens::testing::spawn_logged(
        {kPrometheus, "--config.file=" + (dir_ / "prometheus.yml").string(),
         "--storage.tsdb.path=" + (dir_ / "data").string(),
         "--web.listen-address=127.0.0.1:" + std::to_string(port), "--log.level=warn"},
        {}, dir_ / "prometheus.log");
  }

  // Two ranks of one node of the example trainer, serving their metrics on 127.0.0.1:base and
  // base + 1; the trainer runs far longer than a test needs (it is stopped).
  void start_ranks(int base, const std::vector<std::string>& example_options) {
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
      std::vector<std::string> command = {
          LENS_TRAIN_LOOP_PATH, "--train-iters", "1000", "--log-interval", "1",
          "--eval-interval",    "1000"};
      command.insert(command.end(), example_options.begin(), example_options.end());
      ranks_.push_back(lens::testing::spawn_logged(
          command, env, dir_ / ("rank" + std::to_string(rank) + ".log")));
    }
  }

  std::string logs() {
    return "\nprometheus.log:\n" + read_file(dir_ / "prometheus.log") + "\nrank0.log:\n" +
           read_file(dir_ / "rank0.log") + "\nrank1.log:\n" + read_file(dir_ / "rank1.log");
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
  start_prometheus(
      "global:\n"
      "  scrape_interval: 1s\n"
      "  scrape_timeout: 1s\n"
      "scrape_configs:\n"
      "  - job_name: lens\n"
      "    static_configs:\n"
      "      - targets: ['" +
          rank0 + "', '" + rank1 + "']\n",
      prometheus_port);
  start_ranks(base, {"--slow-rank", "0", "--slow-ms", "40"});

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
                               << logs();
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
  // only remarks are lint advice on three names Megatron-LM chose, which lens keeps as they are
  // ("tokens_per_sec", "memory_allocated_gb") or, with the one unit Megatron gives ("ms"),
  // suffixed with that unit in words by the OpenTelemetry rules ("step_duration_ms" in ms);
  // never a parse error (status 1) nor a remark on any other metric.
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
  std::set<std::string> lint;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) lint.insert(line);
  }
  EXPECT_EQ(lint,
            (std::set<std::string>{
                "megatron_training_memory_allocated_gb metric names should not contain abbreviated "
                "units",
                "megatron_training_step_duration_ms_milliseconds metric names should not contain "
                "abbreviated units",
                "megatron_training_step_duration_ms_milliseconds use base unit \"seconds\" instead "
                "of \"milliseconds\"",
                "megatron_training_tokens_per_sec metric names should not contain abbreviated "
                "units"}))
      << remarks;
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

// ---- the shipped observability/ files -----------------------------------------------------------

// `text` with `from` replaced by `to`; a failure unless `from` occurs exactly once.
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_TRUE(at != std::string::npos && text.find(from, at + 1) == std::string::npos)
      << "'" << from << "' should occur once in the shipped scrape configuration";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// observability/prometheus/prometheus.yml with this test's ports and 1 s intervals.
std::string shipped_scrape_config(const std::string& rank0, const std::string& rank1,
                                  const std::string& collector) {
  std::string config = read_file(fs::path(LENS_OBSERVABILITY_DIR) / "prometheus/prometheus.yml");
  config = replace_once(config, "'127.0.0.1:9464'", "'" + rank0 + "'");
  config = replace_once(config, "'127.0.0.1:9465'", "'" + rank1 + "'");
  config = replace_once(config, "'127.0.0.1:8889'", "'" + collector + "'");
  static const std::regex interval("(scrape_interval|scrape_timeout|evaluation_interval): *\\w+");
  return std::regex_replace(config, interval, "$1: 1s");
}

struct PanelQuery {
  std::string panel;  // the panel's title
  std::string expr;   // its PromQL with the dashboard's variables at their "All" values
};

// Every target of every panel (rows' nested panels too), each variable replaced as Grafana does
// with "All" selected; Grafana's $__rate_interval becomes 1m (the whole test's data).
std::vector<PanelQuery> dashboard_queries(const json& dashboard) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const json& variable : dashboard.at("templating").at("list")) {
    if (variable.at("type") == "datasource") continue;
    values.emplace_back(variable.at("name").get<std::string>(),
                        variable.at("allValue").get<std::string>());
  }
  values.emplace_back("__rate_interval", "1m");
  std::vector<PanelQuery> queries;
  std::vector<json> panels(dashboard.at("panels").begin(), dashboard.at("panels").end());
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const json panel = panels[i];  // a copy: push_back below may move the vector
    for (const json& nested : panel.value("panels", json::array())) panels.push_back(nested);
    for (const json& target : panel.value("targets", json::array())) {
      std::string expr = target.at("expr").get<std::string>();
      for (const auto& [name, value] : values) {
        for (const std::string& form : {"${" + name + "}", "$" + name}) {
          for (std::size_t at; (at = expr.find(form)) != std::string::npos;) {
            expr.replace(at, form.size(), value);
          }
        }
      }
      EXPECT_EQ(expr.find('$'), std::string::npos)
          << "a variable this test does not know: " << expr;
      queries.push_back({panel.at("title").get<std::string>(), expr});
    }
  }
  return queries;
}

double value_of(const json& series) {
  return std::stod(series.at("value").at(1).get<std::string>());
}

TEST_F(PrometheusScrape, EveryPanelOfTheShippedDashboardShowsBothRanks) {
  if (!fs::exists(kPrometheus)) GTEST_SKIP() << kPrometheus << " is absent";
  const int base = free_ports(2);
  const int prometheus_port = free_ports(1);
  const int collector_port = free_ports(1);  // nothing listens there: its target is down
  ASSERT_GT(base, 0);
  ASSERT_GT(prometheus_port, 0);
  ASSERT_GT(collector_port, 0);
  const std::string rank0 = "127.0.0.1:" + std::to_string(base);
  const std::string rank1 = "127.0.0.1:" + std::to_string(base + 1);
  const std::string collector = "127.0.0.1:" + std::to_string(collector_port);
  start_prometheus(shipped_scrape_config(rank0, rank1, collector), prometheus_port);
  // Every other iteration overflows and is skipped, so that skipped_iters has a series.
  start_ranks(base, {"--inf-grad-every", "2"});

  std::ifstream file(fs::path(LENS_OBSERVABILITY_DIR) /
                     "grafana/dashboards/lens-megatron-training.json");
  const json dashboard = json::parse(file, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(dashboard.is_object()) << "the dashboard is not JSON";
  const std::vector<PanelQuery> queries = dashboard_queries(dashboard);
  std::set<std::string> titles;
  for (const PanelQuery& q : queries) titles.insert(q.panel);
  ASSERT_EQ(titles, (std::set<std::string>{"Loss", "Gradient norm", "Learning rate", "Step time",
                                           "Throughput (TFLOP/s per GPU)", "Tokens/s",
                                           "GPU memory (peak allocated)", "Skipped iterations",
                                           "Rank endpoints up", "Records exported",
                                           "Records dropped", "Export queue"}));

  // The Job and Run variables' label_values(metric, label) queries: the metric, with the label.
  std::vector<std::pair<std::string, std::string>> variables;
  static const std::regex label_values(R"(label_values\((.+), *(\w+)\))");
  for (const json& variable : dashboard.at("templating").at("list")) {
    if (variable.at("type") != "query") continue;
    std::smatch match;
    const std::string definition = variable.at("definition").get<std::string>();
    ASSERT_TRUE(std::regex_match(definition, match, label_values)) << definition;
    variables.emplace_back(match[1].str(), match[2].str());
  }
  ASSERT_EQ(variables.size(), 2U);

  httplib::Client prometheus("127.0.0.1", prometheus_port);
  prometheus.set_connection_timeout(1);
  prometheus.set_read_timeout(2);
  // What each panel answered; a panel is done when both ranks are among its series (and, for
  // the endpoints panel, the down collector target too: Prometheus scrapes each target on its
  // own schedule, so it may come after the ranks).
  std::map<std::string, json> answers;
  const auto instances_of = [&](const json& result) {
    std::set<std::string> instances;
    for (const json& series : result) {
      if (std::isfinite(value_of(series))) {
        instances.insert(series.at("metric").value("instance", ""));
      }
    }
    return instances;
  };
  const auto both_ranks = [&](const json& result) {
    const std::set<std::string> instances = instances_of(result);
    return instances.count(rank0) == 1 && instances.count(rank1) == 1;
  };
  const auto complete = [&](const PanelQuery& q, const json& result) {
    return both_ranks(result) &&
           (q.panel != "Rank endpoints up" || instances_of(result).count(collector) == 1);
  };
  bool all = false;
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!all && Clock::now() < deadline) {
    all = true;
    for (const PanelQuery& q : queries) {
      if (answers.count(q.expr) == 1 && complete(q, answers[q.expr])) continue;
      answers[q.expr] = query(prometheus, q.expr);
      all = all && complete(q, answers[q.expr]);
    }
    if (!all) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (const PanelQuery& q : queries) {
    ASSERT_TRUE(both_ranks(answers[q.expr]))
        << q.panel << ": " << q.expr << "\nanswer: " << answers[q.expr].dump() << logs();
  }
  for (const auto& [metric, label] : variables) {
    const json result = query(prometheus, metric);
    ASSERT_FALSE(result.empty()) << metric;
    for (const json& series : result) {
      EXPECT_FALSE(series.at("metric").value(label, "").empty()) << label << " " << series.dump();
    }
  }

  // Each panel's values are what the trainer records, per rank (dl_rank from target_info).
  for (const PanelQuery& q : queries) {
    std::set<std::string> ranks;
    for (const json& series : answers[q.expr]) {
      const json& labels = series.at("metric");
      const double value = value_of(series);
      const std::string context = q.panel + ": " + q.expr + "\n" + series.dump();
      if (q.panel == "Rank endpoints up") {
        const std::string instance = labels.value("instance", "");
        EXPECT_EQ(value, instance == collector ? 0.0 : 1.0) << context;
        ranks.insert(instance);
        continue;
      }
      ranks.insert(labels.value("dl_rank", ""));
      EXPECT_EQ(labels.value("job", ""), "lens") << context;
      EXPECT_EQ(labels.value("nemo_run_id", ""), "prometheus-test") << context;
      if (q.panel == "Loss") {
        EXPECT_TRUE(value > 0.0 && value < 10.0) << context;  // ln(64) = 4.16 untrained
      } else if (q.panel == "Learning rate") {
        EXPECT_DOUBLE_EQ(value, 1e-3) << context;  // the trainer's default --lr
      } else if (q.panel == "Step time") {
        EXPECT_TRUE(value > 0.0 && value < 60000.0) << context;
      } else if (q.panel == "GPU memory (peak allocated)") {
        EXPECT_TRUE(value > 0.01 && value < 64.0) << context;  // GiB
      } else if (q.panel == "Skipped iterations") {
        EXPECT_GT(value, 0.0) << context;
      } else if (q.panel == "Records exported" || q.panel == "Records dropped" ||
                 q.panel == "Export queue") {
        EXPECT_GE(value, 0.0) << context;
      } else {  // gradient norm, TFLOP/s, tokens/s
        EXPECT_TRUE(std::isfinite(value) && value > 0.0) << context;
      }
    }
    if (q.panel == "Rank endpoints up") {
      EXPECT_EQ(ranks, (std::set<std::string>{rank0, rank1, collector})) << q.expr;
    } else {
      EXPECT_EQ(ranks, (std::set<std::string>{"0", "1"})) << q.panel << ": " << q.expr;
    }
  }
}

}  // namespace
