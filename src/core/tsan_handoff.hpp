// Tells ThreadSanitizer about a hand-over that happens inside uninstrumented code.
//
// A span's recordable is written on the thread that ends the span and destroyed on the batch
// processor's worker thread. The queue between them lives in opentelemetry-cpp, which Debian
// builds without -fsanitize=thread, so TSan cannot see its synchronisation and would report
// our own accesses on either side as races. The pair below marks the hand-over explicitly;
// outside TSan builds both compile to nothing.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define LENS_TSAN_ENABLED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LENS_TSAN_ENABLED 1
#endif
#endif

#if defined(LENS_TSAN_ENABLED)
extern "C" void __tsan_acquire(void* addr);  // NOLINT(readability-identifier-naming)
extern "C" void __tsan_release(void* addr);  // NOLINT(readability-identifier-naming)
#endif

namespace lens::core {

// Called by the producer just before `object` enters the uninstrumented queue.
inline void tsan_publish([[maybe_unused]] const void* object) noexcept {
#if defined(LENS_TSAN_ENABLED)
  __tsan_release(const_cast<void*>(object));
#endif
}

// Called by the consumer when it takes `object` out of that queue.
inline void tsan_receive([[maybe_unused]] const void* object) noexcept {
#if defined(LENS_TSAN_ENABLED)
  __tsan_acquire(const_cast<void*>(object));
#endif
}

}  // namespace lens::core
