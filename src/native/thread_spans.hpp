// Per-thread state of the native span path and the hot path itself: each recording thread owns a
// ThreadSpans (its stack of open span frames, its ring of finished records, its counters)
// registered with the active pipeline's SpanRegistry. Starting a span pushes a frame (ids, the
// sampler's decision, the name and attributes copied inline, a tick count); ending it copies the
// record into the ring and pops. No lock, no allocation, no atomic read-modify-write.
// Thread-safety: the span functions act on the calling thread's own state; ThreadSpans' consumer
// side (drain, snapshot_open) is for the export thread and the shutdown caller.
#pragma once

#include <opentelemetry/context/context.h>
#include <opentelemetry/trace/span.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "core/random_source.hpp"
#include "lens/sampling.hpp"
#include "lens/span.hpp"
#include "native/chunk_ring.hpp"
#include "native/owner_counter.hpp"
#include "native/span_record.hpp"

namespace lens::native {

struct SpanTotals {
  std::uint64_t started = 0;  // recording spans started
  std::uint64_t ended = 0;    // recording spans ended and written to a ring
  std::uint64_t dropped = 0;  // recording spans lost: ring full, frame stack too deep
  SpanTotals& operator+=(const SpanTotals& other) noexcept {
    started += other.started;
    ended += other.ended;
    dropped += other.dropped;
    return *this;
  }
};

class ThreadSpans {
 public:
  static constexpr std::uint32_t kFramesPerBlock = 32;
  static constexpr std::uint32_t kMaxBlocks = 64;  // 2048 nested spans per thread

  ThreadSpans(std::uint64_t generation, std::shared_ptr<const Sampler> sampler,
              std::shared_ptr<ChunkPool> pool) noexcept;
  ~ThreadSpans();
  ThreadSpans(const ThreadSpans&) = delete;
  ThreadSpans& operator=(const ThreadSpans&) = delete;

  std::uint64_t generation() const noexcept { return generation_; }
  std::uint64_t fork_generation() const noexcept { return fork_generation_; }
  const Sampler& sampler() const noexcept { return *sampler_; }
  SamplerShape sampler_shape() const noexcept { return sampler_shape_; }

  // Owner thread.
  std::uint32_t depth() const noexcept { return depth_local_; }
  Frame* frame_at(std::uint32_t index) const noexcept {
    return &blocks_[index / kFramesPerBlock]
                .load(std::memory_order_relaxed)
                ->frames[index % kFramesPerBlock];
  }
  Frame* top() const noexcept { return depth_local_ == 0 ? nullptr : frame_at(depth_local_ - 1); }
  // The next frame, or nullptr when too deep (or out of memory for a new block of frames).
  Frame* prepare_push() noexcept {
    const std::uint32_t index = depth_local_;
    FrameBlock* block = index < kMaxBlocks * kFramesPerBlock
                            ? blocks_[index / kFramesPerBlock].load(std::memory_order_relaxed)
                            : nullptr;
    if (block == nullptr) [[unlikely]]
      return prepare_block();
    return &block->frames[index % kFramesPerBlock];
  }
  void publish_push() noexcept;  // after the frame was filled
  void pop() noexcept;
  // Writes the finished record of `frame` into the ring; false when the ring is full (the
  // frame's extras are then deleted).
  bool write_record(Frame& frame, std::uint64_t end_ticks) noexcept;
  // The same when the record fits in the ring's current chunk (the hot path: no call); false,
  // with nothing written, otherwise. Inline, defined in thread_spans.cpp (its only user).
  inline bool write_record_in_current_chunk(Frame& frame, std::uint64_t end_ticks) noexcept;

  // Ids of this thread's spans (owner thread only; a forked child never uses an inherited one).
  core::RandomSource random;
  // std::uncaught_exceptions() of the owner thread, read without a call (see thread_spans.cpp).
  int uncaught_exceptions() const noexcept;
  // Scratch for the ids and trace state of a parent taken from an attached context (owner
  // thread).
  Identity context_parent;
  opentelemetry::nostd::shared_ptr<opentelemetry::trace::TraceState> context_trace_state;
  OwnerCounter started;
  OwnerCounter ended;
  OwnerCounter dropped;
  SpanTotals totals() const noexcept { return {started.get(), ended.get(), dropped.get()}; }

  // Set by shutdown: spans ending afterwards are not written nor counted (the snapshot took them).
  std::atomic<bool> closed{false};
  // Set when the thread exits; the export thread drains the ring once more, then forgets it.
  std::atomic<bool> exited{false};

  // Export thread: every record committed so far, in order (see ChunkRing::drain).
  template <class Visit>
  std::size_t drain(Visit&& visit, std::size_t limit) {
    return ring_.drain(std::forward<Visit>(visit), limit);
  }

