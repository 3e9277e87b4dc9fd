// The native span hot path (see thread_spans.hpp): the calling thread's fast state, starting a
// span (parent, sampling, the frame), ending it into the thread's ring, and what reads the fast
// state. Thread-safety: every function acts on the calling thread's own state.
#include "native/thread_spans.hpp"

#include <cxxabi.h>
#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/trace_id.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>

#include "core/fork_generation.hpp"
#include "core/span_depth.hpp"
#include "native/context_storage.hpp"
#include "native/span_depths.hpp"
#include "native/span_frame_write.hpp"
#include "native/span_internal.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {

namespace {

// Whether lens's context storage is installed (see resolve_parent); set by activate().
std::atomic<bool> g_storage_installed{false};

// What the hot path reads on every span: one pointer and the attach depth. The default TLS model,
// so that liblens can be dlopen()ed (an initial-exec variable puts all of liblens's TLS in the
// small static-TLS reserve, which a Python process has used up); liblens is compiled with TLS
// descriptors (-mtls-dialect=gnu2, src/CMakeLists.txt), so the access stays an indirect call
// that returns the offset rather than a __tls_get_addr call.
struct FastState {
  ThreadSpans* spans = nullptr;
  std::int64_t context_depth = 0;
};
thread_local FastState t_fast;

// A thread's first span for a pipeline (out of line: once per thread and pipeline).
[[gnu::noinline]] ThreadSpans* attach_calling_thread(std::uint64_t generation) noexcept {
  ThreadSpans* spans = attach_thread(generation);
  if (spans != nullptr) t_fast.spans = spans;
  return spans;
}

inline ThreadSpans* current_thread() noexcept {
  const std::uint64_t generation =
      detail::g_span_pipeline_generation.load(std::memory_order_acquire);
  ThreadSpans* spans = t_fast.spans;
  if (spans != nullptr && spans->generation() == generation) [[likely]] {
    return spans;
  }
  if (generation == 0) return nullptr;
  return attach_calling_thread(generation);
}

[[gnu::always_inline]] inline Parent resolve_parent(ThreadSpans& spans) noexcept {
  const Frame* top = spans.top();
  const std::int64_t depth = t_fast.context_depth;
  if (top != nullptr && top->data.context_depth == depth) return parent_from_frame(*top);
  if (depth > 0) return parent_from_attached(spans, true);
  if (top != nullptr) return parent_from_frame(*top);
  if (!g_storage_installed.load(std::memory_order_relaxed)) {
    return parent_from_attached(spans, false);
  }
  return {};
}

// A sampler without a fixed rule: the call, with its parameters, out of line (they would cost
// the hot path stack and registers).
[[gnu::noinline]] SamplingDecision decide_by_call(const ThreadSpans& spans, const Parent& parent,
                                                  const Identity& id,
                                                  std::string_view name) noexcept {
  SamplingParams params;
  params.trace_id = id.trace_id;
  params.has_parent = parent.id != nullptr;
  params.parent_sampled = parent.id != nullptr && (parent.id->flags & kFlagSampled) != 0;
  params.parent_remote = parent.remote;
  params.name = name;
  return spans.sampler().should_sample(params);
}

// The sampler's decision: the fixed rules without a call (Sampler::shape), anything else
// through should_sample.
[[gnu::always_inline]] inline SamplingDecision decide(const ThreadSpans& spans,
                                                      const Parent& parent, const Identity& id,
                                                      std::string_view name) noexcept {
  const bool parent_sampled = parent.id != nullptr && (parent.id->flags & kFlagSampled) != 0;
  switch (spans.sampler_shape()) {
    case SamplerShape::always_sample:
      return SamplingDecision::record_and_sample;
    case SamplerShape::always_drop:
      return SamplingDecision::drop;
    case SamplerShape::parent_or_sample:
      return parent.id == nullptr || parent_sampled ? SamplingDecision::record_and_sample
                                                    : SamplingDecision::drop;
    case SamplerShape::parent_or_drop:
      return parent_sampled ? SamplingDecision::record_and_sample : SamplingDecision::drop;
    case SamplerShape::custom:
      break;
  }
  return decide_by_call(spans, parent, id, name);
}

// Fills a frame: the next one of the thread's stack, or `detached` (a lens::Span's own frame,
// not pushed).
[[gnu::always_inline]] inline Started start(ThreadSpans& spans, std::string_view name,
                                            AttributeList attributes, bool record_exception_events,
                                            bool static_name, const Parent& parent,
                                            const std::array<std::uint8_t, 16>* root_trace_id,
                                            const otel::trace::SpanContext* link,
                                            Frame* detached = nullptr) noexcept {
  Frame* frame = detached != nullptr ? detached : spans.prepare_push();
  if (frame == nullptr) [[unlikely]] {
    spans.dropped.increment();
    return {};
  }
  {
    FrameWrite write(*frame);
    FrameData& data = frame->data;
    RecordHeader& record = data.record;
    // The ids straight into the frame (no Identity on the stack to copy).
    Identity& id = record.id;
    if (parent.id != nullptr) {
      id.trace_id = parent.id->trace_id;
      id.parent_span_id = parent.id->span_id;
      id.depth = parent.remote ? 0 : core::child_depth(parent.id->depth);
    } else {
      id.depth = 0;
      if (root_trace_id != nullptr) {
        id.trace_id = *root_trace_id;
      } else {
        spans.random.next_trace_id(id.trace_id.data());
      }
      id.parent_span_id = 0;
    }
    id.span_id = spans.random.next_nonzero();
    const SamplingDecision decision = decide(spans, parent, id, name);
    id.flags = decision == SamplingDecision::record_and_sample ? kFlagSampled : 0;

    const bool recording = decision != SamplingDecision::drop;
    // The trace-state bit is kept: whether the frame's trace_state needs clearing (below).
    data.bits = static_cast<std::uint8_t>(
        (recording ? FrameData::kRecording : 0) |
        (record_exception_events ? FrameData::kRecordExceptionEvents : 0) |
        (data.bits & FrameData::kHasTraceState));
    data.uncaught_at_start = spans.uncaught_exceptions();
    data.context_depth = t_fast.context_depth;
    record.status = StatusCode::kUnset;
    record.has_name_override = false;
    record.static_name = false;
    record.extras = nullptr;  // (record.truncated is never set in a frame)
    std::size_t used = 0;
    std::uint16_t count = 0;
    if (recording) [[likely]] {
      const bool by_address = static_name && name.size() <= UINT16_MAX;
      if (by_address) {
        // A site's name: its address, not its characters (see RecordHeader::static_name).
        const char* address = name.data();
        std::memcpy(data.payload, &address, sizeof(address));
        used = sizeof(address);
        record.static_name = true;
      } else if (name.size() <= kPayloadBytes) [[likely]] {
        codec::copy_short(data.payload, name.data(), name.size());
        used = name.size();
      } else {
        set_name_override(data, name);
      }
      record.name_size = static_cast<std::uint16_t>(by_address ? name.size() : used);
      for (const auto& [key, value] : attributes) put_attribute(data, used, count, key, value);
      if (link != nullptr) add_link_to(data, *link);
    } else {
      record.name_size = 0;
    }
    record.payload_size = static_cast<std::uint16_t>(used);
    record.attribute_count = count;
    if (parent.trace_state != nullptr) [[unlikely]] {
      frame->trace_state = *parent.trace_state;
      data.set(FrameData::kHasTraceState, true);
    } else if (data.has(FrameData::kHasTraceState)) [[unlikely]] {
      frame->trace_state = nullptr;
      data.set(FrameData::kHasTraceState, false);
    }
    record.start_ticks = read_ticks();
  }
  if (detached == nullptr) spans.publish_push();
  if (frame->data.recording()) spans.started.increment();
  return {&spans, frame};
}

}  // namespace

