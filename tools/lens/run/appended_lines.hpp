// Follows a file that another process appends JSON lines to (lens collect's traces.jsonl and
// logs.jsonl while `lens run` watches them): each read returns the whole lines appended since the
// last one; a last line without its newline waits for the next read. One reader, one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace lens::cli {

class AppendedLines {
 public:
  explicit AppendedLines(std::filesystem::path path) : path_(std::move(path)) {}

  // Calls on_line(std::string_view) for each whole line appended since the last call; nothing
  // when the file does not exist (yet).
  template <class OnLine>
  void read(OnLine&& on_line) {
    if (!append_new_bytes()) return;
    for (std::size_t newline; (newline = partial_.find('\n')) != std::string::npos;) {
      on_line(std::string_view(partial_).substr(0, newline));
      partial_.erase(0, newline + 1);
    }
  }

 private:
  bool append_new_bytes();

  std::filesystem::path path_;
  std::uintmax_t offset_ = 0;
  std::string partial_;
};

}  // namespace lens::cli
