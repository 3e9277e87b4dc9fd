// Registration, validation and resolution of the span-group vocabulary (see vocabulary.hpp).
// Not synchronised; groups.cpp serialises every call.
#include "groups/vocabulary.hpp"

#include <algorithm>
#include <utility>

#include "core/parse.hpp"

namespace lens::detail {
namespace {

constexpr std::string_view kAll = groups::kPresetAll;

std::string normalised(std::string_view name) { return to_lower(trim(name)); }

std::string reserved_message(std::string_view what, const std::string& ns) {
  return "Span group namespace " + quoted(ns) + " uses 'all' as a " + std::string(what) +
         " name; 'all' is reserved: it always means every registered group";
}

}  // namespace

Result<SpanGroupVocabulary::Namespace> SpanGroupVocabulary::normalise(
    const std::string& ns, const std::vector<std::string>& groups,
    const std::map<std::string, std::vector<std::string>>& presets) {
  Namespace entry;
  for (const auto& raw : groups) {
    std::string group = normalised(raw);
    if (group.empty()) {
      return Error("Span group namespace " + quoted(ns) + " has an empty group name");
    }
    if (group == kAll) {
      return Error(reserved_message("group", ns));
    }
    entry.groups.insert(std::move(group));
  }
  for (const auto& [raw_name, members] : presets) {
    std::string preset = normalised(raw_name);
    if (preset.empty()) {
      return Error("Span group namespace " + quoted(ns) + " has an empty preset name");
    }
    if (preset == kAll) {
      return Error(reserved_message("preset", ns));
    }
    auto& target = entry.presets[preset];
    for (const auto& raw_member : members) {
      std::string member = normalised(raw_member);
      if (member.empty()) {
        return Error("Preset " + quoted(preset) + " of span group namespace " + quoted(ns) +
                     " has an empty group name");
      }
      target.insert(std::move(member));
    }
  }
  return entry;
}

std::string SpanGroupVocabulary::other_owner(const std::string& group,
                                             const std::string& self) const {
  for (const auto& [name, entry] : namespaces_) {
    if (name != self && entry.groups.contains(group)) {
      return name;
    }
  }
  return {};
}

Status SpanGroupVocabulary::add(std::string_view ns, const std::vector<std::string>& groups,
                                const std::map<std::string, std::vector<std::string>>& presets,
                                bool allow_override) {
  const std::string name = normalised(ns);
  if (name.empty()) {
    return Error("Span group namespace must be a non-empty string");
  }
  auto entry = normalise(name, groups, presets);
  if (!entry.ok()) {
    return entry.error();
  }
  if (!allow_override && namespaces_.contains(name)) {
    return Error("Span group namespace " + quoted(name) +
                 " is already registered; pass allow_override to replace it");
  }
  if (!allow_override) {
    for (const auto& group : entry->groups) {
      const std::string owner = other_owner(group, name);
      if (!owner.empty()) {
        return Error("Span group " + quoted(group) + " of namespace " + quoted(name) +
                     " is already registered by namespace " + quoted(owner));
      }
    }
  }
  // A preset may borrow a group only from another namespace: with override, this namespace's
  // previous groups are being replaced and cannot be referenced.
  for (const auto& [preset, members] : entry->presets) {
    for (const auto& member : members) {
      if (!entry->groups.contains(member) && other_owner(member, name).empty()) {
        return Error("Preset " + quoted(preset) + " of span group namespace " + quoted(name) +
                     " names group " + quoted(member) +
                     ", which is not among its groups and no other namespace has registered "
                     "it; register the library that owns the group first");
      }
    }
  }
  namespaces_.insert_or_assign(name, std::move(entry).value());
  return Status::success();
}

Status SpanGroupVocabulary::remove(std::string_view ns) {
  const auto it = namespaces_.find(normalised(ns));
  if (it == namespaces_.end()) {
    return Error("Span group namespace " + quoted(normalised(ns)) + " is not registered");
  }
  namespaces_.erase(it);
  return Status::success();
}

bool SpanGroupVocabulary::has_identical(
    std::string_view ns, const std::vector<std::string>& groups,
    const std::map<std::string, std::vector<std::string>>& presets) const {
  const std::string name = normalised(ns);
  const auto it = namespaces_.find(name);
  if (it == namespaces_.end()) {
    return false;
  }
  const auto entry = normalise(name, groups, presets);
  return entry.ok() && *entry == it->second;
}

std::set<std::string> SpanGroupVocabulary::groups() const {
  std::set<std::string> all;
  for (const auto& [name, entry] : namespaces_) {
    all.insert(entry.groups.begin(), entry.groups.end());
  }
  return all;
}

std::vector<std::string> SpanGroupVocabulary::namespaces() const {
  std::vector<std::string> names;
  names.reserve(namespaces_.size());
  for (const auto& [name, entry] : namespaces_) {
    names.push_back(name);
  }
  return names;
}

std::map<std::string, std::set<std::string>> SpanGroupVocabulary::presets() const {
  std::map<std::string, std::set<std::string>> result;
  const std::set<std::string>& all = result[std::string(kAll)] = groups();
  for (const auto& [name, entry] : namespaces_) {
    for (const auto& [preset, members] : entry.presets) {
      auto& target = result[preset];
      for (const auto& member : members) {
        // A borrowed group disappears with its owner's registration.
        if (all.contains(member)) {
          target.insert(member);
        }
      }
    }
  }
  return result;
}

LenientResolution SpanGroupVocabulary::resolve(std::string_view spec) const {
  LenientResolution out;
  const auto presets_by_name = presets();
  const std::set<std::string>& all = presets_by_name.at(std::string(kAll));
  for (const std::string_view part : split(spec, ',')) {
    const std::string_view trimmed = trim(part);
    if (trimmed.empty()) {
      continue;
    }
    std::string name = to_lower(trimmed);
    if (const auto preset = presets_by_name.find(name); preset != presets_by_name.end()) {
      out.enabled.insert(preset->second.begin(), preset->second.end());
    } else if (all.contains(name)) {
      out.enabled.insert(std::move(name));
    } else if (std::find(out.unknown.begin(), out.unknown.end(), name) == out.unknown.end()) {
      out.unknown.push_back(std::move(name));
    }
  }
  return out;
}

std::string SpanGroupVocabulary::valid_options() const {
  std::set<std::string> options = groups();
  for (const auto& [preset, members] : presets()) {
    options.insert(preset);
  }
  std::string text = "[";
  for (const auto& option : options) {
    if (text.size() > 1) {
      text += ", ";
    }
    text += option;
  }
  text += "]";
  return text;
}

}  // namespace lens::detail
