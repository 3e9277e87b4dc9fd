// lens_span_burst: produces a burst of spans as fast as one thread can, through the pipeline
// setup_telemetry() builds (exporter=none), and reports what was lost and the process's peak
// resident memory. One configuration per process, so that peak RSS is its own.
//
//   lens_span_burst [--spans N] [--buffer-mb N] [--queue-size N] [--batch-size N]
//                   [--export-ns-per-span N] [--otlp-endpoint URL [--otlp-protocol P]]
//
// --buffer-mb bounds the span buffer (NEMO_LENS_SPAN_BUFFER_MB), --queue-size the spans handed
// to the exporter per pass (OTEL_BSP_MAX_QUEUE_SIZE). OTEL_BSP_* variables from the
// environment apply as usual; the flags override them. Without
// --export-ns-per-span the exporter is exporter=none (free); with it, an exporter that spends
// that long per span (busy, like serialising and sending), to see what a real backend's
// export cost does to a burst. With --otlp-endpoint the spans are sent for real, over OTLP
// (--otlp-protocol grpc, the default, http/protobuf or http/json), so that load tests can aim
// bursts at a collector; the line printed says how many were exported and how many failed.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "bench_support.hpp"
#include "lens/config.hpp"
#include "lens/groups.hpp"
#include "lens/rank_info.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"
#include "opentelemetry/sdk/trace/exporter.h"
#include "opentelemetry/sdk/trace/span_data.h"

namespace {

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

// Spends a fixed time per exported span, then discards it.
class CostlyExporter final : public opentelemetry::sdk::trace::SpanExporter {
 public:
  explicit CostlyExporter(long ns_per_span) : ns_per_span_(ns_per_span) {}
  std::unique_ptr<opentelemetry::sdk::trace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<opentelemetry::sdk::trace::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<opentelemetry::sdk::trace::Recordable>>&
          spans) noexcept override {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::nanoseconds(ns_per_span_ * static_cast<long>(spans.size()));
    while (std::chrono::steady_clock::now() < until) {
    }
    return opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds) noexcept override { return true; }

 private:
  long ns_per_span_;
};

bool is_otlp_protocol(std::string_view p) {
  return p == "grpc" || p == "http/protobuf" || p == "http/json";
}

