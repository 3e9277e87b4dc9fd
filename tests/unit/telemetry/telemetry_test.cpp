// setup_telemetry() and TelemetryHandle (docs/telemetry.md): the guard, validation before change,
// exporting and non-exporting ranks, OTEL_SDK_DISABLED, idempotent and bounded shutdown, setup
// again after shutdown, stats, several producer threads, and fork() (including a fork while another
// thread keeps the exporter busy).
#include "lens/telemetry.hpp"

#include <dirent.h>
#include <gtest/gtest.h>
#include <opentelemetry/exporters/memory/in_memory_span_exporter.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <opentelemetry/trace/noop.h>
#include <opentelemetry/trace/provider.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "lens/groups.hpp"
#include "lens/span.hpp"
#include "lens/strategies.hpp"
#include "unit/support/blocking_exporters.hpp"
#include "unit/support/kept_handles.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using opentelemetry::exporter::memory::InMemorySpanData;
using opentelemetry::exporter::memory::InMemorySpanExporter;
using test_support::rank_of;
using test_support::thread_count;

Config enabled_config(std::string span_groups = "default") {
  // Spans go to the tests' own exporter; metrics (on by default) are collected and discarded.
  Config config = test_support::exporting_config("test-run", ExporterKind::none);
  config.span_groups = std::move(span_groups);
  // opentelemetry-cpp 1.19's batch processor can miss the shutdown wake-up and sleep until its
  // next scheduled export (upstream issue #4373): keep that well below the tests' timeouts.
  config.otel = OtelSettings::from_env(Env::from({{"OTEL_BSP_SCHEDULE_DELAY", "200"}}));
  return config;
}

struct Capture {
  std::shared_ptr<InMemorySpanData> data;
  SetupOverrides overrides;
};

Capture in_memory() {
  auto exporter = std::make_unique<InMemorySpanExporter>(100000);
  Capture capture{exporter->GetData(), {}};
  capture.overrides.span_exporter = std::move(exporter);
  capture.overrides.env = Env::from({});
  return capture;
}

// ThreadSanitizer (GCC 12) cannot follow threads started in the child of a multi-threaded
// fork ("dup thread with used id"), so under TSan the child checks stop before setting up again.
#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadsAfterForkSupported = false;
#else
constexpr bool kThreadsAfterForkSupported = true;
#endif

// True when every thread of this process other than the caller is asleep (state S or D).
bool other_threads_asleep() {
  const std::string self = std::to_string(gettid());
  bool asleep = true;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.' || self == entry->d_name) continue;
      std::ifstream stat(std::string("/proc/self/task/") + entry->d_name + "/stat");
      std::string line;
      std::getline(stat, line);
      const auto paren = line.rfind(')');
      if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'S' &&
          line[paren + 2] != 'D') {
        asleep = false;
      }
    }
    closedir(dir);
  }
  return asleep;
}

// Waits (bounded) until this process runs at most `expected` threads and the others are
// asleep. Needed before a fork: the ASan runtime of GCC 12 does not guard its allocator
// across fork(), so a child inherits it locked if another thread was inside it (a thread
// that is still starting or exiting allocates), and then deadlocks on its first allocation.
bool settle_threads(int expected) {
  int asleep_in_a_row = 0;
  for (int i = 0; i < 600 && asleep_in_a_row < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    asleep_in_a_row =
        thread_count() <= expected && other_threads_asleep() ? asleep_in_a_row + 1 : 0;
  }
  return asleep_in_a_row >= 3;
}

class Telemetry : public ::testing::Test, protected test_support::KeptHandles {
 protected:
  void SetUp() override {
    detail::reset_span_groups_for_testing();
    // A sanitizer may start its own background thread with the first thread created: let it
    // do so before the baseline is taken.
    std::thread([] {}).join();
    base_threads_ = thread_count();
  }
  void TearDown() override {
    shut_down_kept();
    // Every test leaves the process with the threads it found (a timed-out shutdown's
    // helper thread ends once its exporter returns).
    EXPECT_TRUE(settle_threads(base_threads_));
    detail::reset_span_groups_for_testing();
    detail::reset_strategies_for_testing();
  }
  int base_threads_ = 0;
};

