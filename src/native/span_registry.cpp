// SpanRegistry: the threads and detached spans recording into one pipeline, their totals, and
// the snapshot of the spans still open (the read side of each frame's sequence lock).
// Thread-safety: mutex-guarded; snapshot_open may run on any thread.
#include <algorithm>
#include <cstring>

#include "native/span_frame_write.hpp"
#include "native/span_internal.hpp"

#if defined(LENS_TSAN_ENABLED)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);  // NOLINT
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);    // NOLINT
#endif

namespace lens::native {

void copy_open(ThreadSpans::OpenSpan& copy, const Frame& frame, bool with_extras) {
  std::memcpy(static_cast<void*>(&copy.data), &frame.data, sizeof(FrameData));
  copy.data.record.extras = nullptr;
  if (!with_extras) return;
  if (frame.data.record.extras != nullptr) copy.extras = *frame.data.record.extras;
  if (frame.data.has(FrameData::kHasTraceState)) {
    copy.extras.trace_state = frame.trace_state->ToHeader();
  }
}

void ThreadSpans::snapshot_open(std::vector<OpenSpan>& out, bool with_extras) const {
  const std::uint32_t depth = depth_.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < depth; ++i) {
    const FrameBlock* block = blocks_[i / kFramesPerBlock].load(std::memory_order_acquire);
    if (block == nullptr) break;
    const Frame& frame = block->frames[i % kFramesPerBlock];
    for (int attempt = 0; attempt < 10000; ++attempt) {
      const std::uint32_t before = frame.seq.load(std::memory_order_acquire);
      if ((before & 1U) != 0) continue;
      OpenSpan copy;
      // A sequence-lock read: the copy may be torn, in which case `seq` changed and it is
      // thrown away. Under TSan the racy reads are declared (the owner's writes are plain).
      // With extras the reader is the owner thread: nothing changes the frame meanwhile.
#if defined(LENS_TSAN_ENABLED)
      AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
      copy_open(copy, frame, with_extras && frame.data.recording());
#if defined(LENS_TSAN_ENABLED)
      AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
      seqlock_fence(std::memory_order_acquire);
      if (frame.seq.load(std::memory_order_relaxed) != before) continue;
      if (copy.data.recording()) out.push_back(std::move(copy));
      break;
    }
  }
}

// ---- SpanRegistry -------------------------------------------------------------------------

std::shared_ptr<ThreadSpans> SpanRegistry::add_thread() {
  auto spans = std::make_shared<ThreadSpans>(generation_, sampler_, pool_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return nullptr;
  threads_.push_back(spans);
  return spans;
}

void SpanRegistry::copy_threads(std::vector<std::shared_ptr<ThreadSpans>>& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out = threads_;
}

void SpanRegistry::remove(const std::shared_ptr<ThreadSpans>& thread) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(threads_.begin(), threads_.end(), thread);
  if (it == threads_.end()) return;
  removed_ += thread->totals();
  threads_.erase(it);
}

void SpanRegistry::snapshot_open(std::vector<ThreadSpans::OpenSpan>& out,
                                 const ThreadSpans* caller) const {
  std::vector<std::shared_ptr<ThreadSpans>> threads;
  copy_threads(threads);
  for (const auto& thread : threads) thread->snapshot_open(out, thread.get() == caller);
  std::lock_guard<std::mutex> lock(mutex_);
  for (DetachedSpan* span : detached_) {
    std::lock_guard<std::mutex> span_lock(span->mutex);
    const FrameData& data = span->frame.data;
    if (span->written || !data.recording()) continue;
    ThreadSpans::OpenSpan copy;
    copy_open(copy, span->frame, true);
    out.push_back(std::move(copy));
  }
}

void SpanRegistry::add_detached(DetachedSpan* span) {
  std::lock_guard<std::mutex> lock(mutex_);
  detached_.push_back(span);
}

void SpanRegistry::remove_detached(DetachedSpan* span) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase(detached_, span);
}

bool SpanRegistry::keep_for_snapshot(DetachedSpan* span) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return false;
  span->kept = true;
  return true;
}

void SpanRegistry::free_kept_detached() noexcept {
  std::vector<DetachedSpan*> ended;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(detached_, [&](DetachedSpan* span) {
      if (!span->kept) return false;
      ended.push_back(span);
      return true;
    });
  }
  // Outside the lock: each holds a reference to this registry.
  for (DetachedSpan* span : ended) {
    delete span->frame.data.record.extras;
    delete span;
  }
}

void SpanRegistry::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    for (const auto& thread : threads_) thread->closed.store(true, std::memory_order_relaxed);
  }
  free_kept_detached();
}

SpanTotals SpanRegistry::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SpanTotals sum = removed_;
  for (const auto& thread : threads_) sum += thread->totals();
  return sum;
}

}  // namespace lens::native
