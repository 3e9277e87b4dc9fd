// Resource detectors (docs/resources.md, "Detected attributes", with its GPU-count rule): local
// host, SLURM with Megatron's job identity, Kubernetes, and the GPU a local rank uses.
// Thread-safety: stateless; as thread-safe as the Env and HostProbe given.
#include <limits>
#include <string>

#include "core/parse.hpp"
#include "lens/resource.hpp"

namespace lens {
namespace {

// The trimmed value of `name`, or "" when unset or blank.
std::string trimmed(const Env& env, std::string_view name) {
  return std::string(detail::trim(env.get_or(name)));
}

// Sets `key` to the trimmed value of `variable` when that is non-blank.
void put_if_set(Attributes& out, std::string_view key, const Env& env, std::string_view variable) {
  if (std::string value = trimmed(env, variable); !value.empty()) {
    out.insert_or_assign(std::string(key), std::move(value));
  }
}

}  // namespace

Attributes detect_local_resource(const Env& env, const HostProbe& probe) {
  Attributes out;
  if (std::string host = probe.hostname(); !host.empty()) {
    out.emplace("host.name", std::move(host));
  }
  out.emplace("process.pid", probe.pid());

  std::optional<std::int64_t> gpu_count;
  if (const auto visible = env.get("CUDA_VISIBLE_DEVICES")) {
    const std::string_view value = detail::trim(*visible);
    // No validation, as in the original: "0,1," counts 3, "-1" and UUIDs count 1 each.
    gpu_count = value.empty() ? 0 : static_cast<std::int64_t>(detail::split(value, ',').size());
  } else if (const auto nvml = probe.nvml_gpu_count()) {
    gpu_count = *nvml;
  } else if (const auto driver = probe.proc_driver_gpu_count()) {
    gpu_count = *driver;
  }
  if (gpu_count) {
    out.emplace("host.gpu.count", *gpu_count);
  }
  return out;
}

Attributes detect_job_identity(const Env& env, std::string_view run_id) {
  Attributes out;
  put_if_set(out, "slurm.job.id", env, "SLURM_JOB_ID");
  put_if_set(out, "slurm.sluid", env, "LENS_SLURM_SLUID");
  put_if_set(out, "slurm.cluster", env, "SLURM_CLUSTER_NAME");
  put_if_set(out, "slurm.array.job_id", env, "SLURM_ARRAY_JOB_ID");
  put_if_set(out, "slurm.array.task_id", env, "SLURM_ARRAY_TASK_ID");
  put_if_set(out, "slurm.array.sluid", env, "LENS_SLURM_ARRAY_SLUID");
  put_if_set(out, "slurm.restart_count", env, "SLURM_RESTART_COUNT");
  put_if_set(out, "nvrx.cycle", env, "NVRX_CYCLE");
  put_if_set(out, "nvrx.infra_rank", env, "NVRX_INFRA_RANK");
  put_if_set(out, "nvrx.membership", env, "NVRX_MEMBERSHIP");
  const std::optional<std::string> elastic_restarts = env.get("TORCHELASTIC_RESTART_COUNT");
  if (elastic_restarts) {
    // Present at all (even empty) counts, as in Megatron.
    out.insert_or_assign("slurm.torchelastic.restart_count",
                         std::string(detail::trim(*elastic_restarts)));
  }

  // Rank-invariant identities derived without communication (docs/resources.md, "Run
  // identification").
  std::string cluster = trimmed(env, "SLURM_CLUSTER_NAME");
  if (cluster.empty()) {
    cluster = "nocluster";
  }
  const bool array_job = env.contains("SLURM_ARRAY_TASK_ID");
  std::string job_key = trimmed(env, array_job ? "SLURM_ARRAY_JOB_ID" : "SLURM_JOB_ID");
  const std::string run(detail::trim(run_id));
  if (job_key.empty()) {
    // Outside SLURM the run id (torchrun's, lens run's or a generated one) is the job: without
    // it every job would share one job_uuid and one run_uuid.
    job_key = run.empty() ? std::string("nojob") : "run:" + run;
  }
  std::string run_key = cluster + "/" + job_key;
  if (!array_job) {
    std::string restarts = trimmed(env, "SLURM_RESTART_COUNT");
    run_key += "/sr" + (restarts.empty() ? std::string("0") : restarts);
  }
  if (elastic_restarts) {
    run_key += "/te" + std::string(detail::trim(*elastic_restarts));
  }
  // A run id other than SLURM's job id (several runs in one allocation) makes its own run.
  if (const std::string slurm_job = trimmed(env, "SLURM_JOB_ID");
      !slurm_job.empty() && !run.empty() && run != slurm_job) {
    run_key += "/run:" + run;
  }
  out.insert_or_assign("nemo.lens.job_uuid",
                       uuid5(kUuidNamespaceUrl, "nemo.lens.job/" + cluster + "/" + job_key));
  out.insert_or_assign("nemo.lens.run_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.run/" + run_key));
  return out;
}

