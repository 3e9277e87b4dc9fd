// The output files of `lens collect` (see otlp_sink.hpp).
#include "collect_server/otlp_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "collect_server/torn_tail.hpp"
#include "lens/otlp_json.hpp"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace lens::cli {
namespace {

using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using opentelemetry::proto::common::v1::AnyValue;
using opentelemetry::proto::common::v1::KeyValue;
using opentelemetry::proto::metrics::v1::Metric;
using opentelemetry::proto::resource::v1::Resource;

std::string rank_of(const Resource& res) {
  const AnyValue* rank = nullptr;
  const AnyValue* fallback = nullptr;
  for (const KeyValue& kv : res.attributes()) {
    if (kv.key() == "dl.rank") {
      rank = &kv.value();
    } else if (kv.key() == "rank") {
      fallback = &kv.value();
    }
  }
  if (rank == nullptr) {
    rank = fallback;
  }
  if (rank == nullptr) {
    return "?";
  }
  switch (rank->value_case()) {
    case AnyValue::kStringValue:
      return rank->string_value().empty() ? "?" : rank->string_value();
    case AnyValue::kIntValue:
      return std::to_string(rank->int_value());
    default:
      return "?";
  }
}

std::uint64_t data_points(const Metric& metric) {
  switch (metric.data_case()) {
    case Metric::kGauge:
      return static_cast<std::uint64_t>(metric.gauge().data_points_size());
    case Metric::kSum:
      return static_cast<std::uint64_t>(metric.sum().data_points_size());
    case Metric::kHistogram:
      return static_cast<std::uint64_t>(metric.histogram().data_points_size());
    case Metric::kExponentialHistogram:
      return static_cast<std::uint64_t>(metric.exponential_histogram().data_points_size());
    case Metric::kSummary:
      return static_cast<std::uint64_t>(metric.summary().data_points_size());
    default:
      return 0;
  }
}

std::string system_error(int error) {
  return std::error_code(error, std::generic_category()).message();
}

// "a FIFO", "a character device", ... for stat's st_mode.
const char* file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// stat(2) of `path` (symbolic links followed): 0, ENOENT when nothing is there, else errno.
int stat_of(const std::filesystem::path& path, struct stat& st) {
  if (::stat(path.c_str(), &st) == 0) return 0;
  return errno;
}

}  // namespace

std::string output_file_problem(const std::filesystem::path& path) {
  struct stat st {};
  const int error = stat_of(path, st);
  if (error == ENOENT) return {};
  if (error != 0) return "cannot use '" + path.string() + "': " + system_error(error);
  if (S_ISREG(st.st_mode)) return {};
  return "'" + path.string() + "' is " + file_kind(st.st_mode) +
         ", not a regular file; accepted: a regular file or no file at that path";
}

std::string output_directory_problem(const std::filesystem::path& path) {
  struct stat st {};
  const int error = stat_of(path, st);
  if (error == ENOENT) return {};
  if (error != 0) return "cannot use '" + path.string() + "': " + system_error(error);
  if (S_ISDIR(st.st_mode)) return {};
  return "'" + path.string() + "' is " + file_kind(st.st_mode) +
         ", not a directory; accepted: a directory or no file at that path";
}

const char* signal_name(Signal signal) {
  static constexpr std::array<const char*, 3> kNames = {"traces", "metrics", "logs"};
  const auto index = static_cast<std::size_t>(signal);
  return index < kNames.size() ? kNames[index] : "?";
}

std::map<std::string, std::uint64_t> count_items_by_rank(Signal signal,
                                                         const google::protobuf::Message& request) {
  std::map<std::string, std::uint64_t> counts;
  if (signal == Signal::kTraces) {
    if (const auto* r = dynamic_cast<const ExportTraceServiceRequest*>(&request)) {
      for (const auto& rs : r->resource_spans()) {
        std::uint64_t& n = counts[rank_of(rs.resource())];
        for (const auto& ss : rs.scope_spans()) n += static_cast<std::uint64_t>(ss.spans_size());
      }
    }
  } else if (signal == Signal::kMetrics) {
    if (const auto* r = dynamic_cast<const ExportMetricsServiceRequest*>(&request)) {
      for (const auto& rm : r->resource_metrics()) {
        std::uint64_t& n = counts[rank_of(rm.resource())];
        for (const auto& sm : rm.scope_metrics()) {
          for (const auto& metric : sm.metrics()) n += data_points(metric);
        }
      }
    }
  } else if (const auto* r = dynamic_cast<const ExportLogsServiceRequest*>(&request)) {
    for (const auto& rl : r->resource_logs()) {
      std::uint64_t& n = counts[rank_of(rl.resource())];
      for (const auto& sl : rl.scope_logs()) n += static_cast<std::uint64_t>(sl.log_records_size());
    }
  }
  return counts;
}

