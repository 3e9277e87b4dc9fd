// lens::Collective over a PyTorch c10d process group (liblens_c10d, its own library so that liblens
// does not depend on libtorch): lets rank 0 share a generated run id at setup (docs/resources.md,
// "Run identification") and lets broadcast_trace_context carry a trace context to every rank, with
// the same two broadcasts as the Python original (an int64 length, then the bytes as uint8). Each
// broadcast is counted (lens/collectives.hpp) on the group named at construction ("world" by
// default; its ranks 0..size-1), so a rank that hangs in one shows in the hang verdict.
// Thread-safety: as the process group's; lens calls it from the thread that calls setup_telemetry
// or broadcast_trace_context.
#pragma once

#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "lens/collectives.hpp"
#include "lens/resource.hpp"
#include "lens/result.hpp"

namespace lens {

class C10dCollective final : public Collective {
 public:
  explicit C10dCollective(c10::intrusive_ptr<c10d::ProcessGroup> group,
                          std::string_view counted_as = "world")
      : group_(std::move(group)), counter_(&collective_group(counted_as, group_ranks(*group_))) {}

  int rank() const override { return group_->getRank(); }
  int world_size() const override { return group_->getSize(); }
  // Errors (a peer gone, a timeout) are returned with the process group's message, not thrown.
  Result<std::string> broadcast(const std::string& payload, int root) override;

 private:
  static std::vector<std::int64_t> group_ranks(const c10d::ProcessGroup& group) {
    std::vector<std::int64_t> ranks;
    for (int r = 0; r < group.getSize(); ++r) ranks.push_back(r);
    return ranks;
  }

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  CollectiveGroup* counter_;
};

}  // namespace lens
