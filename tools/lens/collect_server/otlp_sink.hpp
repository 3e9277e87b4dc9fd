// Where `lens collect` puts what it receives: one OTLP JSON line per Export*ServiceRequest,
// appended to traces.jsonl, metrics.jsonl or logs.jsonl under the output directory (the format
// the file exporter writes), with per-rank counts for the live summary. Thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "lens/result.hpp"

namespace lens::cli {

enum class Signal { kTraces = 0, kMetrics = 1, kLogs = 2 };

// "traces", "metrics", "logs": the file stem and the OTLP/HTTP path segment.
const char* signal_name(Signal signal);

// Why `path` cannot be an output file of `lens collect` / `lens run`: "" when it is a regular
// file (symbolic links followed) or nothing is there; else one sentence such as "'out/traces.jsonl'
// is a character device, not a regular file; accepted: a regular file or no file at that path".
// A FIFO would block the opening process, a device (/dev/full, /dev/zero) never ends.
std::string output_file_problem(const std::filesystem::path& path);
// The same for an output directory: "" when it is a directory or nothing is there.
std::string output_directory_problem(const std::filesystem::path& path);

struct RankCounts {
  std::uint64_t spans = 0;
  std::uint64_t points = 0;
  std::uint64_t logs = 0;
};

// Items (spans, data points or log records) of a request per rank; the rank is the resource
// attribute `dl.rank`, else `rank`, else "?".
std::map<std::string, std::uint64_t> count_items_by_rank(Signal signal,
                                                         const google::protobuf::Message& request);

struct SinkStats {
  std::uint64_t requests = 0;               // requests answered (with or without partial_success)
  std::uint64_t dropped_requests = 0;       // requests whose items were not written
  std::uint64_t dropped_items = 0;          // their spans, points and log records
  std::uint64_t retry_requests = 0;         // refused for a retry: the file could not be written
  std::uint64_t retry_items = 0;            // their items (lost unless the client resends them)
  std::uint64_t bytes = 0;                  // size of the three files together
  std::map<std::string, RankCounts> ranks;  // items written, by rank
};

class OtlpSink {
 public:
  // Creates `dir` if needed and opens the three files for appending. `max_bytes` caps the
  // three files' total size (what they held before included); 0 means no cap. A file whose last
  // line was torn (a crash in the middle of a write) is repaired first: the fragment after its
  // last newline moves to <file>.torn (appended), and stderr says so.
  static Result<std::unique_ptr<OtlpSink>> open(const std::string& dir, std::uint64_t max_bytes);

  OtlpSink(const OtlpSink&) = delete;
  OtlpSink& operator=(const OtlpSink&) = delete;
  ~OtlpSink();

  // What the client is told: how many items were rejected and why (for partial_success).
  struct Outcome {
    std::int64_t rejected = 0;
    std::string error_message;
    // The file could not be written (disk full, I/O error): nothing was kept, and the client is
    // to send the request again later (HTTP 503 / gRPC UNAVAILABLE), not to drop it.
    bool retryable = false;
  };

  // Seconds a client is asked to wait before resending after a retryable outcome.
  static constexpr int kRetryAfterSeconds = 1;

  // Writes the request as one line with one writev(2) (the line and its newline) on an O_APPEND
  // descriptor, so concurrent requests never interleave and nothing waits in a user-space buffer;
  // the call returns (and the client is answered) only once the whole line is in the file. A
  // request is written whole or not at all. After a failed write the file is opened again for the
  // next request, so that a path pointed elsewhere (space freed on another disk) is picked up.
  Outcome append(Signal signal, const google::protobuf::Message& request);

  SinkStats stats() const;
  const std::string& directory() const { return dir_; }

 private:
  struct File {
    int fd = -1;
    std::uint64_t size = 0;
  };

  std::string path_of(Signal signal) const;
  // (Re)opens the file of `signal` for appending and reads its size; returns errno or 0.
  int open_file(Signal signal);
  // Counts a request refused for a retry and says why (once on stderr).
  Outcome retry_later(Signal signal, std::uint64_t items, int error);

  OtlpSink(std::string dir, std::uint64_t max_bytes)
      : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  const std::string dir_;
  const std::uint64_t max_bytes_;
  mutable std::mutex mutex_;  // guards everything below; held across a write to keep the cap exact
  std::array<File, 3> files_;
  SinkStats stats_;
  bool write_error_reported_ = false;  // stderr says it once
};

}  // namespace lens::cli