TEST_F(Telemetry, DisabledSetupGivesWorkingNoopHandle) {
  Config config;
  config.span_groups = "all";
  auto handle = keep(setup_telemetry(config, rank_of(0, 1)));
  EXPECT_FALSE(handle.is_exporting());
  ASSERT_NE(handle.tracer(), nullptr);
  ASSERT_NE(handle.meter(), nullptr);
  ASSERT_NE(handle.logger(), nullptr);
  auto span = handle.tracer()->StartSpan("noop");
  EXPECT_FALSE(span->IsRecording());
  span->End();
  EXPECT_FALSE(is_span_group_enabled("job"));
  EXPECT_TRUE(enabled_span_groups().empty());
  EXPECT_TRUE(handle.shutdown(std::chrono::milliseconds(100)).ok());
}

TEST_F(Telemetry, DisabledConfigIsNeverValidated) {
  Config config;
  config.span_groups = "bogus";
  config.rank_strategy = "nope";
  config.problems.emplace_back("Invalid integer for NEMO_LENS_EXPORT_RANK: 'last'");
  EXPECT_TRUE(setup_telemetry(config, rank_of(0, 1)).ok());
}

TEST_F(Telemetry, ExportingRankRecordsAndExportsSpans) {
  Capture capture = in_memory();
  auto handle =
      keep(setup_telemetry(enabled_config(), rank_of(2, 4), {{"dl.local_rank", std::int64_t{2}}},
                           std::move(capture.overrides)));
  ASSERT_TRUE(handle.is_exporting());
  EXPECT_EQ(handle.run_id(), "test-run");
  EXPECT_TRUE(is_span_group_enabled("job"));
  EXPECT_TRUE(is_span_group_enabled("checkpoint"));
  EXPECT_FALSE(is_span_group_enabled("step"));
  {
    auto parent = handle.tracer()->StartSpan("megatron.train");
    auto scope = handle.tracer()->WithActiveSpan(parent);
    auto child = handle.tracer()->StartSpan("megatron.train_step");
    child->SetAttribute("megatron.iteration", 7);
    child->End();
    parent->End();
  }
  ASSERT_TRUE(handle.shutdown().ok());
  auto spans = capture.data->GetSpans();
  ASSERT_EQ(spans.size(), 2U);
  EXPECT_EQ(spans[0]->GetName(), "megatron.train_step");
  EXPECT_EQ(spans[1]->GetName(), "megatron.train");
  EXPECT_EQ(spans[0]->GetParentSpanId(), spans[1]->GetSpanId());
  EXPECT_EQ(spans[0]->GetTraceId(), spans[1]->GetTraceId());
  const auto& resource = spans[0]->GetResource().GetAttributes();
  EXPECT_EQ(opentelemetry::nostd::get<std::string>(resource.at("service.name")), "nemo");
  EXPECT_EQ(opentelemetry::nostd::get<std::string>(resource.at("nemo.run.id")), "test-run");
  EXPECT_EQ(opentelemetry::nostd::get<std::string>(resource.at("service.instance.id")),
            "test-run-rank2");
  EXPECT_EQ(opentelemetry::nostd::get<std::int64_t>(resource.at("dl.rank")), 2);
  EXPECT_EQ(opentelemetry::nostd::get<std::int64_t>(resource.at("dl.local_rank")), 2);
  EXPECT_EQ(spans[1]->GetInstrumentationScope().GetName(), "nemo.lens");
  const TelemetryStats stats = handle.stats();
  EXPECT_EQ(stats.spans_started, 2U);
  EXPECT_EQ(stats.spans_ended, 2U);
  EXPECT_EQ(stats.spans_exported, 2U);
  EXPECT_EQ(stats.spans_dropped, 0U);
}

TEST_F(Telemetry, RankStrategiesDecideWhoExports) {
  struct Case {
    std::string strategy;
    std::int64_t export_rank;
    int rank;
    int world;
    bool expected;
  };
  const Case cases[] = {{"single_rank", -1, 3, 4, true}, {"single_rank", -1, 0, 4, false},
                        {"single_rank", 0, 0, 4, true},  {"single_rank", 0, 1, 4, false},
                        {"all_ranks", -1, 0, 4, true},   {"all_ranks", -1, 3, 4, true},
                        {"sampled", -1, 3, 16, true},    {"sampled", -1, 0, 16, false}};
  for (const Case& c : cases) {
    Config config = enabled_config();
    config.rank_strategy = c.strategy;
    config.export_rank = c.export_rank;
    config.export_sample_rate = 0.1;
    Capture capture = in_memory();
    auto handle =
        setup_telemetry(config, rank_of(c.rank, c.world), {}, std::move(capture.overrides));
    ASSERT_TRUE(handle.ok()) << handle.message();
    EXPECT_EQ(handle->is_exporting(), c.expected) << c.strategy << " rank " << c.rank;
    EXPECT_TRUE(handle->shutdown().ok());
  }
}

