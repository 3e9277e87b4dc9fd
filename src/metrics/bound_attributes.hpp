// Attribute sets of bound instruments (see lens/metrics.hpp): the lens form is the key of a
// series; the API and SDK forms are made once per series for observing and exporting; a recording
// call's lens::AttributeList is hashed and compared with a series' set without allocating.
#pragma once

#include <opentelemetry/common/attribute_value.h>
#include <opentelemetry/sdk/metrics/data/metric_data.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/metrics.hpp"

namespace lens::metrics::detail {

// Views of one attribute set as API key-values, valid as long as the set it was made from.
struct ApiAttributes {
  std::vector<std::pair<opentelemetry::nostd::string_view, opentelemetry::common::AttributeValue>>
      key_values;
  std::vector<std::unique_ptr<bool[]>> bools;  // std::vector<bool> has no contiguous storage
  std::vector<std::vector<opentelemetry::nostd::string_view>> strings;
};

ApiAttributes api_attributes(const Attributes& attributes);
opentelemetry::sdk::metrics::PointAttributes point_attributes(const ApiAttributes& attributes);

// The lens form of an attribute list (null values skipped; a repeated key: last wins).
Attributes to_attributes(AttributeList list);

// The lens form of one non-null argument (an unsigned value above INT64_MAX wraps, as the SDK's
// int64 point attribute does).
AttributeValue to_lens(const AttributeArg& value);

// Inline below: the lookup of Counter::add / Histogram::record runs them on every call.

inline std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// Short keys and values: whole words, the ends of a short tail overlapping. The hash only picks
// a cache entry (same_set() decides).
inline std::uint64_t hash_bytes(const char* p, std::size_t size, std::uint64_t h) noexcept {
  constexpr std::uint64_t k = 0x9e3779b97f4a7c15ULL;
  for (; size >= 8; size -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    h = (h ^ word) * k;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  if (size >= 4) {
    std::uint32_t a;
    std::uint32_t b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + size - 4, 4);
    tail = (std::uint64_t{a} << 32) | b;
  } else if (size > 0) {
    tail = (std::uint64_t{static_cast<unsigned char>(p[0])} << 16) |
           (std::uint64_t{static_cast<unsigned char>(p[size / 2])} << 8) |
           static_cast<unsigned char>(p[size - 1]);
  }
  h = (h ^ tail ^ (std::uint64_t{size} << 56)) * k;
  return h ^ (h >> 32);
}

// Independent of the order of the list; null values are skipped. Few multiplications in
// sequence: it runs on every call, and a weak spread only costs a cache miss (same_set() decides).
inline std::uint64_t hash_of(AttributeList list) noexcept {
  using Kind = AttributeArg::Kind;
  std::uint64_t total = 0;
  for (const auto& [key, value] : list) {
    const Kind kind = value.kind();
    if (kind == Kind::kNull) continue;
    std::uint64_t h = hash_bytes(key.data(), key.size(), 0xcbf29ce484222325ULL);
    h += (static_cast<std::uint64_t>(kind) + 1) * 0xc2b2ae3d27d4eb4fULL;
    // Branches instead of a switch: the common kinds first, no jump table.
    if (kind == Kind::kString) {
      const std::string_view s = value.as_string();
      h = hash_bytes(s.data(), s.size(), h);
    } else if (kind == Kind::kInt64) {
      h ^= static_cast<std::uint64_t>(value.as_int64()) * 0x9e3779b97f4a7c15ULL;
    } else if (kind == Kind::kBool) {
      h ^= value.as_bool() ? 0x9e3779b97f4a7c15ULL : 0;
    } else if (kind == Kind::kDouble) {
      const double d = value.as_double();
      std::uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof d);
      h ^= bits * 0x9e3779b97f4a7c15ULL;
    }
    // Other kinds (large unsigned, arrays) spread by their kind only.
    total += h;  // a sum: the order of the list does not matter
  }
  return mix(total);
}

// An attribute set as (key, value) views in key order, for same_set().
using FlatAttributes = std::vector<std::pair<std::string_view, const AttributeValue*>>;

inline FlatAttributes flat_attributes(const Attributes& attributes) {
  FlatAttributes out;
  for (const auto& [key, value] : attributes) out.emplace_back(key, &value);
  return out;
}

// Short strings: a byte loop beats a call to memcmp.
inline bool same_chars(const char* a, const char* b, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// `value` is not null.
inline bool same_value(const AttributeValue& have, const AttributeArg& value) noexcept {
  using Kind = AttributeArg::Kind;
  // Branches instead of a switch: the common kinds first, no jump table.
  const Kind kind = value.kind();
  if (kind == Kind::kString) {
    const auto* s = std::get_if<std::string>(&have);
    const std::string_view v = value.as_string();
    return s != nullptr && v.size() == s->size() && same_chars(s->data(), v.data(), s->size());
  }
  if (kind == Kind::kInt64) {
    const auto* h = std::get_if<std::int64_t>(&have);
    return h != nullptr && *h == value.as_int64();
  }
  if (kind == Kind::kBool) {
    const auto* h = std::get_if<bool>(&have);
    return h != nullptr && *h == value.as_bool();
  }
  if (kind == Kind::kDouble) {
    const auto* h = std::get_if<double>(&have);
    return h != nullptr && *h == value.as_double();
  }
  // Large unsigned integers and arrays are rare in bound sets: compared in lens form (allocates).
  try {
    return to_lens(value) == have;
  } catch (...) {
    return false;
  }
}

// Whether `list`, its null values skipped, names exactly the set `flat` (a repeated key in `list`
// never matches).
inline bool same_set(const FlatAttributes& flat, AttributeList list) noexcept {
  const std::size_t n = flat.size();
  if (n > list.size() || n > 64) return false;
  std::uint64_t matched = 0;
  std::size_t seen = 0;
  for (const auto& [key, value] : list) {
    if (value.is_null()) continue;
    std::size_t j = 0;
    while (j < n && !(flat[j].first.size() == key.size() &&
                      same_chars(flat[j].first.data(), key.data(), key.size()))) {
      ++j;
    }
    if (j == n || (matched >> j & 1U) != 0) return false;
    matched |= std::uint64_t{1} << j;
    ++seen;
    if (!same_value(*flat[j].second, value)) return false;
  }
  return seen == n;
}

}  // namespace lens::metrics::detail
