// The OTLP request of one batch of each signal, as the OTLP exporters send it and the file
// exporters write it: spans through lens's recordable on a reused arena (otlp_span_batch.hpp),
// metrics and logs through opentelemetry-cpp's request builders; one resource per distinct
// resource and unique attribute keys. Thread-safety: with_request may run on several threads.
#pragma once

#include <opentelemetry/exporters/otlp/otlp_log_recordable.h>
#include <opentelemetry/exporters/otlp/otlp_metric_utils.h>
#include <opentelemetry/exporters/otlp/otlp_recordable_utils.h>
#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>

#include <memory>
#include <utility>

#include "export/otlp_span_batch.hpp"
#include "export/signal_sdk.hpp"
#include "export/unique_attribute_keys.hpp"

namespace lens::exporters {

// Metrics and logs: a request built for each export.
template <Signal S>
class OtlpRequests {
 public:
  using Recordable = opentelemetry::exporter::otlp::OtlpLogRecordable;  // logs only

  // Returns use(request) for the request of `batch`.
  template <class Use>
  auto with_request(const BatchOf<S>& batch, Use&& use) {
    if constexpr (S == Signal::metrics) {
      opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest request;
      opentelemetry::exporter::otlp::OtlpMetricUtils::PopulateRequest(batch, &request);
      keep_last_value_per_key(&request);
      return use(std::as_const(request));
    } else {
      opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest request;
      opentelemetry::exporter::otlp::OtlpRecordableUtils::PopulateRequest(batch, &request);
      keep_last_value_per_key(&request);
      return use(std::as_const(request));
    }
  }
};

// Spans: the request is built on a pooled arena block, returned to the pool after use.
template <>
class OtlpRequests<Signal::traces> {
 public:
  using Recordable = OtlpSpanRecordable;

  template <class Use>
  auto with_request(const BatchOf<Signal::traces>& spans, Use&& use) {
    std::unique_ptr<OtlpSpanBatch> batch = pool_.take();
    auto result = use(batch->build(spans));
    pool_.give_back(std::move(batch));
    return result;
  }

 private:
  OtlpSpanBatchPool pool_;
};

}  // namespace lens::exporters
