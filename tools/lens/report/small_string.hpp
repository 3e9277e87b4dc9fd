// A string that keeps up to `Inline` bytes inside itself, for the millions of short strings of a
// large run (hex span and trace ids, span names): std::string keeps only 15 bytes inline, so
// every 16-character span id and most span names cost it a heap block besides. Longer strings
// go to the heap. Reads as a std::string_view or a std::string (implicit conversions), compares
// with any string, converts to JSON as a string. Not thread-safe for concurrent writes (a value).
#pragma once

#include <compare>
#include <cstddef>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>

namespace lens::report {

template <std::size_t Inline>
class SmallString {
  static_assert(Inline >= sizeof(char*) + sizeof(std::size_t) && Inline < 255);

 public:
  SmallString() noexcept { set_inline_size(0); }
  SmallString(std::string_view text) {  // NOLINT(google-explicit-constructor): a string type
    set_inline_size(0);
    assign(text);
  }
  SmallString(const std::string& text) : SmallString(std::string_view(text)) {}  // NOLINT
  SmallString(const char* text) : SmallString(std::string_view(text)) {}         // NOLINT
  SmallString(const SmallString& other) : SmallString(other.view()) {}
  SmallString(SmallString&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
    other.set_inline_size(0);
  }
  ~SmallString() { release(); }

  SmallString& operator=(const SmallString& other) {
    if (this != &other) assign(other.view());
    return *this;
  }
  SmallString& operator=(SmallString&& other) noexcept {
    if (this != &other) {
      release();
      std::memcpy(bytes_, other.bytes_, sizeof(bytes_));
      other.set_inline_size(0);
    }
    return *this;
  }
  SmallString& operator=(std::string_view text) {
    assign(text);
    return *this;
  }
  SmallString& operator=(const std::string& text) { return *this = std::string_view(text); }
  SmallString& operator=(const char* text) { return *this = std::string_view(text); }

  std::string_view view() const noexcept {
    return on_heap() ? std::string_view(heap_data(), heap_size())
                     : std::string_view(reinterpret_cast<const char*>(bytes_), inline_size());
  }
  const char* data() const noexcept { return view().data(); }
  std::size_t size() const noexcept { return view().size(); }
  bool empty() const noexcept { return size() == 0; }
  void clear() noexcept {
    release();
    set_inline_size(0);
  }

  operator std::string_view() const noexcept { return view(); }  // NOLINT
  operator std::string() const { return std::string(view()); }   // NOLINT

  friend bool operator==(const SmallString& a, std::string_view b) noexcept {
    return a.view() == b;
  }
  friend auto operator<=>(const SmallString& a, std::string_view b) noexcept {
    return a.view() <=> b;
  }
  friend std::ostream& operator<<(std::ostream& out, const SmallString& text) {
    return out << text.view();
  }

 private:
  static constexpr unsigned char kOnHeap = 0xff;
  static constexpr std::size_t kTag = Inline;  // bytes_[kTag]: the inline size, or kOnHeap

  bool on_heap() const noexcept { return bytes_[kTag] == kOnHeap; }
  std::size_t inline_size() const noexcept { return bytes_[kTag]; }
  void set_inline_size(std::size_t size) noexcept {
    bytes_[kTag] = static_cast<unsigned char>(size);
  }
  char* heap_data() const noexcept {
    char* pointer = nullptr;
    std::memcpy(&pointer, bytes_, sizeof(pointer));
    return pointer;
  }
  std::size_t heap_size() const noexcept {
    std::size_t size = 0;
    std::memcpy(&size, bytes_ + sizeof(char*), sizeof(size));
    return size;
  }
  void release() noexcept {
    if (on_heap()) delete[] heap_data();
  }
  // Safe when `text` points into this string: the new storage is filled before the old is freed.
  void assign(std::string_view text) {
    if (text.size() <= Inline) {
      if (on_heap()) {
        char* old = heap_data();
        std::memcpy(bytes_, text.data(), text.size());
        delete[] old;
      } else {
        std::memmove(bytes_, text.data(), text.size());
      }
      set_inline_size(text.size());
      return;
    }
    char* copy = new char[text.size()];
    std::memcpy(copy, text.data(), text.size());
    release();
    const std::size_t size = text.size();
    std::memcpy(bytes_, &copy, sizeof(copy));
    std::memcpy(bytes_ + sizeof(char*), &size, sizeof(size));
    bytes_[kTag] = kOnHeap;
  }

  alignas(8) unsigned char bytes_[Inline + 1];
};

// As a JSON string (nlohmann's to_json, found by argument-dependent lookup).
template <class Json, std::size_t Inline>
void to_json(Json& json, const SmallString<Inline>& text) {
  json = std::string(text.view());
}

// Hex trace ids (32 characters) inline in 40 bytes; span ids and most span names in 32.
using TraceIdText = SmallString<32>;
using ShortText = SmallString<30>;

}  // namespace lens::report
