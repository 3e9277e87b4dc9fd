// Benchmarks of the OTLP export path against a real `lens collect` child process on loopback
// (the `lens` binary next to this one): sustained spans/s end to end over gRPC and
// HTTP/protobuf (batches of 512 spans through the span exporter), `lens collect` ingest
// (prebuilt requests), and the training thread's cost of a recorded span (LENS_SPAN, two
// attributes, an exporting rank) while the OTLP exporter is healthy and while it retries
// against an endpoint where nothing listens.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <opentelemetry/exporters/otlp/otlp_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_telemetry.hpp"
#include "export/otlp_exporters.hpp"
#include "export/otlp_transport.hpp"
#include "lens/env.hpp"
#include "lens/groups.hpp"
#include "lens/rank_info.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"
#include "span_batch.hpp"

namespace {

namespace sdktrace = opentelemetry::sdk::trace;
namespace trace_api = opentelemetry::trace;
using namespace std::chrono_literals;

using lens::bench::kBatch;

// `lens collect --grpc 127.0.0.1:0 --http 127.0.0.1:0` into a temporary directory.
class Collector {
 public:
  Collector() {
    dir_ = std::filesystem::temp_directory_path() / ("lens-bench-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    const std::string cli =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "lens").string();
    std::vector<std::string> args{cli,      "collect",     "--grpc", "127.0.0.1:0",
                                  "--http", "127.0.0.1:0", "--out",  (dir_ / "out").string()};
    int out_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    char* envp[] = {nullptr};
    if (::posix_spawn(&pid_, cli.c_str(), &actions, nullptr, argv.data(), envp) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (pid_ > 0 && line.find('\n') == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_pipe[0], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[512];
      const ssize_t n = ::read(out_pipe[0], buffer, sizeof(buffer));
      if (n <= 0) break;
      line.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(out_pipe[0]);
    grpc_ = field(line, "grpc");
    http_ = field(line, "http");
  }
  ~Collector() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  bool ok() const { return !grpc_.empty() && !http_.empty(); }
  std::string endpoint(bool grpc) const { return "http://" + (grpc ? grpc_ : http_); }

 private:
  static std::string field(const std::string& line, const std::string& key) {
    const auto start = line.find(" " + key + "=");
    if (start == std::string::npos) return "";
    const auto begin = start + key.size() + 2;
    return line.substr(begin, line.find(' ', begin) - begin);
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  std::string grpc_;
  std::string http_;
};

lens::OtlpSignalSettings settings(const std::string& endpoint, const char* protocol) {
  return lens::OtelSettings::from_env(lens::Env::from({{"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
                                                       {"OTEL_EXPORTER_OTLP_PROTOCOL", protocol}}))
      .traces;
}

std::vector<std::unique_ptr<sdktrace::Recordable>> make_batch(sdktrace::SpanExporter& exporter) {
  return lens::bench::make_span_batch([&exporter] { return exporter.MakeRecordable(); });
}

// Sustained spans/s: the span exporter (OTLP encoding, transport) and `lens collect` (decoding,
// OTLP JSON, write(2)) in series, one batch of 512 spans per iteration.
void export_loopback(benchmark::State& state, bool grpc) {
  Collector collector;
  if (!collector.ok()) {
    state.SkipWithError("cannot start lens collect");
    return;
  }
  auto exporter = lens::exporters::make_otlp_exporter<lens::Signal::traces>(
      settings(collector.endpoint(grpc), grpc ? "grpc" : "http/protobuf"));
  for (auto _ : state) {
    // The recordables are consumed by the export (the SDK makes them on the training thread).
    state.PauseTiming();
    auto spans = make_batch(*exporter);
    state.ResumeTiming();
    const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>> batch(spans.data(),
                                                                                  spans.size());
    if (exporter->Export(batch) != opentelemetry::sdk::common::ExportResult::kSuccess) {
      state.SkipWithError("export failed");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
  exporter->Shutdown(1s);
}

void BM_Export_Grpc_Loopback(benchmark::State& state) { export_loopback(state, true); }
BENCHMARK(BM_Export_Grpc_Loopback)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Export_HttpProtobuf_Loopback(benchmark::State& state) { export_loopback(state, false); }
BENCHMARK(BM_Export_HttpProtobuf_Loopback)->Unit(benchmark::kMillisecond)->UseRealTime();

// `lens collect` ingest over gRPC: a prebuilt request of 512 spans sent again and again.
void BM_Collect_Ingest_Grpc(benchmark::State& state) {
  Collector collector;
  if (!collector.ok()) {
    state.SkipWithError("cannot start lens collect");
    return;
  }
  const auto s = settings(collector.endpoint(true), "grpc");
  // opentelemetry-cpp's own recordables: PopulateRequest reads only those (lens's OTLP exporter
  // makes OtlpSpanRecordables, which its OtlpSpanBatch reads).
  auto spans = lens::bench::make_span_batch(
      [] { return std::make_unique<opentelemetry::exporter::otlp::OtlpRecordable>(); });
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
  opentelemetry::exporter::otlp::OtlpRecordableUtils::PopulateRequest(
      opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>(spans.data(), spans.size()),
      &request);
  auto transport = lens::exporters::make_otlp_transport(s, lens::Signal::traces);
  for (auto _ : state) {
    if (!transport->send(request, 10s).ok()) {
      state.SkipWithError("send failed");
      break;
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kBatch));
}
BENCHMARK(BM_Collect_Ingest_Grpc)->Unit(benchmark::kMillisecond)->UseRealTime();

// The training thread's cost of LENS_SPAN with two attributes on an exporting rank whose OTLP
// exporter sends to `lens collect` (healthy) or to a port where nothing listens (every export
// retried until its timeout, the buffer full, spans dropped).
void span_with_exporter(benchmark::State& state, bool healthy) {
  std::unique_ptr<Collector> collector;
  std::string endpoint = "http://127.0.0.1:9";  // discard port: nothing listens on loopback
  if (healthy) {
    collector = std::make_unique<Collector>();
    if (!collector->ok()) {
      state.SkipWithError("cannot start lens collect");
      return;
    }
    endpoint = collector->endpoint(true);
  }
  lens::Config config = lens::bench::exporting_none_config("bench");
  config.exporter = lens::ExporterKind::otlp;
  config.metrics_enabled = false;
  config.span_groups = "step";
  config.otel = lens::OtelSettings::from_env(lens::Env::from(
      {{"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint}, {"OTEL_EXPORTER_OTLP_TIMEOUT", "1000"}}));
  if (!lens::bench::start_telemetry(state, config)) return;
  std::int64_t i = 0;
  for (auto _ : state) {
    LENS_SPAN(lens::SpanSite("megatron.train_step", "step"), {"iteration", ++i}, {"microbatch", 4});
    benchmark::ClobberMemory();
  }
  const lens::TelemetryStats stats = lens::bench::finish_telemetry(state);
  // Healthy: spans reached the collector; dead: none did.
  if (healthy) {
    lens::bench::expect_at_least(state, "spans exported", stats.spans_exported, 1);
  } else {
    lens::bench::expect_equal(state, "spans exported to a dead endpoint", stats.spans_exported, 0);
  }
}

// End to end on the native span path: setup_telemetry with the OTLP/gRPC exporter to
// `lens collect`; each iteration records 20,000 LENS_SPANs on this thread and waits
// (force_flush) until the export thread has converted, encoded and sent them and the collector
// has acknowledged them. Items per second = spans delivered per second.
void BM_Span_Native_Grpc_EndToEnd(benchmark::State& state) {
  Collector collector;
  if (!collector.ok()) {
    state.SkipWithError("cannot start lens collect");
    return;
  }
  constexpr std::int64_t kSpans = 20000;
  const lens::Env::Map env = {{"NEMO_LENS_ENABLED", "1"},
                              {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                              {"NEMO_LENS_RUN_ID", "bench"},
                              {"NEMO_LENS_METRICS_ENABLED", "0"},
                              {"NEMO_LENS_SPAN_GROUPS", "step"},
                              {"OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint(true)},
                              {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}};
  auto config = lens::Config::from_env("NEMO_LENS", {}, lens::Env::from(env));
  lens::SetupOverrides overrides;
  overrides.env = lens::Env::from(env);
  overrides.allow_reinit = true;
  auto handle =
      lens::setup_telemetry(*config, *lens::RankInfo::make(0, 1), {}, std::move(overrides));
  if (!handle.ok()) {
    state.SkipWithError(handle.message().c_str());
    return;
  }
  std::int64_t i = 0;
  for (auto _ : state) {
    for (std::int64_t n = 0; n < kSpans; ++n) {
      LENS_SPAN(lens::SpanSite("megatron.train_step", "step"), {"iteration", ++i},
                {"microbatch", 4});
    }
    if (!handle->force_flush(60s).ok()) {
      state.SkipWithError("flush did not finish");
      break;
    }
  }
  const lens::TelemetryStats stats = handle->stats();
  state.counters["dropped"] = static_cast<double>(stats.spans_dropped);
  state.counters["exported"] = static_cast<double>(stats.spans_exported);
  lens::bench::expect_equal(state, "spans exported", stats.spans_exported,
                            static_cast<std::uint64_t>(state.iterations() * kSpans));
  lens::bench::expect_equal(state, "spans dropped", stats.spans_dropped, 0);
  state.SetItemsProcessed(state.iterations() * kSpans);
  static_cast<void>(handle->shutdown(10s));
}
BENCHMARK(BM_Span_Native_Grpc_EndToEnd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Span_Recorded_2Attrs_OtlpHealthy(benchmark::State& state) {
  span_with_exporter(state, true);
}
BENCHMARK(BM_Span_Recorded_2Attrs_OtlpHealthy);

void BM_Span_Recorded_2Attrs_OtlpDeadEndpoint(benchmark::State& state) {
  span_with_exporter(state, false);
}
BENCHMARK(BM_Span_Recorded_2Attrs_OtlpDeadEndpoint);

}  // namespace