// ---- ThreadSpans --------------------------------------------------------------------------

namespace {

// The Itanium C++ ABI's per-thread exception globals (libstdc++, libc++abi): the count that
// std::uncaught_exceptions() returns, reachable without its call and TLS lookup once the
// thread's pointer is known. A ThreadSpans is made and used by one thread, so one lookup.
#if defined(__GLIBCXX__) || defined(_LIBCPPABI_VERSION)
#define LENS_ITANIUM_EH_GLOBALS 1
struct EhGlobals {
  void* caught_exceptions;
  unsigned int uncaught_exceptions;
};
#endif

const void* eh_globals_of_this_thread() noexcept {
#if defined(LENS_ITANIUM_EH_GLOBALS)
  return abi::__cxa_get_globals();
#else
  return nullptr;
#endif
}

}  // namespace

int ThreadSpans::uncaught_exceptions() const noexcept {
#if defined(LENS_ITANIUM_EH_GLOBALS)
  return static_cast<int>(static_cast<const EhGlobals*>(eh_globals_)->uncaught_exceptions);
#else
  return std::uncaught_exceptions();
#endif
}

ThreadSpans::ThreadSpans(std::uint64_t generation, std::shared_ptr<const Sampler> sampler,
                         std::shared_ptr<ChunkPool> pool) noexcept
    : generation_(generation),
      fork_generation_(core::fork_generation()),
      eh_globals_(eh_globals_of_this_thread()),
      sampler_(std::move(sampler)),
      sampler_shape_(sampler_->shape()),
      ring_(std::move(pool)) {}

