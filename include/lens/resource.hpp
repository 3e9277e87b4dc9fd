// Run identification and the OpenTelemetry resource (docs/resources.md): detectors for the host,
// SLURM, Kubernetes and the GPU ("Detected attributes") and the merge order ("Merge order").
// Thread-safety: every function here is thread-safe given an immutable Env and a thread-safe
// HostProbe (system_host_probe() is). No function throws; failures are values or omissions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens {

// ---------------------------------------------------------------------------------------------
// Run identification
// ---------------------------------------------------------------------------------------------

// The job's collective (for example MPI_COMM_WORLD or a torch.distributed process group),
// as far as lens needs it. Implementations decide their own thread-safety; lens calls it
// only from the thread that calls setup_telemetry or broadcast_trace_context.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Every rank calls it; returns root's payload on every rank.
  virtual Result<std::string> broadcast(const std::string& payload, int root) = 0;
};

struct RunId {
  std::string value;
  // Where the value came from: the config's source for run_id ("env:NEMO_LENS_RUN_ID",
  // "env:MEGATRON_OTEL_RUN_ID", ... or "config.run_id" when set in code), "env:SLURM_JOB_ID",
  // "env:TORCHELASTIC_RUN_ID", "env:OMPI_MCA_ess_base_jobid", "env:PMIX_NAMESPACE",
  // "collective" or "random".
  std::string source;
  // Non-empty only for the per-process random fallback: one line for stderr saying that the
  // ranks will not share the id and how to fix it.
  std::string warning;
};

// Priority (values trimmed; blank = unset): config.run_id > SLURM_JOB_ID >
// TORCHELASTIC_RUN_ID (unless "none", any case) > OMPI_MCA_ess_base_jobid > PMIX_NAMESPACE >
// a 12-lower-hex-char random id made by collective rank 0 and broadcast from root 0 (every
// rank must then call this function) > a per-process random id with a warning.
// The launcher variables must be alike on every rank, or some ranks would skip the broadcast.
// Errors: the broadcast failed, or it delivered a blank id.
Result<RunId> resolve_run_id(const Config& config, const RankInfo& rank, const Env& env,
                             Collective* collective = nullptr);

// 12 lower-case hex characters: the start of a random UUIDv4 drawn from OS entropy
// (getrandom, never a user-seedable PRNG).
std::string random_run_id();

// ---------------------------------------------------------------------------------------------
// UUIDv5
// ---------------------------------------------------------------------------------------------

// RFC 4122 namespace for URLs.
inline constexpr std::string_view kUuidNamespaceUrl = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";

// RFC 4122 version-5 UUID (SHA-1) of `name` in `namespace_uuid` (canonical 36-char form or 32
// hex digits, any case), as a lower-case canonical string. Empty when the namespace does not
// parse or SHA-1 is unavailable.
std::string uuid5(std::string_view namespace_uuid, std::string_view name);

// ---------------------------------------------------------------------------------------------
// Host probing
// ---------------------------------------------------------------------------------------------

struct GpuIdentity {
  std::string name, uuid, serial, pci_bus_id;
};

// What the detectors ask of the host; injectable so that tests can fake any machine.
class HostProbe {
 public:
  virtual ~HostProbe() = default;
  virtual std::string hostname() const = 0;
  virtual std::int64_t pid() const = 0;
  // Devices NVML reports; nullopt when NVML is absent or fails.
  virtual std::optional<int> nvml_gpu_count() const = 0;
  // Entries of /proc/driver/nvidia/gpus; nullopt when the directory is absent.
  virtual std::optional<int> proc_driver_gpu_count() const = 0;
  virtual bool path_exists(const std::string& path) const = 0;
  // NVML identity of the device with this physical index; nullopt when NVML is absent, the
  // index is invalid, or name/UUID cannot be read. serial and pci_bus_id may be empty.
  virtual std::optional<GpuIdentity> gpu_identity(int physical_index) const = 0;
};

// The real host: gethostname, getpid, NVML loaded at run time (dlopen "libnvidia-ml.so.1",
// never required), /proc/driver/nvidia/gpus. A process-lifetime singleton; thread-safe.
const HostProbe& system_host_probe();

// ---------------------------------------------------------------------------------------------
// Detectors
// ---------------------------------------------------------------------------------------------

// host.name, process.pid (int64), host.gpu.count (int64): CUDA_VISIBLE_DEVICES when set
// (blank = 0, else the number of comma-separated entries, unvalidated), else the NVML count,
// else the /proc/driver/nvidia/gpus count, else omitted.
Attributes detect_local_resource(const Env& env, const HostProbe& probe);

