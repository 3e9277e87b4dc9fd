// The public span-group API of lens/groups.hpp over one process-wide vocabulary and flag table.
// Thread-safety: the vocabulary has its own shared_mutex; the flags have theirs; no function
// holds both at once, so there is no lock order to get wrong.
#include "lens/groups.hpp"

#include <pthread.h>

#include <mutex>
#include <new>
#include <shared_mutex>
#include <utility>

#include "core/parse.hpp"
#include "groups/enabled_flags.hpp"
#include "groups/vocabulary.hpp"

namespace lens {
namespace {

std::vector<std::string> lens_groups() {
  return {groups::kLensGroups.begin(), groups::kLensGroups.end()};
}

std::map<std::string, std::vector<std::string>> lens_presets() {
  return {
      {std::string(groups::kPresetDefault),
       {std::string(groups::kJob), std::string(groups::kCheckpoint),
        std::string(groups::kEvaluate)}},
      {std::string(groups::kPresetPerStep), lens_groups()},
  };
}

struct Registry {
  std::shared_mutex mutex;
  detail::SpanGroupVocabulary vocabulary;  // guarded by mutex

  Registry() { static_cast<void>(register_lens()); }
  // Caller holds `mutex` exclusively (or is the constructor).
  Status register_lens() {
    if (vocabulary.has_identical(groups::kNamespace, lens_groups(), lens_presets())) {
      return Status::success();
    }
    return vocabulary.add(groups::kNamespace, lens_groups(), lens_presets(), false);
  }
};

// Both objects are deliberately leaked: handles hold pointers into the flag table, and sites may
// check them from static destructors or detached threads after main returns.
Registry& registry() {
  static Registry* const instance = new Registry();  // thread-safe lazy init; registers `lens`
  return *instance;
}

detail::SpanGroupFlags& flags() {
  static detail::SpanGroupFlags* const instance = new detail::SpanGroupFlags();
  return *instance;
}

// fork(): the forking thread takes both locks (always registry first), so the child starts
// with them free and consistent whatever other threads were doing.
void lock_for_fork() {
  registry().mutex.lock();
  flags().lock_for_fork();
}
void unlock_after_fork_in_parent() {
  flags().unlock_after_fork_in_parent();
  registry().mutex.unlock();
}
// A read-write lock held by the parent's thread cannot be released under the child's thread
// id; the child gets fresh locks (it is single-threaded here, so nothing can be waiting).
void reset_locks_after_fork_in_child() {
  flags().reset_lock_after_fork_in_child();
  new (&registry().mutex) std::shared_mutex();
}
[[maybe_unused]] const bool kForkHandlersInstalled = [] {
  static_cast<void>(registry());
  static_cast<void>(flags());
  return pthread_atfork(lock_for_fork, unlock_after_fork_in_parent,
                        reset_locks_after_fork_in_child) == 0;
}();

}  // namespace

Status register_span_groups(std::string_view ns, const std::vector<std::string>& groups,
                            const std::map<std::string, std::vector<std::string>>& presets,
                            bool allow_override) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  return r.vocabulary.add(ns, groups, presets, allow_override);
}

Status unregister_span_groups(std::string_view ns) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  return r.vocabulary.remove(ns);
}

Status register_lens_span_groups() {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  return r.register_lens();
}

std::vector<std::string> registered_span_groups() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  const auto all = r.vocabulary.groups();
  return {all.begin(), all.end()};
}

std::vector<std::string> span_group_namespaces() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  return r.vocabulary.namespaces();
}

std::map<std::string, std::set<std::string>> span_group_presets() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  return r.vocabulary.presets();
}

Result<std::set<std::string>> resolve_span_groups(std::string_view spec) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  LenientResolution resolution = r.vocabulary.resolve(spec);
  if (!resolution.unknown.empty()) {
    return Error("Unknown span group or preset: " + detail::quoted(resolution.unknown.front()) +
                 ". Valid options: " + r.vocabulary.valid_options());
  }
  return std::move(resolution.enabled);
}

LenientResolution resolve_span_groups_lenient(std::string_view spec) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  return r.vocabulary.resolve(spec);
}

void set_enabled_span_groups(const std::set<std::string>& groups) { flags().set_enabled(groups); }

bool is_span_group_enabled(std::string_view name) { return flags().is_enabled(name); }

std::set<std::string> enabled_span_groups() { return flags().enabled(); }

SpanGroupHandle span_group_handle(std::string_view name) {
  std::string_view interned;
  const std::atomic<bool>& flag = flags().intern(name, &interned);
  return SpanGroupHandle(&flag, interned);
}

namespace detail {

void reset_span_groups_for_testing() {
  {
    Registry& r = registry();
    std::unique_lock lock(r.mutex);
    r.vocabulary.clear();
    static_cast<void>(r.register_lens());
  }
  flags().set_enabled({});
}

}  // namespace detail
}  // namespace lens
