// simple_train_loop as a user runs it (docs/megatron.md, "The example trainer"): one process learns
// (the loss falls over 50 iterations); four real processes (torchrun-style environment, data
// parallel 2 x pipeline parallel 2) export through exporter=file, and the decoded spans form the
// documented tree, carry the shared run id and the training resource attributes, and the pipeline's
// linked spans point at rank 0's step span; each preset yields exactly its group table's span
// names.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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

#include "lens/megatron/span_groups.hpp"
#include "lens/megatron/spans.hpp"
#include "lens/strategies.hpp"
#include "support/spawn_logged.hpp"
#include "test_directory.hpp"
#include "unit/support/otlp_test_servers.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct RunResult {
  int status = -1;
  std::string output;  // stdout and stderr of rank 0 (and of every rank that failed)
};

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// The service.instance.id of an OTLP JSON resource ("" when it has none).
std::string instance_of(const json& resource) {
  for (const json& attribute : resource.at("attributes")) {
    if (attribute.at("key") == "service.instance.id")
      return attribute.at("value").at("stringValue");
  }
  return "";
}

class TrainLoop : public TestDirectory {
 protected:
  TrainLoop() : TestDirectory("lens-train-loop", /*keep_after_failure=*/true) {}

  // Runs `ranks` processes of the trainer with a torchrun-style environment plus `env`; a bound of
  // 120 s for the whole run.
  // `ranks_per_node` simulates nodes: LOCAL_RANK and GROUP_RANK follow from it.
  RunResult run(int ranks, const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env, int ranks_per_node = 0) {
    return retrying_taken_ports([&] { return run_once(ranks, args, env, ranks_per_node); });
  }

  // The port picked for MASTER_PORT can be taken by another process (an ephemeral port of a
  // parallel test) before rank 0 binds it: such a run is repeated (up to three times in all),
  // `attempt` picking a new port each time.
  template <typename Attempt>
  static RunResult retrying_taken_ports(Attempt attempt) {
    RunResult result;
    for (int i = 0; i < 3; ++i) {
      result = attempt();
      if (result.output.find("Address already in use") == std::string::npos) break;
    }
    return result;
  }

