// lens::Collective over a PyTorch c10d process group (liblens_c10d, its own library so that liblens
// does not depend on libtorch): lets rank 0 share a generated run id at setup (SPEC Part 1 §1.4)
// and lets broadcast_trace_context carry a trace context to every rank, with the same two
// broadcasts as the Python original (an int64 length, then the bytes as uint8).
// Thread-safety: as the process group's; lens calls it from the thread that calls setup_telemetry
// or broadcast_trace_context.
#pragma once

#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "lens/resource.hpp"
#include "lens/result.hpp"

namespace lens {

class C10dCollective final : public Collective {
 public:
  explicit C10dCollective(c10::intrusive_ptr<c10d::ProcessGroup> group)
      : group_(std::move(group)) {}

  int rank() const override { return group_->getRank(); }
  int world_size() const override { return group_->getSize(); }
  // Errors (a peer gone, a timeout) are returned with the process group's message, not thrown.
  Result<std::string> broadcast(const std::string& payload, int root) override;

 private:
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
};

}  // namespace lens
