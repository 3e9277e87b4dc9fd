// Reads a directory of OTLP JSON line files: ours (traces.jsonl, metrics.jsonl, logs.jsonl) or the
// OpenTelemetry Collector file exporter's (any name, signals possibly mixed in one file). Each
// line is one Export{Trace,Metrics,Logs}ServiceRequest, told apart by its top-level key.
// Not thread-safe per sink; the reader itself keeps no state.
#pragma once

#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "lens/result.hpp"

namespace lens::report {

// Receives each decoded request in file order.
class TelemetrySink {
 public:
  virtual ~TelemetrySink() = default;
  virtual void on_traces(
      const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest& request) = 0;
  virtual void on_metrics(
      const opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest& request) = 0;
  virtual void on_logs(
      const opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest& request) = 0;
};

// Lines longer than this are skipped without being kept (counted in one warning per file): the
// default --max-request-memory of lens collect, which bounds the lines it writes.
inline constexpr std::size_t kMaxLineBytes = 128u << 20;

struct ReadStats {
  std::vector<std::string> telemetry_files;  // names of the files that held telemetry
  std::uint64_t files_seen = 0;              // regular files in the directory
  std::uint64_t requests = 0;
  // Lines skipped, each naming the file and line; first, the entries that are neither regular
  // files nor directories (FIFOs, devices, dangling links), each naming the entry and its kind.
  std::vector<std::string> warnings;
};

// Reads every regular file of `dir` (not its subdirectories) in name order; other entries but
// directories are not opened, and a warning names each. A file is telemetry
// when its first non-empty line is an OTLP JSON request; other files (the report's own outputs,
// compressed or binary files) are skipped. In a telemetry file, a line that does not decode is
// skipped with a warning: "truncated last line" when it is the unterminated last line.
// Errors only when `dir` is not a readable directory.
Result<ReadStats> read_telemetry_dir(const std::filesystem::path& dir, TelemetrySink& sink);

}  // namespace lens::report
