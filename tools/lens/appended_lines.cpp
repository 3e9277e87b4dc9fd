// Following an appended file (see appended_lines.hpp).
#include "appended_lines.hpp"

#include <fstream>
#include <iterator>

namespace lens::cli {

bool AppendedLines::append_new_bytes() {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return false;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  return true;
}

}  // namespace lens::cli
