// Counted collectives (docs/collectives.md): each process group registers once and then counts
// every collective it runs, entering and finishing, with a per-group sequence number. Counting is
// a few relaxed atomic stores and a CPU tick read, no allocation and no lock, and the hang
// watchdog reads the counts while the collective is still open (the state of every group goes
// into its `lens.hang` log records, which `lens run` and `lens report` join across ranks).
// The same numbers go on the collective's span as dl.collective.* attributes.
// Thread-safety: collective_group() may be called from any thread; one group's collectives are
// entered and finished in order by one thread at a time (as a process group requires anyway);
// any thread may read the counts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lens {

// The dl.collective.* attribute keys (docs/distributed.md, "Counted collectives").
namespace collective_attributes {
inline constexpr std::string_view kGroup = "dl.collective.group";             // "dp", "pp", "world"
inline constexpr std::string_view kGroupRanks = "dl.collective.group_ranks";  // [0, 1, 2, 3]
inline constexpr std::string_view kOperation = "dl.collective.op";            // "all_reduce"
inline constexpr std::string_view kBytes = "dl.collective.bytes";  // payload of this rank
inline constexpr std::string_view kSeq = "dl.collective.seq";      // 1, 2, ... per group
}  // namespace collective_attributes

// One process group's counts. Lives as long as the process (never freed: the watchdog and any
// thread may hold it), so a pointer to it may be kept anywhere.
class CollectiveGroup {
 public:
  CollectiveGroup(std::string name, std::vector<std::int64_t> ranks)
      : name_(std::move(name)), ranks_(std::move(ranks)) {}
  CollectiveGroup(const CollectiveGroup&) = delete;
  CollectiveGroup& operator=(const CollectiveGroup&) = delete;

  const std::string& name() const noexcept { return name_; }
  // The global ranks of the group, in group-rank order.
  const std::vector<std::int64_t>& ranks() const noexcept { return ranks_; }

  // Counts the group's next collective as entered: `operation` must outlive the process (a
  // string literal such as "all_reduce"); `bytes` is this rank's payload. Returns its sequence
  // number (1 for the group's first collective).
  std::uint64_t enter(const char* operation, std::uint64_t bytes) noexcept;
  // Counts collective `seq` (from enter) as finished.
  void finish(std::uint64_t seq) noexcept;

  // The counts as a reader sees them (any thread).
  struct State {
    const char* operation = nullptr;           // the newest entered (nullptr: none yet)
    std::uint64_t seq = 0;                     // its sequence number (0: none yet)
    std::uint64_t bytes = 0;                   // its payload
    std::uint64_t entered_ticks = 0;           // when it was entered (native tick clock)
    std::uint64_t finished_seq = 0;            // the newest finished one (0: none yet)
    const char* finished_operation = nullptr;  // and its operation
    bool inside() const noexcept { return seq != 0 && finished_seq < seq; }
  };
  State state() const noexcept;

 private:
  const std::string name_;
  const std::vector<std::int64_t> ranks_;
  std::atomic<const char*> operation_{nullptr};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> entered_ticks_{0};
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<const char*> finished_operation_{nullptr};
  std::atomic<std::uint64_t> finished_seq_{0};
};

// The group named `name` (registered on the first call with `ranks`; later calls with the same
// name return the same group and ignore `ranks`). Allocates on the first call for a name only.
// At most kMaxCollectiveGroups groups are listed for the watchdog; later ones still count.
inline constexpr std::size_t kMaxCollectiveGroups = 64;
CollectiveGroup& collective_group(std::string_view name, std::vector<std::int64_t> ranks);

// Every registered group, in registration order (for the watchdog and tests).
std::vector<const CollectiveGroup*> collective_groups();

// The training iteration that is running (set at its start), so a hang report can say which one
// hung; 0 when never set. Relaxed atomic store.
void note_iteration_started(std::int64_t iteration) noexcept;
std::int64_t current_iteration() noexcept;

// Enters on construction, finishes on destruction (or at finish()).
class CountedCollective {
 public:
  CountedCollective(CollectiveGroup& group, const char* operation, std::uint64_t bytes) noexcept
      : group_(&group), seq_(group.enter(operation, bytes)) {}
  ~CountedCollective() { finish(); }
  CountedCollective(const CountedCollective&) = delete;
  CountedCollective& operator=(const CountedCollective&) = delete;

  std::uint64_t seq() const noexcept { return seq_; }
  void finish() noexcept {
    if (group_ != nullptr) group_->finish(seq_);
    group_ = nullptr;
  }

 private:
  CollectiveGroup* group_;
  std::uint64_t seq_;
};

// "0-2,4-7": ranks in ascending order, runs of consecutive ranks as ranges.
std::string rank_ranges(std::vector<std::int64_t> ranks);

}  // namespace lens
