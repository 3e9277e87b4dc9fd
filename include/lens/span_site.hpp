// The constexpr descriptor of a span site: the span's name, its group and the attribute keys the
// site sets. LENS_SPAN takes one, so a span's name and group are written once, in a catalogue:
//
//   inline constexpr std::string_view kForwardBackwardKeys[] = {"megatron.num_microbatches"};
//   inline constexpr lens::SpanSite kForwardBackward{"megatron.forward_backward",
//                                                    "forward_backward", kForwardBackwardKeys};
//   LENS_SPAN(kForwardBackward, {"megatron.num_microbatches", n});
//
// `keys` documents what the site may set (lens::megatron's catalogue lists them; its tests check
// that the trainer's spans carry no other key). No dependency: shared by lens/span.hpp and the
// no-op surface of lens/span_noop.hpp. Thread-safety: a constant.
#pragma once

#include <span>
#include <string_view>

namespace lens {

struct SpanSite {
  std::string_view name;
  std::string_view group;
  std::span<const std::string_view> keys = {};
};

}  // namespace lens
