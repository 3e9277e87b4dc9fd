// ChunkPool and ChunkRing (see chunk_ring.hpp).
#include "native/chunk_ring.hpp"

#include <new>

namespace lens::native {

ChunkPool::ChunkPool(std::size_t max_bytes)
    : max_chunks_(max_bytes / Chunk::kBytes == 0 ? 1 : max_bytes / Chunk::kBytes) {}

ChunkPool::~ChunkPool() {
  for (Chunk* chunk : free_) delete chunk;
}

Chunk* ChunkPool::acquire() noexcept {
  if (in_use_.load(std::memory_order_relaxed) >= max_chunks_) return nullptr;
  Chunk* chunk = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (in_use_.load(std::memory_order_relaxed) >= max_chunks_) return nullptr;
    if (!free_.empty()) {
      chunk = free_.back();
      free_.pop_back();
    } else {
      chunk = new (std::nothrow) Chunk;  // default-initialised: the data is written before read
      if (chunk == nullptr) return nullptr;
    }
    in_use_.fetch_add(1, std::memory_order_relaxed);
  }
  chunk->committed.store(0, std::memory_order_relaxed);
  chunk->next.store(nullptr, std::memory_order_relaxed);
  return chunk;
}

void ChunkPool::release(Chunk* chunk) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  in_use_.fetch_sub(1, std::memory_order_relaxed);
  try {
    free_.push_back(chunk);
  } catch (...) {
    delete chunk;
  }
}

unsigned char* ChunkRing::reserve_in_new_chunk(std::size_t size) noexcept {
  if (size > Chunk::kCapacity) return nullptr;
  Chunk* chunk = pool_->acquire();
  if (chunk == nullptr) return nullptr;
  if (tail_ == nullptr) {
    first_.store(chunk, std::memory_order_release);
  } else {
    // Release: the consumer that sees `next` sees the final `committed` of the old tail.
    tail_->next.store(chunk, std::memory_order_release);
  }
  tail_ = chunk;
  write_pos_ = 0;
  return chunk->data;
}

ChunkRing::~ChunkRing() {
  // What drain() has not released: from the consumer's chunk (or the first) to the tail.
  Chunk* chunk = read_chunk_ != nullptr ? read_chunk_ : first_.load(std::memory_order_acquire);
  while (chunk != nullptr) {
    Chunk* next = chunk->next.load(std::memory_order_acquire);
    pool_->release(chunk);
    chunk = next;
  }
}

}  // namespace lens::native
