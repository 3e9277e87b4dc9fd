// The output files of `lens collect` (see otlp_sink.hpp).
#include "otlp_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "lens/otlp_json.hpp"
#include "torn_tail.hpp"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"

namespace lens::cli {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace resource = opentelemetry::proto::resource::v1;
namespace metrics = opentelemetry::proto::metrics::v1;
using opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

std::string rank_of(const resource::Resource& res) {
  const common::AnyValue* rank = nullptr;
  const common::AnyValue* fallback = nullptr;
  for (const common::KeyValue& kv : res.attributes()) {
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
    case common::AnyValue::kStringValue:
      return rank->string_value().empty() ? "?" : rank->string_value();
    case common::AnyValue::kIntValue:
      return std::to_string(rank->int_value());
    default:
      return "?";
  }
}

std::uint64_t data_points(const metrics::Metric& metric) {
  switch (metric.data_case()) {
    case metrics::Metric::kGauge:
      return static_cast<std::uint64_t>(metric.gauge().data_points_size());
    case metrics::Metric::kSum:
      return static_cast<std::uint64_t>(metric.sum().data_points_size());
    case metrics::Metric::kHistogram:
      return static_cast<std::uint64_t>(metric.histogram().data_points_size());
    case metrics::Metric::kExponentialHistogram:
      return static_cast<std::uint64_t>(metric.exponential_histogram().data_points_size());
    case metrics::Metric::kSummary:
      return static_cast<std::uint64_t>(metric.summary().data_points_size());
    default:
      return 0;
  }
}

std::string system_error(int error) {
  return std::error_code(error, std::generic_category()).message();
}

}  // namespace

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
  file.fd = ::open(path_of(signal).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  struct stat st {};
  if (file.fd < 0 || ::fstat(file.fd, &st) != 0) {
    const int error = errno;
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
      line = otlp_json::encode(request);
      line += '\n';
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
  if (max_bytes_ != 0 && stats_.bytes + line.size() > max_bytes_) {
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
  while (done < line.size()) {
    const ssize_t n = ::write(file.fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (done != line.size()) {
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
  file.size += line.size();
  stats_.bytes += line.size();
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
