// lens::Collective over MPI (liblens_mpi, its own small library so that liblens does not depend on
// MPI): lets rank 0 share a generated run id at setup (docs/resources.md, "Run identification")
// and lets broadcast_trace_context carry a trace context to every rank.
// It works on its own duplicate of the communicator, so its broadcasts never match the
// application's messages, and errors on that duplicate are returned, not fatal. Each broadcast is
// counted (lens/collectives.hpp) on the group "lens.mpi" (the duplicate's ranks), so a rank that
// hangs in one shows in the hang verdict.
// Thread-safety: as MPI's; call it from one thread at a time (lens calls it from the thread that
// calls setup_telemetry or broadcast_trace_context).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "lens/collectives.hpp"
#include "lens/resource.hpp"
#include "lens/result.hpp"

namespace lens {

class MpiCollective final : public Collective {
 public:
  // Collective over `communicator`: every rank of it must call create. Errors when MPI is not
  // initialised (or already finalised) or the communicator cannot be duplicated.
  static Result<std::unique_ptr<MpiCollective>> create(MPI_Comm communicator = MPI_COMM_WORLD);

  ~MpiCollective() override;
  MpiCollective(const MpiCollective&) = delete;
  MpiCollective& operator=(const MpiCollective&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  // Two MPI_Bcast calls on the duplicate: the length (int64), then the bytes.
  Result<std::string> broadcast(const std::string& payload, int root) override;

 private:
  MpiCollective(MPI_Comm communicator, int rank, int world_size, CollectiveGroup& counter)
      : communicator_(communicator), rank_(rank), world_size_(world_size), counter_(&counter) {}

  MPI_Comm communicator_;
  int rank_;
  int world_size_;
  CollectiveGroup* counter_;
};

}  // namespace lens
