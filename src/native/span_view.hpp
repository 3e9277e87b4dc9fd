// NativeSpanView: a native span seen as an opentelemetry::trace::Span, for code that wants the
// SDK's interface (ManagedSpan::span(), third-party instrumentation reading the current span).
// Calls made on the span's own thread while it is open reach its frame; from any other thread,
// or after the span ended, they do nothing (GetContext keeps answering). End() does nothing:
// the lens guard that started the span ends it.
// Thread-safety: any thread may hold and call it; only the owner thread's calls have effect.
#pragma once

#include <opentelemetry/trace/span.h>
#include <pthread.h>

#include <memory>

#include "native/thread_spans.hpp"

namespace lens::native {

class NativeSpanView final : public opentelemetry::trace::Span {
 public:
  NativeSpanView(std::shared_ptr<ThreadSpans> thread, Frame* frame,
                 opentelemetry::trace::SpanContext context, std::uint8_t exported_flags,
                 bool recording) noexcept;

  // Called by the owner thread when the span ends.
  void detach() noexcept { open_ = false; }
  // The flags of the exported record (the live context carries the sampled flag only).
  std::uint8_t exported_flags() const noexcept { return exported_flags_; }

  void SetAttribute(opentelemetry::nostd::string_view key,
                    const opentelemetry::common::AttributeValue& value) noexcept override;
  void AddEvent(opentelemetry::nostd::string_view name) noexcept override;
  void AddEvent(opentelemetry::nostd::string_view name,
                opentelemetry::common::SystemTimestamp timestamp) noexcept override;
  void AddEvent(opentelemetry::nostd::string_view name,
                const opentelemetry::common::KeyValueIterable& attributes) noexcept override;
  void AddEvent(opentelemetry::nostd::string_view name,
                opentelemetry::common::SystemTimestamp timestamp,
                const opentelemetry::common::KeyValueIterable& attributes) noexcept override;
#if OPENTELEMETRY_ABI_VERSION_NO >= 2
  void AddLink(const opentelemetry::trace::SpanContext& target,
               const opentelemetry::common::KeyValueIterable& attrs) noexcept override;
  void AddLinks(const opentelemetry::trace::SpanContextKeyValueIterable& links) noexcept override;
#endif
  void SetStatus(opentelemetry::trace::StatusCode code,
                 opentelemetry::nostd::string_view description = "") noexcept override;
  void UpdateName(opentelemetry::nostd::string_view name) noexcept override;
  void End(const opentelemetry::trace::EndSpanOptions& options = {}) noexcept override;
  opentelemetry::trace::SpanContext GetContext() const noexcept override { return context_; }
  bool IsRecording() const noexcept override;

 private:
  // The thread first: only the owner may read open_.
  bool live() const noexcept { return pthread_equal(owner_, pthread_self()) != 0 && open_; }
  Started started() const noexcept { return {thread_.get(), frame_}; }

  std::shared_ptr<ThreadSpans> thread_;  // keeps the frame's memory alive
  Frame* frame_;
  opentelemetry::trace::SpanContext context_;
  pthread_t owner_;
  std::uint8_t exported_flags_;
  bool recording_;
  bool open_ = true;  // written and read by the owner thread only
};

}  // namespace lens::native
