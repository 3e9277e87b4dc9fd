// The `lens` command: dispatches to its subcommands.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return lens::cli::run(args);
}