// When SLURM_JOB_ID is non-blank: slurm.job.id, slurm.job.name, slurm.nodelist, slurm.nnodes,
// slurm.ntasks, slurm.partition, slurm.cluster.name (strings, each only if non-blank); merged
// with detect_job_identity(env, run_id) in every case.
Attributes detect_slurm_resource(const Env& env, std::string_view run_id = {});

// Megatron's job identity (docs/resources.md, "Run identification"): slurm.job.id, slurm.sluid,
// slurm.cluster, slurm.array.job_id, slurm.array.task_id, slurm.array.sluid, slurm.restart_count,
// nvrx.cycle, nvrx.infra_rank, nvrx.membership (each only if non-blank),
// slurm.torchelastic.restart_count (whenever TORCHELASTIC_RESTART_COUNT exists), and always
// nemo.lens.job_uuid and nemo.lens.run_uuid, the rank-invariant UUIDv5s. `run_id` is the resolved
// run id (nemo.run.id): outside SLURM, job_key is "run:" + run_id (not "nojob", which only an empty
// run_id keeps), so each run id has its own job_uuid and run_uuid; inside SLURM a run id other than
// SLURM_JOB_ID appends "/run:" + run_id to the run key (two runs in one allocation). With the run
// id SLURM_JOB_ID, the values are Megatron's.
Attributes detect_job_identity(const Env& env, std::string_view run_id = {});

// When KUBERNETES_SERVICE_HOST is non-blank or /var/run/secrets/kubernetes.io exists:
// k8s.namespace.name, k8s.pod.name (K8S_POD_NAME, else HOSTNAME), k8s.pod.uid, k8s.node.name,
// k8s.container.name, k8s.job.name from the K8S_* variables, each only if non-blank.
Attributes detect_kubernetes_resource(const Env& env, const HostProbe& probe);

// dl.gpu.index (int64, the physical index), dl.gpu.name, dl.gpu.uuid, dl.gpu.serial,
// dl.gpu.pci_bus_id (non-empty only). Physical index: CUDA_VISIBLE_DEVICES[local_rank] parsed
// as an integer when that variable is non-blank (non-integer entries such as UUIDs, or an
// out-of-range local rank, give {}), else local_rank (nullopt = 0). {} on any failure.
Attributes gpu_identity_attributes(std::optional<int> local_rank, const Env& env,
                                   const HostProbe& probe);

// ---------------------------------------------------------------------------------------------
// The merged resource
// ---------------------------------------------------------------------------------------------

// Merge order, lowest to highest (docs/resources.md, "Merge order"):
//   1. telemetry.sdk.language="cpp", telemetry.sdk.name="opentelemetry",
//      telemetry.sdk.version=OPENTELEMETRY_VERSION
//   2. detected: local, then SLURM (with the job identity), then Kubernetes
//   3. OTEL_RESOURCE_ATTRIBUTES (config.otel.resource_attributes; string values)
//   4. lens: service.name, service.version, dl.rank, dl.world_size, nemo.run.id and
//      service.instance.id="{run_id}-rank{rank}" (when config.run_id is non-blank),
//      nemo.user.id, wandb.entity, wandb.project (when non-blank), deployment.environment
//      (DEPLOYMENT_ENV, else ENVIRONMENT when DEPLOYMENT_ENV is unset or blank)
//   5. caller_attributes
// service.name: --otel-service-name > OTEL_SERVICE_NAME > service.name in
// OTEL_RESOURCE_ATTRIBUTES > config.service_name when its source is "default".
// The caller resolves the run id (resolve_run_id) into config.run_id first.
Attributes build_resource(const Config& config, const RankInfo& rank,
                          const Attributes& caller_attributes, const Env& env,
                          const HostProbe& probe = system_host_probe());

// An OTEL_RESOURCE_ATTRIBUTES value for a child process (docs/resources.md, "Child processes"): the
// segments of `inherited` kept byte-for-byte except blank ones and those whose key is being
// replaced, then `key=value` for each attribute, comma-joined. Values are percent-encoded
// (everything but A-Z a-z 0-9 - . _ ~); keys are not. Dropped, with one line each in *warnings when
// given: keys that are blank or contain ',' or '=', and array values. Booleans render as
// true/false, doubles in shortest round-trip form.
std::string encode_resource_attributes(const Attributes& attributes, std::string_view inherited,
                                       std::vector<std::string>* warnings = nullptr);
// The same, inheriting the environment's OTEL_RESOURCE_ATTRIBUTES (never modifying it).
std::string encode_resource_attributes(const Attributes& attributes, const Env& env,
                                       std::vector<std::string>* warnings = nullptr);

}  // namespace lens
