// PipelinedExporter: batches are sent in order on a thread of its own (or several at once on
// several senders), at most one waits while the senders are busy, ForceFlush and Shutdown wait for
// what was handed over within their timeout, and a Shutdown that times out leaves the wrapped
// exporter's shutdown to the sender.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "export/export_report.hpp"
#include "opentelemetry/sdk/trace/span_data.h"
#include "sdk/pipelined_exporter.hpp"
#include "unit/test_support.hpp"

namespace {

namespace otel_sdk = opentelemetry::sdk::trace;
using opentelemetry::sdk::common::ExportResult;
using RecordablePtr = std::unique_ptr<otel_sdk::Recordable>;
using namespace std::chrono_literals;

// What the wrapped exporter saw, readable after the exporter moved into the pipeline.
struct SenderScript {
  std::mutex mutex;
  std::condition_variable changed;
  bool gate_open = true;  // Export returns only while open
  std::vector<std::vector<std::string>> batches;
  std::vector<std::thread::id> export_threads;
  int force_flushes = 0;
  int shutdowns = 0;
  std::size_t batches_at_shutdown = 0;
  int in_export = 0;  // Export calls under way, and their most at once
  int most_in_export = 0;

  void set_gate(bool open) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      gate_open = open;
    }
    changed.notify_all();
  }
  template <class T, class F>
  T read(F&& f) {
    std::lock_guard<std::mutex> lock(mutex);
    return f();
  }
};

class ScriptedBatchExporter final : public otel_sdk::SpanExporter {
 public:
  explicit ScriptedBatchExporter(std::shared_ptr<SenderScript> script)
      : script_(std::move(script)) {}
  RecordablePtr MakeRecordable() noexcept override {
    return std::make_unique<otel_sdk::SpanData>();
  }
  ExportResult Export(const opentelemetry::nostd::span<RecordablePtr>& spans) noexcept override {
    std::vector<std::string> names;
    for (const auto& span : spans) {
      names.emplace_back(static_cast<otel_sdk::SpanData*>(span.get())->GetName());
    }
    std::unique_lock<std::mutex> lock(script_->mutex);
    script_->most_in_export = std::max(script_->most_in_export, ++script_->in_export);
    script_->changed.notify_all();
    script_->changed.wait(lock, [this] { return script_->gate_open; });
    --script_->in_export;
    script_->batches.push_back(std::move(names));
    script_->export_threads.push_back(std::this_thread::get_id());
    script_->changed.notify_all();
    return ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(script_->mutex);
    ++script_->force_flushes;
    return true;
  }
  bool Shutdown(std::chrono::microseconds) noexcept override {
    std::lock_guard<std::mutex> lock(script_->mutex);
    ++script_->shutdowns;
    script_->batches_at_shutdown = script_->batches.size();
    script_->changed.notify_all();
    return true;
  }

 private:
  std::shared_ptr<SenderScript> script_;
};

// A batch of spans named `prefix`0, `prefix`1, ...
std::vector<RecordablePtr> batch_of(otel_sdk::SpanExporter& exporter, const std::string& prefix,
                                    int count) {
  std::vector<RecordablePtr> spans;
  for (int i = 0; i < count; ++i) {
    RecordablePtr span = exporter.MakeRecordable();
    span->SetName(prefix + std::to_string(i));
    spans.push_back(std::move(span));
  }
  return spans;
}

ExportResult export_batch(otel_sdk::SpanExporter& exporter, std::vector<RecordablePtr>& spans) {
  return exporter.Export(opentelemetry::nostd::span<RecordablePtr>(spans.data(), spans.size()));
}

