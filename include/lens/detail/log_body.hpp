// Formatting of lens::log's variadic calls (lens/log.hpp): inline because the caller compiles
// it, here because it is not API.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace lens::log::detail {

// The body of a record being formatted: on the stack up to kInline bytes, on the heap beyond.
class BodyBuilder {
 public:
  static constexpr std::size_t kInline = 256;
  void append(std::string_view part) {
    if (!on_heap_ && size_ + part.size() <= kInline) {
      part.copy(inline_ + size_, part.size());
      size_ += part.size();
      return;
    }
    if (!on_heap_) {
      heap_.assign(inline_, size_);
      on_heap_ = true;
    }
    heap_.append(part);
  }
  std::string_view view() const noexcept {
    return on_heap_ ? std::string_view(heap_) : std::string_view(inline_, size_);
  }

 private:
  char inline_[kInline];
  std::size_t size_ = 0;
  bool on_heap_ = false;
  std::string heap_;
};

void append(BodyBuilder& out, double value);

template <class T>
void append_part(BodyBuilder& out, const T& part) {
  if constexpr (std::is_same_v<T, bool>) {
    out.append(part ? "true" : "false");
  } else if constexpr (std::is_same_v<T, char>) {
    out.append(std::string_view(&part, 1));
  } else if constexpr (std::is_integral_v<T>) {
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), part);
    out.append(std::string_view(buffer, static_cast<std::size_t>(result.ptr - buffer)));
  } else if constexpr (std::is_floating_point_v<T>) {
    append(out, static_cast<double>(part));
  } else {
    out.append(std::string_view(part));
  }
}

}  // namespace lens::log::detail