Attributes detect_slurm_resource(const Env& env, std::string_view run_id) {
  Attributes out;
  // slurm.job.id comes with the job identity below.
  if (!trimmed(env, "SLURM_JOB_ID").empty()) {
    put_if_set(out, "slurm.job.name", env, "SLURM_JOB_NAME");
    put_if_set(out, "slurm.nodelist", env, "SLURM_NODELIST");
    put_if_set(out, "slurm.nnodes", env, "SLURM_NNODES");
    put_if_set(out, "slurm.ntasks", env, "SLURM_NTASKS");
    put_if_set(out, "slurm.partition", env, "SLURM_PARTITION");
    put_if_set(out, "slurm.cluster.name", env, "SLURM_CLUSTER_NAME");
  }
  for (auto& [key, value] : detect_job_identity(env, run_id)) {
    out.insert_or_assign(key, std::move(value));
  }
  return out;
}

Attributes detect_kubernetes_resource(const Env& env, const HostProbe& probe) {
  Attributes out;
  if (trimmed(env, "KUBERNETES_SERVICE_HOST").empty() &&
      !probe.path_exists("/var/run/secrets/kubernetes.io")) {
    return out;
  }
  put_if_set(out, "k8s.namespace.name", env, "K8S_NAMESPACE");
  put_if_set(out, "k8s.pod.name", env, "K8S_POD_NAME");
  if (out.find("k8s.pod.name") == out.end()) {
    put_if_set(out, "k8s.pod.name", env, "HOSTNAME");
  }
  put_if_set(out, "k8s.pod.uid", env, "K8S_POD_UID");
  put_if_set(out, "k8s.node.name", env, "K8S_NODE_NAME");
  put_if_set(out, "k8s.container.name", env, "K8S_CONTAINER_NAME");
  put_if_set(out, "k8s.job.name", env, "K8S_JOB_NAME");
  return out;
}

Attributes gpu_identity_attributes(std::optional<int> local_rank, const Env& env,
                                   const HostProbe& probe) {
  const int local = local_rank.value_or(0);
  if (local < 0) {
    return {};
  }
  std::int64_t physical = local;
  if (const std::string visible = trimmed(env, "CUDA_VISIBLE_DEVICES"); !visible.empty()) {
    const auto entries = detail::split(visible, ',');
    if (static_cast<std::size_t>(local) >= entries.size()) {
      return {};
    }
    const auto parsed = detail::parse_int64(entries[static_cast<std::size_t>(local)]);
    if (!parsed || *parsed < 0 || *parsed > std::numeric_limits<int>::max()) {
      return {};  // a UUID or MIG entry, or junk: no NVML index to ask about
    }
    physical = *parsed;
  }
  const auto identity = probe.gpu_identity(static_cast<int>(physical));
  if (!identity) {
    return {};
  }
  Attributes out;
  out.emplace("dl.gpu.index", physical);
  const auto put = [&out](std::string_view key, const std::string& value) {
    if (!value.empty()) {
      out.emplace(std::string(key), value);
    }
  };
  put("dl.gpu.name", identity->name);
  put("dl.gpu.uuid", identity->uuid);
  put("dl.gpu.serial", identity->serial);
  put("dl.gpu.pci_bus_id", identity->pci_bus_id);
  return out;
}

}  // namespace lens
