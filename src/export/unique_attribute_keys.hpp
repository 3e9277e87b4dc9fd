// OTLP requires the keys of an attribute list to be unique. What lens sends keeps the last value
// set for a key, in the place where the key first appeared (a span whose start attributes are
// set again, an event or log record given the same key twice). Applied to every request lens
// builds, whatever recordable or protocol produced it, so that the rule holds everywhere:
// spans, events, links, log records, metric data points, exemplars, resources and scopes.
// Thread-safety: the functions touch only their argument.
#pragma once

#include <opentelemetry/proto/collector/logs/v1/logs_service.pb.h>
#include <opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

namespace lens::exporters {

using AttributeList =
    google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>;

// One attribute per key, the last value at the first key's place; order otherwise kept.
void keep_last_value_per_key(AttributeList* attributes);

void keep_last_value_per_key(
    opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest* request);
void keep_last_value_per_key(
    opentelemetry::proto::collector::logs::v1::ExportLogsServiceRequest* request);
void keep_last_value_per_key(
    opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest* request);

}  // namespace lens::exporters
