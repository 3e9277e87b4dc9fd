// Writing one of the report's output files (the page, summary.json, the trace) through a
// temporary file renamed into place, so that a reader never sees half of it. Not thread-safe for
// one path; independent paths may be written from any thread.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <system_error>

namespace lens::report {

// Calls `writer(std::ostream&)` into PATH.tmp and renames it to PATH. On failure nothing is left
// behind and one line on `err` names `flag` (the option that chose the path), the path and why.
template <class Writer>
bool write_report_file(const std::filesystem::path& path, const std::string& flag,
                       std::ostream& err, Writer&& writer) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (file) {
      writer(file);
      file.flush();
    }
    if (!file) {
      const int error = errno;
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      err << "lens report: cannot write " << flag << " '" << path.string()
          << "': " << std::strerror(error) << "\n";
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    err << "lens report: cannot write " << flag << " '" << path.string() << "': " << ec.message()
        << "\n";
    return false;
  }
  return true;
}

}  // namespace lens::report
