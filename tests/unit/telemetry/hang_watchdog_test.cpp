// The hang watchdog (HANG_TIMEOUT): its decision on a driven clock (first report at the timeout,
// repeats at twice the duration, "resumed" on the next step, the automatic timeout), its text,
// the variable's parsing with its error, and a live setup whose log records carry the stuck
// thread's open spans while the "training" thread waits.
#include "telemetry/hang_watchdog.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "export/log_record_data.hpp"
#include "lens/config.hpp"
#include "lens/span.hpp"
#include "lens/step_progress.hpp"
#include "lens/telemetry.hpp"
#include "unit/support/test_support.hpp"

namespace lens::telemetry {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

StepProgress progress_at(std::uint64_t steps, std::int64_t last_ns,
                         std::vector<double> recent = {}) {
  return StepProgress{steps, last_ns, std::move(recent)};
}

HangTimeout fixed_timeout(double seconds) { return HangTimeout{HangTimeout::Mode::fixed, seconds}; }

TEST(HangMonitor, ReportsAtTheTimeoutThenAtTwiceTheDurationThenResumes) {
  HangMonitor monitor(fixed_timeout(10.0), 0);
  // Before any step nothing is watched, however long it takes.
  EXPECT_FALSE(monitor.check(progress_at(0, 0), 500 * kSecond));
  const StepProgress stuck = progress_at(3, 100 * kSecond);
  EXPECT_FALSE(monitor.check(stuck, 109 * kSecond));
  std::optional<HangEvent> first = monitor.check(stuck, 110 * kSecond + kSecond / 2);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, HangEvent::Kind::hang);
  EXPECT_EQ(first->report, 1);
  EXPECT_DOUBLE_EQ(first->stalled_s, 10.5);
  EXPECT_DOUBLE_EQ(first->timeout_s, 10.0);
  EXPECT_EQ(first->steps, 3U);
  EXPECT_FALSE(monitor.check(stuck, 119 * kSecond));  // one report per episode ...
  std::optional<HangEvent> second = monitor.check(stuck, 120 * kSecond);  // ... until 2x
  ASSERT_TRUE(second);
  EXPECT_EQ(second->report, 2);
  EXPECT_DOUBLE_EQ(second->stalled_s, 20.0);
  EXPECT_FALSE(monitor.check(stuck, 139 * kSecond));
  std::optional<HangEvent> third = monitor.check(stuck, 140 * kSecond);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->report, 3);
  std::optional<HangEvent> resumed = monitor.check(progress_at(4, 145 * kSecond), 146 * kSecond);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->kind, HangEvent::Kind::resumed);
  EXPECT_EQ(resumed->report, 3);
  EXPECT_DOUBLE_EQ(resumed->stalled_s, 45.0);
  EXPECT_EQ(resumed->steps, 3U);
  // A new episode starts from the new step.
  EXPECT_FALSE(monitor.check(progress_at(4, 145 * kSecond), 154 * kSecond));
  std::optional<HangEvent> again = monitor.check(progress_at(4, 145 * kSecond), 155 * kSecond);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->report, 1);
  EXPECT_EQ(again->steps, 4U);
}

TEST(HangMonitor, RepeatsAreAtMostAnHourApart) {
  HangMonitor monitor(fixed_timeout(3000.0), 0);
  const StepProgress stuck = progress_at(1, 0);
  ASSERT_TRUE(monitor.check(stuck, 3000 * kSecond));
  ASSERT_TRUE(monitor.check(stuck, 6000 * kSecond));   // 2x
  EXPECT_FALSE(monitor.check(stuck, 9599 * kSecond));  // not 4x (12000 s): capped at +3600 s
  ASSERT_TRUE(monitor.check(stuck, 9600 * kSecond));
  EXPECT_TRUE(monitor.check(stuck, 13200 * kSecond));
}

TEST(HangMonitor, AutomaticTimeoutIsTenMediansWithASixtySecondFloor) {
  HangMonitor monitor(HangTimeout{}, 0);
  EXPECT_DOUBLE_EQ(monitor.timeout_seconds(progress_at(0, 0)), 60.0);
  EXPECT_DOUBLE_EQ(monitor.timeout_seconds(progress_at(4, 0, {0.5, 0.4, 0.6})), 60.0);
  EXPECT_DOUBLE_EQ(monitor.timeout_seconds(progress_at(5, 0, {9.0, 8.0, 30.0, 7.0})), 85.0);
  const StepProgress slow = progress_at(5, 0, {9.0, 8.0, 30.0, 7.0});
  EXPECT_FALSE(monitor.check(slow, 84 * kSecond));
  EXPECT_TRUE(monitor.check(slow, 85 * kSecond));
}

TEST(HangMonitor, OffNeverReports) {
  HangMonitor monitor(HangTimeout{HangTimeout::Mode::off, 0.0}, 0);
  EXPECT_FALSE(monitor.check(progress_at(1, 0), 1'000'000 * kSecond));
}