  RunResult run_once(int ranks, const std::vector<std::string>& args,
                     std::map<std::string, std::string> env, int ranks_per_node) {
    if (ranks_per_node == 0) ranks_per_node = ranks;
    const int port = free_port();
    std::vector<pid_t> pids;
    std::vector<fs::path> logs;
    for (int rank = 0; rank < ranks; ++rank) {
      std::map<std::string, std::string> rank_env = env;
      if (ranks > 1) {
        rank_env["RANK"] = std::to_string(rank);
        rank_env["WORLD_SIZE"] = std::to_string(ranks);
        rank_env["LOCAL_RANK"] = std::to_string(rank % ranks_per_node);
        rank_env["LOCAL_WORLD_SIZE"] = std::to_string(ranks_per_node);
        rank_env["GROUP_RANK"] = std::to_string(rank / ranks_per_node);
        rank_env["MASTER_ADDR"] = "127.0.0.1";
        rank_env["MASTER_PORT"] = std::to_string(port);
      }
      std::vector<std::string> command = {LENS_TRAIN_LOOP_PATH};
      command.insert(command.end(), args.begin(), args.end());
      logs.push_back(dir_ / ("rank" + std::to_string(rank) + ".log"));
      pids.push_back(lens::testing::spawn_logged(command, rank_env, logs.back()));
    }
    RunResult result;
    result.status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    for (std::size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      while (waitpid(pids[i], &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          for (pid_t pid : pids) kill(pid, SIGKILL);
          waitpid(pids[i], &status, 0);
          ADD_FAILURE() << "rank " << i << " did not finish within 120 s";
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (status != 0) {
        result.status = status;
        result.output += "rank " + std::to_string(i) + ": " + read_file(logs[i]);
      }
    }
    result.output = read_file(logs[0]) + result.output;
    return result;
  }

  // Runs one launcher process (mpirun) with `env` on top of the sanitizer settings and PATH.
  RunResult run_launcher(const std::vector<std::string>& command,
                         const std::map<std::string, std::string>& env) {
    const fs::path log = dir_ / "launcher.log";
    const pid_t pid = lens::testing::spawn_logged(command, env, log);
    RunResult result;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (waitpid(pid, &result.status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &result.status, 0);
        ADD_FAILURE() << "launcher did not finish within 120 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    result.output = read_file(log);
    return result;
  }

  std::map<std::string, std::string> telemetry_env(const std::string& groups) {
    return {{"MEGATRON_OTEL_ENABLED", "1"},
            {"MEGATRON_OTEL_EXPORTER", "file"},
            {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"},
            {"MEGATRON_OTEL_SPAN_GROUPS", groups},
            {"NEMO_LENS_FILE_PATH", (dir_ / "telemetry").string()},
            {"OTEL_BSP_SCHEDULE_DELAY", "200"}};
  }

  // Every exported span with its rank's resource attributes.
  struct Span {
    json span;
    std::map<std::string, json> resource;
  };
  // Every span carries the job's one run id and the instance id of rank 0 or rank 1, and both
  // ranks exported.
  void expect_one_run_id_and_two_rank_instances() const {
    std::set<std::string> instances;
    std::set<std::string> run_ids;
    for (const Span& s : spans()) {
      run_ids.insert(s.resource.at("nemo.run.id").at("stringValue"));
      instances.insert(s.resource.at("service.instance.id").at("stringValue"));
    }
    ASSERT_EQ(run_ids.size(), 1U);
    const std::string run_id = *run_ids.begin();
    EXPECT_EQ(instances, (std::set<std::string>{run_id + "-rank0", run_id + "-rank1"}));
  }

  std::vector<Span> spans() const {
    std::vector<Span> out;
    std::ifstream in(dir_ / "telemetry" / "traces.jsonl");
    for (std::string line; std::getline(in, line);) {
      const json request = json::parse(line);
      for (const json& resource_spans : request.at("resourceSpans")) {
        std::map<std::string, json> resource;
        for (const json& attribute : resource_spans.at("resource").at("attributes")) {
          resource[attribute.at("key")] = attribute.at("value");
        }
        for (const json& scope : resource_spans.at("scopeSpans")) {
          for (const json& span : scope.at("spans")) out.push_back({span, resource});
        }
      }
    }
    return out;
  }

  // The last exported state of each metric per rank: instance id -> metric name -> metric.
  std::map<std::string, std::map<std::string, json>> last_metrics() const {
    std::map<std::string, std::map<std::string, json>> out;
    std::ifstream in(dir_ / "telemetry" / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const json request = json::parse(line);
      for (const json& resource_metrics : request.at("resourceMetrics")) {
        const std::string instance = instance_of(resource_metrics.at("resource"));
        for (const json& scope : resource_metrics.value("scopeMetrics", json::array())) {
          for (const json& metric : scope.value("metrics", json::array())) {
            out[instance][metric.at("name")] = metric;
          }
        }
      }
    }
    return out;
  }

  static std::vector<double> losses(const std::string& output) {
    static const std::regex line(R"( iteration +\d+/ *\d+ \| lm loss: ([0-9.E+-]+))");
    std::vector<double> out;
    for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
      out.push_back(std::stod((*it)[1]));
    }
    return out;
  }
};

const std::vector<std::string> kFourRankArgs = {"--pipeline-model-parallel-size",
                                                "2",
                                                "--micro-batch-size",
                                                "2",
                                                "--global-batch-size",
                                                "8",
                                                "--train-iters",
                                                "6",
                                                "--eval-interval",
                                                "3",
                                                "--eval-iters",
                                                "1",
                                                "--log-interval",
                                                "2",
                                                "--save-interval",
                                                "3"};

TEST_F(TrainLoop, OneProcessLearnsTheSequences) {
  const RunResult result = run(1, {"--train-iters", "50", "--log-interval", "10"}, {});
  ASSERT_EQ(result.status, 0) << result.output;
  const std::vector<double> loss = losses(result.output);
  ASSERT_EQ(loss.size(), 6U) << result.output;  // iteration 1, then every 10
  EXPECT_LT(loss.back(), loss.front() - 0.5) << result.output;
  EXPECT_NE(result.output.find("training done: 50 iterations"), std::string::npos);
}

TEST_F(TrainLoop, IterationLinesBecomeLogRecordsOfTheirStepSpans) {
  std::map<std::string, std::string> env = telemetry_env("per_step");
  env["MEGATRON_OTEL_LOGS_ENABLED"] = "1";
  env["OTEL_BLRP_SCHEDULE_DELAY"] = "200";
  const RunResult result =
      run(1, {"--train-iters", "4", "--log-interval", "2", "--eval-iters", "0"}, env);
  ASSERT_EQ(result.status, 0) << result.output;
  ASSERT_EQ(losses(result.output).size(), 3U) << result.output;  // still printed: 1, 2 and 4

  // The step spans by span id, with their iteration.
  std::map<std::string, std::pair<std::string, std::int64_t>> steps;  // span id -> trace, iter
  for (const Span& s : spans()) {
    if (s.span.at("name") != "megatron.train_step") continue;
    for (const json& attribute : s.span.at("attributes")) {
      if (attribute.at("key") == "megatron.iteration") {
        steps[s.span.at("spanId")] = {
            s.span.at("traceId"),
            std::stoll(attribute.at("value").at("intValue").get<std::string>())};
      }
    }
  }
  ASSERT_EQ(steps.size(), 4U);

  std::vector<std::int64_t> logged;
  std::ifstream in(dir_ / "telemetry" / "logs.jsonl");
  for (std::string line; std::getline(in, line);) {
    const json request = json::parse(line);
    for (const json& resource_logs : request.at("resourceLogs")) {
      for (const json& scope : resource_logs.at("scopeLogs")) {
        for (const json& record : scope.at("logRecords")) {
          const std::string body = record.at("body").at("stringValue");
          if (body.rfind(" iteration ", 0) != 0) continue;
          const std::string span_id = record.at("spanId");
          ASSERT_EQ(steps.count(span_id), 1U) << record.dump();
          EXPECT_EQ(record.at("traceId"), steps.at(span_id).first);
          EXPECT_EQ(record.at("severityNumber"), 9);
          EXPECT_NE(result.output.find(body + "\n"), std::string::npos) << body;
          logged.push_back(steps.at(span_id).second);
        }
      }
    }
  }
  std::sort(logged.begin(), logged.end());
  EXPECT_EQ(logged, (std::vector<std::int64_t>{1, 2, 4}));
}

// --inf-grad-every 3: iterations 3 and 6 overflow; their updates are skipped as Megatron skips
// them (megatron.optimizer_step with update_successful = false and no grad norm) and counted in
// megatron.training.skipped_iters, which Megatron-LM registers without a unit.
TEST_F(TrainLoop, OverflowingGradientsSkipTheUpdateAndCountAsSkippedIterations) {
  const RunResult result = run(
      1,
      {"--train-iters", "6", "--log-interval", "2", "--eval-iters", "0", "--inf-grad-every", "3"},
      telemetry_env("all"));
  ASSERT_EQ(result.status, 0) << result.output;
  std::vector<bool> updates;
  for (const Span& s : spans()) {
    if (s.span.at("name") != "megatron.optimizer_step") continue;
    std::map<std::string, json> attributes;
    for (const json& attribute : s.span.value("attributes", json::array())) {
      attributes[attribute.at("key")] = attribute.at("value");
    }
    const bool updated = attributes.at("megatron.update_successful").at("boolValue");
    EXPECT_EQ(attributes.count("megatron.grad_norm"), updated ? 1U : 0U) << s.span.dump();
    updates.push_back(updated);
  }
  EXPECT_EQ(std::count(updates.begin(), updates.end(), false), 2) << result.output;
  EXPECT_EQ(updates.size(), 6U);
  const auto metrics = last_metrics();
  ASSERT_EQ(metrics.size(), 1U);
  const auto& by_name = metrics.begin()->second;
  ASSERT_EQ(by_name.count("megatron.training.skipped_iters"), 1U) << result.output;
  const json& skipped = by_name.at("megatron.training.skipped_iters");
  EXPECT_EQ(skipped.value("unit", ""), "");
  EXPECT_EQ(skipped.at("sum").at("isMonotonic"), true);
  EXPECT_EQ(skipped.at("sum").at("dataPoints")[0].at("asInt"), "2") << skipped.dump();
  const double grad_norm =
      by_name.at("megatron.training.grad_norm").at("gauge").at("dataPoints")[0].at("asDouble");
  EXPECT_TRUE(std::isfinite(grad_norm) && grad_norm > 0.0) << grad_norm;
}

TEST_F(TrainLoop, ABadInfGradEveryIsRefusedNamingTheFlag) {
  const RunResult result = run(1, {"--inf-grad-every", "often"}, {});
  ASSERT_TRUE(WIFEXITED(result.status)) << result.output;
  EXPECT_EQ(WEXITSTATUS(result.status), 2);
  EXPECT_NE(result.output.find("simple_train_loop: --inf-grad-every: 'often' is not a valid value; "
                               "accepted: an integer >= 0"),
            std::string::npos)
      << result.output;
}

TEST_F(TrainLoop, FourRanksExportTheDocumentedTreeWithOneRunId) {
  std::vector<std::string> args = kFourRankArgs;
  args.insert(args.end(), {"--save", (dir_ / "ckpt").string()});
  const RunResult result = run(4, args, telemetry_env("all"));
  ASSERT_EQ(result.status, 0) << result.output;
  const std::vector<Span> all = spans();
  ASSERT_FALSE(all.empty());

  // Names: the whole catalogue but activation offloading, which the CPU example does not do.
  std::set<std::string> names;
  for (const Span& s : all) names.insert(s.span.at("name").get<std::string>());
  // Each span carries only the keys its site declares (the catalogue's SpanSite::keys).
  for (const lens::megatron::spans::SpanDef& def : lens::megatron::spans::catalogue()) {
    const std::set<std::string> declared(def.keys.begin(), def.keys.end());
    for (const Span& s : all) {
      if (s.span.at("name") != def.name) continue;
      for (const json& attribute : s.span.value("attributes", json::array())) {
        EXPECT_EQ(declared.count(attribute.at("key").get<std::string>()), 1U)
            << def.name << " carries the undeclared key " << attribute.at("key");
      }
    }
  }
  std::set<std::string> expected =
      lens::megatron::spans::span_names_for(lens::megatron::all_span_groups());
  expected.erase("megatron.activation.offload");
  expected.erase("megatron.activation.reload");
  // A fresh run has no checkpoint to load.
  expected.erase("megatron.load_checkpoint");
  expected.erase("megatron.load_checkpoint.io_read");
  EXPECT_EQ(names, expected);

  // One run id; per-rank instance ids; the training attributes with their types.
  std::set<std::string> run_ids;
  std::set<std::string> instances;
  for (const Span& s : all) {
    run_ids.insert(s.resource.at("nemo.run.id").at("stringValue"));
    instances.insert(s.resource.at("service.instance.id").at("stringValue"));
    EXPECT_EQ(s.resource.at("dl.pipeline_parallel.size"), json({{"intValue", "2"}}));
    EXPECT_EQ(s.resource.at("dl.data_parallel.size"), json({{"intValue", "2"}}));
    // The rank's place in Megatron's order (TP 1 x DP 2 x PP 2), for the report's groups.
    const int rank = std::stoi(s.resource.at("dl.rank").at("intValue").get<std::string>());
    EXPECT_EQ(s.resource.at("dl.tensor_parallel.rank"), json({{"intValue", "0"}}));
    EXPECT_EQ(s.resource.at("dl.data_parallel.rank"),
              json({{"intValue", std::to_string(rank % 2)}}));
    EXPECT_EQ(s.resource.at("dl.pipeline_parallel.rank"),
              json({{"intValue", std::to_string(rank / 2)}}));
    EXPECT_EQ(s.resource.at("dl.batch_size"), json({{"intValue", "8"}}));
    EXPECT_EQ(s.resource.at("megatron.precision"), json({{"stringValue", "fp32"}}));
    EXPECT_EQ(s.resource.at("service.name"), json({{"stringValue", "megatron-lm"}}));
  }
  ASSERT_EQ(run_ids.size(), 1U);
  const std::string run_id = *run_ids.begin();
  EXPECT_EQ(instances, (std::set<std::string>{run_id + "-rank0", run_id + "-rank1",
                                              run_id + "-rank2", run_id + "-rank3"}));

  // Parents: every span's parent is the one the catalogue gives (all groups on), with the
  // exception spans.hpp documents (the forward pass of evaluation under megatron.evaluate.step);
  // megatron.train_step is a root linked to its rank's megatron.train span.
  std::map<std::string, std::string> name_of;      // span id -> name
  std::map<std::string, std::string> instance_of;  // span id -> service.instance.id
  for (const Span& s : all) {
    name_of[s.span.at("spanId")] = s.span.at("name");
    instance_of[s.span.at("spanId")] = s.resource.at("service.instance.id").at("stringValue");
  }
  const std::set<std::string> evaluated = {"megatron.layer.forward", "megatron.p2p.recv_forward",
                                           "megatron.p2p.send_forward"};
  std::map<std::int64_t, std::set<std::string>> step_traces;  // iteration -> trace ids
  std::map<std::int64_t, int> step_ranks;                     // iteration -> step spans
  ASSERT_TRUE(lens::megatron::spans::kTrainStep.new_trace);
  for (const Span& s : all) {
    const std::string name = s.span.at("name");
    const std::string parent_id = s.span.value("parentSpanId", "");
    const std::string parent = parent_id.empty() ? "" : name_of[parent_id];
    if (name == lens::megatron::spans::kTrainStep.name) {
      EXPECT_EQ(parent, "") << "a step is the root of its own trace";
      ASSERT_EQ(s.span.value("links", json::array()).size(), 1U) << s.span;
      const std::string linked = s.span.at("links")[0].at("spanId");
      EXPECT_EQ(name_of[linked], "megatron.train");
      EXPECT_EQ(instance_of[linked], s.resource.at("service.instance.id").at("stringValue"));
      std::int64_t iteration = -1;
      double learning_rate = -1.0;
      for (const json& attribute : s.span.at("attributes")) {
        if (attribute.at("key") == "megatron.iteration") {
          iteration = std::stoll(attribute.at("value").at("intValue").get<std::string>());
        }
        if (attribute.at("key") == "megatron.learning_rate") {
          learning_rate = attribute.at("value").at("doubleValue").get<double>();
        }
      }
      EXPECT_DOUBLE_EQ(learning_rate, 0.001) << "the trainer's default --lr, on every step";
      step_traces[iteration].insert(s.span.at("traceId").get<std::string>());
      ++step_ranks[iteration];
      continue;
    }
    if (evaluated.count(name) != 0 && parent == "megatron.evaluate.step") continue;
    EXPECT_EQ(parent,
              lens::megatron::spans::effective_parent(name, lens::megatron::all_span_groups()))
        << name;
  }
  // Iteration N is one trace across the four ranks, and each iteration has its own.
  ASSERT_EQ(step_traces.size(), 6U);
  std::set<std::string> distinct;
  for (const auto& [iteration, traces] : step_traces) {
    EXPECT_EQ(traces.size(), 1U) << "iteration " << iteration;
    EXPECT_EQ(step_ranks[iteration], 4) << "iteration " << iteration;
    distinct.insert(traces.begin(), traces.end());
  }
  EXPECT_EQ(distinct.size(), 6U);

  // Linked spans (non-first stages: ranks 2 and 3) point at a step span of rank 0.
  std::set<std::pair<std::string, std::string>> rank0_steps;
  for (const Span& s : all) {
    if (s.span.at("name") == "megatron.train_step" &&
        s.resource.at("service.instance.id").at("stringValue") == run_id + "-rank0") {
      rank0_steps.insert(
          {s.span.at("traceId").get<std::string>(), s.span.at("spanId").get<std::string>()});
    }
  }
  int linked = 0;
  for (const Span& s : all) {
    if (s.span.at("name") != "megatron.pp.recv_forward.linked") continue;
    ++linked;
    ASSERT_EQ(s.span.at("links").size(), 1U);
    const json& link = s.span.at("links")[0];
    EXPECT_EQ(rank0_steps.count(
                  {link.at("traceId").get<std::string>(), link.at("spanId").get<std::string>()}),
              1U)
        << link;
    const std::string instance = s.resource.at("service.instance.id").at("stringValue");
    EXPECT_TRUE(instance == run_id + "-rank2" || instance == run_id + "-rank3") << instance;
  }
  EXPECT_EQ(linked, 2 * 6 * 2);  // 2 ranks x 6 steps x 2 microbatches

  // The megatron.training.* metrics, recorded at iterations 1, 2, 4 and 6 (--log-interval 2) on
  // every rank; cumulative, so the last export holds all four.
  const auto metrics = last_metrics();
  ASSERT_EQ(metrics.size(), 4U);
  for (const auto& [instance, by_name] : metrics) {
    ASSERT_EQ(by_name.count("megatron.training.step_duration_ms"), 1U) << instance;
    const json& duration = by_name.at("megatron.training.step_duration_ms");
    EXPECT_EQ(duration.at("unit"), "ms");
    const json& point = duration.at("histogram").at("dataPoints")[0];
    EXPECT_EQ(point.at("count"), "4") << instance;
    EXPECT_GT(point.at("sum").get<double>(), 0.0) << instance;
    for (const char* gauge :
         {"megatron.training.loss", "megatron.training.tokens_per_sec",
          "megatron.training.grad_norm", "megatron.training.learning_rate",
          "megatron.training.throughput_tflops", "megatron.training.memory_allocated_gb"}) {
      ASSERT_EQ(by_name.count(gauge), 1U) << instance << " " << gauge;
      EXPECT_GT(by_name.at(gauge).at("gauge").at("dataPoints")[0].at("asDouble").get<double>(), 0.0)
          << instance << " " << gauge;
    }
    EXPECT_DOUBLE_EQ(by_name.at("megatron.training.learning_rate")
                         .at("gauge")
                         .at("dataPoints")[0]
                         .at("asDouble")
                         .get<double>(),
                     1e-3);
    // Megatron-LM's units: only the histogram has one.
    for (const auto& [name, metric] : by_name) {
      if (name.rfind("megatron.training.", 0) != 0) continue;
      EXPECT_EQ(metric.value("unit", ""), name == "megatron.training.step_duration_ms" ? "ms" : "")
          << instance << " " << name;
    }
    // No iteration was skipped (--inf-grad-every is not given): the counter is never added to.
    EXPECT_EQ(by_name.count("megatron.training.skipped_iters"), 0U);
  }
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "latest_checkpointed_iteration.txt"));
}

TEST_F(TrainLoop, EachPresetYieldsExactlyItsGroupsSpans) {
  for (const std::string preset : {"default", "per_step"}) {
    fs::remove_all(dir_ / "telemetry");
    std::vector<std::string> args = kFourRankArgs;
    args.insert(args.end(), {"--save", (dir_ / ("ckpt-" + preset)).string()});
    const RunResult result = run(4, args, telemetry_env(preset));
    ASSERT_EQ(result.status, 0) << preset << ": " << result.output;
    std::set<std::string> names;
    for (const Span& s : spans()) names.insert(s.span.at("name").get<std::string>());
    const auto& groups = lens::megatron::span_group_presets().at(preset);
    std::set<std::string> expected = lens::megatron::spans::span_names_for(groups);
    // No checkpoint to load in a fresh run: the load spans cannot appear.
    expected.erase("megatron.load_checkpoint");
    expected.erase("megatron.load_checkpoint.io_read");
    EXPECT_EQ(names, expected) << preset;
  }
}

// ---- The four typical configurations of docs/megatron.md, end to end --------------------------

// The spans of OTLP JSON request lines: (instance id, span).
std::vector<std::pair<std::string, json>> spans_of(const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, json>> out;
  for (const std::string& line : lines) {
    const json request = json::parse(line);
    for (const json& resource_spans : request.at("resourceSpans")) {
      const std::string instance = instance_of(resource_spans.at("resource"));
      for (const json& scope : resource_spans.at("scopeSpans")) {
        for (const json& span : scope.at("spans")) out.emplace_back(instance, span);
      }
    }
  }
  return out;
}

std::set<std::string> metric_names_of(const std::vector<std::string>& lines) {
  std::set<std::string> names;
  for (const std::string& line : lines) {
    const json request = json::parse(line);  // kept: a range-for over a member of a temporary
    for (const json& rm : request.at("resourceMetrics")) {
      for (const json& scope : rm.value("scopeMetrics", json::array())) {
        for (const json& metric : scope.value("metrics", json::array())) {
          names.insert(metric.at("name"));
        }
      }
    }
  }
  return names;
}

std::int64_t iteration_of(const json& span) {
  for (const json& attribute : span.value("attributes", json::array())) {
    if (attribute.at("key") == "megatron.iteration") {
      return std::stoll(attribute.at("value").at("intValue").get<std::string>());
    }
  }
  return -1;
}

const std::vector<std::string> kShortRun = {"--train-iters", "4", "--log-interval", "2",
                                            "--eval-iters",  "0"};

// "Local development with console exporter": spans and metrics print to stdout as JSON lines.
TEST_F(TrainLoop, SeedConsoleExporterPrintsSpansAndMetricsOnStdout) {
  const RunResult result =
      run(1, kShortRun, {{"MEGATRON_OTEL_ENABLED", "1"}, {"MEGATRON_OTEL_EXPORTER", "console"}});
  ASSERT_EQ(result.status, 0) << result.output;
  std::set<std::string> span_names;
  std::set<std::string> metric_names;
  int json_lines = 0;
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const json parsed = json::parse(line);  // every JSON-looking line is one whole object
    ++json_lines;
    if (parsed.contains("resource_metrics")) {
      for (const json& sm : parsed.at("resource_metrics")[0].at("scope_metrics")) {
        for (const json& metric : sm.at("metrics")) metric_names.insert(metric.at("name"));
      }
    } else if (parsed.contains("name")) {
      span_names.insert(parsed.at("name"));
      EXPECT_EQ(parsed.at("resource").at("attributes").at("service.name"), "megatron-lm");
    }
  }
  EXPECT_GT(json_lines, 0) << result.output;
  // The default preset: the job spans (no steps), no checkpoint or evaluation in this run.
  EXPECT_EQ(span_names, (std::set<std::string>{"megatron.pretrain", "megatron.train",
                                               "megatron.first_iteration"}))
      << result.output;
  EXPECT_EQ(metric_names.count("megatron.training.loss"), 1U) << result.output;
  EXPECT_EQ(metric_names.count("megatron.training.step_duration_ms"), 1U) << result.output;
}