ThreadSpans::~ThreadSpans() {
  ring_.discard_rest([](const unsigned char* bytes) {
    RecordHeader header;
    std::memcpy(&header, bytes, sizeof(header));
    delete header.extras;
  });
  for (auto& slot : blocks_) {
    FrameBlock* block = slot.load(std::memory_order_relaxed);
    if (block == nullptr) continue;
    for (Frame& frame : block->frames) delete frame.data.record.extras;
    delete block;
  }
}

Frame* ThreadSpans::prepare_block() noexcept {
  const std::uint32_t index = depth_local_;
  const std::uint32_t block = index / kFramesPerBlock;
  if (block >= kMaxBlocks) return nullptr;
  if (blocks_[block].load(std::memory_order_relaxed) == nullptr) {
    auto* fresh = new (std::nothrow) FrameBlock();
    if (fresh == nullptr) return nullptr;
    // Release: snapshot_open reads the block's frames through this pointer.
    blocks_[block].store(fresh, std::memory_order_release);
  }
  return frame_at(index);
}

void ThreadSpans::publish_push() noexcept {
  ++depth_local_;
  depth_.store(depth_local_, std::memory_order_release);
}

void ThreadSpans::pop() noexcept {
  --depth_local_;
  depth_.store(depth_local_, std::memory_order_release);
}

namespace {

// memcpy of `size` bytes (a multiple of 8, at least 16) in 16-byte moves, inline: a span record
// is a few hundred bytes at most, below where a library call (and its wide vector registers)
// pays off.
[[gnu::always_inline]] inline void copy_words(void* out, const void* in,
                                              std::size_t size) noexcept {
#if defined(__SSE2__)
  auto* o = static_cast<unsigned char*>(out);
  const auto* i = static_cast<const unsigned char*>(in);
  std::size_t at = 0;
  for (; at + 32 <= size; at += 32) {  // two moves per turn: half the loop overhead
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(i + at));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(i + at + 16));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + at), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + at + 16), b);
  }
  if (at + 16 <= size) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + at),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(i + at)));
    at += 16;
  }
  if (at < size) {  // the last 8 bytes
    std::uint64_t word;
    std::memcpy(&word, i + at, 8);
    std::memcpy(o + at, &word, 8);
  }
#else
  std::memcpy(out, in, size);
#endif
}

// Writes the record of `data` (`size` bytes) at `out` in the ring.
[[gnu::always_inline]] inline void fill_record(unsigned char* out, FrameData& data,
                                               std::size_t size, std::uint64_t end_ticks) noexcept {
  // The frame holds header and payload in the record's layout: one copy of whole 8-byte words
  // (the record is padded to 8, the payload array is a multiple of 8), then the two fields the
  // frame does not hold, written over the copy.
  static_assert(kPayloadBytes % 8 == 0 && sizeof(RecordHeader) % 8 == 0);
  copy_words(out, &data.record, size);
  const auto size32 = static_cast<std::uint32_t>(size);
  std::memcpy(out + offsetof(RecordHeader, size), &size32, sizeof(size32));
  std::memcpy(out + offsetof(RecordHeader, end_ticks), &end_ticks, sizeof(end_ticks));
  // The extras travel with the record (published by the commit); the export thread deletes
  // them.
  data.record.extras = nullptr;
}

}  // namespace

[[gnu::always_inline]] inline bool ThreadSpans::write_record_in_current_chunk(
    Frame& frame, std::uint64_t end_ticks) noexcept {
  FrameData& data = frame.data;
  const std::size_t size = record_size(data.record.payload_size);
  unsigned char* out = ring_.reserve_in_current_chunk(size);
  if (out == nullptr) [[unlikely]]
    return false;
  // The next record's lines are fetched for writing now, so that their transfer from the export
  // thread's core overlaps with the span.
  ring_.prefetch_next(size);
  fill_record(out, data, size, end_ticks);
  ring_.commit(size);
  return true;
}

