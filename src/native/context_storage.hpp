// The opentelemetry-cpp RuntimeContextStorage that lens installs when the native span path is
// active: opentelemetry-cpp's own thread-local stack semantics (Attach pushes, Detach pops to the
// token's context), plus two things the native path needs. It tells the native path the stack
// depth on every change, so that a native span knows in one comparison whether an attach
// happened since its parent started; and GetCurrent() adds the innermost native span when that
// is newer than the last attach, so third-party opentelemetry-cpp code (Tracer::StartSpan, the
// propagators) sees native spans as the active span without the hot path attaching anything.
// Thread-safety: all state is thread_local.
#pragma once

#include <opentelemetry/context/context.h>

namespace lens::native {

// Installs the storage once, if opentelemetry-cpp's default storage is still in place (a custom
// storage a program installed is left alone; native spans are then not visible to
// RuntimeContext::GetCurrent()). Contexts attached before stay attached in the old storage.
void install_context_storage() noexcept;
bool context_storage_installed() noexcept;

// The top of the calling thread's attach stack, without native spans (an empty context when
// nothing is attached).
opentelemetry::context::Context attached_context() noexcept;

}  // namespace lens::native
