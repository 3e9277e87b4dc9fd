// Writing an open span's frame, shared by the files of the native span path: the owner's side of
// the sequence lock (FrameWrite), the extras made on first need, and attributes put into the
// payload, redacted by key (lens/redaction.hpp). Thread-safety: only the frame's owner thread
// (or a detached span's lock holder) writes; snapshot_open reads under the sequence lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>

#include "core/tsan_handoff.hpp"  // LENS_TSAN_ENABLED
#include "lens/redaction.hpp"
#include "native/attribute_codec.hpp"
#include "native/thread_spans.hpp"

namespace lens::native {

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

// What a string under a redacted key (lens/redaction.hpp) is written as.
inline constexpr AttributeArg kRedactedArg(kRedacted);

// `value`, or kRedacted for a string under a redacted key (event attributes).
inline AttributeArg redacted(std::string_view key, const AttributeArg& value) noexcept {
  if (value.is_string() && is_default_redact_key(key)) return AttributeArg(kRedacted);
  return value;
}

inline SpanExtras* extras_of(FrameData& data) noexcept {
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
                                       const AttributeArg& value) noexcept;
// A name kept in the extras: longer than the payload at start, or changed by UpdateName.
[[gnu::noinline]] void set_name_override(FrameData& data, std::string_view name) noexcept;
[[gnu::noinline]] void add_link_to(FrameData& data,
                                   const opentelemetry::trace::SpanContext& link) noexcept;

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

}  // namespace lens::native