bool ThreadSpans::write_record(Frame& frame, std::uint64_t end_ticks) noexcept {
  FrameData& data = frame.data;
  const std::size_t size = record_size(data.record.payload_size);
  unsigned char* out = ring_.reserve(size);
  if (out == nullptr) {
    delete data.record.extras;
    data.record.extras = nullptr;
    return false;
  }
  ring_.prefetch_next(size);
  fill_record(out, data, size, end_ticks);
  ring_.commit(size);
  return true;
}

// ---- Activation ---------------------------------------------------------------------------

void use_context_storage() noexcept {
  install_context_storage();
  g_storage_installed.store(context_storage_installed(), std::memory_order_relaxed);
}

// ---- Hot path -----------------------------------------------------------------------------

namespace {

// The trace id a new root takes: the given one, or null (a random one) when it is all zeros.
const std::array<std::uint8_t, 16>* given_trace_id(const NewTrace& root) noexcept {
  const bool given = std::any_of(root.trace_id.begin(), root.trace_id.end(),
                                 [](std::uint8_t b) { return b != 0; });
  return given ? &root.trace_id : nullptr;
}

}  // namespace

// Writes the record of a recording span that ended (its trace state into the extras first) into
// `spans`' ring, counted as ended, or as dropped when the ring is full; true when written.
bool write_ended(ThreadSpans& spans, Frame& frame, std::uint64_t end_ticks) noexcept {
  if (frame.data.has(FrameData::kHasTraceState)) {
    change_extras(frame.data,
                  [&](SpanExtras& extras) { extras.trace_state = frame.trace_state->ToHeader(); });
  }
  const bool written = spans.write_record(frame, end_ticks);
  if (written) {
    spans.ended.increment();
  } else {
    spans.dropped.increment();
  }
  return written;
}

namespace {

// begin_span and begin_site_span: a child of the calling thread's current context.
[[gnu::always_inline]] inline void begin_child(std::string_view name, AttributeList attributes,
                                               bool record_exception_events, bool static_name,
                                               detail::SpanHandle& out) noexcept {
  ThreadSpans* spans = current_thread();
  if (spans == nullptr) {
    out = {};
    return;
  }
  const Parent parent = resolve_parent(*spans);
  out = handle_of(start(*spans, name, attributes, record_exception_events, static_name, parent,
                        nullptr, nullptr));
}

}  // namespace

}  // namespace lens::native

namespace lens::detail {

std::atomic<std::uint64_t> g_span_pipeline_generation{0};

void begin_span(std::string_view name, AttributeList attributes, bool record_exception_events,
                SpanHandle& out) noexcept {
  native::begin_child(name, attributes, record_exception_events, false, out);
}

void begin_site_span(std::string_view name, AttributeList attributes, SpanHandle& out) noexcept {
  native::begin_child(name, attributes, true, true, out);
}

}  // namespace lens::detail

namespace lens::native {

Started begin_root_span(std::string_view name, AttributeList attributes, const NewTrace& root,
                        bool record_exception_events) noexcept {
  ThreadSpans* spans = current_thread();
  if (spans == nullptr) return {};
  return start(*spans, name, attributes, record_exception_events, false, Parent{},
               given_trace_id(root), &root.link);
}

void start_detached_frame(ThreadSpans& spans, std::string_view name, AttributeList attributes,
                          const NewTrace* root, const otel::trace::SpanContext* link,
                          Frame& frame) noexcept {
  if (root != nullptr) {
    start(spans, name, attributes, true, false, Parent{}, given_trace_id(*root), &root->link,
          &frame);
  } else {
    start(spans, name, attributes, true, false, resolve_parent(spans), nullptr, link, &frame);
  }
}

ThreadSpans* calling_thread_attached() noexcept { return current_thread(); }

ThreadSpans* calling_thread_state() noexcept { return t_fast.spans; }

void clear_calling_thread() noexcept { t_fast.spans = nullptr; }

namespace {

// Everything end_span rarely meets: an exception escaping the scope, a span view, a trace state,
// a span that is not recorded, a state inherited through fork, a closed pipeline, a record that
// needs a new chunk of the ring.
[[gnu::noinline]] void end_span_slow(ThreadSpans* spans, Frame* frame_pointer,
                                     std::uint64_t end_ticks) noexcept {
  const Started span{spans, frame_pointer};
  Frame& frame = *span.frame;
  FrameData& data = frame.data;
  if (spans->uncaught_exceptions() > data.uncaught_at_start &&
      !data.has(FrameData::kExceptionRecorded)) {
    if (data.has(FrameData::kRecordExceptionEvents)) {
      add_event(span, "exception",
                {{"exception.type", "unknown"}, {"exception.message", "unknown"}});
    }
    set_status(span, StatusCode::kError, "unknown exception");
  }
  if (data.has(FrameData::kHasView)) {
    frame.view = nullptr;
    data.set(FrameData::kHasView, false);
    forget_span_depth(data.record.id.span_id);
  }
  // A forked child never writes into what it inherited (the pool's lock may be held).
  const bool inherited = spans->fork_generation() != core::fork_generation();
  if (data.recording() && !inherited && !spans->closed.load(std::memory_order_relaxed)) {
    write_ended(*spans, frame, end_ticks);
  } else if (data.record.extras != nullptr && !inherited) {
    delete data.record.extras;
  }
  data.record.extras = nullptr;
  spans->pop();
}

}  // namespace

}  // namespace lens::native

