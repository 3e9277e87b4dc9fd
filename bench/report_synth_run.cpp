// Writes a large synthetic training run in lens collect's on-disk format (traces.jsonl and
// metrics.jsonl, one OTLP JSON request per line, encoded as lens collect encodes them) for the
// `lens report` scale benchmark (bench/report_scale.sh).
//
//   lens_report_synth --ranks N --iterations M --out DIR [--seed S] [--slow-node K]
//
// Synchronous data parallelism: each step of each rank is megatron.train_step (with
// megatron.iteration and megatron.loss) and its children megatron.data.next_batch,
// megatron.forward_backward, megatron.grad_sync.finish (every rank leaves it together) and
// megatron.optimizer_step, with 3% noise per stage. Ranks sit 8 per host (nodeK holds ranks
// 8K-8K+7). Rank N/3 is a straggler (with --slow-node K: the 8 ranks of nodeK, K >= 1): +5 ms in
// forward_backward from the middle of the run on. Spans leave each rank in batches of 512 (the
// batch span processor's default), and the batches of all ranks interleave in the files, as lens
// collect appends them. One metrics request per rank every 10 iterations (loss gauge).
// Streams: memory stays at one batch per rank.
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "lens/otlp_json.hpp"
#include "support/synthetic_otlp.hpp"

namespace {

namespace trace = opentelemetry::proto::trace::v1;
namespace metrics = opentelemetry::proto::metrics::v1;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

constexpr std::int64_t kStartNs = 1'700'000'000'000'000'000;
constexpr int kBatchSpans = 512;

struct Options {
  int ranks = 0;
  int iterations = 0;
  std::uint64_t seed = 1;
  int slow_node = -1;  // --slow-node K: the 8 ranks of host nodeK are slow, not rank N/3
  std::filesystem::path out;
};

constexpr const char* kUsage =
    "usage: lens_report_synth --ranks N --iterations M --out DIR [--seed S] [--slow-node K]\n";

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "lens_report_synth: " << problem << "\n" << kUsage;
  std::exit(2);
}

long positive(const std::string& flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 1) {
    usage("invalid value for " + flag + ": '" + text + "'; accepted: an integer >= 1");
  }
  return value;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) usage("missing value for " + flag);
    const char* value = argv[++i];
    if (flag == "--ranks") {
      options.ranks = static_cast<int>(positive(flag, value));
    } else if (flag == "--iterations") {
      options.iterations = static_cast<int>(positive(flag, value));
    } else if (flag == "--seed") {
      options.seed = static_cast<std::uint64_t>(positive(flag, value));
    } else if (flag == "--out") {
      options.out = value;
    } else if (flag == "--slow-node") {
      options.slow_node = static_cast<int>(positive(flag, value));
    } else {
      usage("unknown option '" + flag + "'");
    }
  }
  if (options.ranks == 0 || options.iterations == 0 || options.out.empty()) {
    usage("--ranks, --iterations and --out are required");
  }
  return options;
}

std::string id_bytes(std::uint64_t high, std::uint64_t low, int size) {
  std::string out(static_cast<std::size_t>(size), '\0');
  for (int i = 0; i < 8; ++i) {
    out[static_cast<std::size_t>(size - 1 - i)] = static_cast<char>((low >> (8 * i)) & 0xff);
    if (size == 16)
      out[static_cast<std::size_t>(7 - i)] = static_cast<char>((high >> (8 * i)) & 0xff);
  }
  return out;
}

// Rank `rank` of `ranks`, all data parallel, in run synthetic-scale.
void fill_resource(opentelemetry::proto::resource::v1::Resource* resource, int rank, int ranks) {
  lens::testing::add_megatron_rank_resource(resource, "synthetic-scale", rank, ranks, ranks);
}

// One rank's spans not yet written.
class RankBatch {
 public:
  RankBatch(int rank, int ranks) {
    auto* resource_spans = request_.add_resource_spans();
    fill_resource(resource_spans->mutable_resource(), rank, ranks);
    scope_ = resource_spans->add_scope_spans();
    scope_->mutable_scope()->set_name("lens");
  }
  trace::Span* add() { return scope_->add_spans(); }
  bool full() const { return scope_->spans_size() >= kBatchSpans; }
  void flush(std::ofstream& out) {
    if (scope_->spans_size() == 0) return;
    out << lens::otlp_json::encode(request_) << '\n';
    scope_->clear_spans();
  }

 private:
  ExportTraceServiceRequest request_;
  trace::ScopeSpans* scope_ = nullptr;
};

