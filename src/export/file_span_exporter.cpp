// The OTLP JSON file span exporter (see file_span_exporter.hpp).
#include "export/file_span_exporter.hpp"

#include <fcntl.h>
#include <opentelemetry/exporters/otlp/otlp_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

#include "export/otlp_json.hpp"

namespace lens::exporters {
namespace {

namespace otlp = opentelemetry::exporter::otlp;
namespace sdktrace = opentelemetry::sdk::trace;
using opentelemetry::sdk::common::ExportResult;

std::string os_error(int error) {
  return std::error_code(error, std::generic_category()).message();
}

class FileSpanExporter final : public sdktrace::SpanExporter {
 public:
  FileSpanExporter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSpanExporter() override { close_file(); }
  FileSpanExporter(const FileSpanExporter&) = delete;
  FileSpanExporter& operator=(const FileSpanExporter&) = delete;

  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<otlp::OtlpRecordable>();
  }

  ExportResult Export(const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>&
                          spans) noexcept override {
    if (shut_down_.load(std::memory_order_acquire)) return ExportResult::kFailure;
    if (spans.empty()) return ExportResult::kSuccess;
    // Encoded outside the lock: only the write is serialized.
    std::string line;
    try {
      opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest request;
      otlp::OtlpRecordableUtils::PopulateRequest(spans, &request);
      line = otlp_json::encode(request);
      line += '\n';
    } catch (const std::exception& e) {
      report(std::string("cannot encode spans: ") + e.what());
      return ExportResult::kFailure;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (fd_ < 0) return ExportResult::kFailure;
    return write_line(line) ? ExportResult::kSuccess : ExportResult::kFailure;
  }

  // Every batch reaches the kernel in Export; there is no buffer of ours to flush.
  bool ForceFlush(std::chrono::microseconds) noexcept override { return true; }

  bool Shutdown(std::chrono::microseconds) noexcept override {
    shut_down_.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock(mutex_);
    return close_file();
  }

 private:
  // One write(2): with O_APPEND the kernel appends it whole, so concurrent writers (threads or
  // rank processes) cannot interleave within a line.
  bool write_line(const std::string& line) {
    ssize_t written = 0;
    do {
      written = ::write(fd_, line.data(), line.size());
    } while (written < 0 && errno == EINTR);
    if (written >= 0 && static_cast<std::size_t>(written) == line.size()) return true;
    const int error = written < 0 ? errno : 0;
    if (written > 0) {
      // A partial line (disk full): end it, so that later lines stay whole lines.
      if (::write(fd_, "\n", 1) < 0) {
        // Nothing more to do: the failure is reported below.
      }
      report("short write (" + std::to_string(written) + " of " + std::to_string(line.size()) +
             " bytes)");
    } else {
      report(os_error(error));
    }
    return false;
  }

  bool close_file() {
    if (fd_ < 0) return true;
    const int result = ::close(fd_);
    const int close_error = errno;
    fd_ = -1;
    // Linux releases the descriptor even when close is interrupted.
    if (result != 0 && close_error != EINTR) {
      report("cannot close: " + os_error(close_error));
      return false;
    }
    return true;
  }

  // Once per exporter: a full disk would otherwise print a line per batch.
  void report(const std::string& what) noexcept {
    if (reported_.exchange(true, std::memory_order_relaxed)) return;
    std::fprintf(stderr,
                 "lens: file exporter: %s: %s; spans of failed exports are dropped (further "
                 "errors are not reported)\n",
                 path_.c_str(), what.c_str());
  }

  std::mutex mutex_;
  int fd_;  // -1 after shutdown; guarded by mutex_
  const std::string path_;
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> reported_{false};
};

}  // namespace

Result<std::unique_ptr<sdktrace::SpanExporter>> make_file_span_exporter(const Config& config) {
  const std::filesystem::path directory(config.file_path);
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) {
    return Error("Cannot create directory '" + config.file_path + "' (" +
                 config.label_of("file_path") + ") for the file exporter: " + error.message());
  }
  const std::string path = (directory / kTracesFileName).string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int open_error = errno;
    return Error("Cannot open '" + path + "' (" + config.label_of("file_path") +
                 ") for appending: " + os_error(open_error));
  }
  return std::unique_ptr<sdktrace::SpanExporter>(std::make_unique<FileSpanExporter>(fd, path));
}

}  // namespace lens::exporters
