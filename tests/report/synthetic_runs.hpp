// Seeded synthetic synchronous data-parallel runs with hidden stalls, built as the report's
// in-memory model (RunData: each rank's spans, as RunBuilder makes them from OTLP).
//
// Each iteration of each rank, in order: untraced setup, megatron.data.next_batch,
// megatron.forward_backward, megatron.grad_sync.finish (the all-reduce: every rank leaves it
// together, `allreduce_ms` after the last one arrives), megatron.optimizer_step, untraced tail;
// the next step starts where the previous one ended. Durations carry Gaussian noise per rank
// and stage, a shared per-iteration factor (every rank slower together), and rare spikes (a GC
// pause: +5-20 ms in a random stage of one rank's step). A fault adds `ms` to one stage of one
// rank in iterations [from, to]. `noise_ms` adds per-step Gaussian noise in milliseconds to
// forward_backward (and in proportion to the other stages); ranks may carry a host
// (`ranks_per_host`: gpu-a, gpu-b, ...) and tensor-/pipeline-/data-parallel coordinates in
// Megatron's order (tensor fastest, then data, then pipeline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/phases.hpp"
#include "report/run_model.hpp"

namespace lens::report::testing {

struct InjectedStall {
  int rank = 0;
  Phase phase = Phase::forward_backward;  // data_loading, forward_backward or optimizer
  double ms = 0.0;
  int from = 1;  // first slowed iteration
  int to = 0;    // last slowed iteration; 0 = the end of the run
};

struct SyntheticRun {
  std::uint64_t seed = 1;
  int ranks = 8;
  int iterations = 80;
  double data_ms = 3.0;
  double forward_backward_ms = 22.0;
  double optimizer_ms = 4.0;
  double allreduce_ms = 3.0;
  double untraced_ms = 1.0;          // split between the step's start and end
  double noise = 0.03;               // per-stage sigma, as a fraction of the stage
  double shared_noise = 0.03;        // the per-iteration factor's sigma
  double spike_probability = 0.005;  // per rank and step
  double noise_ms = 0.0;   // per-step sigma on forward_backward, ms (others in proportion)
  int ranks_per_host = 0;  // 0: no host.name
  int tensor_size = 0;     // 0: no parallel coordinates; else dl.*_parallel.rank/size
  int pipeline_size = 0;
  // With pipeline_size > 1: the stages of one pipeline (same tensor- and data-parallel rank)
  // end forward_backward together, the faster ones waiting in megatron.p2p.recv_forward.
  bool pipeline_waits = false;
  std::vector<InjectedStall> stalls = {};
};

RunData make_synthetic_run(const SyntheticRun& spec);

// 64 ranks on hosts of 8, 40 iterations, 1 ms of noise; node gpu-b (ranks 8-15) +4 ms in
// forward_backward from iteration 1: one node suspect.
SyntheticRun slow_node_run();

// The host name of a host index: 0 -> gpu-a, 1 -> gpu-b, ..., 26 -> gpu-aa.
std::string host_name(int host);

// "seed 7: 16 ranks, rank 3 forward_backward +5.2 ms from 41" for failure messages.
std::string describe(const SyntheticRun& spec);

}  // namespace lens::report::testing
