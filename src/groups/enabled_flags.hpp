// The enabled state of span groups: one interned atomic flag per name (stable address, never
// freed, read lock-free by SpanGroupHandle) plus the set of enabled names.
// Thread-safe: mutators take the mutex exclusively, lookups share it; flags are read without it.
#pragma once

#include <atomic>
#include <map>
#include <new>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>

namespace lens::detail {

class SpanGroupFlags {
 public:
  // The flag for `name`, created (with the current enabled state) on first use. The returned
  // reference and the interned name stay valid for the life of this object.
  const std::atomic<bool>& intern(std::string_view name, std::string_view* interned_name);

  // Replaces the enabled set and flips the affected flags.
  void set_enabled(const std::set<std::string>& groups);
  bool is_enabled(std::string_view name) const;
  std::set<std::string> enabled() const;

  // Held by the forking thread across fork() (see groups.cpp), so that a child never
  // inherits the lock held by a thread that does not exist there.
  void lock_for_fork() { mutex_.lock(); }
  void unlock_after_fork_in_parent() { mutex_.unlock(); }
  // In the child the lock's owner is a thread id that no longer exists, and a read-write lock
  // cannot be released from another id: start the child with a fresh, unlocked one instead.
  void reset_lock_after_fork_in_child() { new (&mutex_) std::shared_mutex(); }

 private:
  mutable std::shared_mutex mutex_;
  // std::map nodes never move, so flag addresses and key storage are stable; entries are never
  // erased.
  std::map<std::string, std::atomic<bool>, std::less<>> flags_;
  std::set<std::string, std::less<>> enabled_;
};

}  // namespace lens::detail
