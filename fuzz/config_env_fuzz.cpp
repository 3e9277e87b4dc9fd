// Fuzz target: the whole configuration path from the environment, every key it reads (lens keys
// under MEGATRON_OTEL_ and NEMO_LENS_, WANDB_*, every OTEL_* setting, the launcher and resource
// variables), through validation, rank detection, the run id, the sampler and the resource.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fixed_host.hpp"
#include "fuzz_input.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/groups.hpp"
#include "lens/megatron/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/sampling.hpp"
#include "lens/strategies.hpp"
#include "lens/validate.hpp"

namespace {

std::vector<std::string> all_keys() {
  std::vector<std::string> keys;
  for (const char* prefix : {"MEGATRON_OTEL_", "NEMO_LENS_"}) {
    for (const char* key :
         {"ENABLED", "RANK_STRATEGY", "EXPORT_STRATEGY", "EXPORT_RANK", "EXPORT_SAMPLE_RATE",
          "SAMPLING_STRATEGY", "SAMPLER_ENABLED", "TRACES_ENABLED", "METRICS_ENABLED",
          "LOGS_ENABLED", "SPAN_GROUPS", "EXPORTER", "FILE_PATH", "RUN_ID", "USER_ID"}) {
      keys.push_back(std::string(prefix) + key);
    }
  }
  for (const char* key : {"WANDB_ENTITY",
                          "WANDB_PROJECT",
                          "OTEL_SDK_DISABLED",
                          "OTEL_SERVICE_NAME",
                          "OTEL_RESOURCE_ATTRIBUTES",
                          "OTEL_TRACES_SAMPLER",
                          "OTEL_TRACES_SAMPLER_ARG",
                          "OTEL_PROPAGATORS",
                          "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
                          "OTEL_METRIC_EXPORT_INTERVAL",
                          "OTEL_METRIC_EXPORT_TIMEOUT",
                          "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                          "OTEL_ATTRIBUTE_COUNT_LIMIT",
                          "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                          "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
                          "OTEL_SPAN_EVENT_COUNT_LIMIT",
                          "OTEL_SPAN_LINK_COUNT_LIMIT",
                          "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT",
                          "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT",
                          "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT",
                          "OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT"}) {
    keys.emplace_back(key);
  }
  for (const char* signal : {"", "TRACES_", "METRICS_", "LOGS_"}) {
    for (const char* key : {"PROTOCOL", "ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION",
                            "CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE", "INSECURE"}) {
      keys.push_back(std::string("OTEL_EXPORTER_OTLP_") + signal + key);
    }
  }
  for (const char* processor : {"OTEL_BSP_", "OTEL_BLRP_"}) {
    for (const char* key :
         {"SCHEDULE_DELAY", "EXPORT_TIMEOUT", "MAX_QUEUE_SIZE", "MAX_EXPORT_BATCH_SIZE"}) {
      keys.push_back(std::string(processor) + key);
    }
  }
  for (const char* key : {"RANK",
                          "WORLD_SIZE",
                          "LOCAL_RANK",
                          "LOCAL_WORLD_SIZE",
                          "GROUP_RANK",
                          "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                          "OMPI_COMM_WORLD_NODE_RANK",
                          "PMI_RANK",
                          "PMI_SIZE",
                          "MPI_LOCALRANKID",
                          "MPI_LOCALNRANKS",
                          "SLURM_PROCID",
                          "SLURM_NTASKS",
                          "SLURM_LOCALID",
                          "SLURM_NODEID",
                          "SLURM_NTASKS_PER_NODE",
                          "SLURM_TASKS_PER_NODE",
                          "SLURM_JOB_ID",
                          "SLURM_JOB_NAME",
                          "SLURM_NODELIST",
                          "SLURM_NNODES",
                          "SLURM_PARTITION",
                          "SLURM_CLUSTER_NAME",
                          "SLURM_ARRAY_JOB_ID",
                          "SLURM_ARRAY_TASK_ID",
                          "SLURM_RESTART_COUNT",
                          "LENS_SLURM_SLUID",
                          "LENS_SLURM_ARRAY_SLUID",
                          "NVRX_CYCLE",
                          "NVRX_INFRA_RANK",
                          "NVRX_MEMBERSHIP",
                          "TORCHELASTIC_RUN_ID",
                          "TORCHELASTIC_RESTART_COUNT",
                          "OMPI_MCA_ess_base_jobid",
                          "PMIX_NAMESPACE",
                          "KUBERNETES_SERVICE_HOST",
                          "HOSTNAME",
                          "K8S_NAMESPACE",
                          "K8S_POD_NAME",
                          "K8S_POD_UID",
                          "K8S_NODE_NAME",
                          "K8S_CONTAINER_NAME",
                          "K8S_JOB_NAME",
                          "CUDA_VISIBLE_DEVICES",
                          "DEPLOYMENT_ENV",
                          "ENVIRONMENT"}) {
    keys.emplace_back(key);
  }
  return keys;
}

// Everything `lens config` and setup do with a configuration read from the environment.
void use(lens::Config config, const lens::Env& env) {
  static const lens::fuzz::FixedHost host;
  const auto detected = lens::RankInfo::detect(env);
  const lens::RankInfo rank = detected.ok() ? *detected : lens::RankInfo{};
  const lens::Status valid = lens::validate(config, detected.ok() ? &rank : nullptr);
  for (const std::string& field : lens::config_field_names()) {
    (void)config.source_of(field);
    (void)config.label_of(field);
  }
  if (auto run_id = lens::resolve_run_id(config, rank, env, nullptr); run_id.ok()) {
    config.run_id = run_id->value;
  }
  if (valid.ok()) {
    (void)lens::should_export(config, rank);
    (void)lens::make_sampler(config, rank);
    (void)lens::resolve_span_groups(config.span_groups);
  }
  const lens::Attributes resource = lens::build_resource(config, rank, {}, env, host);
  (void)lens::encode_resource_attributes(resource, env);
}

}  // namespace

// Input: KEY=VALUE lines (fuzz_input.hpp); KEY may be a decimal index into all_keys().
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> keys = all_keys();
  const lens::Env env =
      lens::Env::from(lens::fuzz::environment(lens::fuzz::as_text(data, size), keys));
  // The Megatron integration's prefixes (MEGATRON_OTEL_, then NEMO_LENS_), and lens's own.
  if (auto config = lens::megatron::config_from_env(env); config.ok()) {
    use(std::move(config).value(), env);
  }
  if (auto config = lens::Config::from_env(lens::kDefaultPrefix, {}, env); config.ok()) {
    use(std::move(config).value(), env);
  }
  return 0;
}
