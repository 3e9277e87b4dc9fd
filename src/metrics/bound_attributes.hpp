// Attribute sets of bound instruments (see lens/metrics.hpp): the lens form is the key of a
// series; the API and SDK forms are made once per series for observing and exporting; a recording
// call's attribute list is hashed and compared with a series' set without allocating.
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

// The lens form of an attribute list (integers widened to 64 bits; a repeated key: last wins).
Attributes to_attributes(AttributeList list);

// The lens form of one API value (integers widened to 64 bits).
AttributeValue to_lens(const opentelemetry::common::AttributeValue& value);

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

// Independent of the order of the list. Few multiplications in sequence: it runs on every
// call, and a weak spread only costs a cache miss (same_set() decides).
inline std::uint64_t hash_of(AttributeList list) noexcept {
  namespace nostd = opentelemetry::nostd;
  std::uint64_t total = 0;
  for (const auto& [key, value] : list) {
    std::uint64_t h = hash_bytes(key.data(), key.size(), 0xcbf29ce484222325ULL);
    h += (value.index() + 1) * 0xc2b2ae3d27d4eb4fULL;
    // get_if chains instead of visit: the common kinds first, no jump table.
    if (const auto* s = nostd::get_if<const char*>(&value)) {
      h = hash_bytes(*s, std::strlen(*s), h);
    } else if (const auto* sv = nostd::get_if<nostd::string_view>(&value)) {
      h = hash_bytes(sv->data(), sv->size(), h);
    } else if (const auto* i = nostd::get_if<std::int32_t>(&value)) {
      h ^= static_cast<std::uint64_t>(*i) * 0x9e3779b97f4a7c15ULL;
    } else if (const auto* l = nostd::get_if<std::int64_t>(&value)) {
      h ^= static_cast<std::uint64_t>(*l) * 0x9e3779b97f4a7c15ULL;
    } else if (const auto* b = nostd::get_if<bool>(&value)) {
      h ^= *b ? 0x9e3779b97f4a7c15ULL : 0;
    } else if (const auto* d = nostd::get_if<double>(&value)) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, d, sizeof *d);
      h ^= bits * 0x9e3779b97f4a7c15ULL;
    }
    // Other kinds (unsigned, arrays) spread by their kind only.
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

inline bool same_value(const AttributeValue& have,
                       const opentelemetry::common::AttributeValue& value) noexcept {
  namespace nostd = opentelemetry::nostd;
  // get_if chains instead of visit: the common kinds first, no jump table.
  if (const auto* c = nostd::get_if<const char*>(&value)) {
    const auto* s = std::get_if<std::string>(&have);
    return s != nullptr && std::strlen(*c) == s->size() && same_chars(s->data(), *c, s->size());
  }
  if (const auto* sv = nostd::get_if<nostd::string_view>(&value)) {
    const auto* s = std::get_if<std::string>(&have);
    return s != nullptr && sv->size() == s->size() && same_chars(s->data(), sv->data(), s->size());
  }
  if (const auto* i = nostd::get_if<std::int32_t>(&value)) {
    const auto* h = std::get_if<std::int64_t>(&have);
    return h != nullptr && *h == *i;
  }
  if (const auto* l = nostd::get_if<std::int64_t>(&value)) {
    const auto* h = std::get_if<std::int64_t>(&have);
    return h != nullptr && *h == *l;
  }
  if (const auto* b = nostd::get_if<bool>(&value)) {
    const auto* h = std::get_if<bool>(&have);
    return h != nullptr && *h == *b;
  }
  if (const auto* d = nostd::get_if<double>(&value)) {
    const auto* h = std::get_if<double>(&have);
    return h != nullptr && *h == *d;
  }
  // Unsigned integers and arrays are rare in bound sets: compared in lens form (allocates).
  try {
    return to_lens(value) == have;
  } catch (...) {
    return false;
  }
}

// Whether `list` names exactly the set `flat` (a repeated key in `list` never matches).
inline bool same_set(const FlatAttributes& flat, AttributeList list) noexcept {
  const std::size_t n = flat.size();
  if (n != list.size() || n > 64) return false;
  std::uint64_t matched = 0;
  for (const auto& [key, value] : list) {
    std::size_t j = 0;
    while (j < n && !(flat[j].first.size() == key.size() &&
                      same_chars(flat[j].first.data(), key.data(), key.size()))) {
      ++j;
    }
    if (j == n || (matched >> j & 1U) != 0) return false;
    matched |= std::uint64_t{1} << j;
    if (!same_value(*flat[j].second, value)) return false;
  }
  return true;
}

}  // namespace lens::metrics::detail
