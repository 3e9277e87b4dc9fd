// The native span hot path and per-thread state (see thread_spans.hpp).
#include "native/thread_spans.hpp"

#include <cxxabi.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_id.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <string>

#include "core/fork_generation.hpp"
#include "core/span_depth.hpp"
#include "core/tsan_handoff.hpp"
#include "native/attribute_codec.hpp"
#include "native/context_storage.hpp"
#include "native/span_depths.hpp"
#include "native/tick_clock.hpp"

#if defined(LENS_TSAN_ENABLED)
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);  // NOLINT
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);    // NOLINT
#endif

namespace lens::native {

namespace {

// Whether lens's context storage is installed (see resolve_parent); set by activate().
std::atomic<bool> g_storage_installed{false};

namespace otel = opentelemetry;

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

// Lets go of a thread's state: no more writes; the export thread drains it and forgets it.
void forget(std::shared_ptr<ThreadSpans>& spans) noexcept {
  if (spans == nullptr) return;
  spans->exited.store(true, std::memory_order_release);
  if (spans->fork_generation() != core::fork_generation()) {
    core::keep_forever(std::move(spans));
  }
  spans.reset();
}

// Owns the calling thread's states: the current one and older ones with spans still open.
struct ThreadOwner {
  std::shared_ptr<ThreadSpans> current;
  std::vector<std::shared_ptr<ThreadSpans>> retired;

  ~ThreadOwner() {
    t_fast.spans = nullptr;
    forget(current);
    for (auto& spans : retired) forget(spans);
  }

