// The native log path's recording side (see thread_logs.hpp).
#include "native/thread_logs.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "core/fork_generation.hpp"
#include "lens/span.hpp"
#include "native/attribute_codec.hpp"
#include "native/log_record.hpp"
#include "native/thread_spans.hpp"
#include "native/tick_clock.hpp"

namespace lens::native {
namespace {

// What the hot path reads on every record: the thread's state and the registry it belongs to.
// The default TLS model, so that liblens can be dlopen()ed (see thread_spans.cpp's FastState).
struct FastLogState {
  ThreadLogs* logs = nullptr;
  std::uint64_t registry = 0;
  bool exiting = false;  // the thread's destructors run: no new state (it would never be freed)
};
thread_local FastLogState t_log_fast;

// Lets go of a thread's state: no more writes; the export thread drains it and forgets it.
void forget(std::shared_ptr<ThreadLogs>& logs) noexcept {
  if (logs == nullptr) return;
  logs->exited.store(true, std::memory_order_release);
  if (logs->fork_generation() != core::fork_generation()) core::keep_forever(std::move(logs));
  logs.reset();
}

struct LogOwner {
  std::shared_ptr<ThreadLogs> current;
  ~LogOwner() {
    t_log_fast = FastLogState{nullptr, 0, true};
    forget(current);
  }
};
thread_local LogOwner t_log_owner;

std::atomic<std::uint64_t> g_next_registry_id{1};

// Out of line: once per thread and pipeline.
[[gnu::noinline]] ThreadLogs* attach(LogRegistry& registry) noexcept {
  if (t_log_fast.exiting) return nullptr;
  try {
    std::shared_ptr<ThreadLogs> logs = registry.add_thread();
    if (logs == nullptr) return nullptr;
    LogOwner& owner = t_log_owner;
    forget(owner.current);
    owner.current = std::move(logs);
    t_log_fast.logs = owner.current.get();
    t_log_fast.registry = registry.id();
    return t_log_fast.logs;
  } catch (...) {
    return nullptr;
  }
}

// A record larger than kMaxInlineLogBytes: its variable part on the heap (nullptr when out of
// memory).
[[gnu::noinline]] LogExtras* make_extras(std::string_view body, AttributeList attributes,
                                         std::size_t limit, std::string_view event_name) noexcept {
  try {
    auto extras = std::make_unique<LogExtras>();
    extras->event_name.assign(event_name);
    extras->body.assign(body);
    std::size_t count = 0;
    for (const auto& [key, value] : attributes) {
      if (value.is_null()) continue;
      if (count++ >= limit) break;
      append_attribute(extras->attributes, key, value);
    }
    return extras.release();
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

// ---- ThreadLogs ---------------------------------------------------------------------------

ThreadLogs::ThreadLogs(std::shared_ptr<ChunkPool> pool, std::uint64_t max_pending) noexcept
    : fork_generation_(core::fork_generation()),
      max_pending_(max_pending),
      ring_(std::move(pool)) {}

ThreadLogs::~ThreadLogs() {
  ring_.discard_rest([](const unsigned char* bytes) {
    LogRecordHeader header;
    std::memcpy(&header, bytes, sizeof(header));
    delete header.extras;
  });
}

unsigned char* ThreadLogs::reserve(std::size_t size) noexcept {
  unsigned char* out = nullptr;
  if (written.get() - taken_.load(std::memory_order_relaxed) < max_pending_) {
    out = ring_.reserve(size);
  }
  if (out == nullptr) dropped.increment();
  return out;
}

// ---- LogRegistry --------------------------------------------------------------------------

LogRegistry::LogRegistry(std::shared_ptr<ChunkPool> pool, std::uint64_t max_pending,
                         std::size_t attribute_count_limit)
    : id_(g_next_registry_id.fetch_add(1, std::memory_order_relaxed)),
      pool_(std::move(pool)),
      max_pending_(max_pending),
      attribute_count_limit_(attribute_count_limit) {
  core::ensure_fork_handler();
}

std::shared_ptr<ThreadLogs> LogRegistry::add_thread() {
  auto logs = std::make_shared<ThreadLogs>(pool_, max_pending_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed()) return nullptr;
  threads_.push_back(logs);
  return logs;
}

void LogRegistry::copy_threads(std::vector<std::shared_ptr<ThreadLogs>>& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  out = threads_;
}

void LogRegistry::remove(const std::shared_ptr<ThreadLogs>& thread) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(threads_.begin(), threads_.end(), thread);
  if (it == threads_.end()) return;
  removed_ += thread->totals();
  threads_.erase(it);
}

void LogRegistry::close() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_.store(true, std::memory_order_relaxed);
}

void LogRegistry::release_threads() noexcept {
  std::vector<std::shared_ptr<ThreadLogs>> released;
  std::shared_ptr<ChunkPool> pool;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& thread : threads_) removed_ += thread->totals();
    released.swap(threads_);
    pool.swap(pool_);
  }
}

