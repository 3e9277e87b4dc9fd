// Start-up repair of a JSON-lines file that a crash left with a torn last line: the bytes after
// the last newline (a line that was being written when the process died) would otherwise be glued
// to the first line appended after a restart, making both unreadable.
#pragma once

#include <cstdint>
#include <string>

#include "lens/result.hpp"

namespace lens::cli {

struct TornTail {
  std::uint64_t bytes = 0;  // size of the fragment moved away; 0 when the file ended cleanly
  std::string quarantine;   // where it went: `path` + ".torn"
};

// When the regular file at `path` does not end with '\n', appends its last partial line (and a
// newline) to `path`.torn and cuts it off `path`. A missing, empty or non-regular file is left
// alone. The error names the file and what failed.
Result<TornTail> repair_torn_tail(const std::string& path);

}  // namespace lens::cli
