// The nesting depth of a span, for exporters that show it (the text console): a recordable that
// implements SpanDepthSink is told the depth its span had when it started, by the layer that
// knows it then (the native span pipeline; docs/exporters.md states the rule). Recordables of
// other exporters are never asked. Header-only.
#pragma once

#include <cstdint>

namespace lens::core {

// Depths beyond this are shown as this.
inline constexpr std::uint8_t kMaxSpanDepth = 255;

// One level below a parent at `parent_depth`, without wrapping.
constexpr std::uint8_t child_depth(std::uint8_t parent_depth) noexcept {
  return parent_depth == kMaxSpanDepth ? kMaxSpanDepth
                                       : static_cast<std::uint8_t>(parent_depth + 1);
}

class SpanDepthSink {
 public:
  virtual void set_depth(std::uint8_t depth) noexcept = 0;

 protected:
  ~SpanDepthSink() = default;
};

}  // namespace lens::core
