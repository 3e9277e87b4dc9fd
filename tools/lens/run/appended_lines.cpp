// Following an appended file (see appended_lines.hpp).
#include "run/appended_lines.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace lens::cli {

bool AppendedLines::append_new_bytes() {
  // Only a regular file: a device (/dev/zero) put in its place would be read without end.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) return false;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return false;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  return true;
}

}  // namespace lens::cli
