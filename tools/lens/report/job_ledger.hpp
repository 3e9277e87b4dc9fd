// The job ledger (`lens report --job`, docs/report.md "Job ledger"): the runs of one training job
// (a crash, a kill, a restart from a checkpoint...) put in order, and every nanosecond of the job's
// wall time, from its first span to its last, given to one cause per rank: start-up, productive
// steps, checkpoint load and save, evaluation, waiting on stragglers, work lost (steps of
// iterations a later run did again), the end of a run (completed, failed or hung) and the restart
// gap between runs. Pure functions over RunData; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_model.hpp"

namespace lens::report {

// In the order the page and summary.json list them.
enum class Cause : std::size_t {
  startup,          // a run's first span to the rank's first step (less checkpoint loading)
  productive,       // steps whose iteration no later run did again (and the loop between them)
  checkpoint_load,  // megatron.load_checkpoint
  checkpoint_save,  // megatron.save_checkpoint
  evaluation,       // megatron.evaluate
  straggler_wait,   // in a collective, longer than the quickest rank of that step was
  lost,             // steps of iterations a later run did again (resumed from an older checkpoint)
  hang,             // after the last step of a run in which a rank reported a hang
  failure,          // after the last step of a run that did not complete
  restart,          // between one run's last span and the next run's first
  shutdown,         // after the last step of a run that completed
};
inline constexpr std::size_t kCauseCount = 11;
using CauseTimes = std::array<std::int64_t, kCauseCount>;  // nanoseconds per cause

std::string_view cause_name(Cause cause);
inline constexpr std::size_t index_of(Cause cause) { return static_cast<std::size_t>(cause); }

// The spans the ledger reads.
inline constexpr const char* kLedgerStepSpan = "megatron.train_step";
inline constexpr const char* kLedgerTrainSpan = "megatron.train";
inline constexpr const char* kLedgerLoadSpan = "megatron.load_checkpoint";
inline constexpr const char* kLedgerSaveSpan = "megatron.save_checkpoint";
inline constexpr const char* kLedgerEvaluateSpan = "megatron.evaluate";
// Collectives where a rank waits for the others: the excess over the quickest rank is waiting.
inline constexpr std::array<const char*, 3> kLedgerWaitSpans = {
    "megatron.grad_sync.finish", "megatron.p2p.recv_forward", "megatron.p2p.recv_backward"};

// One run of the job as read: its telemetry and identity.
struct LedgerRunInput {
  std::string source;    // the DIR it was read from
  std::string run_id;    // nemo.run.id ("" when absent)
  std::string run_uuid;  // nemo.lens.run_uuid ("" when absent)
  std::string job_uuid;  // nemo.lens.job_uuid ("" when absent)
  RunData data;
  std::set<int> hung_ranks;  // ranks with a hang report that no finished step followed
};

enum class RunEnd { completed, failed, hung };
std::string_view run_end_name(RunEnd end);

struct RunLedger {
  std::string source, run_id, run_uuid, job_uuid;
  std::int64_t start_ns = 0;  // its first span's start
  std::int64_t end_ns = 0;    // its last span's end
  // It owns [start_ns, the next run's start_ns) (the last run: up to end_ns): its time, then the
  // restart gap after it.
  std::int64_t owned_end_ns = 0;
  RunEnd end = RunEnd::completed;
  std::size_t ranks = 0;
  std::optional<std::int64_t> first_iteration, last_iteration;  // of its steps
  std::size_t iterations = 0;  // distinct iterations with a step on some rank
  std::size_t redone = 0;      // of those, iterations a later run did again
  std::optional<std::int64_t> redone_first, redone_last;
  CauseTimes time{};  // mean over the job's ranks of their time in [start_ns, owned_end_ns)
};

struct RankLedger {
  int rank = 0;
  CauseTimes time{};  // sums to the job's wall time
};

struct JobLedger {
  std::vector<RunLedger> runs;  // by start
  std::vector<RankLedger> ranks;
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t wall_ns() const { return end_ns - start_ns; }
  // Mean over ranks of each cause; adds up to wall_ns() (to within one nanosecond per cause from
  // the integer division).
  CauseTimes total{};
  std::size_t redone = 0;           // iterations done again, summed over runs
  std::set<std::string> job_uuids;  // more than one: the runs are not of one job
};

// Orders `runs` by their first span and accounts the job. Runs without any span are left out.
JobLedger account_job(const std::vector<LedgerRunInput>& runs);

// summary.json's "ledger" (docs/report.md).
nlohmann::json ledger_json(const JobLedger& ledger);

// The console summary: the wall time, the parts over 0.05% of it, the redone iterations.
std::vector<std::string> ledger_summary_lines(const JobLedger& ledger);

// The page's "Job ledger" section: one bar per run, the table by cause per run and per rank.
std::string ledger_html(const JobLedger& ledger);

// The whole page of `lens report --job`.
std::string ledger_page(const JobLedger& ledger, const std::vector<std::string>& sources,
                        const std::vector<std::string>& warnings);

}  // namespace lens::report