  // Any thread: copies of the spans open right now (recording ones only), with their inline
  // name and attributes; `with_extras` only from the owner thread (events, links, status text,
  // trace state).
  struct OpenSpan {
    FrameData data;
    SpanExtras extras;
  };
  void snapshot_open(std::vector<OpenSpan>& out, bool with_extras) const;

 private:
  struct FrameBlock {
    Frame frames[kFramesPerBlock];
  };
  Frame* prepare_block() noexcept;  // prepare_push when the frame's block is not there yet

  const std::uint64_t generation_;
  const std::uint64_t fork_generation_;
  const void* eh_globals_;  // the owner thread's C++ exception globals (Itanium C++ ABI)
  std::shared_ptr<const Sampler> sampler_;
  const SamplerShape sampler_shape_;
  ChunkRing ring_;
  std::array<std::atomic<FrameBlock*>, kMaxBlocks> blocks_{};
  std::uint32_t depth_local_ = 0;
  std::atomic<std::uint32_t> depth_{0};  // published copy for snapshot_open
};

class SpanRegistry;

// A span on no thread's stack (lens::Span): started on one thread, changed and ended on any.
// Its frame is guarded by `mutex` (not the sequence lock: these spans are few and long); it stays
// listed in its registry until its record is in a ring, so that shutdown exports it, truncated,
// whenever it could not be written.
struct DetachedSpan {
  std::mutex mutex;
  Frame frame;
  std::shared_ptr<SpanRegistry> registry;
  std::uint64_t fork_generation = 0;
  bool ended = false;    // end() was called: nothing changes it any more
  bool written = false;  // its record is in a ring (the shutdown snapshot skips it)
  bool kept = false;     // ended, left to the registry (guarded by the registry's mutex)
};

// The threads recording into one pipeline. Thread-safety: mutex-guarded.
class SpanRegistry {
 public:
  SpanRegistry(std::uint64_t generation, std::shared_ptr<const Sampler> sampler,
               std::shared_ptr<ChunkPool> pool)
      : generation_(generation), sampler_(std::move(sampler)), pool_(std::move(pool)) {}

  std::uint64_t generation() const noexcept { return generation_; }
  const std::shared_ptr<ChunkPool>& pool() const noexcept { return pool_; }

  // A new ThreadSpans for the calling thread, registered; nullptr once closed.
  std::shared_ptr<ThreadSpans> add_thread();
  // The threads, into `out` (its storage reused: an idle export pass allocates nothing).
  void copy_threads(std::vector<std::shared_ptr<ThreadSpans>>& out) const;
  // Forgets an exited thread, keeping its counts.
  void remove(const std::shared_ptr<ThreadSpans>& thread);
  // The open detached spans (lens::Span): listed from start until their end was written.
  void add_detached(DetachedSpan* span);
  void remove_detached(DetachedSpan* span) noexcept;
  // An ended span the pipeline no longer took: true when it stays listed for the shutdown
  // snapshot (the registry frees it at close()); false once closed (the caller frees it).
  bool keep_for_snapshot(DetachedSpan* span) noexcept;
  // Copies of every span open right now (recording ones), for the truncated export at shutdown;
  // with their extras for `caller`'s own spans (the thread asking for the shutdown).
  void snapshot_open(std::vector<ThreadSpans::OpenSpan>& out, const ThreadSpans* caller) const;
  // Marks every thread closed; add_thread fails from now on. Frees the kept detached spans (the
  // shutdown snapshot, taken before, has them).
  void close();
  SpanTotals totals() const;

