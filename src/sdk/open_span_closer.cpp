// OpenSpanCloser and its tracking recordable. Thread-safety and fork safety: see
// open_span_closer.hpp. Lock order: the registry mutex and a span's mutex are never held
// together, and neither is held while calling the next processor.
#include "sdk/open_span_closer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fork_generation.hpp"
#include "core/tsan_handoff.hpp"
#include "opentelemetry/common/key_value_iterable.h"
#include "opentelemetry/common/timestamp.h"
#include "opentelemetry/sdk/trace/recordable.h"
#include "opentelemetry/trace/span_context.h"
#include "opentelemetry/trace/trace_flags.h"

namespace lens::sdk {

namespace otel_sdk = opentelemetry::sdk::trace;
namespace common = opentelemetry::common;
namespace nostd = opentelemetry::nostd;
using opentelemetry::trace::TraceFlags;

namespace {

constexpr const char* kTruncatedKey = "nemo.span.truncated";
constexpr const char* kTruncatedEvent = "nemo.span.truncated";
constexpr const char* kReasonKey = "nemo.span.truncated.reason";
constexpr const char* kReason = "still open at telemetry shutdown";

std::uint64_t span_id_key(const opentelemetry::trace::SpanId& id) noexcept {
  std::uint64_t key = 0;
  std::memcpy(&key, id.Id().data(), sizeof(key));
  return key;
}

class ReasonAttributes final : public common::KeyValueIterable {
 public:
  bool ForEachKeyValue(nostd::function_ref<bool(nostd::string_view, common::AttributeValue)>
                           callback) const noexcept override {
    return callback(kReasonKey, common::AttributeValue(nostd::string_view(kReason)));
  }
  std::size_t size() const noexcept override { return 1; }
};

// State of one tracked span, shared by its recordable (owned by the live Span) and the registry.
struct TrackedState {
  explicit TrackedState(std::unique_ptr<otel_sdk::Recordable> inner_recordable) noexcept
      : generation(core::fork_generation()), inner(std::move(inner_recordable)) {}

  const std::uint64_t generation;               // fork generation it was created in; never changes
  std::mutex mu;                                // guards every field below
  std::unique_ptr<otel_sdk::Recordable> inner;  // null once handed to the next processor
  std::uint64_t span_id = 0;
  std::uint64_t sequence = 0;  // start order, for newest-first shutdown
  TraceFlags flags;
  common::SystemTimestamp start;

  // Inherited from the parent process: inert (its mutex may have been held at fork time).
  bool stale() const noexcept { return generation != core::fork_generation(); }
};

class TrackedRecordable final : public otel_sdk::Recordable {
 public:
  explicit TrackedRecordable(std::shared_ptr<TrackedState> state) noexcept
      : state_(std::move(state)) {}

  const std::shared_ptr<TrackedState>& state() const noexcept { return state_; }

  void SetIdentity(const opentelemetry::trace::SpanContext& span_context,
                   opentelemetry::trace::SpanId parent_span_id) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) {
      state_->span_id = span_id_key(span_context.span_id());
      inner.SetIdentity(span_context, parent_span_id);
    });
  }
  void SetAttribute(nostd::string_view key, const common::AttributeValue& value) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.SetAttribute(key, value); });
  }
  void AddEvent(nostd::string_view name, common::SystemTimestamp timestamp,
                const common::KeyValueIterable& attributes) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.AddEvent(name, timestamp, attributes); });
  }
  void AddLink(const opentelemetry::trace::SpanContext& span_context,
               const common::KeyValueIterable& attributes) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.AddLink(span_context, attributes); });
  }
  void SetStatus(opentelemetry::trace::StatusCode code,
                 nostd::string_view description) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.SetStatus(code, description); });
  }
  void SetName(nostd::string_view name) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.SetName(name); });
  }
  void SetTraceFlags(TraceFlags flags) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) {
      state_->flags = flags;
      inner.SetTraceFlags(flags);
    });
  }
  void SetSpanKind(opentelemetry::trace::SpanKind span_kind) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.SetSpanKind(span_kind); });
  }
  void SetResource(const opentelemetry::sdk::resource::Resource& resource) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.SetResource(resource); });
  }
  void SetStartTime(common::SystemTimestamp start_time) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) {
      state_->start = start_time;
      inner.SetStartTime(start_time);
    });
  }
  void SetDuration(std::chrono::nanoseconds duration) noexcept override {
    with_inner([&](otel_sdk::Recordable& inner) { inner.SetDuration(duration); });
  }
  explicit operator otel_sdk::SpanData*() const override {
    otel_sdk::SpanData* data = nullptr;
    with_inner(
        [&](otel_sdk::Recordable& inner) { data = static_cast<otel_sdk::SpanData*>(inner); });
    return data;
  }
  void SetInstrumentationScope(
      const otel_sdk::InstrumentationScope& instrumentation_scope) noexcept override {
    with_inner(
        [&](otel_sdk::Recordable& inner) { inner.SetInstrumentationScope(instrumentation_scope); });
  }

 private:
  template <class F>
  void with_inner(F&& f) const noexcept {
    if (state_->stale()) return;
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->inner) f(*state_->inner);
  }

  std::shared_ptr<TrackedState> state_;
};

}  // namespace

struct OpenSpanCloser::Registry {
  explicit Registry(std::uint64_t gen) noexcept : generation(gen) {}

  const std::uint64_t generation;
  std::mutex mu;  // guards the fields below
  std::unordered_map<std::uint64_t, std::shared_ptr<TrackedState>> open;
  std::uint64_t next_sequence = 0;
  bool closed = false;
};