// Without a call on the common path (the rest is a tail call), so that it needs no registers
// saved.
void lens::detail::end_span(SpanStack* stack, SpanFrame* frame_handle) noexcept {
  using namespace lens::native;
  if (stack == nullptr) return;
  const Started span = started_of(SpanHandle{stack, frame_handle});
  ThreadSpans* spans = span.thread;
  Frame* frame = span.frame;
  const std::uint64_t end_ticks = read_ticks();
  const FrameData& data = frame->data;
  // One test for everything unusual (bitwise: no branch per condition).
  constexpr std::uint8_t kUnusual = FrameData::kHasView | FrameData::kHasTraceState;
  const bool plain = ((data.bits & (FrameData::kRecording | kUnusual)) == FrameData::kRecording) &
                     (spans->uncaught_exceptions() <= data.uncaught_at_start) &
                     (spans->fork_generation() == core::fork_generation()) &
                     !spans->closed.load(std::memory_order_relaxed);
  if (!plain || !spans->write_record_in_current_chunk(*frame, end_ticks)) [[unlikely]] {
    end_span_slow(spans, frame, end_ticks);
    return;
  }
  spans->ended.increment();
  spans->pop();
}

namespace lens::native {

const ThreadSpans* calling_thread_spans() noexcept { return t_fast.spans; }

bool current_span_identity(Identity& out) noexcept {
  // The choice of resolve_parent, without attaching this thread to a pipeline.
  const std::int64_t depth = t_fast.context_depth;
  const ThreadSpans* spans = t_fast.spans;
  const Frame* top = spans != nullptr ? spans->top() : nullptr;
  if (top != nullptr && (top->data.context_depth == depth || depth == 0)) {
    out = top->data.record.id;
    return true;
  }
  const bool installed = g_storage_installed.load(std::memory_order_relaxed);
  if (depth == 0 && installed) return false;
  otel::nostd::shared_ptr<otel::trace::TraceState> unused;
  const Parent parent = parent_from_context(
      installed ? attached_context() : otel::context::RuntimeContext::GetCurrent(), out, unused);
  return parent.id != nullptr;
}

void set_context_depth(std::int64_t depth) noexcept { t_fast.context_depth = depth; }

std::optional<std::uint8_t> open_span_depth(std::uint64_t span_id) noexcept {
  if (const ThreadSpans* spans = t_fast.spans) {
    for (std::uint32_t i = spans->depth(); i > 0; --i) {
      const RecordHeader& record = spans->frame_at(i - 1)->data.record;
      if (record.id.span_id == span_id) return record.id.depth;
    }
  }
  return remembered_span_depth(span_id);
}

otel::context::Context overlay_current_span(const otel::context::Context& attached) noexcept {
  ThreadSpans* spans = t_fast.spans;
  if (spans == nullptr) return attached;
  Frame* top = spans->top();
  if (top == nullptr || top->data.context_depth != t_fast.context_depth) return attached;
  // What third-party code sees of a native span is its context (ids, flags, trace state): a
  // DefaultSpan, made once per span that is looked at.
  if (!top->data.has(FrameData::kHasView)) {
    try {
      top->view = otel::nostd::shared_ptr<otel::trace::Span>(
          new otel::trace::DefaultSpan(span_context(*top)));
    } catch (...) {
      return attached;
    }
    FrameWrite write(*top);
    top->data.set(FrameData::kHasView, true);
    // Seen through the context, it may parent spans on other threads.
    if (depth_tracking())
      remember_span_depth(top->data.record.id.span_id, top->data.record.id.depth);
  }
  otel::context::Context context = attached;
  return otel::trace::SetSpan(context, top->view);
}

}  // namespace lens::native