TEST_F(Telemetry, FirstRankPerNodeUsesTheLocalRank) {
  for (const auto& [local, expected] : {std::pair{0, true}, std::pair{3, false}}) {
    Config config = enabled_config();
    config.rank_strategy = "first_rank_per_node";
    auto rank = RankInfo::make(4 + local, 8, local, 4, 1);
    ASSERT_TRUE(rank.ok());
    Capture capture = in_memory();
    auto handle = setup_telemetry(config, *rank, {}, std::move(capture.overrides));
    ASSERT_TRUE(handle.ok());
    EXPECT_EQ(handle->is_exporting(), expected);
    EXPECT_TRUE(handle->shutdown().ok());
  }
}

TEST_F(Telemetry, PerCallStrategyOverridesTheConfig) {
  Config config = enabled_config();
  config.rank_strategy = "single_rank";
  Capture capture = in_memory();
  capture.overrides.rank_strategy = [](const StrategySettings&, const RankInfo& r) {
    return r.rank == 1;
  };
  auto handle = keep(setup_telemetry(config, rank_of(1, 4), {}, std::move(capture.overrides)));
  EXPECT_TRUE(handle.is_exporting());
}

TEST_F(Telemetry, NonExportingRankBuildsNothing) {
  const int threads_before = thread_count();
  Config config = enabled_config("all");
  config.rank_strategy = "single_rank";  // rank 0 of 4 does not export
  auto handle = keep(setup_telemetry(config, rank_of(0, 4), {}, in_memory().overrides));
  EXPECT_FALSE(handle.is_exporting());
  EXPECT_TRUE(enabled_span_groups().empty());
  EXPECT_FALSE(handle.tracer()->StartSpan("x")->IsRecording());
  EXPECT_FALSE(start_span("x"));
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_TRUE(handle.resource().empty());
}

// Open sockets of this process (entries of /proc/self/fd that link to "socket:[...]").
int socket_count() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* entry = readdir(dir)) {
      char target[64] = {};
      const std::string path = std::string("/proc/self/fd/") + entry->d_name;
      if (readlink(path.c_str(), target, sizeof(target) - 1) > 0 &&
          std::string(target).rfind("socket:", 0) == 0) {
        ++count;
      }
    }
    closedir(dir);
  }
  return count;
}

// With the real OTLP exporters for all three signals configured, a rank that does not export
// opens no socket and starts no thread, whatever it records.
TEST_F(Telemetry, NonExportingRankOpensNoSocket) {
  const int sockets_before = socket_count();
  const int threads_before = thread_count();
  Config config = enabled_config("all");
  config.rank_strategy = "single_rank";  // rank 0 of 4 does not export
  config.exporter = lens::ExporterKind::otlp;
  config.logs_enabled = true;
  config.otel =
      OtelSettings::from_env(Env::from({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"}}));
  SetupOverrides overrides;
  overrides.env = Env::from({});
  auto handle = keep(setup_telemetry(config, rank_of(0, 4), {}, std::move(overrides)));
  EXPECT_FALSE(handle.is_exporting());
  handle.tracer()->StartSpan("x")->End();
  handle.meter()->CreateUInt64Counter("c")->Add(1);
  EXPECT_EQ(socket_count(), sockets_before);
  EXPECT_EQ(thread_count(), threads_before);
  EXPECT_TRUE(handle.shutdown().ok());
}

TEST_F(Telemetry, SpanGroupPresetsAreEnabledOnExportingRanks) {
  auto handle =
      keep(setup_telemetry(enabled_config("per_step"), rank_of(0, 1), {}, in_memory().overrides));
  EXPECT_TRUE(is_span_group_enabled("step"));
  EXPECT_TRUE(is_span_group_enabled("forward_backward"));
  ASSERT_TRUE(handle.shutdown().ok());
  EXPECT_FALSE(is_span_group_enabled("step"));  // shutdown turns the groups off
}

TEST_F(Telemetry, SecondEnabledSetupIsAnError) {
  auto first = keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, in_memory().overrides));
  auto second = setup_telemetry(enabled_config(), rank_of(0, 1), {}, in_memory().overrides);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.message().find("already been initialised"), std::string::npos);
  // Repeated disabled setups are fine and leave the live telemetry alone.
  EXPECT_TRUE(setup_telemetry(Config{}, rank_of(0, 1)).ok());
  EXPECT_TRUE(setup_telemetry(Config{}, rank_of(0, 1)).ok());
  EXPECT_TRUE(is_span_group_enabled("job"));
  EXPECT_TRUE(first.tracer()->StartSpan("still")->IsRecording());
}

