// C10dCollective (lens/c10d_collective.hpp).
#include "lens/c10d_collective.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <vector>

namespace lens {

Result<std::string> C10dCollective::broadcast(const std::string& payload, int root) {
  if (root < 0 || root >= world_size()) {
    return Error("C10dCollective: broadcast root " + std::to_string(root) +
                 " is not a rank of this process group; accepted: 0.." +
                 std::to_string(world_size() - 1));
  }
  try {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    const bool is_root = rank() == root;
    std::vector<at::Tensor> length = {torch::tensor(
        {is_root ? static_cast<std::int64_t>(payload.size()) : std::int64_t{0}}, torch::kInt64)};
    {
      CountedCollective counted(*counter_, "broadcast", sizeof(std::int64_t));
      group_->broadcast(length, options)->wait();
    }
    const std::int64_t size = length[0].item<std::int64_t>();
    if (size <= 0) return std::string();
    std::vector<at::Tensor> bytes = {torch::empty({size}, torch::kUInt8)};
    if (is_root) std::memcpy(bytes[0].data_ptr<std::uint8_t>(), payload.data(), payload.size());
    CountedCollective counted(*counter_, "broadcast", static_cast<std::uint64_t>(size));
    group_->broadcast(bytes, options)->wait();
    return std::string(reinterpret_cast<const char*>(bytes[0].data_ptr<std::uint8_t>()),
                       static_cast<std::size_t>(size));
  } catch (const std::exception& e) {
    return Error(std::string("C10dCollective: broadcast failed: ") + e.what());
  }
}

}  // namespace lens
