// The regression runner linked with each fuzz target in normal builds: feeds every file of a
// corpus directory (or the files given) to LLVMFuzzerTestOneInput once, so that CTest replays the
// committed corpora (fuzz.<target>) and a saved crash can be replayed without libFuzzer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// The regular files of `path` (a directory, sorted by name) or `path` itself.
bool collect(const fs::path& path, std::vector<fs::path>& inputs) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    inputs.push_back(path);
    return true;
  }
  if (!fs::is_directory(path, ec)) {
    std::fprintf(stderr, "fuzz regression: '%s' is neither a corpus directory nor a file\n",
                 path.c_str());
    return false;
  }
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec)) {
      files.push_back(entry.path());
    }
  }
  if (ec || files.empty()) {
    std::fprintf(stderr, "fuzz regression: corpus directory '%s' is %s\n", path.c_str(),
                 ec ? "unreadable" : "empty");
    return false;
  }
  std::sort(files.begin(), files.end());
  inputs.insert(inputs.end(), files.begin(), files.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR|FILE...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], inputs)) {
      return 1;
    }
  }
  for (const fs::path& input : inputs) {
    // Named before it runs: a crash report follows the name of the input that caused it.
    std::fprintf(stderr, "fuzz regression: %s\n", input.c_str());
    std::ifstream file(input, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(file),
                                  std::istreambuf_iterator<char>()};
    if (!file.good() && !file.eof()) {
      std::fprintf(stderr, "fuzz regression: cannot read '%s'\n", input.c_str());
      return 1;
    }
    // A copy of exactly the input's size, so that ASan sees reads past its end.
    const std::unique_ptr<std::uint8_t[]> exact(new std::uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), exact.get());
    LLVMFuzzerTestOneInput(exact.get(), bytes.size());
  }
  std::fprintf(stderr, "fuzz regression: %zu inputs ran without a failure\n", inputs.size());
  return 0;
}