TEST_F(Telemetry, AllowReinitReplacesTheLiveTelemetry) {
  Capture first_capture = in_memory();
  auto first = keep(
      setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(first_capture.overrides)));
  Capture second_capture = in_memory();
  second_capture.overrides.allow_reinit = true;
  auto second = keep(setup_telemetry(enabled_config("per_step"), rank_of(0, 1), {},
                                     std::move(second_capture.overrides)));
  EXPECT_TRUE(second.is_exporting());
  EXPECT_FALSE(first.tracer()->StartSpan("old")->IsRecording());
  start_span("new").end();
  ASSERT_TRUE(second.shutdown().ok());
  ASSERT_EQ(second_capture.data->GetSpans().size(), 1U);
}

TEST_F(Telemetry, FailedSetupChangesNothing) {
  Capture capture = in_memory();
  auto live = keep(
      setup_telemetry(enabled_config("per_step"), rank_of(0, 1), {}, std::move(capture.overrides)));
  const auto provider_before = opentelemetry::trace::Provider::GetTracerProvider();
  Config bad = enabled_config("default,bogus");
  SetupOverrides overrides = in_memory().overrides;
  overrides.allow_reinit = true;
  auto failed = setup_telemetry(bad, rank_of(0, 1), {}, std::move(overrides));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.message().substr(0, 64),
            "Invalid span-group spec in config.span_groups: Unknown span grou");
  EXPECT_TRUE(start_span("still-native"));
  EXPECT_EQ(opentelemetry::trace::Provider::GetTracerProvider(), provider_before);
  EXPECT_TRUE(is_span_group_enabled("step"));
  EXPECT_TRUE(live.tracer()->StartSpan("still-live")->IsRecording());
}

TEST_F(Telemetry, UnknownStrategyAndBadSampleRateFailBeforeAnyChange) {
  Config config = enabled_config();
  config.rank_strategy = "nope";
  auto result = setup_telemetry(config, rank_of(0, 1), {}, in_memory().overrides);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.message().find("Unknown rank strategy 'nope'"), std::string::npos);
  config = enabled_config();
  config.export_sample_rate = 1.5;
  EXPECT_FALSE(setup_telemetry(config, rank_of(0, 1), {}, in_memory().overrides).ok());
  EXPECT_TRUE(enabled_span_groups().empty());
  // No live telemetry was left behind: a correct setup now succeeds without allow_reinit.
  keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, in_memory().overrides));
}

TEST_F(Telemetry, SetupAfterShutdownAndEnabledAfterDisabledBothExport) {
  EXPECT_TRUE(setup_telemetry(Config{}, rank_of(0, 1)).ok());
  for (int round = 0; round < 2; ++round) {
    Capture capture = in_memory();
    auto handle =
        setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(capture.overrides));
    ASSERT_TRUE(handle.ok()) << handle.message();
    handle->tracer()->StartSpan("round")->End();
    ASSERT_TRUE(handle->shutdown().ok());
    EXPECT_EQ(capture.data->GetSpans().size(), 1U) << round;
  }
}

TEST_F(Telemetry, OtelSdkDisabledBehavesAsDisabled) {
  Config config = enabled_config("all");
  config.otel = OtelSettings::from_env(Env::from({{"OTEL_SDK_DISABLED", "true"}}));
  auto handle = setup_telemetry(config, rank_of(0, 1), {}, in_memory().overrides);
  ASSERT_TRUE(handle.ok());
  EXPECT_FALSE(handle->is_exporting());
  EXPECT_TRUE(enabled_span_groups().empty());
  // It is not live telemetry: an enabled setup right after needs no allow_reinit.
  keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, in_memory().overrides));
}

