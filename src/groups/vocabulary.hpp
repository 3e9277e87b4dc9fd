// The namespaced span-group vocabulary behind lens/groups.hpp: namespaces with their groups and
// presets, validation of a registration (docs/span-groups.md, "API") and spec resolution
// (docs/span-groups.md, "Specs").
// Not synchronised: a plain value type; the caller serialises access (groups.cpp holds a mutex).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lens/groups.hpp"
#include "lens/result.hpp"

namespace lens::detail {

class SpanGroupVocabulary {
 public:
  // See lens::register_span_groups. Leaves the vocabulary unchanged on error.
  Status add(std::string_view ns, const std::vector<std::string>& groups,
             const std::map<std::string, std::vector<std::string>>& presets, bool allow_override);
  Status remove(std::string_view ns);
  void clear() { namespaces_.clear(); }

  // True when `ns` is registered with exactly these (normalised) groups and presets.
  bool has_identical(std::string_view ns, const std::vector<std::string>& groups,
                     const std::map<std::string, std::vector<std::string>>& presets) const;

  std::set<std::string> groups() const;
  std::vector<std::string> namespaces() const;
  // Union across namespaces, restricted to registered groups; always has `all`.
  std::map<std::string, std::set<std::string>> presets() const;

  // Lenient resolution; the strict form is built on it.
  LenientResolution resolve(std::string_view spec) const;
  // "[all, checkpoint, ...]": every group and preset name, sorted.
  std::string valid_options() const;

 private:
  struct Namespace {
    std::set<std::string> groups;
    std::map<std::string, std::set<std::string>> presets;
    bool operator==(const Namespace&) const = default;
  };

  // Trims, lower-cases and checks the names of one registration (empty, reserved `all`).
  static Result<Namespace> normalise(
      const std::string& ns, const std::vector<std::string>& groups,
      const std::map<std::string, std::vector<std::string>>& presets);
  // The first namespace other than `self` (in sorted order) that owns `group`, or "".
  std::string other_owner(const std::string& group, const std::string& self) const;

  std::map<std::string, Namespace, std::less<>> namespaces_;
};

}  // namespace lens::detail