TEST(SdkPipelinedExporter, SendsBatchesInOrderOnItsOwnThread) {
  auto script = std::make_shared<SenderScript>();
  lens::sdk::PipelinedExporter exporter(std::make_unique<ScriptedBatchExporter>(script));
  for (const char* prefix : {"a", "b", "c"}) {
    auto spans = batch_of(exporter, prefix, 2);
    EXPECT_EQ(export_batch(exporter, spans), ExportResult::kSuccess);
  }
  ASSERT_TRUE(exporter.ForceFlush(10s));
  const auto batches =
      script->read<std::vector<std::vector<std::string>>>([&] { return script->batches; });
  const std::vector<std::vector<std::string>> expected = {{"a0", "a1"}, {"b0", "b1"}, {"c0", "c1"}};
  EXPECT_EQ(batches, expected);
  for (const auto& id :
       script->read<std::vector<std::thread::id>>([&] { return script->export_threads; })) {
    EXPECT_NE(id, std::this_thread::get_id());
  }
  EXPECT_EQ(script->read<int>([&] { return script->force_flushes; }), 1);
  EXPECT_TRUE(exporter.Shutdown(10s));
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

TEST(SdkPipelinedExporter, AtMostOneBatchWaitsWhileOneIsBeingSent) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  lens::sdk::PipelinedExporter exporter(std::make_unique<ScriptedBatchExporter>(script));
  auto first = batch_of(exporter, "first", 1);
  auto second = batch_of(exporter, "second", 1);
  auto third = batch_of(exporter, "third", 1);
  // The first is taken by the sender (stuck at the gate), the second waits: both return at once.
  EXPECT_EQ(export_batch(exporter, first), ExportResult::kSuccess);
  EXPECT_EQ(export_batch(exporter, second), ExportResult::kSuccess);
  // The third must wait for room.
  auto third_done = std::async(std::launch::async, [&] { return export_batch(exporter, third); });
  EXPECT_EQ(third_done.wait_for(200ms), std::future_status::timeout);
  script->set_gate(true);
  ASSERT_EQ(third_done.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(third_done.get(), ExportResult::kSuccess);
  ASSERT_TRUE(exporter.ForceFlush(10s));
  const auto batches =
      script->read<std::vector<std::vector<std::string>>>([&] { return script->batches; });
  const std::vector<std::vector<std::string>> expected = {{"first0"}, {"second0"}, {"third0"}};
  EXPECT_EQ(batches, expected);
}

TEST(SdkPipelinedExporter, WithThreeSendersThreeBatchesAreSentAtOnceAndOneWaits) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  lens::sdk::PipelinedExporter exporter(std::make_unique<ScriptedBatchExporter>(script), 3);
  std::vector<std::vector<RecordablePtr>> batches;
  for (const char* prefix : {"a", "b", "c", "d", "e"}) {
    batches.push_back(batch_of(exporter, prefix, 2));
  }
  // Three are taken by the senders (stuck at the gate), the fourth waits: all return at once.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(export_batch(exporter, batches[i]), ExportResult::kSuccess);
  {
    std::unique_lock<std::mutex> lock(script->mutex);
    EXPECT_TRUE(script->changed.wait_for(lock, 10s, [&] { return script->in_export == 3; }));
  }
  // The fifth must wait for room.
  auto fifth = std::async(std::launch::async, [&] { return export_batch(exporter, batches[4]); });
  EXPECT_EQ(fifth.wait_for(200ms), std::future_status::timeout);
  EXPECT_EQ(script->read<int>([&] { return script->most_in_export; }), 3);
  script->set_gate(true);
  ASSERT_EQ(fifth.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fifth.get(), ExportResult::kSuccess);
  ASSERT_TRUE(exporter.ForceFlush(10s));
  auto sent = script->read<std::vector<std::vector<std::string>>>([&] { return script->batches; });
  std::sort(sent.begin(), sent.end());  // several senders: any order
  const std::vector<std::vector<std::string>> expected = {
      {"a0", "a1"}, {"b0", "b1"}, {"c0", "c1"}, {"d0", "d1"}, {"e0", "e1"}};
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(script->read<int>([&] { return script->most_in_export; }), 3);
  EXPECT_TRUE(exporter.Shutdown(10s));
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

TEST(SdkPipelinedExporter, WithSeveralSendersTheLastOneShutsTheInnerDownAfterEveryBatch) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  {
    lens::sdk::PipelinedExporter exporter(std::make_unique<ScriptedBatchExporter>(script), 3);
    std::vector<std::vector<RecordablePtr>> batches;
    for (const char* prefix : {"a", "b", "c"}) {
      batches.push_back(batch_of(exporter, prefix, 1));
      EXPECT_EQ(export_batch(exporter, batches.back()), ExportResult::kSuccess);
    }
    EXPECT_FALSE(exporter.Shutdown(100ms));
    EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 0);
  }  // destroyed with three batches in flight
  script->set_gate(true);
  std::unique_lock<std::mutex> lock(script->mutex);
  EXPECT_TRUE(script->changed.wait_for(lock, 10s, [&] { return script->shutdowns == 1; }));
  EXPECT_EQ(script->batches_at_shutdown, 3U);
  lock.unlock();
  std::this_thread::sleep_for(100ms);  // no second shutdown from the other senders
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