TEST_F(Telemetry, SignalsThatAreOffBuildNothing) {
  Config config = enabled_config();
  config.traces_enabled = false;
  config.metrics_enabled = false;
  auto handle = keep(setup_telemetry(config, rank_of(0, 1), {}, in_memory().overrides));
  ASSERT_TRUE(handle.is_exporting());
  EXPECT_FALSE(handle.tracer()->StartSpan("off")->IsRecording());
  EXPECT_TRUE(is_span_group_enabled("job"));  // groups stay on: spans are non-recording
  EXPECT_EQ(thread_count(), base_threads_);   // no batch worker, no metric reader
  EXPECT_TRUE(handle.shutdown().ok());
}

TEST_F(Telemetry, MeterAndLoggerAreRealOnlyWhileExporting) {
  Config config = enabled_config();
  config.logs_enabled = true;
  auto handle = keep(setup_telemetry(config, rank_of(0, 1), {}, in_memory().overrides));
  const auto meter = handle.meter();
  const auto logger = handle.logger();
  EXPECT_EQ(handle.logger()->GetName(), "nemo.lens");
  ASSERT_TRUE(handle.shutdown().ok());
  EXPECT_NE(handle.meter().get(), meter.get());  // the no-op meter after shutdown
  EXPECT_NE(handle.logger().get(), logger.get());
}

TEST_F(Telemetry, ShutdownIsIdempotentAcrossCopies) {
  auto handle = keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, in_memory().overrides));
  TelemetryHandle copy = handle;
  EXPECT_TRUE(handle.shutdown().ok());
  EXPECT_TRUE(copy.shutdown().ok());
  EXPECT_TRUE(handle.shutdown(std::chrono::milliseconds(0)).ok());
  EXPECT_FALSE(copy.tracer()->StartSpan("after")->IsRecording());
}

TEST_F(Telemetry, ShutdownWithABlockedExporterReturnsWithinItsTimeout) {
  auto gate = std::make_shared<test_support::ExportGate>();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.span_exporter = std::make_unique<test_support::BlockingSpanExporter>(gate);
  auto handle = keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(overrides)));
  handle.tracer()->StartSpan("stuck")->End();
  const auto start = std::chrono::steady_clock::now();
  const Status status = handle.shutdown(std::chrono::milliseconds(300));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(
      status.message(),
      "Telemetry shutdown did not finish within 300 ms for traces; the exporter is still busy "
      "and what it holds may be lost");
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
  gate->release();  // the shutdown helper thread then finishes on its own (see TearDown)
}

TEST_F(Telemetry, SeveralProducerThreadsLoseAndDuplicateNothing) {
  Capture capture = in_memory();
  auto handle =
      keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(capture.overrides)));
  constexpr int kThreads = 4;
  constexpr int kSpansPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&handle] {
      for (int i = 0; i < kSpansPerThread; ++i) {
        handle.tracer()->StartSpan("work")->End();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_TRUE(handle.shutdown().ok());
  auto spans = capture.data->GetSpans();
  ASSERT_EQ(spans.size(), static_cast<std::size_t>(kThreads * kSpansPerThread));
  std::set<std::string> ids;
  for (const auto& span : spans) {
    char hex[16];
    span->GetSpanId().ToLowerBase16(hex);
    ids.emplace(hex, sizeof(hex));
  }
  EXPECT_EQ(ids.size(), spans.size());
  EXPECT_EQ(handle.stats().spans_exported, static_cast<std::uint64_t>(kThreads * kSpansPerThread));
}

// Runs `child` in a forked process; returns its exit status (or -1 if it did not finish in 15 s).
int run_in_child(const std::function<int()>& child) {
  const pid_t pid = fork();
  if (pid == 0) {
    _exit(child());
  }
  for (int i = 0; i < 1500; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST_F(Telemetry, ForkedChildHasTelemetryOffAndMaySetUpAgain) {
  Capture capture = in_memory();
  auto handle =
      keep(setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(capture.overrides)));
  auto open_span = handle.tracer()->StartSpan("open-in-parent");
  const auto* parent_meter = handle.meter().get();
  // Plus the span export thread, its sender and the metric reader's worker.
  ASSERT_TRUE(settle_threads(base_threads_ + 3));
  const int status = run_in_child([&handle, parent_meter] {
    if (is_span_group_enabled("job")) return 10;
    if (handle.meter().get() == parent_meter) return 17;
    if (start_span("x")) return 11;
    if (handle.tracer()->StartSpan("y")->IsRecording()) return 12;
    if (!handle.shutdown(std::chrono::milliseconds(100)).ok()) return 13;
    if (!kThreadsAfterForkSupported) return 0;
    Capture child_capture = in_memory();
    auto again =
        setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(child_capture.overrides));
    if (!again.ok()) return 14;
    again->tracer()->StartSpan("child-span")->End();
    if (!again->shutdown(std::chrono::milliseconds(2000)).ok()) return 15;
    auto spans = child_capture.data->GetSpans();
    if (spans.size() != 1 || spans[0]->GetName() != "child-span") return 16;
    return 0;
  });
  EXPECT_EQ(status, 0);
  // The parent is untouched.
  EXPECT_TRUE(is_span_group_enabled("job"));
  open_span->End();
  ASSERT_TRUE(handle.shutdown().ok());
  auto spans = capture.data->GetSpans();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0]->GetName(), "open-in-parent");
}

