// Synthetic runs with hidden stalls (see synthetic_runs.hpp).
#include "synthetic_runs.hpp"

#include <algorithm>
#include <cstdio>
#include <random>

namespace lens::report::testing {
namespace {

constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;

std::int64_t to_ns(double ms) { return static_cast<std::int64_t>(ms * 1e6); }

std::string hex_id(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

double stall_ms(const SyntheticRun& spec, int rank, Phase phase, int iteration) {
  double ms = 0.0;
  for (const InjectedStall& stall : spec.stalls) {
    const int to = stall.to == 0 ? spec.iterations : stall.to;
    if (stall.rank == rank && stall.phase == phase && iteration >= stall.from && iteration <= to) {
      ms += stall.ms;
    }
  }
  return ms;
}

}  // namespace

SyntheticRun slow_node_run() {
  SyntheticRun spec;
  spec.seed = 37001;
  spec.ranks = 64;
  spec.iterations = 40;
  spec.noise_ms = 1.0;
  spec.ranks_per_host = 8;
  for (int r = 8; r <= 15; ++r) {
    spec.stalls.push_back({.rank = r, .phase = Phase::forward_backward, .ms = 4.0, .from = 1});
  }
  return spec;
}

RunData make_synthetic_run(const SyntheticRun& spec) {
  std::mt19937_64 random(spec.seed);
  std::normal_distribution<double> gaussian(0.0, 1.0);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  RunData data;
  std::vector<RankData*> ranks;
  for (int r = 0; r < spec.ranks; ++r) {
    RankData& rank = data.ranks[r];
    rank.rank = r;
    rank.resource = {{"dl.rank", r}, {"dl.world_size", spec.ranks}};
    if (spec.ranks_per_host > 0) {
      rank.resource.emplace_back("host.name", host_name(r / spec.ranks_per_host));
    }
    if (spec.tensor_size > 0 && spec.pipeline_size > 0) {
      const int data_size = spec.ranks / (spec.tensor_size * spec.pipeline_size);
      rank.resource.emplace_back("dl.tensor_parallel.rank", r % spec.tensor_size);
      rank.resource.emplace_back("dl.tensor_parallel.size", spec.tensor_size);
      rank.resource.emplace_back("dl.data_parallel.rank", (r / spec.tensor_size) % data_size);
      rank.resource.emplace_back("dl.data_parallel.size", data_size);
      rank.resource.emplace_back("dl.pipeline_parallel.rank", r / (spec.tensor_size * data_size));
      rank.resource.emplace_back("dl.pipeline_parallel.size", spec.pipeline_size);
    }
    rank.spans.reserve(static_cast<std::size_t>(spec.iterations) * 5);
    ranks.push_back(&rank);
  }
  // Each rank's clock: where its current step starts, in ms from kStartNs.
  std::vector<double> step_start(static_cast<std::size_t>(spec.ranks), 0.0);
  std::vector<double> arrival(step_start.size());
  std::uint64_t next_id = 1;
  const auto noisy = [&](double ms, double shared) {
    const double absolute = spec.noise_ms * ms / spec.forward_backward_ms;
    return std::max(
        0.0, ms * shared * (1.0 + spec.noise * gaussian(random)) + absolute * gaussian(random));
  };
  for (int i = 1; i <= spec.iterations; ++i) {
    const double shared = std::max(0.5, 1.0 + spec.shared_noise * gaussian(random));
    struct Work {
      double setup, data, forward_backward, optimizer, tail;
    };
    std::vector<Work> work(step_start.size());
    for (int r = 0; r < spec.ranks; ++r) {
      Work& w = work[static_cast<std::size_t>(r)];
      w.setup = noisy(spec.untraced_ms / 2.0, shared);
      w.data = noisy(spec.data_ms, shared) + stall_ms(spec, r, Phase::data_loading, i);
      w.forward_backward =
          noisy(spec.forward_backward_ms, shared) + stall_ms(spec, r, Phase::forward_backward, i);
      w.optimizer = noisy(spec.optimizer_ms, shared) + stall_ms(spec, r, Phase::optimizer, i);
      w.tail = noisy(spec.untraced_ms / 2.0, shared);
      if (uniform(random) < spec.spike_probability) {
        const double spike = 5.0 + 15.0 * uniform(random);
        double* stages[] = {&w.data, &w.forward_backward, &w.optimizer};
        *stages[static_cast<std::size_t>(uniform(random) * 3.0) % 3] += spike;
      }
      arrival[static_cast<std::size_t>(r)] =
          step_start[static_cast<std::size_t>(r)] + w.setup + w.data + w.forward_backward;
    }
    // Pipeline: a stage's forward_backward ends when the slowest stage of its pipeline is done.
    std::vector<double> own_arrival = arrival;
    if (spec.pipeline_waits && spec.pipeline_size > 1 && spec.tensor_size > 0) {
      const int lanes = spec.ranks / spec.pipeline_size;  // ranks per stage
      for (int lane = 0; lane < lanes; ++lane) {
        double last = 0.0;
        for (int r = lane; r < spec.ranks; r += lanes) {
          last = std::max(last, arrival[static_cast<std::size_t>(r)]);
        }
        for (int r = lane; r < spec.ranks; r += lanes) arrival[static_cast<std::size_t>(r)] = last;
      }
    }
    const double released =
        *std::max_element(arrival.begin(), arrival.end()) + noisy(spec.allreduce_ms, shared);
    const std::string trace_id = hex_id(static_cast<std::uint64_t>(i)) + hex_id(spec.seed);
    for (int r = 0; r < spec.ranks; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const Work& w = work[ri];
      RankData& rank = *ranks[ri];
      const double start = step_start[ri];
      const double end = released + w.optimizer + w.tail;
      const std::string step_id = hex_id(next_id++);
      const auto child = [&](const char* name, double from, double to,
                             const std::string& parent = "") -> std::string {
        SpanRecord span;
        const std::string id = hex_id(next_id++);
        span.trace_id = trace_id;
        span.span_id = id;
        span.parent_span_id = parent.empty() ? step_id : parent;
        span.name = name;
        span.start_ns = kStartNs + to_ns(from);
        span.end_ns = kStartNs + to_ns(to);
        rank.spans.push_back(std::move(span));
        return id;
      };
      const double data_start = start + w.setup;
      child("megatron.data.next_batch", data_start, data_start + w.data);
      const std::string fb = child("megatron.forward_backward", data_start + w.data, arrival[ri]);
      if (arrival[ri] > own_arrival[ri]) {
        child("megatron.p2p.recv_forward", own_arrival[ri], arrival[ri], fb);
      }
      child("megatron.grad_sync.finish", arrival[ri], released);
      child("megatron.optimizer_step", released, released + w.optimizer);
      SpanRecord step;
      step.trace_id = trace_id;
      step.span_id = step_id;
      step.name = "megatron.train_step";
      step.start_ns = kStartNs + to_ns(start);
      step.end_ns = kStartNs + to_ns(end);
      step.attributes = {{"megatron.iteration", i}};
      rank.spans.push_back(std::move(step));
      step_start[ri] = end;
    }
  }
  return data;
}

std::string host_name(int host) {
  std::string suffix;
  for (int h = host + 1; h > 0; h = (h - 1) / 26) {
    suffix.insert(suffix.begin(), static_cast<char>('a' + (h - 1) % 26));
  }
  return "gpu-" + suffix;
}

std::string describe(const SyntheticRun& spec) {
  std::string text =
      "seed " + std::to_string(spec.seed) + ": " + std::to_string(spec.ranks) + " ranks";
  if (spec.noise_ms > 0.0) {
    char noise[48];
    std::snprintf(noise, sizeof(noise), ", noise %.1f ms", spec.noise_ms);
    text += noise;
  }
  for (const InjectedStall& stall : spec.stalls) {
    char buffer[160];
    std::snprintf(buffer, sizeof(buffer), ", rank %d %s +%.1f ms in %d-%d", stall.rank,
                  std::string(phase_name(stall.phase)).c_str(), stall.ms, stall.from,
                  stall.to == 0 ? spec.iterations : stall.to);
    text += buffer;
  }
  return text;
}

}  // namespace lens::report::testing
