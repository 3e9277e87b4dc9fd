// The memory between recording threads and the export thread: a bounded pool of fixed-size
// chunks shared by all threads of one pipeline, and per thread a single-producer/single-consumer
// chain of chunks (ChunkRing) into which the thread appends finished span records. Memory is
// bounded by the pool: when no chunk is free the record is dropped and counted (DESIGN.md
// property 3); an idle thread holds one chunk.
// Thread-safety: ChunkPool is thread-safe (one mutex, taken once per chunk, not per record).
// A ChunkRing has one producer (its thread: append) and one consumer (the export thread: drain).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace lens::native {

struct Chunk {
  static constexpr std::size_t kBytes = 64 * 1024;
  static constexpr std::size_t kCapacity = kBytes - 64;

  std::atomic<std::uint32_t> committed{0};  // bytes the producer has published
  std::atomic<Chunk*> next{nullptr};        // set once the producer moved on (this one is final)
  alignas(64) unsigned char data[kCapacity];
};
static_assert(sizeof(Chunk) == Chunk::kBytes);

class ChunkPool {
 public:
  // At most max(1, max_bytes / Chunk::kBytes) chunks in use at once.
  explicit ChunkPool(std::size_t max_bytes);
  ~ChunkPool();
  ChunkPool(const ChunkPool&) = delete;
  ChunkPool& operator=(const ChunkPool&) = delete;

  // A cleared chunk, or nullptr when the bound is reached (or memory is exhausted).
  Chunk* acquire() noexcept;
  void release(Chunk* chunk) noexcept;

 private:
  const std::size_t max_chunks_;
  // Lets acquire() fail without the lock while the pool is exhausted.
  std::atomic<std::size_t> in_use_{0};
  mutable std::mutex mutex_;
  std::vector<Chunk*> free_;
};

class ChunkRing {
 public:
  explicit ChunkRing(std::shared_ptr<ChunkPool> pool) noexcept : pool_(std::move(pool)) {}
  // Releases every chunk; `discard` is called for each record nobody drained (to free what the
  // record owns). Only when neither side runs anymore.
  ~ChunkRing();
  ChunkRing(const ChunkRing&) = delete;
  ChunkRing& operator=(const ChunkRing&) = delete;

  // Producer: room for `size` bytes (a multiple of 8, at most Chunk::kCapacity), or nullptr when
  // the pool is exhausted. Write the record there, then commit().
  unsigned char* reserve(std::size_t size) noexcept {
    if (unsigned char* out = reserve_in_current_chunk(size)) return out;
    return reserve_in_new_chunk(size);
  }
  // The same without taking a new chunk (no call: for the hot path); nullptr when the record
  // does not fit in the current one.
  unsigned char* reserve_in_current_chunk(std::size_t size) noexcept {
    if (tail_ != nullptr && write_pos_ + size <= Chunk::kCapacity) [[likely]] {
      return tail_->data + write_pos_;
    }
    return nullptr;
  }
  // Asks the CPU to fetch, for writing, the lines after a record of `size` bytes at the write
  // position (the next record's), when they are in the same chunk.
  void prefetch_next(std::size_t size) noexcept {
    const std::size_t next = write_pos_ + size;
    if (next + 192 <= Chunk::kCapacity) {
      unsigned char* p = tail_->data + next;
      __builtin_prefetch(p, 1, 3);
      __builtin_prefetch(p + 64, 1, 3);
      __builtin_prefetch(p + 128, 1, 3);
    }
  }
  void commit(std::size_t size) noexcept {
    write_pos_ += static_cast<std::uint32_t>(size);
    // Release: the consumer that reads this value sees the record's bytes.
    tail_->committed.store(write_pos_, std::memory_order_release);
  }

  // Consumer: calls visit(record bytes) for each record committed so far, in order, with the
  // record size read from its first 4 bytes; returns the number visited (at most `limit`).
  // Drained chunks go back to the pool after their records were visited.
  template <class Visit>
  std::size_t drain(Visit&& visit, std::size_t limit);

  // Consumer, when the producer is gone: calls discard(record) for every record not drained.
  template <class Discard>
  void discard_rest(Discard&& discard) {
    drain(discard, SIZE_MAX);
  }

 private:
  unsigned char* reserve_in_new_chunk(std::size_t size) noexcept;

  std::shared_ptr<ChunkPool> pool_;
  // Producer side.
  Chunk* tail_ = nullptr;
  std::uint32_t write_pos_ = 0;
  std::atomic<Chunk*> first_{nullptr};  // the first chunk, for the consumer
  // Consumer side.
  Chunk* read_chunk_ = nullptr;
  std::uint32_t read_pos_ = 0;
};

template <class Visit>
std::size_t ChunkRing::drain(Visit&& visit, std::size_t limit) {
  std::size_t visited = 0;
  if (read_chunk_ == nullptr) {
    read_chunk_ = first_.load(std::memory_order_acquire);
    if (read_chunk_ == nullptr) return 0;
  }
  while (visited < limit) {
    // Acquire: pairs with commit(); `next` first, so that a non-null next means `committed`
    // read after it is final for this chunk.
    Chunk* next = read_chunk_->next.load(std::memory_order_acquire);
    const std::uint32_t committed = read_chunk_->committed.load(std::memory_order_acquire);
    while (read_pos_ < committed && visited < limit) {
      std::uint32_t size = 0;
      __builtin_memcpy(&size, read_chunk_->data + read_pos_, sizeof(size));
      visit(static_cast<const unsigned char*>(read_chunk_->data + read_pos_));
      read_pos_ += size;
      ++visited;
    }
    if (read_pos_ < committed || next == nullptr) break;
    pool_->release(read_chunk_);
    read_chunk_ = next;
    read_pos_ = 0;
  }
  return visited;
}

}  // namespace lens::native
