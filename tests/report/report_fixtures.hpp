// Synthetic training runs for the `lens report` tests: OTLP requests for N ranks x M iterations
// with known span durations (every phase of every step is listed below), written as OTLP JSON
// lines the way lens collect or the Collector's file exporter writes them.
//
// One step, in ms from its start (S = slow_ms on the slow rank, 0 elsewhere; W = the wait):
//   megatron.forward_backward       [5, 205+S]
//     megatron.microbatch.forward   [5, 105+S]     (slow_phase forward_backward adds S here)
//       megatron.data.next_batch    [5, 15]
//     megatron.p2p.send_forward     [105+S, 115+S]
//     megatron.microbatch.backward  [115+S, 205+S]
//   megatron.grad_sync.start        [205+S, 210+S]
//   megatron.grad_sync.finish       [210+S, 230+S+W]  (synchronous: W = slow_ms - S)
//   megatron.optimizer_step         [230+S+W, 280+S+W]
//   step end                        290+S+W
// Exclusive ms: forward_backward 180+S, data_loading 10, communication 35+W, optimizer 50,
// other 15. Iteration i of every rank starts at 2000 + (i - 1) * 500 ms after megatron.pretrain,
// which starts at the time origin. slow_phase optimizer puts S into the optimizer step instead.
#pragma once

#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lens::report::testing {

inline constexpr std::int64_t kOriginNs = 1'700'000'000'000'000'000;  // megatron.pretrain start
inline constexpr std::int64_t kMs = 1'000'000;
inline constexpr std::int64_t kFirstStepMs = 2000;
inline constexpr std::int64_t kStepPeriodMs = 500;

struct RunSpec {
  int ranks = 4;
  int iterations = 20;
  int slow_rank = -1;
  double slow_ms = 0.0;
  bool slow_in_optimizer = false;    // else the slowness is in the forward pass
  bool synchronous = true;           // fast ranks wait for the slow one in grad_sync.finish
  bool steps_are_roots = true;       // each step its own trace; else children of megatron.train
  int world_size = 0;                // dl.world_size; 0 = ranks
  std::vector<int> only_ranks = {};  // when set, only these ranks report
  int iteration_stride = 1;          // 2: only every other iteration is present (sampling)
  std::string run_id = "run-fixture";  // nemo.run.id of every rank
  double loss_start = 10.0;            // the loss of iteration i is loss_start - 0.1 * i
};

// The start of iteration `i`'s step, in ns since kOriginNs.
inline std::int64_t step_offset_ns(int i) { return (kFirstStepMs + (i - 1) * kStepPeriodMs) * kMs; }

// One request per rank with every span of the run.
std::vector<opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest> make_traces(
    const RunSpec& spec);

// One request per rank and log interval (5 iterations) with the training gauges and the
// step-duration histogram (bounds 100, 200, 300, 400, 500, 1000 ms) in `cumulative` or delta
// temporality.
std::vector<opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest> make_metrics(
    const RunSpec& spec, bool cumulative);

// A fresh empty directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Appends each message as one OTLP JSON line.
template <class Message>
void append_lines(const std::filesystem::path& file, const std::vector<Message>& messages);

// Writes traces.jsonl and metrics.jsonl (cumulative) of `spec` into `dir`.
void write_run(const std::filesystem::path& dir, const RunSpec& spec);

std::string read_text(const std::filesystem::path& file);

}  // namespace lens::report::testing
