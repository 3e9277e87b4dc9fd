// OTLP JSON directory reader (see otlp_reader.hpp).
#include "report/otlp_reader.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "lens/otlp_json.hpp"
#include "report/otlp_fast_decoder.hpp"

namespace lens::report {
namespace {

namespace collector_trace = opentelemetry::proto::collector::trace::v1;
namespace collector_metrics = opentelemetry::proto::collector::metrics::v1;
namespace collector_logs = opentelemetry::proto::collector::logs::v1;

enum class LineKind { empty, traces, metrics, logs, not_otlp };

LineKind classify(const std::string& line) {
  if (line.find_first_not_of(" \t\r") == std::string::npos) return LineKind::empty;
  const nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
  if (!parsed.is_object()) return LineKind::not_otlp;
  if (parsed.contains("resourceSpans") || parsed.contains("resource_spans")) {
    return LineKind::traces;
  }
  if (parsed.contains("resourceMetrics") || parsed.contains("resource_metrics")) {
    return LineKind::metrics;
  }
  if (parsed.contains("resourceLogs") || parsed.contains("resource_logs")) return LineKind::logs;
  return LineKind::not_otlp;
}

// Decodes `line` as `kind` and hands it to the sink; the decoder's message on failure.
Status deliver(const std::string& line, LineKind kind, TelemetrySink& sink) {
  switch (kind) {
    case LineKind::traces: {
      collector_trace::ExportTraceServiceRequest request;
      if (Status status = otlp_json::decode(line, request); !status.ok()) return status;
      sink.on_traces(request);
      return {};
    }
    case LineKind::metrics: {
      collector_metrics::ExportMetricsServiceRequest request;
      if (Status status = otlp_json::decode(line, request); !status.ok()) return status;
      sink.on_metrics(request);
      return {};
    }
    case LineKind::logs: {
      collector_logs::ExportLogsServiceRequest request;
      if (Status status = otlp_json::decode(line, request); !status.ok()) return status;
      sink.on_logs(request);
      return {};
    }
    case LineKind::empty:
    case LineKind::not_otlp:
      break;
  }
  return Error("not an OTLP JSON request");
}

// A telemetry file starts with '{' after optional whitespace; this rejects binary and compressed
// files and HTML without reading their (possibly huge, newline-free) first line. Counts the
// blank lines it passes, so warnings name the right line.
bool starts_like_json(std::ifstream& in, std::uint64_t& blank_lines) {
  int c = in.peek();
  while (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
    if (c == '\n') ++blank_lines;
    in.get();
    c = in.peek();
  }
  return c == '{';
}

// An unterminated line cut short by a writer that stopped mid-request.
bool looks_like_request(const std::string& line) {
  return line.find("\"resource") != std::string::npos;
}

// Most lines are trace and metrics requests of the common form: the fast decoder takes them in
// one pass; the others (and anything it declines) take the general path below, warnings
// included.
struct FastPath {
  FastOtlpDecoder decoder;
  collector_trace::ExportTraceServiceRequest traces;  // reused: keep their allocations
  collector_metrics::ExportMetricsServiceRequest metrics;
};

void read_file(const std::filesystem::path& path, TelemetrySink& sink, ReadStats& stats,
               FastPath& fast) {
  std::ifstream in(path, std::ios::binary);
  std::uint64_t number = 0;
  if (!in || !starts_like_json(in, number)) return;
  const std::string name = path.filename().string();
  bool telemetry = false;
  std::string line;
  while (std::getline(in, line)) {
    ++number;
    const bool terminated = !in.eof();
    if (const FastOtlpDecoder::Result decoded =
            fast.decoder.decode(line, fast.traces, fast.metrics);
        decoded != FastOtlpDecoder::Result::declined) {
      if (!telemetry) stats.telemetry_files.push_back(name);
      telemetry = true;
      if (decoded == FastOtlpDecoder::Result::traces) {
        sink.on_traces(fast.traces);
      } else {
        sink.on_metrics(fast.metrics);
      }
      ++stats.requests;
      continue;
    }
    const LineKind kind = classify(line);
    if (kind == LineKind::empty) continue;
    const std::string where = name + ":" + std::to_string(number) + ": ";
    if (!terminated && kind == LineKind::not_otlp && (telemetry || looks_like_request(line))) {
      stats.warnings.push_back(where + "truncated last line skipped");
      if (!telemetry) stats.telemetry_files.push_back(name);
      return;
    }
    if (!telemetry && kind == LineKind::not_otlp) return;  // not a telemetry file
    if (!telemetry) stats.telemetry_files.push_back(name);
    telemetry = true;
    Status status = kind == LineKind::not_otlp ? Status(Error("not an OTLP JSON request"))
                                               : deliver(line, kind, sink);
    if (status.ok()) {
      ++stats.requests;
    } else {
      stats.warnings.push_back(where + "line skipped: " + status.message());
    }
  }
}

std::string file_type_text(std::filesystem::file_type type) {
  switch (type) {
    case std::filesystem::file_type::not_found:
      return "a symbolic link to nothing";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

}  // namespace

Result<ReadStats> read_telemetry_dir(const std::filesystem::path& dir, TelemetrySink& sink) {
  std::error_code ec;
  const auto status = std::filesystem::status(dir, ec);
  if (status.type() == std::filesystem::file_type::not_found) return Error("no such directory");
  if (ec) return Error(ec.message());
  if (status.type() != std::filesystem::file_type::directory) return Error("not a directory");
  std::vector<std::filesystem::path> files;
  std::filesystem::directory_iterator it(dir, ec);
  std::vector<std::pair<std::string, std::string>> skipped;  // name, why
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    const std::filesystem::file_type type = it->status(type_ec).type();  // links followed
    if (type == std::filesystem::file_type::regular) {
      files.push_back(it->path());
    } else if (type != std::filesystem::file_type::directory) {
      // Never opened: a FIFO would block the report, a device (/dev/zero) never ends.
      skipped.emplace_back(it->path().filename().string(), file_type_text(type));
    }
  }
  if (ec) return Error(ec.message());
  std::sort(files.begin(), files.end());
  std::sort(skipped.begin(), skipped.end());
  ReadStats stats;
  for (const auto& [name, kind] : skipped) {
    stats.warnings.push_back(name + ": skipped, " + kind + " (only regular files are read)");
  }
  stats.files_seen = files.size();
  FastPath fast;
  for (const auto& file : files) read_file(file, sink, stats, fast);
  return stats;
}

}  // namespace lens::report
