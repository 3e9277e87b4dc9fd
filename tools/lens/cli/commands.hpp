// The subcommands of the `lens` tool. Each returns the process exit status:
// 0 success, 2 invalid input (one line on stderr starting "lens: ").
#pragma once

#include <string>
#include <vector>

namespace lens::cli {

int run(const std::vector<std::string>& args);
int config_command(const std::vector<std::string>& args);
int collect_command(const std::vector<std::string>& args);
int report_command(const std::vector<std::string>& args);
int run_command(const std::vector<std::string>& args);

}  // namespace lens::cli