TEST(HangMonitor, StartUpIsWatchedInATrainingProcessWithTheStartUpTimeout) {
  HangMonitor monitor(fixed_timeout(10.0), 100 * kSecond, fixed_timeout(30.0));
  EXPECT_EQ(monitor.startup_seconds(), 30.0);
  // Not a training process: never before the first step.
  EXPECT_FALSE(monitor.check(progress_at(0, 0), 500 * kSecond, /*steps_expected=*/false));
  HangMonitor training(fixed_timeout(10.0), 100 * kSecond, fixed_timeout(30.0));
  EXPECT_FALSE(training.check(progress_at(0, 0), 129 * kSecond, true));
  std::optional<HangEvent> first = training.check(progress_at(0, 0), 131 * kSecond, true);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->startup);
  EXPECT_EQ(first->steps, 0U);
  EXPECT_DOUBLE_EQ(first->stalled_s, 31.0);
  EXPECT_DOUBLE_EQ(first->timeout_s, 30.0);
  EXPECT_EQ(event_text(*first, {}),
            "no step finished since start-up for 31.0 s (start-up timeout 30.0 s): no open spans");
  std::optional<HangEvent> second = training.check(progress_at(0, 0), 160 * kSecond, true);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->report, 2);
  EXPECT_TRUE(second->startup);
  std::optional<HangEvent> resumed =
      training.check(progress_at(1, 170 * kSecond), 171 * kSecond, true);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->kind, HangEvent::Kind::resumed);
  EXPECT_DOUBLE_EQ(resumed->stalled_s, 70.0);
  // From the first step on the hang timeout applies, and a hang then is not a start-up one.
  std::optional<HangEvent> later =
      training.check(progress_at(1, 170 * kSecond), 181 * kSecond, true);
  ASSERT_TRUE(later);
  EXPECT_FALSE(later->startup);
  EXPECT_DOUBLE_EQ(later->timeout_s, 10.0);
}

