// `lens run ARGS` as a child process of the multi-process tests that drive lens and the example
// trainer (their paths compiled in by lens_trainer_cli_test in CMakeLists.txt): its stdout and
// stderr in a directory's stdout.txt and stderr.txt, every wait bounded (spawned_child.hpp).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/spawned_child.hpp"

// Beside TestDirectory (test_directory.hpp), for the tests of this folder.
class LensRun : public lens::testing::SpawnedChild {
 public:
  LensRun(const std::filesystem::path& dir, const std::vector<std::string>& args,
          const std::map<std::string, std::string>& env = {})
      : SpawnedChild(lens::testing::joined({LENS_CLI_PATH, "run"}, args), dir / "stdout.txt",
                     dir / "stderr.txt", env) {}
};
