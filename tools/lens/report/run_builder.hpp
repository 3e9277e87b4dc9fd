// Builds RunData from decoded OTLP requests: each resource is assigned to its rank (dl.rank, else
// rank), spans and training metric points are kept per rank, log records counted. The run ids
// (nemo.run.id) of the resources are counted; with a run id filter, resources of other runs are
// skipped.
// Not thread-safe: one reader feeds one builder.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "report/otlp_reader.hpp"
#include "report/run_model.hpp"

namespace lens::report {

// The rank a resource names: dl.rank, else rank (int, integral double or decimal string).
std::optional<int> rank_of(const AttributeList& resource);

class RunBuilder final : public TelemetrySink {
 public:
  RunBuilder() = default;
  // Keeps only resources whose nemo.run.id is `run_id`.
  explicit RunBuilder(std::string run_id) : run_id_filter_(std::move(run_id)) {}

  void on_traces(const opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest&
                     request) override;
  void on_metrics(const opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest&
                      request) override;
  void on_logs(
      const opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest& request) override;

  const RunData& data() const { return data_; }
  // The data, each rank's spans without spare capacity (a large run's biggest cost).
  RunData take();
  // Resources seen per nemo.run.id ("" for none), those skipped by the filter included.
  const std::map<std::string, std::uint64_t>& run_ids() const { return run_ids_; }
  // The distinct nemo.lens.run_uuid values of the resources seen (the filter's skipped included).
  std::size_t run_uuids() const { return run_uuids_.size(); }

 private:
  // Counts the resource's run id; false when the filter skips it.
  bool wanted(const opentelemetry::proto::resource::v1::Resource& resource);
  RankData* rank_for(const opentelemetry::proto::resource::v1::Resource& resource);

  std::optional<std::string> run_id_filter_;
  std::map<std::string, std::uint64_t> run_ids_;
  std::set<std::string> run_uuids_;
  RunData data_;
};

}  // namespace lens::report
