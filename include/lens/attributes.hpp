// The attribute vocabulary of every signal: AttributeList / AttributeArg, the non-owning list a
// span, log or metric call takes at its call site, and AttributeValue / Attributes, the owning
// typed value and ordered map of resources, bound metric sets and the `lens config` output (an
// ordered map keeps every printed form deterministic). docs/attributes.md describes both.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace lens {

using AttributeValue =
    std::variant<bool, std::int64_t, double, std::string, std::vector<bool>,
                 std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>>;

using Attributes = std::map<std::string, AttributeValue, std::less<>>;

// Human-readable rendering: strings verbatim, numbers in shortest round-trip form,
// booleans as true/false, arrays as [a, b].
std::string to_string(const AttributeValue& value);

// One attribute value as passed at an instrumentation site: a tagged, non-owning view (24 bytes,
// trivially copyable). Strings and vectors are referenced, not copied, so an AttributeArg must not
// outlive the full-expression that made it (the primitives consume their lists immediately).
// Maps, sets and other types have no constructor: they are rejected at compile time (the Python
// original skipped them at run time; docs/attributes.md). Arrays are homogeneous by construction,
// where the original let mixed-type lists through.
class AttributeArg {
 public:
  enum class Kind : std::uint8_t {
    kNull,  // skipped by every consumer
    kBool,
    kInt64,
    kUInt64,  // only for unsigned values above INT64_MAX
    kDouble,
    kString,
    kBoolArray,
    kInt64Array,
    kDoubleArray,
    kStringArray,
  };

  constexpr AttributeArg() noexcept = default;
  constexpr AttributeArg(std::nullptr_t) noexcept {}
  constexpr AttributeArg(std::monostate) noexcept {}
  // A template so that pointers do not silently convert to bool.
  template <class T>
  requires std::same_as<T, bool>
  constexpr AttributeArg(T value) noexcept : kind_(Kind::kBool), bool_(value) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) constexpr AttributeArg(T value) noexcept {
    if constexpr (std::is_unsigned_v<T> && sizeof(T) >= sizeof(std::int64_t)) {
      if (value > static_cast<T>(std::numeric_limits<std::int64_t>::max())) {
        kind_ = Kind::kUInt64;
        uint64_ = static_cast<std::uint64_t>(value);
        return;
      }
    }
    kind_ = Kind::kInt64;
    int64_ = static_cast<std::int64_t>(value);
  }
  template <std::floating_point T>
  constexpr AttributeArg(T value) noexcept
      : kind_(Kind::kDouble), double_(static_cast<double>(value)) {}
  // A null pointer is a null value.
  constexpr AttributeArg(const char* value) noexcept {
    if (value != nullptr) {
      kind_ = Kind::kString;
      string_ = std::string_view(value);
    }
  }
  constexpr AttributeArg(std::string_view value) noexcept : kind_(Kind::kString), string_(value) {}
  AttributeArg(const std::string& value) noexcept : kind_(Kind::kString), string_(value) {}
  AttributeArg(const std::vector<bool>& value) noexcept : kind_(Kind::kBoolArray), bools_(&value) {}
  AttributeArg(const std::vector<std::int64_t>& value) noexcept
      : kind_(Kind::kInt64Array), int64s_(&value) {}
  AttributeArg(const std::vector<double>& value) noexcept
      : kind_(Kind::kDoubleArray), doubles_(&value) {}
  AttributeArg(const std::vector<std::string>& value) noexcept
      : kind_(Kind::kStringArray), strings_(&value) {}
  // A view of a lens::AttributeValue.
  AttributeArg(const AttributeValue& value) noexcept
      : AttributeArg(std::visit([](const auto& v) { return AttributeArg(v); }, value)) {}

  constexpr Kind kind() const noexcept { return kind_; }
  constexpr bool is_null() const noexcept { return kind_ == Kind::kNull; }
  constexpr bool is_string() const noexcept { return kind_ == Kind::kString; }

  // Accessors: valid only for the matching kind.
  constexpr bool as_bool() const noexcept { return bool_; }
  constexpr std::int64_t as_int64() const noexcept { return int64_; }
  constexpr std::uint64_t as_uint64() const noexcept { return uint64_; }
  constexpr double as_double() const noexcept { return double_; }
  constexpr std::string_view as_string() const noexcept { return string_; }
  const std::vector<bool>& as_bool_array() const noexcept { return *bools_; }
  const std::vector<std::int64_t>& as_int64_array() const noexcept { return *int64s_; }
  const std::vector<double>& as_double_array() const noexcept { return *doubles_; }
  const std::vector<std::string>& as_string_array() const noexcept { return *strings_; }

 private:
  Kind kind_ = Kind::kNull;
  union {
    bool bool_;
    std::int64_t int64_ = 0;
    std::uint64_t uint64_;
    double double_;
    std::string_view string_;
    const std::vector<bool>* bools_;
    const std::vector<std::int64_t>* int64s_;
    const std::vector<double>* doubles_;
    const std::vector<std::string>* strings_;
  };
};

// The attribute list of every recording call (spans, span events, logs, metrics):
// {{"key", value}, ...}, consumed before the call returns. What it accepts and how each signal
// treats it: docs/attributes.md. Duplicate keys: the last one wins.
using AttributeList = std::initializer_list<std::pair<std::string_view, AttributeArg>>;
// The same as a run-time sized list (a binding's dictionary of attributes).
using AttributeSpan = std::span<const std::pair<std::string_view, AttributeArg>>;

}  // namespace lens
