// A zlib inflate loop with a cap on the output (see bounded_inflate.hpp).
#include "collect_server/bounded_inflate.hpp"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace lens::cli {

InflateOutcome inflate_bounded(const std::vector<std::string_view>& chunks, Compression compression,
                               std::size_t limit, std::string& out,
                               const std::function<bool(std::size_t)>& allow) {
  out.clear();
  z_stream stream{};
  // 16 + 15: gzip header and trailer; 15 alone: the zlib format, which is gRPC's "deflate".
  const int window_bits = compression == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
  if (inflateInit2(&stream, window_bits) != Z_OK) return InflateOutcome::kCorrupt;
  struct End {
    z_stream& stream;
    ~End() { inflateEnd(&stream); }
  } end{stream};

  constexpr std::size_t kStep = 64 * 1024;
  // Room for the largest accepted output at once: growing by doubling would copy, holding the
  // old and the new buffer together (1.5 times the limit). Untouched pages cost no memory.
  out.reserve(limit + kStep);
  bool finished = false;
  for (std::string_view chunk : chunks) {
    while (!chunk.empty()) {
      if (finished) {  // bytes after the end of the stream: not one well-formed message
        out.clear();
        return InflateOutcome::kCorrupt;
      }
      const std::size_t take = std::min<std::size_t>(chunk.size(), UINT_MAX);
      stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.data()));
      stream.avail_in = static_cast<uInt>(take);
      while (stream.avail_in > 0 && !finished) {
        // Room for one more step past the limit is enough to tell "too large" apart.
        const std::size_t before = out.size();
        if (allow && !allow(before + kStep)) {
          out.clear();
          out.shrink_to_fit();
          return InflateOutcome::kNotAllowed;
        }
        out.resize(before + kStep);
        stream.next_out = reinterpret_cast<Bytef*>(out.data() + before);
        stream.avail_out = static_cast<uInt>(kStep);
        const int rc = inflate(&stream, Z_NO_FLUSH);
        out.resize(before + (kStep - stream.avail_out));
        if (rc == Z_STREAM_END) {
          finished = true;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
          out.clear();
          return InflateOutcome::kCorrupt;
        }
        if (out.size() > limit) {
          out.clear();
          out.shrink_to_fit();
          return InflateOutcome::kTooLarge;
        }
      }
      chunk.remove_prefix(take - stream.avail_in);
    }
  }
  if (!finished) {
    out.clear();
    return InflateOutcome::kCorrupt;
  }
  return InflateOutcome::kOk;
}

}  // namespace lens::cli