bool parse_count(std::string_view flag, const char* text, long& out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "lens_span_burst: %.*s must be a positive integer, got '%s'\n",
                 static_cast<int>(flag.size()), flag.data(), text);
    return false;
  }
  out = value;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long spans = 200000;
  long queue_size = 0;
  long batch_size = 0;
  long export_ns = 0;
  long buffer_mb = 0;
  std::string otlp_endpoint;
  std::string otlp_protocol = "grpc";
  constexpr const char* kUsage =
      "usage: lens_span_burst [--spans N] [--buffer-mb N] [--queue-size N] [--batch-size N] "
      "[--export-ns-per-span N] [--otlp-endpoint URL [--otlp-protocol "
      "grpc|http/protobuf|http/json]]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if ((flag == "--otlp-endpoint" || flag == "--otlp-protocol") && i + 1 < argc) {
      (flag == "--otlp-endpoint" ? otlp_endpoint : otlp_protocol) = argv[++i];
      continue;
    }
    long* target = flag == "--spans"                ? &spans
                   : flag == "--queue-size"         ? &queue_size
                   : flag == "--batch-size"         ? &batch_size
                   : flag == "--export-ns-per-span" ? &export_ns
                   : flag == "--buffer-mb"          ? &buffer_mb
                                                    : nullptr;
    if (target == nullptr || i + 1 >= argc) {
      std::fprintf(stderr, "%s", kUsage);
      return 2;
    }
    if (!parse_count(flag, argv[++i], *target)) return 2;
  }

  if (!is_otlp_protocol(otlp_protocol)) {
    std::fprintf(stderr,
                 "lens_span_burst: --otlp-protocol: '%s' is not accepted; accepted: grpc, "
                 "http/protobuf, http/json\n",
                 otlp_protocol.c_str());
    return 2;
  }
  if (!otlp_endpoint.empty() && export_ns > 0) {
    std::fprintf(stderr,
                 "lens_span_burst: --otlp-endpoint and --export-ns-per-span exclude each other\n");
    return 2;
  }

  lens::Config config = lens::bench::exporting_none_config("burst");
  lens::Env env = lens::Env::process();
  if (!otlp_endpoint.empty()) {
    // The flags win over OTEL_EXPORTER_OTLP_* from the environment; traces only.
    lens::Env::Map variables = env.snapshot();
    variables["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp_endpoint;
    variables["OTEL_EXPORTER_OTLP_PROTOCOL"] = otlp_protocol;
    variables.erase("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    variables.erase("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    env = lens::Env::from(std::move(variables));
    config.exporter = lens::ExporterKind::otlp;
    config.metrics_enabled = false;
    config.logs_enabled = false;
  }
  config.otel = lens::OtelSettings::from_env(env);
  if (buffer_mb > 0) config.span_buffer_mb = buffer_mb;
  if (queue_size > 0) config.otel.bsp.max_queue_size.value = queue_size;
  if (batch_size > 0) config.otel.bsp.max_export_batch_size.value = batch_size;
  if (config.otel.bsp.max_export_batch_size.value > config.otel.bsp.max_queue_size.value) {
    config.otel.bsp.max_export_batch_size.value = config.otel.bsp.max_queue_size.value;
  }
  const long rss_before = peak_rss_kib();
  lens::SetupOverrides overrides;
  overrides.env = env;
  if (export_ns > 0) overrides.span_exporter = std::make_unique<CostlyExporter>(export_ns);
  auto handle =
      lens::setup_telemetry(config, *lens::RankInfo::make(0, 1), {}, std::move(overrides));
  if (!handle.ok()) {
    std::fprintf(stderr, "lens_span_burst: %s\n", handle.message().c_str());
    return 1;
  }
  lens::set_enabled_span_groups({"step"});

  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < spans; ++i) {
    LENS_SPAN(lens::SpanSite("megatron.train_step", "step"), {"iteration", std::int64_t{i}},
              {"microbatch", 4});
  }
  const auto produced = std::chrono::steady_clock::now();
  const lens::Status shut = handle->shutdown(std::chrono::milliseconds(30000));
  const auto done = std::chrono::steady_clock::now();
  const lens::TelemetryStats stats = handle->stats();

  using std::chrono::duration;
  std::printf(
      "spans=%ld exporter=%s buffer_mb=%lld queue_size=%lld batch_size=%lld "
      "export_ns_per_span=%ld produced_in_ms=%.1f drained_in_ms=%.1f "
      "ended=%llu exported=%llu lost=%llu failed=%llu peak_rss_kib=%ld rss_growth_kib=%ld "
      "shutdown=%s\n",
      spans,
      otlp_endpoint.empty() ? "none" : ("otlp:" + otlp_protocol + ":" + otlp_endpoint).c_str(),
      static_cast<long long>(config.span_buffer_mb),
      static_cast<long long>(config.otel.bsp.max_queue_size.value),
      static_cast<long long>(config.otel.bsp.max_export_batch_size.value), export_ns,
      duration<double, std::milli>(produced - start).count(),
      duration<double, std::milli>(done - produced).count(),
      static_cast<unsigned long long>(stats.spans_ended),
      static_cast<unsigned long long>(stats.spans_exported),
      static_cast<unsigned long long>(stats.spans_dropped),
      static_cast<unsigned long long>(stats.spans_failed), peak_rss_kib(),
      peak_rss_kib() - rss_before, shut.ok() ? "ok" : shut.message().c_str());
  return shut.ok() ? 0 : 1;
}
