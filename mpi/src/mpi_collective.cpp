// MpiCollective (lens/mpi_collective.hpp).
#include "lens/mpi_collective.hpp"

#include <climits>
#include <cstdint>
#include <utility>

namespace lens {
namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return "MPI error " + std::to_string(code);
  }
  return std::string(text, static_cast<std::size_t>(length));
}

bool mpi_usable() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

}  // namespace

Result<std::unique_ptr<MpiCollective>> MpiCollective::create(MPI_Comm communicator) {
  if (!mpi_usable()) {
    return Error(
        "MpiCollective: MPI is not initialised or already finalised; call MPI_Init before "
        "creating it and destroy it before MPI_Finalize");
  }
  MPI_Comm duplicate = MPI_COMM_NULL;
  if (int code = MPI_Comm_dup(communicator, &duplicate); code != MPI_SUCCESS) {
    return Error("MpiCollective: MPI_Comm_dup failed: " + mpi_error(code));
  }
  // Errors on lens's own communicator come back as codes instead of aborting the job.
  MPI_Comm_set_errhandler(duplicate, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(duplicate, &rank);
  MPI_Comm_size(duplicate, &size);
  std::vector<std::int64_t> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(r);
  CollectiveGroup& counter = collective_group("lens.mpi", std::move(ranks));
  return std::unique_ptr<MpiCollective>(new MpiCollective(duplicate, rank, size, counter));
}

MpiCollective::~MpiCollective() {
  // Freeing after MPI_Finalize is itself an error; the runtime has released it then.
  if (communicator_ != MPI_COMM_NULL && mpi_usable()) MPI_Comm_free(&communicator_);
}

Result<std::string> MpiCollective::broadcast(const std::string& payload, int root) {
  if (root < 0 || root >= world_size_) {
    return Error("MpiCollective: broadcast root " + std::to_string(root) +
                 " is not a rank of this communicator; accepted: 0.." +
                 std::to_string(world_size_ - 1));
  }
  if (!mpi_usable()) return Error("MpiCollective: MPI is finalised");
  // The length goes first so that receivers can size their buffer; it is broadcast even when
  // the payload is too large, so that every rank leaves this call with the same outcome.
  std::int64_t length = rank_ == root ? static_cast<std::int64_t>(payload.size()) : 0;
  CountedCollective counted_length(*counter_, "broadcast", sizeof(length));
  if (int code = MPI_Bcast(&length, 1, MPI_INT64_T, root, communicator_); code != MPI_SUCCESS) {
    return Error("MpiCollective: MPI_Bcast of the length failed: " + mpi_error(code));
  }
  if (length < 0 || length > INT_MAX) {
    return Error("MpiCollective: payload of " + std::to_string(length) +
                 " bytes is larger than one MPI_Bcast carries (" + std::to_string(INT_MAX) + ")");
  }
  counted_length.finish();
  std::string received =
      rank_ == root ? payload : std::string(static_cast<std::size_t>(length), '\0');
  if (length == 0) return received;
  CountedCollective counted(*counter_, "broadcast", static_cast<std::uint64_t>(length));
  if (int code =
          MPI_Bcast(received.data(), static_cast<int>(length), MPI_BYTE, root, communicator_);
      code != MPI_SUCCESS) {
    return Error("MpiCollective: MPI_Bcast of " + std::to_string(length) +
                 " bytes failed: " + mpi_error(code));
  }
  return received;
}

}  // namespace lens
