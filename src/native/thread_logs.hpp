// Per-thread state of the native log path and its hot path: each thread that logs owns a
// ThreadLogs (its ring of finished records and its counters) registered with the active
// pipeline's LogRegistry. lens::log::emit and lens::SpdlogSink write one fixed-layout record
// (severity, tick count, the active span's ids, event name, body, attributes) into the calling
// thread's ring: no lock, no allocation, no atomic read-modify-write, nothing shared with other
// recording threads. A thread keeps at most OTEL_BLRP_MAX_QUEUE_SIZE records not yet taken by
// the export thread, and all threads together at most the pool's bytes; beyond either the record
// is dropped and counted.
// Thread-safety: write_log acts on the calling thread's own state; a ThreadLogs' consumer side
// (drain) belongs to the export thread; LogRegistry is mutex-guarded.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "lens/attributes.hpp"
#include "native/chunk_ring.hpp"
#include "native/owner_counter.hpp"

namespace lens::native {

struct LogTotals {
  std::uint64_t written = 0;  // records written into a ring
  std::uint64_t dropped = 0;  // records lost: the thread's queue or the pool was full
  LogTotals& operator+=(const LogTotals& other) noexcept {
    written += other.written;
    dropped += other.dropped;
    return *this;
  }
};

class ThreadLogs {
 public:
  ThreadLogs(std::shared_ptr<ChunkPool> pool, std::uint64_t max_pending) noexcept;
  // Deletes what the records nobody drained own.
  ~ThreadLogs();
  ThreadLogs(const ThreadLogs&) = delete;
  ThreadLogs& operator=(const ThreadLogs&) = delete;

  std::uint64_t fork_generation() const noexcept { return fork_generation_; }

  // Owner thread: room for a record of `size` bytes, or nullptr (counted as dropped) when the
  // thread's queue or the pool is full. Write the record there, then commit(size).
  unsigned char* reserve(std::size_t size) noexcept;
  void commit(std::size_t size) noexcept {
    ring_.commit(size);
    written.increment();
  }

  OwnerCounter written;
  OwnerCounter dropped;
  LogTotals totals() const noexcept { return {written.get(), dropped.get()}; }

  // Set when the thread exits (or moves to a newer pipeline): the export thread drains the ring
  // once more, then forgets it.
  std::atomic<bool> exited{false};

  // Export thread: every record committed so far, in order (see ChunkRing::drain).
  template <class Visit>
  std::size_t drain(Visit&& visit, std::size_t limit) {
    const std::size_t n = ring_.drain(std::forward<Visit>(visit), limit);
    if (n != 0) {
      // Relaxed: the owner only compares counts; the ring's own release/acquire orders the bytes.
      taken_.store(taken_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    return n;
  }

 private:
  const std::uint64_t fork_generation_;
  const std::uint64_t max_pending_;
  ChunkRing ring_;
  std::atomic<std::uint64_t> taken_{0};  // records drained by the export thread
};

// The threads logging into one pipeline.
class LogRegistry {
 public:
  // Per thread at most `max_pending` records not yet drained (OTEL_BLRP_MAX_QUEUE_SIZE); at most
  // `attribute_count_limit` attributes per record (OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT).
  LogRegistry(std::shared_ptr<ChunkPool> pool, std::uint64_t max_pending,
              std::size_t attribute_count_limit);

  // A process-unique number (never 0): which registry a thread's state belongs to.
  std::uint64_t id() const noexcept { return id_; }
  std::size_t attribute_count_limit() const noexcept { return attribute_count_limit_; }

  // A new ThreadLogs for the calling thread, registered; nullptr once closed.
  std::shared_ptr<ThreadLogs> add_thread();
  // The threads, into `out` (its storage reused: an idle export pass allocates nothing).
  void copy_threads(std::vector<std::shared_ptr<ThreadLogs>>& out) const;
  // Forgets an exited thread, keeping its counts.
  void remove(const std::shared_ptr<ThreadLogs>& thread);
  // No new threads from now on, and write_log writes nothing more (counted as dropped).
  void close() noexcept;
  bool closed() const noexcept { return closed_.load(std::memory_order_relaxed); }
  LogTotals totals() const;
  // After the last drain of a closed registry: forgets every thread (keeping the counts) and the
  // pool, so that a registry kept alive by a late reader holds no buffers.
  void release_threads() noexcept;

 private:
  const std::uint64_t id_;
  std::shared_ptr<ChunkPool> pool_;
  const std::uint64_t max_pending_;
  const std::size_t attribute_count_limit_;
  std::atomic<bool> closed_{false};
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<ThreadLogs>> threads_;
  LogTotals removed_;
};

// The hot path: one record from the calling thread into `registry` (the active pipeline's),
// stamped now and with the calling thread's active span. Never throws, never blocks.
void write_log(LogRegistry& registry, int severity, std::string_view body, AttributeList attributes,
               std::string_view event_name) noexcept;

}  // namespace lens::native
