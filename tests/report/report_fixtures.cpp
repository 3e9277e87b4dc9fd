// Synthetic training runs (see report_fixtures.hpp).
#include "report_fixtures.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "lens/otlp_json.hpp"
#include "support/synthetic_otlp.hpp"

namespace lens::report::testing {
namespace {

namespace trace = opentelemetry::proto::trace::v1;
namespace metrics = opentelemetry::proto::metrics::v1;
using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

// 8 or 16 id bytes: the rank, then a counter, big-endian.
std::string id_bytes(int rank, std::uint64_t counter, int size) {
  std::string out(static_cast<std::size_t>(size), '\0');
  out[0] = static_cast<char>(rank + 1);
  for (int i = 0; i < 7; ++i) {
    out[static_cast<std::size_t>(size - 1 - i)] = static_cast<char>((counter >> (8 * i)) & 0xff);
  }
  return out;
}

void fill_resource(opentelemetry::proto::resource::v1::Resource* resource, const RunSpec& spec,
                   int rank) {
  lens::testing::add_megatron_rank_resource(
      resource, spec.run_id, rank, spec.world_size > 0 ? spec.world_size : spec.ranks, spec.ranks);
  lens::testing::add_int_attribute(resource->mutable_attributes(), "host.gpu.count", 8);
}

std::vector<int> reporting_ranks(const RunSpec& spec) {
  if (!spec.only_ranks.empty()) return spec.only_ranks;
  std::vector<int> out;
  for (int r = 0; r < spec.ranks; ++r) out.push_back(r);
  return out;
}

class SpanWriter {
 public:
  SpanWriter(trace::ScopeSpans* scope, int rank) : scope_(scope), rank_(rank) {}

  // A span from `start_ms` to `end_ms` after `base_ns`; returns its span id.
  std::string add(const std::string& name, const std::string& trace_id,
                  const std::string& parent_id, std::int64_t base_ns, double start_ms,
                  double end_ms, trace::Span** out = nullptr) {
    trace::Span* span = scope_->add_spans();
    span->set_trace_id(trace_id);
    span->set_span_id(id_bytes(rank_, ++counter_, 8));
    span->set_parent_span_id(parent_id);
    span->set_name(name);
    span->set_kind(trace::Span::SPAN_KIND_INTERNAL);
    span->set_start_time_unix_nano(static_cast<std::uint64_t>(
        kOriginNs + base_ns + static_cast<std::int64_t>(start_ms * 1e6)));
    span->set_end_time_unix_nano(
        static_cast<std::uint64_t>(kOriginNs + base_ns + static_cast<std::int64_t>(end_ms * 1e6)));
    if (out != nullptr) *out = span;
    return span->span_id();
  }

  std::string new_trace() { return id_bytes(rank_, ++counter_, 16); }

