// Env: the live process environment or a fixed map (see include/lens/env.hpp).
#include "lens/env.hpp"

#include <cstdlib>
#include <string>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX global

namespace lens {

Env Env::process() { return Env(nullptr); }

Env Env::from(Map variables) { return Env(std::make_shared<const Map>(std::move(variables))); }

Env Env::recording(Map variables, std::function<void(std::string_view)> on_read) {
  return Env(std::make_shared<const Map>(std::move(variables)), std::move(on_read));
}

std::optional<std::string> Env::get(std::string_view name) const {
  if (on_read_) on_read_(name);
  if (variables_ == nullptr) {
    const std::string key(name);
    const char* value = std::getenv(key.c_str());  // NOLINT(concurrency-mt-unsafe)
    if (value == nullptr) {
      return std::nullopt;
    }
    return std::string(value);
  }
  auto it = variables_->find(name);
  if (it == variables_->end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string Env::get_or(std::string_view name, std::string_view fallback) const {
  auto value = get(name);
  return value ? *value : std::string(fallback);
}

Env::Map Env::snapshot() const {
  if (variables_ != nullptr) {
    return *variables_;
  }
  Map out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view item(*entry);
    auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      continue;
    }
    out.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
  }
  return out;
}

}  // namespace lens