void write_metrics(std::ofstream& out, int rank, int ranks, int iteration, double loss) {
  ExportMetricsServiceRequest request;
  auto* resource_metrics = request.add_resource_metrics();
  fill_resource(resource_metrics->mutable_resource(), rank, ranks);
  auto* metric = resource_metrics->add_scope_metrics()->add_metrics();
  metric->set_name("megatron.training.loss");
  auto* point = metric->mutable_gauge()->add_data_points();
  point->set_time_unix_nano(static_cast<std::uint64_t>(kStartNs) +
                            static_cast<std::uint64_t>(iteration) * 35'000'000ull);
  point->set_as_double(loss);
  out << lens::otlp_json::encode(request) << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  std::filesystem::create_directories(options.out);
  std::ofstream traces(options.out / "traces.jsonl", std::ios::binary | std::ios::trunc);
  std::ofstream metrics_out(options.out / "metrics.jsonl", std::ios::binary | std::ios::trunc);
  if (!traces || !metrics_out) usage("cannot write into --out " + options.out.string());

  std::mt19937_64 random(options.seed);
  std::normal_distribution<double> gaussian(0.0, 1.0);
  const auto noisy = [&](double ms) {
    return std::max(0.05, ms * (1.0 + 0.03 * gaussian(random)));
  };
  const int slow_rank = options.ranks / 3;
  const auto slow = [&](int r) {
    return options.slow_node >= 0 ? r / 8 == options.slow_node : r == slow_rank;
  };
  const int slow_from = std::max(1, options.iterations / 2);
  const auto to_ns = [](double ms) { return kStartNs + static_cast<std::int64_t>(ms * 1e6); };

  std::vector<RankBatch> batches;
  batches.reserve(static_cast<std::size_t>(options.ranks));
  for (int r = 0; r < options.ranks; ++r) batches.emplace_back(r, options.ranks);
  std::vector<double> step_start(static_cast<std::size_t>(options.ranks), 0.0);
  std::vector<double> arrival(step_start.size());
  std::vector<double> data(step_start.size());
  std::vector<double> forward_backward(step_start.size());
  std::uint64_t next_span = 1;

  for (int i = 1; i <= options.iterations; ++i) {
    for (std::size_t r = 0; r < step_start.size(); ++r) {
      data[r] = noisy(3.0);
      forward_backward[r] = noisy(22.0) + (slow(static_cast<int>(r)) && i >= slow_from ? 5.0 : 0.0);
      arrival[r] = step_start[r] + 0.5 + data[r] + forward_backward[r];
    }
    const double released = *std::max_element(arrival.begin(), arrival.end()) + noisy(3.0);
    const double loss = 10.0 * std::exp(-static_cast<double>(i) / 200.0) + 1.0;
    for (std::size_t r = 0; r < step_start.size(); ++r) {
      RankBatch& batch = batches[r];
      const double optimizer = noisy(4.0);
      const double end = released + optimizer + 0.5;
      const std::string trace_id = id_bytes(r + 1, static_cast<std::uint64_t>(i), 16);
      const std::string step_id = id_bytes(0, next_span++, 8);
      const auto child = [&](const char* name, double from, double to) {
        trace::Span* span = batch.add();
        span->set_trace_id(trace_id);
        span->set_span_id(id_bytes(0, next_span++, 8));
        span->set_parent_span_id(step_id);
        span->set_name(name);
        span->set_kind(trace::Span::SPAN_KIND_INTERNAL);
        span->set_start_time_unix_nano(static_cast<std::uint64_t>(to_ns(from)));
        span->set_end_time_unix_nano(static_cast<std::uint64_t>(to_ns(to)));
      };
      const double data_start = step_start[r] + 0.5;
      child("megatron.data.next_batch", data_start, data_start + data[r]);
      child("megatron.forward_backward", data_start + data[r], arrival[r]);
      child("megatron.grad_sync.finish", arrival[r], released);
      child("megatron.optimizer_step", released, released + optimizer);
      trace::Span* step = batch.add();
      step->set_trace_id(trace_id);
      step->set_span_id(step_id);
      step->set_name("megatron.train_step");
      step->set_kind(trace::Span::SPAN_KIND_INTERNAL);
      step->set_start_time_unix_nano(static_cast<std::uint64_t>(to_ns(step_start[r])));
      step->set_end_time_unix_nano(static_cast<std::uint64_t>(to_ns(end)));
      lens::testing::add_int_attribute(step->mutable_attributes(), "megatron.iteration", i);
      lens::testing::add_double_attribute(step->mutable_attributes(), "megatron.loss",
                                          loss + 0.01 * gaussian(random));
      step_start[r] = end;
      if (batch.full()) batch.flush(traces);
      if (i % 10 == 0) write_metrics(metrics_out, static_cast<int>(r), options.ranks, i, loss);
    }
  }
  for (RankBatch& batch : batches) batch.flush(traces);
  traces.close();
  metrics_out.close();
  if (!traces || !metrics_out) {
    std::cerr << "lens_report_synth: writing into " << options.out << " failed\n";
    return 1;
  }
  std::cout << "wrote " << options.ranks << " ranks x " << options.iterations << " iterations ("
            << (next_span - 1) << " spans) to " << options.out.string() << "\n";
  return 0;
}