// Out of memory or threads while building (a container's limit): setup returns an error that
// says so, never the exception, and leaves no thread behind.
TEST_F(Telemetry, InAForkedChildWithoutRoomForThreadsSetupReturnsAnError) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's own mappings make an address-space limit meaningless";
#else
  int message_pipe[2];
  ASSERT_EQ(pipe(message_pipe), 0);
  const int status = run_in_child([&message_pipe] {
    close(message_pipe[0]);
    if (!test_support::limit_address_space(test_support::kLimitedThreadStack / 2)) return 10;
    Capture capture = in_memory();
    Result<TelemetryHandle> made = Error("not set up");
    try {
      made = setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(capture.overrides));
    } catch (...) {
      return 14;
    }
    if (made.ok()) return 11;
    const std::string& message = made.message();
    if (write(message_pipe[1], message.data(), message.size()) !=
        static_cast<ssize_t>(message.size())) {
      return 12;
    }
    return thread_count() == 1 ? 0 : 13;
  });
  close(message_pipe[1]);
  std::string message;
  char buffer[512];
  for (ssize_t got = 0; (got = read(message_pipe[0], buffer, sizeof(buffer))) > 0;) {
    message.append(buffer, static_cast<std::size_t>(got));
  }
  close(message_pipe[0]);
  EXPECT_EQ(status, 0) << "10: limit not set, 11: setup succeeded, 12: pipe, 13: a thread left, "
                          "14: setup threw";
  const std::string prefix =
      "setup_telemetry() could not build the telemetry pipelines (out of memory or threads?): ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  EXPECT_TRUE(message.ends_with("; telemetry is off")) << message;
#endif
}

TEST_F(Telemetry, ForkWhileAnotherThreadHoldsTheExporterBusy) {
  if (!kThreadsAfterForkSupported) {
    GTEST_SKIP() << "ThreadSanitizer cannot follow threads started after a multi-threaded fork";
  }
  auto gate = std::make_shared<test_support::ExportGate>();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.span_exporter = std::make_unique<test_support::BlockingSpanExporter>(gate);
  Config config = enabled_config();
  config.otel = OtelSettings::from_env(Env::from({{"OTEL_BSP_SCHEDULE_DELAY", "1"}}));
  auto handle = keep(setup_telemetry(config, rank_of(0, 1), {}, std::move(overrides)));
  handle.tracer()->StartSpan("blocks-the-exporter")->End();
  for (int i = 0; i < 500 && gate->entered.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GT(gate->entered.load(), 0) << "the exporter thread never started exporting";
  // The span export thread, its sender (blocked in Export()) and the metric reader's worker.
  ASSERT_TRUE(settle_threads(base_threads_ + 3));
  const int status = run_in_child([] {
    Capture child_capture = in_memory();
    auto again =
        setup_telemetry(enabled_config(), rank_of(0, 1), {}, std::move(child_capture.overrides));
    if (!again.ok()) return 20;
    again->tracer()->StartSpan("child")->End();
    if (!again->shutdown(std::chrono::milliseconds(2000)).ok()) return 21;
    return child_capture.data->GetSpans().size() == 1 ? 0 : 22;
  });
  EXPECT_EQ(status, 0);
  gate->release();
}

}  // namespace
}  // namespace lens
