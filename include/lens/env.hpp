// An injectable view of environment variables, so that configuration, rank detection and
// resource detection can be tested without mutating the process environment.
// Thread-safety: an Env built from a map is immutable; Env::process() reads ::getenv on
// every call and is as thread-safe as the process environment (do not setenv concurrently).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace lens {

class Env {
 public:
  using Map = std::map<std::string, std::string, std::less<>>;

  // The live process environment.
  static Env process();
  // A fixed set of variables; everything else is unset.
  static Env from(Map variables);
  // A fixed set of variables that calls `on_read` with every name looked up, set or not: lets a
  // test check that each variable the library reads is listed (lens/known_variables.hpp).
  // `on_read` runs on the reading thread; it must do its own locking if reads are concurrent.
  static Env recording(Map variables, std::function<void(std::string_view)> on_read);

  // The raw value, or nullopt when the variable is not set at all.
  std::optional<std::string> get(std::string_view name) const;
  // The raw value, or `fallback` when unset.
  std::string get_or(std::string_view name, std::string_view fallback = {}) const;
  // True when the variable exists (even with an empty value).
  bool contains(std::string_view name) const { return get(name).has_value(); }
  // A snapshot of every variable (for the process environment: a copy of environ).
  Map snapshot() const;

 private:
  explicit Env(std::shared_ptr<const Map> variables,
               std::function<void(std::string_view)> on_read = {})
      : variables_(std::move(variables)), on_read_(std::move(on_read)) {}
  std::shared_ptr<const Map> variables_;  // null means the live process environment
  std::function<void(std::string_view)> on_read_;  // empty except for Env::recording
};

}  // namespace lens
