// Pieces of the synthetic training runs built as OTLP protobuf by the `lens report` tests
// (tests/report/report_fixtures.cpp) and the report scale benchmark (bench/report_synth_run.cpp):
// attributes appended to a KeyValue list, and the resource of one rank. Plain functions.
#pragma once

#include <opentelemetry/proto/common/v1/common.pb.h>
#include <opentelemetry/proto/resource/v1/resource.pb.h>

#include <cstdint>
#include <string>

namespace lens::testing {

using OtlpAttributes =
    google::protobuf::RepeatedPtrField<opentelemetry::proto::common::v1::KeyValue>;

inline void add_int_attribute(OtlpAttributes* to, const std::string& key, std::int64_t value) {
  auto* kv = to->Add();
  kv->set_key(key);
  kv->mutable_value()->set_int_value(value);
}

inline void add_double_attribute(OtlpAttributes* to, const std::string& key, double value) {
  auto* kv = to->Add();
  kv->set_key(key);
  kv->mutable_value()->set_double_value(value);
}

inline void add_string_attribute(OtlpAttributes* to, const std::string& key,
                                 const std::string& value) {
  auto* kv = to->Add();
  kv->set_key(key);
  kv->mutable_value()->set_string_value(value);
}

// The resource of rank `rank` of a Megatron run of `world_size` ranks with data parallelism only:
// service.name megatron-lm, nemo.run.id `run_id`, the dl.* rank attributes, 8 ranks per host
// (host.name nodeK holds ranks 8K to 8K+7), tensor- and pipeline-parallel sizes 1.
inline void add_megatron_rank_resource(opentelemetry::proto::resource::v1::Resource* resource,
                                       const std::string& run_id, int rank, int world_size,
                                       int data_parallel_size) {
  OtlpAttributes* attributes = resource->mutable_attributes();
  add_string_attribute(attributes, "service.name", "megatron-lm");
  add_string_attribute(attributes, "nemo.run.id", run_id);
  add_int_attribute(attributes, "dl.rank", rank);
  add_int_attribute(attributes, "dl.world_size", world_size);
  add_int_attribute(attributes, "dl.local_rank", rank % 8);
  add_string_attribute(attributes, "host.name", "node" + std::to_string(rank / 8));
  add_int_attribute(attributes, "dl.tensor_parallel.size", 1);
  add_int_attribute(attributes, "dl.pipeline_parallel.size", 1);
  add_int_attribute(attributes, "dl.data_parallel.size", data_parallel_size);
}

}  // namespace lens::testing
