// OTLP JSON directory reader (see otlp_reader.hpp).
#include "report/otlp_reader.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

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

// Lines read a buffer at a time; a line longer than kMaxLineBytes is read to its end without
// being kept (a 1 GB line took 4.2 GB).
class BoundedLines {
 public:
  enum class Got { kLine, kTooLong, kEnd };

  explicit BoundedLines(std::streambuf& source) : source_(source), buffer_(1 << 20) {}

  // The next line, without its newline; `terminated` says whether it had one.
  Got next(std::string& line, bool& terminated) {
    line.clear();
    bool too_long = false;
    bool any = false;
    while (true) {
      if (begin_ == end_) {
        begin_ = 0;
        end_ = static_cast<std::size_t>(
            std::max<std::streamsize>(0, source_.sgetn(buffer_.data(), buffer_.size())));
        if (end_ == 0) {
          terminated = false;
          if (!any) return Got::kEnd;
          return too_long ? Got::kTooLong : Got::kLine;
        }
      }
      any = true;
      const char* start = buffer_.data() + begin_;
      const std::size_t available = end_ - begin_;
      const auto* newline = static_cast<const char*>(std::memchr(start, '\n', available));
      const std::size_t take =
          newline != nullptr ? static_cast<std::size_t>(newline - start) : available;
      if (!too_long && line.size() + take > kMaxLineBytes) {
        too_long = true;
        std::string().swap(line);
      }
      if (!too_long) line.append(start, take);
      begin_ += take + (newline != nullptr ? 1 : 0);
      if (newline != nullptr) {
        terminated = true;
        return too_long ? Got::kTooLong : Got::kLine;
      }
    }
  }

 private:
  std::streambuf& source_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

void read_file(const std::filesystem::path& path, TelemetrySink& sink, ReadStats& stats,
               FastPath& fast) {
  std::ifstream in(path, std::ios::binary);
  std::uint64_t number = 0;
  if (!in || !starts_like_json(in, number)) return;
  const std::string name = path.filename().string();
  bool telemetry = false;
  std::string line;
  BoundedLines lines(*in.rdbuf());
  std::uint64_t too_long = 0;
  struct CountTooLong {  // one warning per file, whatever way the loop ends
    ReadStats& stats;
    const std::string& name;
    const std::uint64_t& count;
    ~CountTooLong() {
      if (count == 0) return;
      stats.warnings.push_back(
          name + ": " + std::to_string(count) + " line" + (count == 1 ? "" : "s") + " over " +
          std::to_string(kMaxLineBytes >> 20) + " MiB skipped (lines are read up to " +
          std::to_string(kMaxLineBytes >> 20) + " MiB)");
    }
  } count_too_long{stats, name, too_long};
  bool terminated = false;
  for (BoundedLines::Got got; (got = lines.next(line, terminated)) != BoundedLines::Got::kEnd;) {
    ++number;
    if (got == BoundedLines::Got::kTooLong) {
      ++too_long;
      if (!telemetry) stats.telemetry_files.push_back(name);
      telemetry = true;
      continue;
    }
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
