// A fixed machine for the fuzz targets that build a resource: two GPUs, no Kubernetes, so that
// what a target computes depends on its input only, never on the host that runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lens/resource.hpp"

namespace lens::fuzz {

class FixedHost final : public HostProbe {
 public:
  std::string hostname() const override { return "fuzz-host"; }
  std::int64_t pid() const override { return 4242; }
  std::optional<int> nvml_gpu_count() const override { return 2; }
  std::optional<int> proc_driver_gpu_count() const override { return std::nullopt; }
  bool path_exists(const std::string& /*path*/) const override { return false; }
  std::optional<GpuIdentity> gpu_identity(int physical_index) const override {
    if (physical_index < 0 || physical_index >= 2) {
      return std::nullopt;
    }
    return GpuIdentity{"Fuzz GPU", "GPU-" + std::to_string(physical_index), "", ""};
  }
};

}  // namespace lens::fuzz