 private:
  trace::ScopeSpans* scope_;
  int rank_;
  std::uint64_t counter_ = 0;
};

// The forward and optimizer slowness of `rank`, and the wait of a fast rank.
struct StepShape {
  double forward = 0.0;
  double optimizer = 0.0;
  double wait = 0.0;
};

StepShape shape_of(const RunSpec& spec, int rank) {
  StepShape shape;
  const double slow = rank == spec.slow_rank ? spec.slow_ms : 0.0;
  (spec.slow_in_optimizer ? shape.optimizer : shape.forward) = slow;
  if (spec.synchronous && spec.slow_rank >= 0) shape.wait = spec.slow_ms - slow;
  return shape;
}

double step_duration_ms(const RunSpec& spec, int rank) {
  const StepShape s = shape_of(spec, rank);
  return 290.0 + s.forward + s.optimizer + s.wait;
}

}  // namespace

std::vector<ExportTraceServiceRequest> make_traces(const RunSpec& spec) {
  std::vector<ExportTraceServiceRequest> out;
  for (const int rank : reporting_ranks(spec)) {
    ExportTraceServiceRequest request;
    auto* resource_spans = request.add_resource_spans();
    fill_resource(resource_spans->mutable_resource(), spec, rank);
    auto* scope = resource_spans->add_scope_spans();
    scope->mutable_scope()->set_name("lens.megatron");
    SpanWriter w(scope, rank);
    const double end_ms = static_cast<double>(kFirstStepMs + spec.iterations * kStepPeriodMs);
    const std::string job = w.new_trace();
    const std::string pretrain = w.add("megatron.pretrain", job, "", 0, 0, end_ms + 100);
    w.add("megatron.model_init", job, pretrain, 0, 100, 500);
    const std::string train = w.add("megatron.train", job, pretrain, 0, 1000, end_ms);
    const StepShape s = shape_of(spec, rank);
    for (int i = 1; i <= spec.iterations; i += spec.iteration_stride) {
      const std::int64_t base = step_offset_ns(i);
      const std::string trace_id = spec.steps_are_roots ? w.new_trace() : job;
      trace::Span* step_span = nullptr;
      const std::string step =
          w.add("megatron.train_step", trace_id, spec.steps_are_roots ? "" : train, base, 0,
                step_duration_ms(spec, rank), &step_span);
      lens::testing::add_int_attribute(step_span->mutable_attributes(), "megatron.iteration", i);
      lens::testing::add_double_attribute(step_span->mutable_attributes(), "megatron.loss",
                                          spec.loss_start - 0.1 * i);
      const double f = s.forward;
      const std::string fb = w.add("megatron.forward_backward", trace_id, step, base, 5, 205 + f);
      const std::string mf = w.add("megatron.microbatch.forward", trace_id, fb, base, 5, 105 + f);
      w.add("megatron.data.next_batch", trace_id, mf, base, 5, 15);
      w.add("megatron.p2p.send_forward", trace_id, fb, base, 105 + f, 115 + f);
      w.add("megatron.microbatch.backward", trace_id, fb, base, 115 + f, 205 + f);
      w.add("megatron.grad_sync.start", trace_id, step, base, 205 + f, 210 + f);
      const double sync_end = 230 + f + s.wait;
      w.add("megatron.grad_sync.finish", trace_id, step, base, 210 + f, sync_end);
      w.add("megatron.optimizer_step", trace_id, step, base, sync_end, sync_end + 50 + s.optimizer);
      if (i == 10) {
        const double after = step_duration_ms(spec, rank) + 1;
        w.add("megatron.evaluate", job, train, base, after, after + 6);
      }
    }
    const double last_end =
        static_cast<double>(step_offset_ns(spec.iterations)) / 1e6 + step_duration_ms(spec, rank);
    w.add("megatron.save_checkpoint", job, train, 0, last_end + 1, last_end + 51);
    out.push_back(std::move(request));
  }
  return out;
}

std::vector<ExportMetricsServiceRequest> make_metrics(const RunSpec& spec, bool cumulative) {
  constexpr int kLogInterval = 5;
  const std::vector<double> bounds{100, 200, 300, 400, 500, 1000};
  std::vector<ExportMetricsServiceRequest> out;
  for (const int rank : reporting_ranks(spec)) {
    const double duration = step_duration_ms(spec, rank);
    // The bucket of this rank's step duration: (bounds[i-1], bounds[i]].
    const auto bucket = static_cast<std::size_t>(
        std::lower_bound(bounds.begin(), bounds.end(), duration) - bounds.begin());
    std::uint64_t total = 0;
    for (int i = kLogInterval; i <= spec.iterations; i += kLogInterval) {
      ExportMetricsServiceRequest request;
      auto* resource_metrics = request.add_resource_metrics();
      fill_resource(resource_metrics->mutable_resource(), spec, rank);
      auto* scope = resource_metrics->add_scope_metrics();
      scope->mutable_scope()->set_name("lens.megatron");
      const auto time = static_cast<std::uint64_t>(kOriginNs + step_offset_ns(i) +
                                                   static_cast<std::int64_t>(duration * 1e6));
      auto add_gauge = [&](const std::string& name, double value) {
        metrics::Metric* metric = scope->add_metrics();
        metric->set_name(name);
        metrics::NumberDataPoint* point = metric->mutable_gauge()->add_data_points();
        point->set_time_unix_nano(time);
        point->set_as_double(value);
      };
      add_gauge("megatron.training.loss", spec.loss_start - 0.1 * i);
      add_gauge("megatron.training.tokens_per_sec", 1000.0 * 290.0 / duration);
      add_gauge("megatron.training.grad_norm", 1.5);
      metrics::Metric* metric = scope->add_metrics();
      metric->set_name("megatron.training.step_duration_ms");
      metric->set_unit("ms");
      auto* histogram = metric->mutable_histogram();
      histogram->set_aggregation_temporality(cumulative
                                                 ? metrics::AGGREGATION_TEMPORALITY_CUMULATIVE
                                                 : metrics::AGGREGATION_TEMPORALITY_DELTA);
      metrics::HistogramDataPoint* point = histogram->add_data_points();
      total += kLogInterval;
      const std::uint64_t count = cumulative ? total : kLogInterval;
      const auto start = static_cast<std::uint64_t>(
          kOriginNs + (cumulative || i == kLogInterval ? 0 : step_offset_ns(i - kLogInterval)));
      point->set_start_time_unix_nano(start);
      point->set_time_unix_nano(time);
      point->set_count(count);
      point->set_sum(duration * static_cast<double>(count));
      for (const double b : bounds) point->add_explicit_bounds(b);
      for (std::size_t b = 0; b <= bounds.size(); ++b)
        point->add_bucket_counts(b == bucket ? count : 0);
      out.push_back(std::move(request));
    }
  }
  return out;
}

TempDir::TempDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  path_ = std::filesystem::path(base != nullptr ? base : "/tmp") /
          ("lens-report-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

template <class Message>
void append_lines(const std::filesystem::path& file, const std::vector<Message>& messages) {
  std::ofstream out(file, std::ios::app | std::ios::binary);
  for (const Message& message : messages) out << otlp_json::encode(message) << "\n";
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

template void append_lines(const std::filesystem::path&,
                           const std::vector<ExportTraceServiceRequest>&);
template void append_lines(const std::filesystem::path&,
                           const std::vector<ExportMetricsServiceRequest>&);

void write_run(const std::filesystem::path& dir, const RunSpec& spec) {
  append_lines(dir / "traces.jsonl", make_traces(spec));
  append_lines(dir / "metrics.jsonl", make_metrics(spec, true));
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace lens::report::testing