OpenSpanCloser::OpenSpanCloser(std::unique_ptr<otel_sdk::SpanProcessor> next,
                               std::shared_ptr<SpanCounts> counts)
    : next_(std::move(next)),
      counts_(std::move(counts)),
      registry_(new Registry(core::fork_generation())) {
  core::ensure_fork_handler();
}

OpenSpanCloser::~OpenSpanCloser() { delete registry_.load(std::memory_order_acquire); }

OpenSpanCloser::Registry& OpenSpanCloser::registry() const noexcept {
  Registry* current = registry_.load(std::memory_order_acquire);
  const std::uint64_t generation = core::fork_generation();
  if (current->generation == generation) return *current;
  // First use in a forked child: replace the inherited registry; leak the old one on purpose
  // (its mutex may be held by a parent thread that does not exist here, its map mid-update).
  auto* fresh = new (std::nothrow) Registry(generation);
  if (fresh == nullptr) return *current;  // out of memory: keep going with the inherited one
  if (registry_.compare_exchange_strong(current, fresh, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
    return *fresh;
  }
  delete fresh;  // another child thread won the race; `current` now holds its registry
  return *current;
}

std::unique_ptr<otel_sdk::Recordable> OpenSpanCloser::MakeRecordable() noexcept {
  auto inner = next_->MakeRecordable();
  if (!inner) return nullptr;
  auto state = std::make_shared<TrackedState>(std::move(inner));
  return std::make_unique<TrackedRecordable>(std::move(state));
}

void OpenSpanCloser::OnStart(otel_sdk::Recordable& span,
                             const opentelemetry::trace::SpanContext& parent_context) noexcept {
  auto* tracked = dynamic_cast<TrackedRecordable*>(&span);
  if (tracked == nullptr) {  // not ours (never happens with the SDK): pass through untracked
    next_->OnStart(span, parent_context);
    return;
  }
  const std::shared_ptr<TrackedState>& state = tracked->state();
  if (state->stale()) return;
  if (counts_) counts_->started.fetch_add(1, std::memory_order_relaxed);
  Registry& reg = registry();

  otel_sdk::Recordable* inner = nullptr;
  std::uint64_t span_id = 0;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (!state->inner) return;
    inner = state->inner.get();
    span_id = state->span_id;
  }
  // Not registered yet, so only this (the starting) thread can reach `inner`: no lock needed.
  next_->OnStart(*inner, parent_context);

  std::lock_guard<std::mutex> lock(reg.mu);
  if (reg.closed) return;  // after shutdown nothing is tracked (no leak from late spans)
  state->sequence = reg.next_sequence++;
  reg.open[span_id] = state;
}

void OpenSpanCloser::OnEnd(std::unique_ptr<otel_sdk::Recordable>&& span) noexcept {
  auto* tracked = dynamic_cast<TrackedRecordable*>(span.get());
  if (tracked == nullptr) {
    if (span) next_->OnEnd(std::move(span));
    return;
  }
  const std::shared_ptr<TrackedState> state = tracked->state();
  if (state->stale()) return;  // a parent-process span ended in a forked child: never exported

  std::unique_ptr<otel_sdk::Recordable> inner;
  std::uint64_t span_id = 0;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    inner = std::move(state->inner);
    span_id = state->span_id;
  }
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    auto it = reg.open.find(span_id);
    if (it != reg.open.end() && it->second == state) reg.open.erase(it);
  }
  // Null: the closer force-ended it already, so this late End exports nothing.
  if (inner) {
    if (counts_) counts_->ended.fetch_add(1, std::memory_order_relaxed);
    core::tsan_publish(inner.get());
    next_->OnEnd(std::move(inner));
  }
}

bool OpenSpanCloser::ForceFlush(std::chrono::microseconds timeout) noexcept {
  return next_->ForceFlush(timeout);
}

bool OpenSpanCloser::Shutdown(std::chrono::microseconds timeout) noexcept {
  std::vector<std::shared_ptr<TrackedState>> leftovers;
  {
    Registry& reg = registry();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.closed = true;
    leftovers.reserve(reg.open.size());
    for (auto& entry : reg.open) leftovers.push_back(std::move(entry.second));
    reg.open.clear();
  }
  // Newest-started first: children end before (and no later than) their parents.
  std::sort(leftovers.begin(), leftovers.end(),
            [](const auto& a, const auto& b) { return a->sequence > b->sequence; });

  const ReasonAttributes reason;
  for (const auto& state : leftovers) {
    std::unique_ptr<otel_sdk::Recordable> inner;
    common::SystemTimestamp start;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      inner = std::move(state->inner);
      start = state->start;
    }
    if (!inner) continue;  // ended concurrently by its owner: already handed over
    const auto now = std::chrono::system_clock::now();
    inner->SetAttribute(kTruncatedKey, true);
    inner->AddEvent(kTruncatedEvent, common::SystemTimestamp(now), reason);
    const auto duration = now - std::chrono::system_clock::time_point(start);
    inner->SetDuration(std::max(std::chrono::nanoseconds::zero(),
                                std::chrono::duration_cast<std::chrono::nanoseconds>(duration)));
    if (counts_) counts_->ended.fetch_add(1, std::memory_order_relaxed);
    core::tsan_publish(inner.get());
    next_->OnEnd(std::move(inner));
  }
  return next_->Shutdown(timeout);
}

std::size_t OpenSpanCloser::open_span_count() const noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  return reg.open.size();
}

bool OpenSpanCloser::is_closed() const noexcept {
  Registry& reg = registry();
  std::lock_guard<std::mutex> lock(reg.mu);
  return reg.closed;
}

std::unique_lock<std::mutex> OpenSpanCloser::lock_registry_for_testing() const {
  return std::unique_lock<std::mutex>(registry().mu);
}

}  // namespace lens::sdk
