// An in-process Collective for unit tests: ranks in threads sharing one broadcast slot. The root's
// payload is published once and every rank (the root included) receives it; run_ranks runs one
// body per rank, each on its own thread, and joins them.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lens/resource.hpp"

namespace lens::test_support {

class ThreadCollective final : public Collective {
 public:
  struct Shared {
    std::mutex mutex;
    std::condition_variable published;
    std::optional<std::string> payload;
  };
  ThreadCollective(int rank, int world_size, Shared& shared)
      : rank_(rank), world_size_(world_size), shared_(shared) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Result<std::string> broadcast(const std::string& payload, int root) override {
    sent = payload;
    root_seen = root;
    std::unique_lock<std::mutex> lock(shared_.mutex);
    if (rank_ == root) {
      shared_.payload = payload;
      shared_.published.notify_all();
    }
    shared_.published.wait(lock, [this] { return shared_.payload.has_value(); });
    return *shared_.payload;
  }
  std::string sent;
  int root_seen = -1;

 private:
  int rank_;
  int world_size_;
  Shared& shared_;
};

// Calls body(rank, collective) for ranks 0..world_size-1 at once, one thread each, over `shared`;
// returns the collectives so that tests can read what each one sent.
template <typename Body>
std::vector<ThreadCollective> run_ranks(int world_size, ThreadCollective::Shared& shared,
                                        Body body) {
  std::vector<ThreadCollective> collectives;
  collectives.reserve(static_cast<std::size_t>(world_size));
  for (int rank = 0; rank < world_size; ++rank) collectives.emplace_back(rank, world_size, shared);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] { body(rank, collectives[static_cast<std::size_t>(rank)]); });
  }
  for (auto& thread : threads) thread.join();
  return collectives;
}

}  // namespace lens::test_support