LogTotals LogRegistry::totals() const {
  std::lock_guard<std::mutex> lock(mutex_);
  LogTotals sum = removed_;
  for (const auto& thread : threads_) sum += thread->totals();
  return sum;
}

// ---- Hot path -----------------------------------------------------------------------------

void write_log(LogRegistry& registry, int severity, std::string_view body, AttributeList attributes,
               std::string_view event_name) noexcept {
  ThreadLogs* logs = t_log_fast.logs;
  if (t_log_fast.registry != registry.id()) [[unlikely]] {
    logs = attach(registry);
    if (logs == nullptr) return;
  }
  if (registry.closed()) [[unlikely]] {
    logs->dropped.increment();
    return;
  }
  const std::size_t limit = registry.attribute_count_limit();
  std::size_t attribute_bytes = 0;
  if (attributes.size() != 0) {
    std::size_t count = 0;
    for (const auto& [key, value] : attributes) {
      if (value.is_null()) continue;
      if (count++ >= limit) break;
      attribute_bytes += encoded_size(key, value);
    }
  }
  const std::size_t variable = event_name.size() + body.size() + attribute_bytes;
  const bool inline_part = variable <= kMaxInlineLogBytes;
  LogExtras* extras = nullptr;
  if (!inline_part) {
    extras = make_extras(body, attributes, limit, event_name);
    if (extras == nullptr) {
      logs->dropped.increment();
      return;
    }
  }
  const std::size_t size = log_record_size(inline_part ? variable : 0);
  unsigned char* out = logs->reserve(size);
  if (out == nullptr) {
    delete extras;
    return;
  }
  auto* header = new (out) LogRecordHeader;
  header->size = static_cast<std::uint32_t>(size);
  header->severity = static_cast<std::uint8_t>(severity);
  header->ticks = read_ticks();
  Identity span;
  if (current_span_identity(span)) {
    header->has_span = true;
    header->trace_id = span.trace_id;
    header->span_id = span.span_id;
    header->trace_flags = span.flags & kFlagSampled;
  }
  header->extras = extras;
  if (inline_part) {
    char* p = reinterpret_cast<char*>(out + sizeof(LogRecordHeader));
    codec::copy_short(p, event_name.data(), event_name.size());
    p += event_name.size();
    std::memcpy(p, body.data(), body.size());
    p += body.size();
    header->event_name_size = static_cast<std::uint16_t>(event_name.size());
    header->body_size = static_cast<std::uint32_t>(body.size());
    header->attributes_size = static_cast<std::uint32_t>(attribute_bytes);
    if (attribute_bytes != 0) {
      std::size_t count = 0;
      std::size_t room = attribute_bytes;
      for (const auto& [key, value] : attributes) {
        if (value.is_null()) continue;
        if (count++ >= limit) break;
        const std::size_t n = encode_attribute(p, room, key, value);
        p += n;
        room -= n;
      }
    }
  }
  logs->commit(size);
}

}  // namespace lens::native