 private:
  const std::uint64_t generation_;
  std::shared_ptr<const Sampler> sampler_;
  std::shared_ptr<ChunkPool> pool_;
  mutable std::mutex mutex_;
  bool closed_ = false;
  std::vector<std::shared_ptr<ThreadSpans>> threads_;
  std::vector<DetachedSpan*> detached_;  // open lens::Spans, for the snapshot at shutdown
  void free_kept_detached() noexcept;
  SpanTotals removed_;
};

// ---- Activation (process-wide) -------------------------------------------------------------

// detail::g_span_pipeline_generation (declared in lens/span.hpp): non-zero while a native
// pipeline takes spans; read on every span start.
inline bool active() noexcept {
  return detail::g_span_pipeline_generation.load(std::memory_order_acquire) != 0;
}
// Installs lens's context storage (once; see context_storage.hpp) and lets the hot paths rely on
// it. activate() does; the log pipeline too, so that a log record finds "no active span" with one
// comparison.
void use_context_storage() noexcept;
// Makes `registry` the target of native spans (installs the context storage on first use).
void activate(std::shared_ptr<SpanRegistry> registry) noexcept;
// No native spans from now on (spans already open still end into their ring).
void deactivate() noexcept;
// In a forked child: forgets everything inherited without touching its locks.
void reset_after_fork() noexcept;

// ---- The hot path, used by lens::detail::SpanState ----------------------------------------

// A started span; null members: nothing to end (too deep, or out of memory).
struct Started {
  ThreadSpans* thread;
  Frame* frame;
};

// The public headers hold these as opaque handles (lens/detail/span_state.hpp): the library's
// entry points convert at the boundary (a round trip of the same pointers).
inline Started started_of(const detail::SpanHandle& handle) noexcept {
  return {reinterpret_cast<ThreadSpans*>(handle.thread), reinterpret_cast<Frame*>(handle.frame)};
}
inline detail::SpanHandle handle_of(const Started& span) noexcept {
  return {reinterpret_cast<detail::SpanStack*>(span.thread),
          reinterpret_cast<detail::SpanFrame*>(span.frame)};
}
inline DetachedSpan* detached_of(detail::OpenSpan* span) noexcept {
  return reinterpret_cast<DetachedSpan*>(span);
}
inline detail::OpenSpan* open_span_of(DetachedSpan* span) noexcept {
  return reinterpret_cast<detail::OpenSpan*>(span);
}

// detail::begin_span, detail::begin_site_span and detail::end_span are declared in lens/span.hpp
// (SpanState calls them inline). begin_span writes its result into the caller's handle: a
// returned pair would be stored as two words and read back as one wider load, which stalls.
// The root of a new trace (lens::NewTrace).
Started begin_root_span(std::string_view name, AttributeList attributes, const NewTrace& root,
                        bool record_exception_events = true) noexcept;
inline void end_span(const Started& span) noexcept {
  const detail::SpanHandle handle = handle_of(span);
  detail::end_span(handle.thread, handle.frame);
}

// ---- Detached spans (lens::Span) ------------------------------------------------------------

// A span as a child of the calling thread's current context, or, with `root`, the root of a new
// trace (lens::NewTrace); with a valid `link`, linked to it. Null when no pipeline takes spans
// (or out of memory); a span the sampler dropped is still made, so that its context propagates.
DetachedSpan* begin_detached_span(std::string_view name, AttributeList attributes,
                                  const NewTrace* root,
                                  const opentelemetry::trace::SpanContext* link) noexcept;
// Runs `change(Started)` on the span's frame under its lock, unless the span has ended.
template <class Change>
void change_detached_span(DetachedSpan& span, Change&& change) noexcept {
  std::lock_guard<std::mutex> lock(span.mutex);
  if (!span.ended) change(Started{nullptr, &span.frame});
}
opentelemetry::trace::SpanContext detached_span_context(DetachedSpan& span) noexcept;
// Ends the span (its record into the calling thread's ring) and frees it.
void end_detached_span(DetachedSpan* span) noexcept;
void set_attribute(const Started& span, std::string_view key, const AttributeArg& value) noexcept;
void add_event(const Started& span, std::string_view name, AttributeList attributes) noexcept;
void set_status(const Started& span, StatusCode code, std::string_view description) noexcept;
// The exception event (when the frame records them) and status ERROR with `what`.
void record_exception(const Started& span, std::string_view type, std::string_view what) noexcept;
// An event at `unix_nanos` (0: now).
void add_event_at(const Started& span, std::string_view name, AttributeSpan attributes,
                  std::int64_t unix_nanos) noexcept;
void add_link(const Started& span, const opentelemetry::trace::SpanContext& link) noexcept;
void update_name(const Started& span, std::string_view name) noexcept;
// Start or end time given as Unix nanoseconds (0: the ticks read at start or end).
void set_start_time(const Started& span, std::int64_t unix_nanos) noexcept;
void set_end_time(const Started& span, std::int64_t unix_nanos) noexcept;
// The span context a child or a propagator sees (flags: sampled only, as opentelemetry-cpp).
opentelemetry::trace::SpanContext span_context(const Frame& frame) noexcept;

// The calling thread's current state (null before its first native span).
const ThreadSpans* calling_thread_spans() noexcept;

// The ids and flags of the calling thread's active span: the innermost native span unless
// something was attached to the opentelemetry context after it started, else the span of the
// attached context; false when there is none. For log records (never attaches the thread).
bool current_span_identity(Identity& out) noexcept;

// ---- Context interplay (see context_storage.hpp) ---------------------------------------------

// The calling thread's opentelemetry attach depth changed (the storage's stack size).
void set_context_depth(std::int64_t depth) noexcept;
// `attached` plus the innermost native span when that is newer than the last attach.
opentelemetry::context::Context overlay_current_span(
    const opentelemetry::context::Context& attached) noexcept;

}  // namespace lens::native
