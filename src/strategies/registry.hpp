// A small name -> callable registry shared by the rank-strategy and sampling-strategy
// registries, so both give the same error wording (docs/strategies.md, "Rank strategies").
// Thread-safety: every member takes the registry's mutex; callables are returned by copy and
// called by the caller outside the lock.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lens/result.hpp"

namespace lens::detail {

template <class Fn>
class NamedRegistry {
 public:
  using Map = std::map<std::string, Fn, std::less<>>;

  // `kind` is the lower-case noun used in messages, e.g. "rank strategy".
  NamedRegistry(std::string kind, Map builtins) : kind_(std::move(kind)), builtins_(builtins) {
    for (const auto& entry : builtins_) {
      builtin_names_.insert(entry.first);
    }
    entries_ = std::move(builtins);
  }

  const std::set<std::string>& builtin_names() const noexcept { return builtin_names_; }

  Status add(std::string_view name, Fn fn, bool allow_override) {
    if (name.empty()) {
      return Error(capitalized() + " name must be non-empty");
    }
    if (!fn) {
      return Error(capitalized() + " '" + std::string(name) + "' is empty; expected a callable");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) {
      if (!allow_override) {
        return Error(capitalized() + " '" + std::string(name) +
                     "' is already registered; pass allow_override=true to replace it");
      }
      it->second = std::move(fn);
      return Status::success();
    }
    entries_.emplace(std::string(name), std::move(fn));
    return Status::success();
  }

  Status remove(std::string_view name) {
    if (builtin_names_.find(std::string(name)) != builtin_names_.end()) {
      return Error(capitalized() + " '" + std::string(name) +
                   "' is built-in and cannot be unregistered");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      return Error(capitalized() + " '" + std::string(name) +
                   "' is not registered. Registered strategies: " + list_locked() + ".");
    }
    entries_.erase(it);
    return Status::success();
  }

  // The entry called `name`; failing an exact match, the first (in name order) whose name
  // differs only in ASCII case, so that "ALL_RANKS" selects all_ranks as "Console" selects the
  // console exporter.
  std::optional<Fn> find(std::string_view name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) {
      return it->second;
    }
    for (const auto& entry : entries_) {
      if (same_ignoring_case(entry.first, name)) return entry.second;
    }
    return std::nullopt;
  }

  static bool same_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    const auto lower = [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
  }

  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& entry : entries_) {
      out.push_back(entry.first);  // std::map iterates in sorted order
    }
    return out;
  }

  // `Unknown <kind> 'name'<where>. Registered strategies: [a, b]`.
  Error unknown(std::string_view name, std::string_view where = {}) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string message = "Unknown " + kind_ + " '" + std::string(name) + "'";
    if (!where.empty()) {
      message += " in " + std::string(where);
    }
    return Error(message + ". Registered strategies: " + list_locked() + ".");
  }

  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_ = builtins_;
  }

 private:
  std::string capitalized() const {
    std::string out = kind_;
    if (!out.empty() && out.front() >= 'a' && out.front() <= 'z') {
      out.front() = static_cast<char>(out.front() - 'a' + 'A');
    }
    return out;
  }

  std::string list_locked() const {
    std::string out = "[";
    for (const auto& entry : entries_) {
      if (out.size() > 1) {
        out += ", ";
      }
      out += entry.first;
    }
    return out + "]";
  }

  const std::string kind_;
  const Map builtins_;
  std::set<std::string> builtin_names_;
  mutable std::mutex mutex_;
  Map entries_;
};

// Resets the sampling-strategy registry (defined in sampling_strategies.cpp).
void reset_sampling_strategies();

}  // namespace lens::detail
