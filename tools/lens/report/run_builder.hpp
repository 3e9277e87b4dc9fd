// Builds RunData from decoded OTLP requests: each resource is assigned to its rank (dl.rank, else
// rank), spans and training metric points are kept per rank, log records counted.
// Not thread-safe: one reader feeds one builder.
#pragma once

#include <optional>

#include "report/otlp_reader.hpp"
#include "report/run_model.hpp"

namespace lens::report {

// The rank a resource names: dl.rank, else rank (int, integral double or decimal string).
std::optional<int> rank_of(const AttributeList& resource);

class RunBuilder final : public TelemetrySink {
 public:
  void on_traces(const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest&
                     request) override;
  void on_metrics(const opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest&
                      request) override;
  void on_logs(
      const opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest& request) override;

  const RunData& data() const { return data_; }
  RunData take() { return std::move(data_); }

 private:
  RankData* rank_for(const opentelemetry::proto::resource::v1::Resource& resource);

  RunData data_;
};

}  // namespace lens::report