// A sender thread that cannot start (a process or container limit) fails the constructor with
// that error, after the senders that did start are stopped and joined; left joinable, their
// std::thread objects would end the process (std::terminate, SIGABRT).
TEST(SdkPipelinedExporter, InAForkedChildWithRoomForOneSenderTheConstructorThrowsAndJoinsIt) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's own mappings make an address-space limit meaningless";
#else
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Room for one thread stack, not two.
    if (!lens::test_support::limit_address_space(lens::test_support::kLimitedThreadStack * 3 / 2)) {
      _exit(10);
    }
    try {
      lens::sdk::PipelinedExporter exporter(
          std::make_unique<ScriptedBatchExporter>(std::make_shared<SenderScript>()), 3);
      _exit(11);  // every sender started: the limit did not bite
    } catch (const std::system_error&) {
      // The sender that started was joined.
      _exit(lens::test_support::thread_count() == 1 ? 0 : 12);
    } catch (...) {
      _exit(13);
    }
  }
  int status = 0;
  pid_t waited = 0;
  for (int i = 0; i < 1000 && waited == 0; ++i) {
    waited = waitpid(pid, &status, WNOHANG);
    if (waited == 0) std::this_thread::sleep_for(10ms);
  }
  if (waited == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the child did not exit within 10 s";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child was ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10: limit not set, 11: every sender started, 12: a sender left running, 13: another "
         "exception";
#endif
}

TEST(SdkPipelinedExporter, ForceFlushWaitsForTheBatchInFlightWithinItsTimeout) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  lens::sdk::PipelinedExporter exporter(std::make_unique<ScriptedBatchExporter>(script));
  auto spans = batch_of(exporter, "s", 3);
  EXPECT_EQ(export_batch(exporter, spans), ExportResult::kSuccess);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(exporter.ForceFlush(100ms));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 100ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(script->read<int>([&] { return script->force_flushes; }), 0);  // not reached
  script->set_gate(true);
  EXPECT_TRUE(exporter.ForceFlush(10s));
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches.size(); }), 1U);
  EXPECT_EQ(script->read<int>([&] { return script->force_flushes; }), 1);
}

TEST(SdkPipelinedExporter, ShutdownSendsWhatWasHandedOverThenRefusesMore) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  auto report = std::make_shared<lens::exporters::ExportReport>(lens::Signal::traces);
  lens::sdk::PipelinedExporter exporter(
      lens::exporters::make_reporting_exporter<lens::Signal::traces>(
          std::make_unique<ScriptedBatchExporter>(script), report, "scripted"));
  auto first = batch_of(exporter, "x", 4);
  auto second = batch_of(exporter, "y", 5);
  EXPECT_EQ(export_batch(exporter, first), ExportResult::kSuccess);
  EXPECT_EQ(export_batch(exporter, second), ExportResult::kSuccess);
  std::thread opener([&] {
    std::this_thread::sleep_for(50ms);
    script->set_gate(true);
  });
  EXPECT_TRUE(exporter.Shutdown(10s));
  opener.join();
  EXPECT_EQ(report->counts().items_exported, 9U);
  EXPECT_EQ(report->counts().items_failed, 0U);
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches.size(); }), 2U);
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
  auto late = batch_of(exporter, "late", 1);
  EXPECT_EQ(export_batch(exporter, late), ExportResult::kFailure);
  EXPECT_EQ(script->read<std::size_t>([&] { return script->batches.size(); }), 2U);
  EXPECT_TRUE(exporter.Shutdown(10s));  // once only
  EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 1);
}

TEST(SdkPipelinedExporter, AShutdownThatTimesOutLeavesTheInnerShutdownToTheSender) {
  auto script = std::make_shared<SenderScript>();
  script->set_gate(false);
  {
    lens::sdk::PipelinedExporter exporter(std::make_unique<ScriptedBatchExporter>(script));
    auto spans = batch_of(exporter, "stuck", 1);
    EXPECT_EQ(export_batch(exporter, spans), ExportResult::kSuccess);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(exporter.Shutdown(100ms));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(script->read<int>([&] { return script->shutdowns; }), 0);
  }  // destroyed while the sender is still stuck: it is detached and keeps what it uses
  script->set_gate(true);
  std::unique_lock<std::mutex> lock(script->mutex);
  EXPECT_TRUE(script->changed.wait_for(lock, 10s, [&] { return script->shutdowns == 1; }));
  EXPECT_EQ(script->batches.size(), 1U);
}

}  // namespace