TEST(HangMonitor, StartUpTimeoutAutoIsTenMinutesAndOffOrAHangTimeoutOffDisableIt) {
  EXPECT_EQ(HangMonitor(fixed_timeout(10.0), 0, HangTimeout{}).startup_seconds(), 600.0);
  EXPECT_EQ(HangMonitor(fixed_timeout(10.0), 0, {HangTimeout::Mode::off, 0.0}).startup_seconds(),
            std::nullopt);
  EXPECT_EQ(HangMonitor({HangTimeout::Mode::off, 0.0}, 0, fixed_timeout(5.0)).startup_seconds(),
            std::nullopt);
  HangMonitor defaults(fixed_timeout(10.0), 0);  // no start-up timeout given: off
  EXPECT_FALSE(defaults.check(progress_at(0, 0), 100'000 * kSecond, true));
}

TEST(HangText, NamesTheStackOfTheThreadStuckLongest) {
  const std::vector<OpenStack> stacks = {
      {{"worker.poll", 0.3}},
      {{"megatron.train_step", 42.04}, {"megatron.grad_sync.finish", 41.83}},
      {}};
  EXPECT_EQ(stuck_stack(stacks), &stacks[1]);
  EXPECT_EQ(event_text(HangEvent{HangEvent::Kind::hang, 1, 42.04, 10.0, 12}, stacks),
            "no step finished for 42.0 s (hang timeout 10.0 s, 12 steps so far): "
            "megatron.train_step (42.0 s) > megatron.grad_sync.finish (41.8 s); 1 other thread "
            "with open spans");
  EXPECT_EQ(event_text(HangEvent{HangEvent::Kind::hang, 2, 84.0, 10.0, 1}, {}),
            "still no step finished for 84.0 s (hang timeout 10.0 s, 1 step so far): no open "
            "spans (report 2)");
  EXPECT_EQ(event_text(HangEvent{HangEvent::Kind::resumed, 2, 73.25, 10.0, 12}, stacks),
            "progress resumed: a step finished after 73.2 s without one");
}

TEST(HangTimeoutVariable, ParsesAutoOffAndSecondsAndNamesABadValue) {
  auto parse = [](const std::string& value) {
    return Config::from_env("P", "", Env::from({{"P_HANG_TIMEOUT", value}}));
  };
  EXPECT_EQ(parse("auto")->hang_timeout.mode, HangTimeout::Mode::automatic);
  EXPECT_EQ(parse("OFF")->hang_timeout.mode, HangTimeout::Mode::off);
  const Result<Config> seconds = parse("2.5");
  EXPECT_EQ(seconds->hang_timeout.mode, HangTimeout::Mode::fixed);
  EXPECT_DOUBLE_EQ(seconds->hang_timeout.seconds, 2.5);
  EXPECT_EQ(seconds->source_of("hang_timeout"), "env:P_HANG_TIMEOUT");
  EXPECT_EQ(Config().hang_timeout.mode, HangTimeout::Mode::automatic);
  for (const std::string bad : {"0", "-3", "soon", "nan", "1e99"}) {
    const Result<Config> config = parse(bad);
    ASSERT_TRUE(config.ok());
    ASSERT_EQ(config->problems.size(), 1U) << bad;
    EXPECT_EQ(config->problems[0].message(),
              "Invalid hang timeout for P_HANG_TIMEOUT: '" + bad +
                  "'; accepted: auto, off, or a number of seconds > 0 such as 90 or 2.5");
    EXPECT_EQ(config->hang_timeout.mode, HangTimeout::Mode::automatic);
  }
}

// ---- A live setup ---------------------------------------------------------------------------

namespace sdklogs = opentelemetry::sdk::logs;
using exporters::LogRecordData;

struct HangRecords {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<LogRecordData>> kept;
};

class KeepingExporter final : public sdklogs::LogRecordExporter {
 public:
  explicit KeepingExporter(std::shared_ptr<HangRecords> records) : records_(std::move(records)) {}
  std::unique_ptr<sdklogs::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<LogRecordData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdklogs::Recordable>>& records) noexcept
      override {
    std::lock_guard<std::mutex> lock(records_->mutex);
    for (auto& record : records) {
      records_->kept.emplace_back(static_cast<LogRecordData*>(record.release()));
    }
    records_->changed.notify_all();
    return opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  std::shared_ptr<HangRecords> records_;
};

TEST(HangWatchdogLive, ExportsTheOpenSpansWhileTheStepWaitsThenTheResumption) {
  Config config = test_support::exporting_config("hang-run", ExporterKind::none);
  config.metrics_enabled = false;
  config.logs_enabled = true;
  config.hang_timeout = fixed_timeout(0.2);
  config.otel = OtelSettings::from_env(Env::from({{"OTEL_BLRP_SCHEDULE_DELAY", "50"}}));
  auto records = std::make_shared<HangRecords>();
  SetupOverrides overrides;
  overrides.env = Env::from({});
  overrides.log_record_exporter = std::make_unique<KeepingExporter>(records);
  reset_step_progress_for_testing();
  auto handle = setup_telemetry(config, test_support::rank_of(0, 1), {}, std::move(overrides));
  ASSERT_TRUE(handle.ok()) << handle.message();
  // No thread until the process trains: its first step starts the watchdog.
  note_step_completed();
  {
    ScopedSpan step("hang.step");
    ScopedSpan wait("hang.wait");
    // The "training thread" waits here until the first report was exported.
    std::unique_lock<std::mutex> lock(records->mutex);
    ASSERT_TRUE(records->changed.wait_for(lock, std::chrono::seconds(5),
                                          [&] { return !records->kept.empty(); }));
  }
  note_step_completed();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // the watchdog sees it
  ASSERT_TRUE(handle->shutdown(std::chrono::milliseconds(2000)).ok());
  reset_step_progress_for_testing();  // later setups in this process start no watchdog thread

  namespace nostd = opentelemetry::nostd;
  std::lock_guard<std::mutex> lock(records->mutex);
  ASSERT_GE(records->kept.size(), 2U);
  const LogRecordData& hang = *records->kept.front();
  EXPECT_EQ(hang.event_name(), "lens.hang");
  EXPECT_EQ(hang.severity(), opentelemetry::logs::Severity::kWarn);
  EXPECT_EQ(nostd::get<std::string>(hang.attributes().at("lens.hang.span")), "hang.wait");
  EXPECT_EQ(nostd::get<std::vector<std::string>>(hang.attributes().at("lens.hang.stack")),
            (std::vector<std::string>{"hang.step", "hang.wait"}));
  const auto open_s =
      nostd::get<std::vector<double>>(hang.attributes().at("lens.hang.stack_open_s"));
  ASSERT_EQ(open_s.size(), 2U);
  EXPECT_GE(open_s[0], open_s[1]);
  EXPECT_GT(open_s[1], 0.0);
  EXPECT_LT(open_s[0], 5.0);
  EXPECT_EQ(nostd::get<std::int64_t>(hang.attributes().at("lens.hang.report")), 1);
  EXPECT_DOUBLE_EQ(nostd::get<double>(hang.attributes().at("lens.hang.timeout_s")), 0.2);
  EXPECT_GE(nostd::get<std::int64_t>(hang.attributes().at("lens.hang.steps")), 1);
  const std::string body = nostd::get<std::string>(*hang.body());
  EXPECT_EQ(body.rfind("no step finished for ", 0), 0U) << body;
  EXPECT_NE(body.find("(hang timeout 0.2 s, "), std::string::npos) << body;
  EXPECT_NE(body.find(": hang.step ("), std::string::npos) << body;
  EXPECT_NE(body.find(" s) > hang.wait ("), std::string::npos) << body;
  const LogRecordData& resumed = *records->kept.back();
  EXPECT_EQ(resumed.event_name(), "lens.hang.resumed");
  EXPECT_EQ(resumed.severity(), opentelemetry::logs::Severity::kInfo);
  EXPECT_EQ(
      nostd::get<std::string>(*resumed.body()).rfind("progress resumed: a step finished after ", 0),
      0U);
  for (std::size_t i = 1; i + 1 < records->kept.size(); ++i) {
    EXPECT_EQ(records->kept[i]->event_name(), "lens.hang");  // repeats only in between
  }
}

}  // namespace
}  // namespace lens::telemetry