Result<std::unique_ptr<OtlpSink>> OtlpSink::open(const std::string& dir, std::uint64_t max_bytes) {
  // Checked before anything is opened: a FIFO would block open(2) until a reader comes.
  if (std::string problem = output_directory_problem(dir); !problem.empty()) {
    return Error("cannot use the output directory: " + problem);
  }
  for (const char* name : {"traces", "metrics", "logs"}) {
    const std::string path = dir + "/" + name + ".jsonl";
    if (std::string problem = output_file_problem(path); !problem.empty()) {
      return Error("cannot write " + std::string(name) + ".jsonl: " + problem);
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Error("cannot create the output directory '" + dir + "': " + ec.message());
  }
  std::unique_ptr<OtlpSink> sink(new OtlpSink(dir, max_bytes));
  for (Signal signal : {Signal::kTraces, Signal::kMetrics, Signal::kLogs}) {
    const std::string path = sink->path_of(signal);
    auto torn = repair_torn_tail(path);
    if (!torn) return Error(torn.error().message());
    if (torn->bytes != 0) {
      std::cerr << "lens collect: " << path << " ended in a torn line (" << torn->bytes
                << " bytes, cut short by a crash); moved it to " << torn->quarantine << "\n";
    }
    if (int error = sink->open_file(signal); error != 0) {
      return Error("cannot open '" + path + "' for appending: " + system_error(error));
    }
    sink->stats_.bytes += sink->files_[static_cast<std::size_t>(signal)].size;
  }
  return sink;
}

std::string OtlpSink::path_of(Signal signal) const {
  return dir_ + "/" + signal_name(signal) + ".jsonl";
}

int OtlpSink::open_file(Signal signal) {
  File& file = files_[static_cast<std::size_t>(signal)];
  if (file.fd >= 0) ::close(file.fd);
  file = File{};
  // O_NONBLOCK: a FIFO put there after the start check fails (ENXIO) instead of blocking.
  file.fd = ::open(path_of(signal).c_str(),
                   O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0644);
  struct stat st {};
  int error = 0;
  if (file.fd < 0 || ::fstat(file.fd, &st) != 0) {
    error = errno;
  } else if (!S_ISREG(st.st_mode)) {
    error = EINVAL;  // replaced by a device or FIFO since the start: never written to
  }
  if (error != 0) {
    if (file.fd >= 0) ::close(file.fd);
    file.fd = -1;
    return error;
  }
  file.size = static_cast<std::uint64_t>(st.st_size);
  return 0;
}

OtlpSink::~OtlpSink() {
  for (File& file : files_) {
    if (file.fd >= 0) {
      ::close(file.fd);
    }
  }
}

OtlpSink::Outcome OtlpSink::append(Signal signal, const google::protobuf::Message& request) {
  const auto counts = count_items_by_rank(signal, request);
  std::uint64_t items = 0;
  for (const auto& [rank, n] : counts) items += n;
  // An empty request is a valid no-op; it would only add "{}" lines.
  std::string line;
  std::string unwritable;  // why a decoded request has no JSON form (e.g. nested too deep)
  if (request.ByteSizeLong() != 0) {
    try {
      // Its newline is written with it (writev below): appending it here could copy the whole
      // line into a buffer twice its size.
      line = otlp_json::encode(request);
    } catch (const std::exception& e) {
      unwritable = e.what();
    }
  }

  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.requests;
  auto drop = [&](std::string message) {
    ++stats_.dropped_requests;
    stats_.dropped_items += items;
    return Outcome{static_cast<std::int64_t>(items), std::move(message)};
  };
  if (!unwritable.empty()) {
    // Rejected through partial_success, like any request it cannot keep; never a 500.
    return drop("lens collect: " + std::string(signal_name(signal)) +
                " request not written: " + unwritable);
  }
  if (line.empty()) {
    return {};
  }
  const std::size_t total = line.size() + 1;  // with its newline
  if (max_bytes_ != 0 && stats_.bytes + total > max_bytes_) {
    return drop("lens collect: output limit reached (--max-bytes " + std::to_string(max_bytes_) +
                "); " + signal_name(signal) + " dropped");
  }

  File& file = files_[static_cast<std::size_t>(signal)];
  if (file.fd < 0) {
    // The last write failed: open the path again, which may be on a disk with space now, after
    // cutting off what a failed write may have left.
    if (auto torn = repair_torn_tail(path_of(signal)); torn && torn->bytes != 0) {
      std::cerr << "lens collect: moved a partly written line of " << path_of(signal) << " to "
                << torn->quarantine << "\n";
    }
    if (const int error = open_file(signal); error != 0) {
      return retry_later(signal, items, error);
    }
    stats_.bytes = 0;
    for (const File& f : files_) stats_.bytes += f.size;
  }
  std::size_t done = 0;
  int error = 0;
  static char newline = '\n';
  while (done < total) {
    iovec parts[2];
    int count = 0;
    if (done < line.size()) parts[count++] = {line.data() + done, line.size() - done};
    parts[count++] = {&newline, 1};
    const ssize_t n = ::writev(file.fd, parts, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (done != total) {
    // Cut a partial line off so that every line of the file stays a whole request; what cannot
    // be cut is counted as written so that the cap stays exact.
    if (done != 0 && ::ftruncate(file.fd, static_cast<off_t>(file.size)) != 0) {
      file.size += done;
      stats_.bytes += done;
    }
    ::close(file.fd);
    file.fd = -1;
    return retry_later(signal, items, error);
  }
  file.size += total;
  stats_.bytes += total;
  for (const auto& [rank, n] : counts) {
    RankCounts& rc = stats_.ranks[rank];
    (signal == Signal::kTraces ? rc.spans : signal == Signal::kMetrics ? rc.points : rc.logs) += n;
  }
  return {};
}

OtlpSink::Outcome OtlpSink::retry_later(Signal signal, std::uint64_t items, int error) {
  ++stats_.retry_requests;
  stats_.retry_items += items;
  const std::string message = std::string("cannot write ") + signal_name(signal) + ".jsonl in '" +
                              dir_ + "': " + system_error(error);
  if (!write_error_reported_) {
    write_error_reported_ = true;
    std::cerr << "\nlens collect: " << message << "; asking clients to resend later\n";
  }
  return Outcome{static_cast<std::int64_t>(items), "lens collect: " + message + "; retry later",
                 true};
}

SinkStats OtlpSink::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace lens::cli