// MEGATRON_OTEL_CONSOLE_FORMAT=text: one short line per span, indented by depth, the resource
// once, a line per metrics export, and the trainer's own lines whole between them.
TEST_F(TrainLoop, ReadableConsolePrintsOneIndentedLinePerSpanAndTheResourceOnce) {
  const RunResult result = run(1, kShortRun,
                               {{"MEGATRON_OTEL_ENABLED", "1"},
                                {"MEGATRON_OTEL_EXPORTER", "console"},
                                {"MEGATRON_OTEL_CONSOLE_FORMAT", "text"},
                                {"MEGATRON_OTEL_SPAN_GROUPS", "all"}});
  ASSERT_EQ(result.status, 0) << result.output;
  const std::regex span_line(R"(\[lens\] ( *)([a-z_.]+) [0-9.]+ (ns|us|ms|s)( .*)?)");
  const std::regex trainer_line(R"( iteration +\d+/ +4 \| lm loss: .* \| tokens/s: \d+)");
  int resource_lines = 0;
  int metrics_lines = 0;
  int iteration_lines = 0;
  std::map<std::string, std::set<std::size_t>> depths;  // span name -> depths seen
  std::vector<std::string> steps;                       // the train_step lines' iterations
  std::istringstream lines(result.output);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_NE(line.front(), '{') << "a JSON line in text mode: " << line;
    if (line.find("elapsed time per iteration") != std::string::npos) {
      EXPECT_TRUE(std::regex_match(line, trainer_line)) << "a trainer line cut: " << line;
      ++iteration_lines;
    }
    if (line.rfind("[lens] ", 0) != 0) continue;
    if (line.rfind("[lens] resource ", 0) == 0) {
      ++resource_lines;
      EXPECT_NE(line.find(" service.name=megatron-lm "), std::string::npos) << line;
      continue;
    }
    if (line.rfind("[lens] metrics ", 0) == 0) {
      ++metrics_lines;
      EXPECT_NE(line.find(" megatron.training.loss="), std::string::npos) << line;
      continue;
    }
    std::smatch match;
    ASSERT_TRUE(std::regex_match(line, match, span_line)) << line;
    depths[match[2]].insert(match[1].length() / 2);
    if (match[2] == "megatron.train_step") {
      const std::regex iteration(R"( megatron\.iteration=(\d+))");
      std::smatch number;
      ASSERT_TRUE(std::regex_search(line, number, iteration)) << line;
      steps.push_back(number[1]);
    }
  }
  EXPECT_EQ(resource_lines, 1) << result.output;
  EXPECT_GE(metrics_lines, 1) << result.output;
  EXPECT_EQ(iteration_lines, 3) << result.output;  // iterations 1, 2 and 4
  EXPECT_EQ(steps, (std::vector<std::string>{"1", "2", "3", "4"})) << result.output;
  // Each span at the depth of its place in the documented tree (docs/megatron.md): the job under
  // megatron.pretrain, each step a trace of its own.
  const std::map<std::string, std::set<std::size_t>> expected = {
      {"megatron.pretrain", {0}},
      {"megatron.model_init", {1}},
      {"megatron.train", {1}},
      {"megatron.first_iteration", {2}},
      {"megatron.train_step", {0}},
      {"megatron.forward_backward", {1}},
      {"megatron.optimizer_step", {1}},
      {"megatron.microbatch.forward", {2}},
      {"megatron.microbatch.backward", {2}},
      {"megatron.layer.forward", {3}},
      {"megatron.layer.mlp", {4}}};
  for (const auto& [name, depth] : expected) {
    EXPECT_EQ(depths[name], depth) << name << "\n" << result.output;
  }
}

