// Inflates a gzip or zlib ("deflate") stream while counting what it produces, and stops as soon
// as the output would pass a limit: a small compressed message that claims gigabytes (a
// decompression bomb) costs at most `limit` bytes of memory, never its full size.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lens::cli {

enum class Compression { kGzip, kDeflate };

enum class InflateOutcome {
  kOk,         // `out` holds the whole inflated stream
  kTooLarge,   // the stream inflates to more than `limit` bytes; `out` is cleared
  kCorrupt,    // not a valid stream of that format (or truncated); `out` is cleared
  kNotAllowed  // `allow` refused the next step's output size; `out` is cleared
};

// Inflates the concatenation of `chunks` (the pieces of one compressed message) into `out`.
// `allow`, when given, is asked before each step of output (64 KiB) with the size `out` would
// then have (a memory budget shared with other requests).
InflateOutcome inflate_bounded(const std::vector<std::string_view>& chunks, Compression compression,
                               std::size_t limit, std::string& out,
                               const std::function<bool(std::size_t)>& allow = {});

}  // namespace lens::cli