  std::shared_ptr<ThreadSpans> find(const ThreadSpans* spans) const noexcept {
    if (current.get() == spans) return current;
    for (const auto& r : retired) {
      if (r.get() == spans) return r;
    }
    return nullptr;
  }
};
thread_local ThreadOwner t_owner;

// The registry new threads join. Replaced (the old one kept reachable) in a forked child.
struct ActiveRegistry {
  std::mutex mutex;
  std::shared_ptr<SpanRegistry> registry;
  ActiveRegistry* previous = nullptr;
};
std::atomic<ActiveRegistry*> g_registry{new ActiveRegistry()};

// The registry new threads join, when it is the pipeline of `generation`; else null.
std::shared_ptr<SpanRegistry> active_registry(std::uint64_t generation) {
  ActiveRegistry* holder = g_registry.load(std::memory_order_acquire);
  std::shared_ptr<SpanRegistry> registry;
  {
    std::lock_guard<std::mutex> lock(holder->mutex);
    registry = holder->registry;
  }
  if (registry == nullptr || registry->generation() != generation) return nullptr;
  return registry;
}

ThreadSpans* attach_thread(std::uint64_t generation) noexcept {
  try {
    const std::shared_ptr<SpanRegistry> registry = active_registry(generation);
    if (registry == nullptr) return nullptr;
    std::shared_ptr<ThreadSpans> spans = registry->add_thread();
    if (spans == nullptr) return nullptr;
    ThreadOwner& owner = t_owner;
    if (owner.current != nullptr) {
      if (owner.current->depth() > 0) {
        owner.retired.push_back(std::move(owner.current));
      } else {
        forget(owner.current);
      }
    }
    for (auto& r : owner.retired) {
      if (r->depth() == 0) forget(r);
    }
    std::erase(owner.retired, nullptr);
    owner.current = std::move(spans);
    t_fast.spans = owner.current.get();
    return t_fast.spans;
  } catch (...) {
    return nullptr;
  }
}

inline ThreadSpans* current_thread() noexcept {
  const std::uint64_t generation =
      detail::g_span_pipeline_generation.load(std::memory_order_acquire);
  ThreadSpans* spans = t_fast.spans;
  if (spans != nullptr && spans->generation() == generation) [[likely]] {
    return spans;
  }
  if (generation == 0) return nullptr;
  return attach_thread(generation);
}

// The sequence lock's fences. GCC's ThreadSanitizer rejects std::atomic_thread_fence; there
// (x86-64 only, where release and acquire fences constrain the compiler alone) a compiler
// barrier is the same fence, and the racy reads it orders are declared to TSan anyway.
inline void seqlock_fence(std::memory_order order) noexcept {
#if defined(LENS_TSAN_ENABLED)
  std::atomic_signal_fence(order);
#else
  std::atomic_thread_fence(order);
#endif
}

// Brackets the owner's writes to a frame for snapshot_open's sequence lock.
class FrameWrite {
 public:
  explicit FrameWrite(Frame& frame) noexcept : frame_(frame) {
    const std::uint32_t s = frame.seq.load(std::memory_order_relaxed);
    frame.seq.store(s + 1, std::memory_order_relaxed);
    // Release fence: a reader that sees a later write also sees the odd count (seqlock writer).
    seqlock_fence(std::memory_order_release);
  }
  ~FrameWrite() {
    frame_.seq.store(frame_.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  FrameWrite(const FrameWrite&) = delete;
  FrameWrite& operator=(const FrameWrite&) = delete;

 private:
  Frame& frame_;
};

constexpr AttributeArg kRedactedArg(kRedacted);

AttributeArg redacted(std::string_view key, const AttributeArg& value) noexcept {
  if (value.is_string() && is_default_redact_key(key)) return AttributeArg(kRedacted);
  return value;
}

SpanExtras* extras_of(FrameData& data) noexcept {
  if (data.record.extras == nullptr) data.record.extras = new (std::nothrow) SpanExtras();
  return data.record.extras;
}

// Applies `change` to the frame's extras, made on first need; when memory runs out the change is
// dropped and the span keeps what it has.
template <class Change>
void change_extras(FrameData& data, Change&& change) noexcept {
  SpanExtras* extras = extras_of(data);
  if (extras == nullptr) return;
  try {
    change(*extras);
  } catch (...) {
  }
}

// An attribute that did not fit in the payload, into the extras (out of line: rare).
[[gnu::noinline]] void spill_attribute(FrameData& data, std::string_view key,
                                       const AttributeArg& value) noexcept {
  change_extras(data, [&](SpanExtras& extras) { append_attribute(extras.attributes, key, value); });
}

// A name kept in the extras: longer than the payload at start, or changed by UpdateName.
[[gnu::noinline]] void set_name_override(FrameData& data, std::string_view name) noexcept {
  change_extras(data, [&](SpanExtras& extras) {
    extras.name.assign(name);
    data.record.has_name_override = true;
  });
}

[[gnu::noinline]] void add_link_to(FrameData& data, const otel::trace::SpanContext& link) noexcept {
  if (!link.IsValid()) return;
  change_extras(data, [&](SpanExtras& extras) { extras.links.push_back(link); });
}

// Appends an attribute (redacted by key) to the payload at `used`, counting it in `count`, or to
// the extras when the payload is full. The offsets are the caller's locals, stored back once:
// narrow stores read back at once stall store forwarding.
[[gnu::always_inline]] inline void put_attribute(FrameData& data, std::size_t& used,
                                                 std::uint16_t& count, std::string_view key,
                                                 const AttributeArg& value) noexcept {
  if (value.is_null()) return;
  const bool redact = value.is_string() && is_default_redact_key(key);
  const AttributeArg& safe = redact ? kRedactedArg : value;
  const std::size_t written =
      encode_attribute(data.payload + used, kPayloadBytes - used, key, safe);
  if (written != 0) [[likely]] {
    used += written;
    ++count;
  } else {
    spill_attribute(data, key, safe);
  }
}

std::uint64_t span_id_value(const otel::trace::SpanId& id) noexcept {
  std::uint64_t value = 0;
  for (std::uint8_t byte : id.Id()) value = (value << 8) | byte;
  return value;
}

struct Parent {
  const Identity* id = nullptr;  // the parent's trace id, span id and flags; null: a root
  bool remote = false;
  // The trace state children inherit: the parent frame's, or the thread's scratch (null: none).
  const otel::nostd::shared_ptr<otel::trace::TraceState>* trace_state = nullptr;
};

Parent parent_from_frame(const Frame& frame) noexcept {
  Parent parent;
  parent.id = &frame.data.record.id;
  if (frame.data.has(FrameData::kHasTraceState)) parent.trace_state = &frame.trace_state;
  return parent;
}

// The ids go to `id_storage`, the trace state, when there is one, to `state_storage`.
Parent parent_from_context(
    const otel::context::Context& context, Identity& id_storage,
    otel::nostd::shared_ptr<otel::trace::TraceState>& state_storage) noexcept {
  Parent parent;
  const auto span = otel::trace::GetSpan(context);
  const otel::trace::SpanContext sc = span->GetContext();
  if (!sc.IsValid()) return parent;
  parent.id = &id_storage;
  parent.remote = sc.IsRemote();
  std::memcpy(id_storage.trace_id.data(), sc.trace_id().Id().data(), 16);
  id_storage.span_id = span_id_value(sc.span_id());
  id_storage.parent_span_id = 0;
  id_storage.flags = sc.trace_flags().flags();
  id_storage.depth = 0;  // unknown here: see parent_from_attached
  const auto state = sc.trace_state();
  if (state != nullptr && !state->Empty()) {
    state_storage = state;
    parent.trace_state = &state_storage;
  }
  return parent;
}

// The parent of a span starting now on this thread: the innermost native span unless something
// was attached to the opentelemetry context after it started (a ContextScope, a third-party span).
// Out of line: rare, and keeps the hot path free of context objects.
[[gnu::noinline]] Parent parent_from_attached(ThreadSpans& spans, bool installed) noexcept {
  const Parent parent = parent_from_context(
      installed ? attached_context() : otel::context::RuntimeContext::GetCurrent(),
      spans.context_parent, spans.context_trace_state);
  // A local parent of unknown depth (a native span of another thread) counts as depth 0.
  if (parent.id != nullptr && !parent.remote) {
    spans.context_parent.depth = open_span_depth(spans.context_parent.span_id).value_or(0);
  }
  return parent;
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

// The sampler's decision: the fixed rules without a call (see sampler_shape.hpp), anything else
// through should_sample.
[[gnu::always_inline]] inline SamplingDecision decide(const ThreadSpans& spans,
                                                      const Parent& parent, const Identity& id,
                                                      std::string_view name) noexcept {
  using strategies::SamplerShape;
  const bool parent_sampled = parent.id != nullptr && (parent.id->flags & kFlagSampled) != 0;
  switch (spans.sampler_shape()) {
    case SamplerShape::kAlwaysSample:
      return SamplingDecision::record_and_sample;
    case SamplerShape::kAlwaysDrop:
      return SamplingDecision::drop;
    case SamplerShape::kParentOrSample:
      return parent.id == nullptr || parent_sampled ? SamplingDecision::record_and_sample
                                                    : SamplingDecision::drop;
    case SamplerShape::kParentOrDrop:
      return parent_sampled ? SamplingDecision::record_and_sample : SamplingDecision::drop;
    case SamplerShape::kCustom:
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
      sampler_shape_(strategies::sampler_shape(*sampler_)),
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

namespace {

// Copies an open span's frame into `copy`: its data, without the frame's extras pointer; with
// `with_extras` (the reader may follow the frame's pointers: the owner thread, or a detached
// span's lock holder) also its extras and its trace state.
void copy_open(ThreadSpans::OpenSpan& copy, const Frame& frame, bool with_extras) {
  std::memcpy(static_cast<void*>(&copy.data), &frame.data, sizeof(FrameData));
  copy.data.record.extras = nullptr;
  if (!with_extras) return;
  if (frame.data.record.extras != nullptr) copy.extras = *frame.data.record.extras;
  if (frame.data.has(FrameData::kHasTraceState)) {
    copy.extras.trace_state = frame.trace_state->ToHeader();
  }
}

}  // namespace

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

// ---- Activation ---------------------------------------------------------------------------

void use_context_storage() noexcept {
  install_context_storage();
  g_storage_installed.store(context_storage_installed(), std::memory_order_relaxed);
}

void activate(std::shared_ptr<SpanRegistry> registry) noexcept {
  use_context_storage();
  const std::uint64_t generation = registry->generation();
  ActiveRegistry* holder = g_registry.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> lock(holder->mutex);
    holder->registry = std::move(registry);
  }
  detail::g_span_pipeline_generation.store(generation, std::memory_order_release);
}

void deactivate() noexcept {
  detail::g_span_pipeline_generation.store(0, std::memory_order_release);
  ActiveRegistry* holder = g_registry.load(std::memory_order_acquire);
  std::shared_ptr<SpanRegistry> old;
  {
    std::lock_guard<std::mutex> lock(holder->mutex);
    old = std::move(holder->registry);
  }
}

void reset_after_fork() noexcept {
  detail::g_span_pipeline_generation.store(0, std::memory_order_relaxed);
  auto* fresh = new (std::nothrow) ActiveRegistry();
  if (fresh == nullptr) return;
  fresh->previous = g_registry.load(std::memory_order_relaxed);
  g_registry.store(fresh, std::memory_order_release);
}

// ---- Hot path -----------------------------------------------------------------------------

namespace {

// The trace id a new root takes: the given one, or null (a random one) when it is all zeros.
const std::array<std::uint8_t, 16>* given_trace_id(const NewTrace& root) noexcept {
  const bool given = std::any_of(root.trace_id.begin(), root.trace_id.end(),
                                 [](std::uint8_t b) { return b != 0; });
  return given ? &root.trace_id : nullptr;
}

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

}  // namespace

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

DetachedSpan* begin_detached_span(std::string_view name, AttributeList attributes,
                                  const NewTrace* root,
                                  const otel::trace::SpanContext* link) noexcept {
  ThreadSpans* spans = current_thread();
  if (spans == nullptr) return nullptr;
  auto* span = new (std::nothrow) DetachedSpan();
  if (span == nullptr) return nullptr;
  try {
    span->registry = active_registry(spans->generation());
    if (span->registry == nullptr) {
      delete span;
      return nullptr;
    }
    span->fork_generation = spans->fork_generation();
    span->registry->add_detached(span);
  } catch (...) {
    delete span;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(span->mutex);
  if (root != nullptr) {
    start(*spans, name, attributes, true, false, Parent{}, given_trace_id(*root), &root->link,
          &span->frame);
  } else {
    start(*spans, name, attributes, true, false, resolve_parent(*spans), nullptr, link,
          &span->frame);
  }
  // On no thread's stack: its children find its depth here.
  if (depth_tracking()) {
    remember_span_depth(span->frame.data.record.id.span_id, span->frame.data.record.id.depth);
  }
  return span;
}

otel::trace::SpanContext detached_span_context(DetachedSpan& span) noexcept {
  std::lock_guard<std::mutex> lock(span.mutex);
  return span_context(span.frame);
}

void end_detached_span(DetachedSpan* span) noexcept {
  if (span == nullptr) return;
  const std::uint64_t end_ticks = read_ticks();
  // A forked child never touches what it inherited (a lock may be held by a thread that is gone).
  if (span->fork_generation != core::fork_generation()) return;
  bool stopped = false;  // the pipeline no longer takes spans
  {
    std::lock_guard<std::mutex> lock(span->mutex);
    span->ended = true;
    FrameData& data = span->frame.data;
    forget_span_depth(data.record.id.span_id);
    if (data.recording()) {
      // Into this thread's ring while the pipeline takes spans.
      ThreadSpans* spans = t_fast.spans;
      if (spans == nullptr || spans->generation() != span->registry->generation()) {
        spans = detail::g_span_pipeline_generation.load(std::memory_order_acquire) ==
                        span->registry->generation()
                    ? current_thread()
                    : nullptr;
      }
      stopped = spans == nullptr || spans->closed.load(std::memory_order_relaxed);
      if (!stopped) span->written = write_ended(*spans, span->frame, end_ticks);
    }
  }
  // Stopped: the shutdown snapshot exports it (truncated), or did; the registry frees it then.
  if (stopped && span->registry->keep_for_snapshot(span)) return;
  span->registry->remove_detached(span);
  delete span->frame.data.record.extras;
  delete span;
}

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

void set_attribute(const Started& span, std::string_view key, const AttributeArg& value) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  FrameData& data = span.frame->data;
  std::size_t used = data.record.payload_size;
  std::uint16_t count = data.record.attribute_count;
  put_attribute(data, used, count, key, value);
  data.record.payload_size = static_cast<std::uint16_t>(used);
  data.record.attribute_count = count;
}

void add_event(const Started& span, std::string_view name, AttributeList attributes) noexcept {
  add_event_at(span, name, AttributeSpan(attributes.begin(), attributes.size()), 0);
}

void set_status(const Started& span, StatusCode code, std::string_view description) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  FrameData& data = span.frame->data;
  data.record.status = code;
  // A description only goes with ERROR (as opentelemetry's SetStatus).
  if (code == StatusCode::kError && !description.empty()) {
    change_extras(data, [&](SpanExtras& extras) { extras.status_description.assign(description); });
  } else if (data.record.extras != nullptr) {
    data.record.extras->status_description.clear();
  }
}

void record_exception(const Started& span, std::string_view type, std::string_view what) noexcept {
  if (span.frame == nullptr) return;
  span.frame->data.set(FrameData::kExceptionRecorded, true);
  if (span.frame->data.has(FrameData::kRecordExceptionEvents)) {
    add_event(span, "exception", {{"exception.type", type}, {"exception.message", what}});
  }
  set_status(span, StatusCode::kError, what);
}

void add_event_at(const Started& span, std::string_view name, AttributeSpan attributes,
                  std::int64_t unix_nanos) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  change_extras(span.frame->data, [&](SpanExtras& extras) {
    SpanExtras::Event event;
    event.name.assign(name);
    event.ticks = read_ticks();
    event.unix_nanos = unix_nanos;
    for (const auto& [key, value] : attributes) {
      append_attribute(event.attributes, key, redacted(key, value));
    }
    extras.events.push_back(std::move(event));
  });
}

void add_link(const Started& span, const otel::trace::SpanContext& link) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  add_link_to(span.frame->data, link);
}

void update_name(const Started& span, std::string_view name) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  set_name_override(span.frame->data, name);
}

void set_start_time(const Started& span, std::int64_t unix_nanos) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  change_extras(span.frame->data,
                [&](SpanExtras& extras) { extras.start_unix_nanos = unix_nanos; });
}

void set_end_time(const Started& span, std::int64_t unix_nanos) noexcept {
  if (span.frame == nullptr || !span.frame->data.recording()) return;
  FrameWrite write(*span.frame);
  change_extras(span.frame->data, [&](SpanExtras& extras) { extras.end_unix_nanos = unix_nanos; });
}

otel::trace::SpanContext span_context(const Frame& frame) noexcept {
  const FrameData& data = frame.data;
  const otel::trace::TraceId trace_id(
      otel::nostd::span<const std::uint8_t, 16>(data.record.id.trace_id.data(), 16));
  const otel::trace::TraceFlags flags(
      static_cast<std::uint8_t>(data.record.id.flags & kFlagSampled));
  if (data.has(FrameData::kHasTraceState)) {
    return otel::trace::SpanContext(trace_id, span_id_of(data.record.id.span_id), flags, false,
                                    frame.trace_state);
  }
  return otel::trace::SpanContext(trace_id, span_id_of(data.record.id.span_id), flags, false);
}

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