// "Local collector": OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 and a collector there.
TEST_F(TrainLoop, SeedLocalCollectorOn4317ReceivesTheRun) {
  lens::test_servers::CollectProcess collector({}, "127.0.0.1:4317");
  if (collector.address("grpc") != "127.0.0.1:4317") {
    GTEST_SKIP() << "port 4317 is taken on this machine: " << collector.err();
  }
  const RunResult result = run(2, kShortRun,
                               {{"MEGATRON_OTEL_ENABLED", "1"},
                                {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4317"},
                                {"OTEL_BSP_SCHEDULE_DELAY", "200"}});
  ASSERT_EQ(result.status, 0) << result.output;
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  const auto spans = spans_of(collector.lines("traces.jsonl"));
  std::set<std::string> names;
  std::set<std::string> instances;
  for (const auto& [instance, span] : spans) {
    names.insert(span.at("name"));
    instances.insert(instance);
  }
  // single_rank (the default) exports the last rank only.
  ASSERT_EQ(instances.size(), 1U) << collector.err();
  EXPECT_EQ(instances.begin()->substr(instances.begin()->size() - 6), "-rank1");
  EXPECT_EQ(names.count("megatron.train"), 1U);
  const std::vector<std::string> metric_lines = collector.lines("metrics.jsonl");
  EXPECT_EQ(metric_names_of(metric_lines).count("megatron.training.loss"), 1U)
      << collector.err() << result.output;
}

// "Production with remote collector": OTEL_EXPORTER_OTLP_HEADERS carries the bearer token the
// collector requires; a wrong token delivers nothing, reports the rejection, and training goes
// on (and the token is never printed).
TEST_F(TrainLoop, SeedRemoteCollectorWithABearerToken) {
  const std::string token = "seed-token-5b1f0c";
  for (const bool right : {true, false}) {
    lens::test_servers::CollectProcess collector({"--token", token});
    ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
    const std::string sent = right ? token : "not-" + token;
    const RunResult result =
        run(2, kShortRun,
            {{"MEGATRON_OTEL_ENABLED", "1"},
             {"MEGATRON_OTEL_SPAN_GROUPS", "default"},
             {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"},
             {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + collector.address("grpc")},
             {"OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer " + sent},
             {"OTEL_BSP_SCHEDULE_DELAY", "200"}});
    ASSERT_EQ(result.status, 0) << result.output;
    EXPECT_NE(result.output.find("training done: 4 iterations"), std::string::npos);
    EXPECT_EQ(result.output.find(sent), std::string::npos) << "the token was printed";
    ASSERT_EQ(collector.stop(), 0) << collector.err();
    const auto spans = spans_of(collector.lines("traces.jsonl"));
    if (right) {
      std::set<std::string> instances;
      for (const auto& [instance, span] : spans) instances.insert(instance);
      EXPECT_EQ(instances.size(), 2U) << collector.err();
    } else {
      EXPECT_TRUE(spans.empty());
      EXPECT_NE(result.output.find("UNAUTHENTICATED"), std::string::npos) << result.output;
    }
  }
}

// "Per-step granularity with trace sampling": per_step + parentbased_traceidratio 0.1 keeps about
// 10% of the iterations' traces, the same iterations on every rank, each with its whole subtree.
TEST_F(TrainLoop, SeedPerStepWithTraceIdRatioKeepsAboutATenthOfTheSteps) {
  lens::test_servers::CollectProcess collector;
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
  const RunResult result =
      run(2, {"--train-iters", "200", "--log-interval", "50", "--eval-iters", "0"},
          {{"MEGATRON_OTEL_ENABLED", "1"},
           {"MEGATRON_OTEL_SPAN_GROUPS", "per_step"},
           {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"},
           {"OTEL_TRACES_SAMPLER", "parentbased_traceidratio"},
           {"OTEL_TRACES_SAMPLER_ARG", "0.1"},
           {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + collector.address("grpc")},
           {"OTEL_BSP_SCHEDULE_DELAY", "200"}});
  ASSERT_EQ(result.status, 0) << result.output;
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  std::map<std::string, std::set<std::int64_t>> kept;  // instance -> iterations
  std::set<std::string> step_traces;
  for (const auto& [instance, span] : spans_of(collector.lines("traces.jsonl"))) {
    if (span.at("name") != "megatron.train_step") continue;
    kept[instance].insert(iteration_of(span));
    step_traces.insert(span.at("traceId"));
  }
  ASSERT_EQ(kept.size(), 2U) << collector.err();
  EXPECT_EQ(kept.begin()->second, kept.rbegin()->second) << "both ranks keep the same iterations";
  // Binomial(200, 0.1): mean 20, standard deviation 4.2; the bounds are over 3 deviations away.
  const std::size_t count = kept.begin()->second.size();
  EXPECT_GE(count, 7U);
  EXPECT_LE(count, 33U);
  EXPECT_EQ(step_traces.size(), count);  // one trace per kept iteration, shared by the ranks
  // The per_step children exist only in kept iterations' traces, and every kept step has them.
  std::map<std::string, std::set<std::string>> children;  // trace id -> names
  for (const auto& [instance, span] : spans_of(collector.lines("traces.jsonl"))) {
    const std::string name = span.at("name");
    if (name == "megatron.forward_backward" || name == "megatron.optimizer_step") {
      EXPECT_EQ(step_traces.count(span.at("traceId")), 1U) << name;
      children[span.at("traceId")].insert(name);
    }
  }
  EXPECT_EQ(children.size(), count);
}

// Which ranks export under each rank strategy (docs/strategies.md, "Rank strategies"), on four
// real processes.
TEST_F(TrainLoop, RankStrategiesChooseTheExportingRanks) {
  struct Case {
    std::map<std::string, std::string> env;
    int ranks_per_node;
    std::set<std::string> exporting;  // instance suffixes
  };
  std::set<std::string> sampled;
  for (int rank = 0; rank < 4; ++rank) {
    if (lens::sampled_rank_bucket(rank) < 0.5) sampled.insert("-rank" + std::to_string(rank));
  }
  const std::vector<Case> cases = {
      {{{"MEGATRON_OTEL_RANK_STRATEGY", "single_rank"}}, 4, {"-rank3"}},
      {{{"MEGATRON_OTEL_RANK_STRATEGY", "single_rank"}, {"MEGATRON_OTEL_EXPORT_RANK", "0"}},
       4,
       {"-rank0"}},
      {{{"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"}}, 4, {"-rank0", "-rank1", "-rank2", "-rank3"}},
      {{{"MEGATRON_OTEL_RANK_STRATEGY", "sampled"}, {"MEGATRON_OTEL_EXPORT_SAMPLE_RATE", "0.5"}},
       4,
       sampled},
      {{{"MEGATRON_OTEL_RANK_STRATEGY", "first_rank_per_node"}}, 2, {"-rank0", "-rank2"}},
  };
  for (const Case& c : cases) {
    fs::remove_all(dir_ / "telemetry");
    std::map<std::string, std::string> env = telemetry_env("default");
    for (const auto& [key, value] : c.env) env[key] = value;
    const RunResult result =
        run(4, {"--train-iters", "2", "--log-interval", "1", "--eval-iters", "0"}, env,
            c.ranks_per_node);
    const std::string label = c.env.begin()->second + " " + std::to_string(c.env.size());
    ASSERT_EQ(result.status, 0) << label << ": " << result.output;
    std::set<std::string> instances;
    std::string run_id;
    for (const Span& s : spans()) {
      run_id = s.resource.at("nemo.run.id").at("stringValue");
      instances.insert(s.resource.at("service.instance.id").at("stringValue"));
    }
    std::set<std::string> expected;
    for (const std::string& suffix : c.exporting) expected.insert(run_id + suffix);
    EXPECT_EQ(instances, expected) << label;
  }
}

#ifdef LENS_MPIEXEC_PATH
// Launched by Open MPI's mpirun: ranks come from OMPI_COMM_WORLD_*, the run id from the MPI job.
TEST_F(TrainLoop, MpirunLaunchesDataParallelRanks) {
  std::map<std::string, std::string> env = telemetry_env("default");
  env["MASTER_ADDR"] = "127.0.0.1";
  const RunResult result = retrying_taken_ports([&] {
    env["MASTER_PORT"] = std::to_string(free_port());
    return run_launcher({LENS_MPIEXEC_PATH,
                         "--allow-run-as-root",
                         "--oversubscribe",
                         "-np",
                         "2",
                         "--mca",
                         "oob_tcp_if_include",
                         "lo",
                         "--mca",
                         "btl_tcp_if_include",
                         "lo",
                         "--mca",
                         "btl",
                         "self,tcp",
                         LENS_TRAIN_LOOP_PATH,
                         "--train-iters",
                         "4",
                         "--log-interval",
                         "2",
                         "--eval-iters",
                         "0"},
                        env);
  });
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("training done: 4 iterations"), std::string::npos) << result.output;
  for (const Span& s : spans()) {
    EXPECT_EQ(s.resource.at("dl.data_parallel.size"), json({{"intValue", "2"}}));
    EXPECT_EQ(s.resource.at("dl.world_size"), json({{"intValue", "2"}}));
  }
  expect_one_run_id_and_two_rank_instances();
}
#endif

#ifdef LENS_TORCHRUN_PATH
// Launched by torchrun (Debian's python3-torch): its agent serves the store; the run id is shared
// through the c10d collective (torchrun's static rendezvous has no run id of its own).
TEST_F(TrainLoop, TorchrunLaunchesRanks) {
  const RunResult result = retrying_taken_ports([&] {
    fs::remove_all(dir_ / "torchrun");
    return run_launcher(
        {LENS_TORCHRUN_PATH, "--nproc_per_node=2", "--master_port=" + std::to_string(free_port()),
         "--no_python", "-r", "1", "-t", "1", "--log_dir", (dir_ / "torchrun").string(),
         LENS_TRAIN_LOOP_PATH, "--train-iters", "3", "--log-interval", "1", "--eval-iters", "0"},
        telemetry_env("default"));
  });
  ASSERT_EQ(result.status, 0) << result.output;
  EXPECT_NE(result.output.find("training done: 3 iterations"), std::string::npos) << result.output;
  expect_one_run_id_and_two_rank_instances();
}
#endif

// Ctrl-C mid-run (issue 24 point 10, issue 21 point 4): the trainer flushes as on SIGTERM — the
// job spans end with an error status naming SIGINT and the truncation mark, the step in progress
// is exported truncated, the metrics reach the file — then dies by SIGINT as it would without
// lens, after printing its completeness line.
TEST_F(TrainLoop, SigintMidRunFlushesTheJobSpansMarkedInterruptedAndTheMetrics) {
  const fs::path log = dir_ / "sigint.log";
  auto env = telemetry_env("default");
  env["OTEL_METRIC_EXPORT_INTERVAL"] = "600000";  // only the final collection at shutdown
  const pid_t pid = lens::testing::spawn_logged(
      {LENS_TRAIN_LOOP_PATH, "--train-iters", "100000", "--log-interval", "1", "--eval-iters", "0"},
      env, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (read_file(log).find(" iteration        3/") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGINT);
  int status = 0;
  const auto exit_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > exit_deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL() << "the trainer did not end within 20 s of SIGINT: " << read_file(log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string output = read_file(log);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ": " << output;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_NE(output.find("lens: rank 0 telemetry: spans "), std::string::npos) << output;

  std::map<std::string, json> job;
  std::size_t truncated_steps = 0;
  for (const Span& s : spans()) {
    const std::string name = s.span.at("name");
    bool truncated = false;
    for (const json& attribute : s.span.value("attributes", json::array())) {
      if (attribute.at("key") == "nemo.span.truncated") truncated = true;
    }
    if (name == "megatron.pretrain" || name == "megatron.train") {
      job[name] = s.span;
      EXPECT_TRUE(truncated) << name;
    } else if (name == "megatron.train_step" && truncated) {
      ++truncated_steps;
    }
  }
  ASSERT_EQ(job.size(), 2U) << output;
  for (const auto& [name, span] : job) {
    EXPECT_EQ(span.at("status"), json({{"code", 2}, {"message", "interrupted by SIGINT"}})) << name;
  }
  EXPECT_LE(truncated_steps, 1U);
  const auto metrics = last_metrics();
  ASSERT_EQ(metrics.size(), 1U) << output;
  EXPECT_EQ(metrics.begin()->second.count("megatron.training.loss"), 1U);
}

}  // namespace
