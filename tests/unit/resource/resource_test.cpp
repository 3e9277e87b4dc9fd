// Resource detection and merging (docs/resources.md): each detector against a FakeHostProbe, the
// UUIDv5 vectors, the merge order level by level, the service-name rule,
// encode_resource_attributes, and the real system probe on this machine.
#include "lens/resource.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <opentelemetry/version.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/version.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using namespace std::string_literals;

class FakeHostProbe : public HostProbe {
 public:
  std::string host = "node-a17";
  std::int64_t process_id = 4321;
  std::optional<int> nvml_count;
  std::optional<int> driver_count;
  std::set<std::string> existing_paths;
  std::map<int, GpuIdentity> gpus;
  mutable std::vector<int> identity_queries;

  std::string hostname() const override { return host; }
  std::int64_t pid() const override { return process_id; }
  std::optional<int> nvml_gpu_count() const override { return nvml_count; }
  std::optional<int> proc_driver_gpu_count() const override { return driver_count; }
  bool path_exists(const std::string& path) const override {
    return existing_paths.count(path) != 0;
  }
  std::optional<GpuIdentity> gpu_identity(int physical_index) const override {
    identity_queries.push_back(physical_index);
    auto it = gpus.find(physical_index);
    if (it == gpus.end()) {
      return std::nullopt;
    }
    return it->second;
  }
};

using test_support::config_from;
using test_support::rank_of;

// The job identity of an environment without SLURM or torchrun.
const Attributes kNoJobIdentity = {
    {"nemo.lens.job_uuid", "d2badfc7-0e4c-537b-b4ea-8785f79f8679"s},
    {"nemo.lens.run_uuid", "b19cd435-659e-5816-b7eb-724bc636e47b"s},
};

bool has_prefix(const Attributes& attributes, std::string_view prefix) {
  for (const auto& [key, value] : attributes) {
    if (key.rfind(prefix, 0) == 0) {
      return true;
    }
  }
  return false;
}

// ----- UUIDv5 --------------------------------------------------------------------------------

TEST(ResourceUuid5, SpecVectors) {
  EXPECT_EQ(uuid5(kUuidNamespaceUrl, "nemo.lens.job/nocluster/nojob"),
            "d2badfc7-0e4c-537b-b4ea-8785f79f8679");
  EXPECT_EQ(uuid5(kUuidNamespaceUrl, "nemo.lens.run/nocluster/nojob/sr0"),
            "b19cd435-659e-5816-b7eb-724bc636e47b");
  EXPECT_EQ(uuid5(kUuidNamespaceUrl, "nemo.lens.job/eos/12345"),
            "b65b814f-1489-5070-b0e3-b2b0e6a3f643");
  EXPECT_EQ(uuid5(kUuidNamespaceUrl, "nemo.lens.run/eos/12345/sr2/te1"),
            "d032fbad-d34b-54bf-93ab-b9892e36bb8f");
}

TEST(ResourceUuid5, Rfc4122DnsExampleAndNamespaceSpellings) {
  // Python: uuid.uuid5(uuid.NAMESPACE_DNS, "python.org").
  EXPECT_EQ(uuid5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "python.org"),
            "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  EXPECT_EQ(uuid5("6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "python.org"),
            "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  EXPECT_EQ(uuid5("6ba7b8109dad11d180b400c04fd430c8", "python.org"),
            "886313e1-3b8a-5372-9b90-0c9aee199e5d");
}

TEST(ResourceUuid5, MalformedNamespaceGivesEmpty) {
  EXPECT_EQ(uuid5("", "x"), "");
  EXPECT_EQ(uuid5("6ba7b810-9dad-11d1-80b4-00c04fd430cz", "x"), "");
  EXPECT_EQ(uuid5("6ba7b810+9dad-11d1-80b4-00c04fd430c8", "x"), "");
  EXPECT_EQ(uuid5("6ba7b810-9dad-11d1-80b4", "x"), "");
}

// ----- Local detector ------------------------------------------------------------------------

TEST(ResourceLocalDetector, HostPidAndVisibleDeviceCount) {
  FakeHostProbe probe;
  probe.nvml_count = 8;
  const Attributes detected =
      detect_local_resource(Env::from({{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}}), probe);
  const Attributes expected = {
      {"host.name", "node-a17"s},
      {"process.pid", std::int64_t{4321}},
      {"host.gpu.count", std::int64_t{4}},
  };
  EXPECT_EQ(detected, expected);
}

TEST(ResourceLocalDetector, CudaVisibleDevicesCountsEntriesWithoutValidation) {
  FakeHostProbe probe;
  probe.nvml_count = 8;
  probe.driver_count = 8;
  const std::vector<std::pair<std::string, std::int64_t>> cases = {
      {"0,1,2,3", 4},
      {"", 0},
      {"   ", 0},
      {"0,1,", 3},
      {"-1", 1},
      {"5", 1},
      {"GPU-8d1e0a2b-aaaa,MIG-1c2d", 2},
  };
  for (const auto& [value, count] : cases) {
    const Attributes detected =
        detect_local_resource(Env::from({{"CUDA_VISIBLE_DEVICES", value}}), probe);
    ASSERT_TRUE(detected.count("host.gpu.count")) << value;
    EXPECT_EQ(detected.at("host.gpu.count"), AttributeValue(count)) << "'" << value << "'";
  }
}

// host.gpu.count without CUDA_VISIBLE_DEVICES: what the probe reports.
AttributeValue probed_gpu_count(const FakeHostProbe& probe) {
  return detect_local_resource(Env::from({}), probe).at("host.gpu.count");
}

TEST(ResourceLocalDetector, UnsetVisibleDevicesAsksNvmlThenTheDriver) {
  FakeHostProbe probe;
  probe.nvml_count = 8;
  probe.driver_count = 2;
  EXPECT_EQ(probed_gpu_count(probe), AttributeValue(std::int64_t{8}));

  probe.nvml_count.reset();
  EXPECT_EQ(probed_gpu_count(probe), AttributeValue(std::int64_t{2}));

  probe.driver_count.reset();
  const Attributes expected = {{"host.name", "node-a17"s}, {"process.pid", std::int64_t{4321}}};
  EXPECT_EQ(detect_local_resource(Env::from({}), probe), expected);
}

TEST(ResourceLocalDetector, NvmlReportingZeroIsKept) {
  FakeHostProbe probe;
  probe.nvml_count = 0;
  probe.driver_count = 4;
  EXPECT_EQ(probed_gpu_count(probe), AttributeValue(std::int64_t{0}));
}

// ----- SLURM detector and job identity -------------------------------------------------------

TEST(ResourceSlurmDetector, NoJobIdMeansNoSlurmAttributes) {
  const Attributes detected =
      detect_slurm_resource(Env::from({{"SLURM_JOB_NAME", "pretrain"}, {"SLURM_NNODES", "4"}}));
  EXPECT_FALSE(has_prefix(detected, "slurm."));
  EXPECT_EQ(detected, kNoJobIdentity);
  EXPECT_EQ(detect_slurm_resource(Env::from({{"SLURM_JOB_ID", "  "}})), kNoJobIdentity);
}

TEST(ResourceSlurmDetector, MapsEveryVariableAsStrings) {
  const Env env = Env::from({
      {"SLURM_JOB_ID", "12345"},
      {"SLURM_JOB_NAME", "pretrain-gpt"},
      {"SLURM_NODELIST", "node[01-04]"},
      {"SLURM_NNODES", "4"},
      {"SLURM_NTASKS", "32"},
      {"SLURM_PARTITION", "batch"},
      {"SLURM_CLUSTER_NAME", "eos"},
      {"SLURM_RESTART_COUNT", "2"},
  });
  const Attributes expected = {
      {"slurm.job.id", "12345"s},
      {"slurm.job.name", "pretrain-gpt"s},
      {"slurm.nodelist", "node[01-04]"s},
      {"slurm.nnodes", "4"s},
      {"slurm.ntasks", "32"s},
      {"slurm.partition", "batch"s},
      {"slurm.cluster.name", "eos"s},
      {"slurm.cluster", "eos"s},
      {"slurm.restart_count", "2"s},
      {"nemo.lens.job_uuid", "b65b814f-1489-5070-b0e3-b2b0e6a3f643"s},
      {"nemo.lens.run_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.run/eos/12345/sr2")},
  };
  EXPECT_EQ(detect_slurm_resource(env), expected);
}

TEST(ResourceSlurmDetector, MissingOptionalVariablesAreOmitted) {
  const Attributes detected =
      detect_slurm_resource(Env::from({{"SLURM_JOB_ID", "777"}, {"SLURM_JOB_NAME", ""}}));
  const Attributes expected = {
      {"slurm.job.id", "777"s},
      {"nemo.lens.job_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.job/nocluster/777")},
      {"nemo.lens.run_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.run/nocluster/777/sr0")},
  };
  EXPECT_EQ(detected, expected);
}

TEST(ResourceJobIdentity, EmptyEnvironmentGivesTheNoJobVectors) {
  EXPECT_EQ(detect_job_identity(Env::from({})), kNoJobIdentity);
}

TEST(ResourceJobIdentity, RestartedElasticJobMatchesTheSpecVector) {
  const Env env = Env::from({
      {"SLURM_JOB_ID", "12345"},
      {"SLURM_CLUSTER_NAME", "eos"},
      {"SLURM_RESTART_COUNT", "2"},
      {"TORCHELASTIC_RESTART_COUNT", "1"},
      {"LENS_SLURM_SLUID", "sluid-1"},
      {"NVRX_CYCLE", "3"},
      {"NVRX_INFRA_RANK", "17"},
      {"NVRX_MEMBERSHIP", "active"},
  });
  const Attributes expected = {
      {"slurm.job.id", "12345"s},
      {"slurm.sluid", "sluid-1"s},
      {"slurm.cluster", "eos"s},
      {"slurm.restart_count", "2"s},
      {"slurm.torchelastic.restart_count", "1"s},
      {"nvrx.cycle", "3"s},
      {"nvrx.infra_rank", "17"s},
      {"nvrx.membership", "active"s},
      {"nemo.lens.job_uuid", "b65b814f-1489-5070-b0e3-b2b0e6a3f643"s},
      {"nemo.lens.run_uuid", "d032fbad-d34b-54bf-93ab-b9892e36bb8f"s},
  };
  EXPECT_EQ(detect_job_identity(env), expected);
}

TEST(ResourceJobIdentity, ArrayJobKeysOnTheArrayJobIdWithoutSlurmRestarts) {
  // SLURM_ARRAY_TASK_ID present (even empty) makes it an array job.
  const Env env = Env::from({
      {"SLURM_JOB_ID", "900"},
      {"SLURM_ARRAY_JOB_ID", "800"},
      {"SLURM_ARRAY_TASK_ID", ""},
      {"SLURM_RESTART_COUNT", "5"},
      {"LENS_SLURM_ARRAY_SLUID", "asluid"},
  });
  const Attributes expected = {
      {"slurm.job.id", "900"s},
      {"slurm.array.job_id", "800"s},
      {"slurm.array.sluid", "asluid"s},
      {"slurm.restart_count", "5"s},
      {"nemo.lens.job_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.job/nocluster/800")},
      {"nemo.lens.run_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.run/nocluster/800")},
  };
  EXPECT_EQ(detect_job_identity(env), expected);

  const Attributes with_task =
      detect_job_identity(Env::from({{"SLURM_ARRAY_JOB_ID", "800"}, {"SLURM_ARRAY_TASK_ID", "7"}}));
  EXPECT_EQ(with_task.at("slurm.array.task_id"), AttributeValue("7"s));
}

TEST(ResourceJobIdentity, TorchElasticRestartCountCountsWheneverPresent) {
  const Attributes detected = detect_job_identity(Env::from({{"TORCHELASTIC_RESTART_COUNT", ""}}));
  EXPECT_EQ(detected.at("slurm.torchelastic.restart_count"), AttributeValue(""s));
  EXPECT_EQ(detected.at("nemo.lens.run_uuid"),
            AttributeValue(uuid5(kUuidNamespaceUrl, "nemo.lens.run/nocluster/nojob/sr0/te")));
}

TEST(ResourceJobIdentity, OutsideSlurmEachRunIdIsItsOwnJobAndRun) {
  const Env env = Env::from({{"TORCHELASTIC_RESTART_COUNT", "0"}});
  const Attributes first = detect_job_identity(env, "elastic-1");
  const Attributes second = detect_job_identity(env, "elastic-2");
  EXPECT_EQ(first.at("nemo.lens.job_uuid"),
            AttributeValue(uuid5(kUuidNamespaceUrl, "nemo.lens.job/nocluster/run:elastic-1")));
  EXPECT_EQ(
      first.at("nemo.lens.run_uuid"),
      AttributeValue(uuid5(kUuidNamespaceUrl, "nemo.lens.run/nocluster/run:elastic-1/sr0/te0")));
  EXPECT_NE(first.at("nemo.lens.run_uuid"), second.at("nemo.lens.run_uuid"));
  EXPECT_NE(first.at("nemo.lens.job_uuid"), second.at("nemo.lens.job_uuid"));
  // The same run id on another rank (or a later read) gives the same values.
  EXPECT_EQ(detect_job_identity(env, "elastic-1"), first);
  // A restart of the same torchrun job: same job, another run.
  const Attributes restarted =
      detect_job_identity(Env::from({{"TORCHELASTIC_RESTART_COUNT", "1"}}), "elastic-1");
  EXPECT_EQ(restarted.at("nemo.lens.job_uuid"), first.at("nemo.lens.job_uuid"));
  EXPECT_NE(restarted.at("nemo.lens.run_uuid"), first.at("nemo.lens.run_uuid"));
}

TEST(ResourceJobIdentity, InsideSlurmAnotherRunIdIsAnotherRunOfTheSameJob) {
  const Env env = Env::from({{"SLURM_JOB_ID", "12345"}, {"SLURM_CLUSTER_NAME", "eos"}});
  // The default run id (SLURM's job id) keeps Megatron's values (docs/resources.md, "Run
  // identification").
  const Attributes by_slurm = detect_job_identity(env, "12345");
  EXPECT_EQ(by_slurm.at("nemo.lens.run_uuid"),
            AttributeValue(uuid5(kUuidNamespaceUrl, "nemo.lens.run/eos/12345/sr0")));
  EXPECT_EQ(detect_job_identity(env), by_slurm);
  // Two runs in one allocation, each with its own NEMO_LENS_RUN_ID.
  const Attributes second = detect_job_identity(env, "step-2");
  EXPECT_EQ(second.at("nemo.lens.job_uuid"), by_slurm.at("nemo.lens.job_uuid"));
  EXPECT_EQ(second.at("nemo.lens.run_uuid"),
            AttributeValue(uuid5(kUuidNamespaceUrl, "nemo.lens.run/eos/12345/sr0/run:step-2")));
}

TEST(ResourceJobIdentity, BuildResourceUsesTheResolvedRunId) {
  Config config;
  config.run_id = "lens-run-7";
  const Attributes built =
      build_resource(config, rank_of(0, 1), {}, Env::from({}), FakeHostProbe{});
  EXPECT_EQ(built.at("nemo.lens.run_uuid"),
            AttributeValue(uuid5(kUuidNamespaceUrl, "nemo.lens.run/nocluster/run:lens-run-7/sr0")));
}

TEST(ResourceJobIdentity, IsTheSameOnEveryRank) {
  Env::Map variables = {{"SLURM_JOB_ID", "55"}, {"SLURM_CLUSTER_NAME", "draco"}};
  const Attributes rank0 = detect_job_identity(Env::from(variables));
  variables["SLURM_PROCID"] = "7";
  variables["RANK"] = "7";
  EXPECT_EQ(detect_job_identity(Env::from(variables)), rank0);
}

// ----- Kubernetes detector -------------------------------------------------------------------

TEST(ResourceKubernetesDetector, OutsideKubernetesIsEmpty) {
  FakeHostProbe probe;
  EXPECT_EQ(detect_kubernetes_resource(Env::from({{"K8S_POD_NAME", "p"}}), probe), Attributes{});
  EXPECT_EQ(detect_kubernetes_resource(
                Env::from({{"KUBERNETES_SERVICE_HOST", " "}, {"K8S_POD_NAME", "p"}}), probe),
            Attributes{});
}

TEST(ResourceKubernetesDetector, MapsVariablesWhenServiceHostIsSet) {
  FakeHostProbe probe;
  const Env env = Env::from({
      {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
      {"K8S_NAMESPACE", "training"},
      {"K8S_POD_NAME", "gpt-worker-3"},
      {"K8S_POD_UID", "0f9e-uid"},
      {"K8S_NODE_NAME", "gpu-node-12"},
      {"K8S_CONTAINER_NAME", "trainer"},
      {"K8S_JOB_NAME", "gpt-job"},
      {"HOSTNAME", "ignored-host"},
  });
  const Attributes expected = {
      {"k8s.namespace.name", "training"s}, {"k8s.pod.name", "gpt-worker-3"s},
      {"k8s.pod.uid", "0f9e-uid"s},        {"k8s.node.name", "gpu-node-12"s},
      {"k8s.container.name", "trainer"s},  {"k8s.job.name", "gpt-job"s},
  };
  EXPECT_EQ(detect_kubernetes_resource(env, probe), expected);
}

TEST(ResourceKubernetesDetector, ServiceAccountDirectoryAndHostnameFallback) {
  FakeHostProbe probe;
  probe.existing_paths.insert("/var/run/secrets/kubernetes.io");
  const Attributes expected = {{"k8s.pod.name", "pod-from-hostname"s}};
  EXPECT_EQ(detect_kubernetes_resource(
                Env::from({{"K8S_POD_NAME", ""}, {"HOSTNAME", "pod-from-hostname"}}), probe),
            expected);
  EXPECT_EQ(detect_kubernetes_resource(Env::from({}), probe), Attributes{});
}

// ----- GPU identity --------------------------------------------------------------------------

FakeHostProbe probe_with_gpus() {
  FakeHostProbe probe;
  for (int i = 0; i < 8; ++i) {
    probe.gpus[i] =
        GpuIdentity{"NVIDIA H100 80GB HBM3", "GPU-uuid-" + std::to_string(i),
                    "serial-" + std::to_string(i), "00000000:" + std::to_string(10 + i) + ":00.0"};
  }
  return probe;
}

TEST(ResourceGpuIdentity, LocalRankIndexesThePhysicalGpuWithoutVisibleDevices) {
  const FakeHostProbe probe = probe_with_gpus();
  const Attributes expected = {
      {"dl.gpu.index", std::int64_t{3}},
      {"dl.gpu.name", "NVIDIA H100 80GB HBM3"s},
      {"dl.gpu.uuid", "GPU-uuid-3"s},
      {"dl.gpu.serial", "serial-3"s},
      {"dl.gpu.pci_bus_id", "00000000:13:00.0"s},
  };
  EXPECT_EQ(gpu_identity_attributes(3, Env::from({}), probe), expected);
  // An empty CUDA_VISIBLE_DEVICES counts as unset here.
  EXPECT_EQ(gpu_identity_attributes(3, Env::from({{"CUDA_VISIBLE_DEVICES", ""}}), probe), expected);
}

TEST(ResourceGpuIdentity, NullLocalRankMeansZero) {
  const FakeHostProbe probe = probe_with_gpus();
  const Attributes attributes = gpu_identity_attributes(std::nullopt, Env::from({}), probe);
  EXPECT_EQ(attributes.at("dl.gpu.index"), AttributeValue(std::int64_t{0}));
  EXPECT_EQ(attributes.at("dl.gpu.uuid"), AttributeValue("GPU-uuid-0"s));
}

TEST(ResourceGpuIdentity, VisibleDevicesMapLocalRankToPhysicalIndex) {
  const FakeHostProbe probe = probe_with_gpus();
  const Attributes attributes =
      gpu_identity_attributes(1, Env::from({{"CUDA_VISIBLE_DEVICES", "4, 6 ,7"}}), probe);
  EXPECT_EQ(attributes.at("dl.gpu.index"), AttributeValue(std::int64_t{6}));
  EXPECT_EQ(attributes.at("dl.gpu.uuid"), AttributeValue("GPU-uuid-6"s));
  EXPECT_EQ(probe.identity_queries, std::vector<int>{6});
}

TEST(ResourceGpuIdentity, UnusableEntriesGiveNothing) {
  const FakeHostProbe probe = probe_with_gpus();
  // Out of range, a UUID entry, a negative entry, a negative local rank.
  EXPECT_EQ(gpu_identity_attributes(2, Env::from({{"CUDA_VISIBLE_DEVICES", "0,1"}}), probe),
            Attributes{});
  EXPECT_EQ(gpu_identity_attributes(
                0, Env::from({{"CUDA_VISIBLE_DEVICES", "GPU-8d1e0a2b-1111-2222"}}), probe),
            Attributes{});
  EXPECT_EQ(gpu_identity_attributes(0, Env::from({{"CUDA_VISIBLE_DEVICES", "-1"}}), probe),
            Attributes{});
  EXPECT_EQ(gpu_identity_attributes(-1, Env::from({}), probe), Attributes{});
  EXPECT_TRUE(probe.identity_queries.empty());
  // A physical index NVML does not know.
  EXPECT_EQ(gpu_identity_attributes(0, Env::from({{"CUDA_VISIBLE_DEVICES", "9"}}), probe),
            Attributes{});
}

TEST(ResourceGpuIdentity, EmptyOptionalFieldsAreOmitted) {
  FakeHostProbe probe;
  probe.gpus[0] = GpuIdentity{"NVIDIA A100-SXM4-40GB", "GPU-a100", "", ""};
  const Attributes expected = {
      {"dl.gpu.index", std::int64_t{0}},
      {"dl.gpu.name", "NVIDIA A100-SXM4-40GB"s},
      {"dl.gpu.uuid", "GPU-a100"s},
  };
  EXPECT_EQ(gpu_identity_attributes(0, Env::from({}), probe), expected);
}

// ----- build_resource ------------------------------------------------------------------------

TEST(ResourceBuild, FullResourceWithEveryLayer) {
  FakeHostProbe probe;
  probe.nvml_count = 8;
  Config config;
  config.run_id = "run-abc";
  config.user_id = "alice";
  config.wandb_entity = "nvidia";
  config.wandb_project = "gpt";
  const Env env = Env::from({
      {"SLURM_JOB_ID", "12345"},
      {"SLURM_CLUSTER_NAME", "eos"},
      {"SLURM_NNODES", "4"},
      {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
      {"K8S_NAMESPACE", "training"},
      {"DEPLOYMENT_ENV", "prod"},
  });
  const Attributes caller = {{"megatron.precision", "bf16"s}, {"dl.local_rank", std::int64_t{1}}};
  const Attributes expected = {
      {"telemetry.sdk.language", "cpp"s},
      {"telemetry.sdk.name", "opentelemetry"s},
      {"telemetry.sdk.version", std::string(OPENTELEMETRY_VERSION)},
      {"host.name", "node-a17"s},
      {"process.pid", std::int64_t{4321}},
      {"host.gpu.count", std::int64_t{8}},
      {"slurm.job.id", "12345"s},
      {"slurm.nnodes", "4"s},
      {"slurm.cluster.name", "eos"s},
      {"slurm.cluster", "eos"s},
      {"nemo.lens.job_uuid", "b65b814f-1489-5070-b0e3-b2b0e6a3f643"s},
      // The run id is not SLURM's job id: a run of its own inside the job.
      {"nemo.lens.run_uuid", uuid5(kUuidNamespaceUrl, "nemo.lens.run/eos/12345/sr0/run:run-abc")},
      {"k8s.namespace.name", "training"s},
      {"service.name", "nemo"s},
      {"service.version", std::string(kVersion)},
      {"dl.rank", std::int64_t{3}},
      {"dl.world_size", std::int64_t{8}},
      {"nemo.run.id", "run-abc"s},
      {"service.instance.id", "run-abc-rank3"s},
      {"nemo.user.id", "alice"s},
      {"wandb.entity", "nvidia"s},
      {"wandb.project", "gpt"s},
      {"deployment.environment", "prod"s},
      {"megatron.precision", "bf16"s},
      {"dl.local_rank", std::int64_t{1}},
  };
  EXPECT_EQ(build_resource(config, rank_of(3, 8), caller, env, probe), expected);
  EXPECT_EQ(std::string(OPENTELEMETRY_VERSION), "1.19.0");
}

TEST(ResourceBuild, MergeOrderLevelByLevel) {
  FakeHostProbe probe;
  // telemetry.sdk.language: SDK default < OTEL_RESOURCE_ATTRIBUTES < caller.
  // host.name: detected < OTEL_RESOURCE_ATTRIBUTES < caller.
  // dl.rank, service.instance.id: OTEL_RESOURCE_ATTRIBUTES < lens < caller.
  Config config;
  config.run_id = "r1";
  config.otel.resource_attributes.value = {
      {"telemetry.sdk.language", "from-env"},  {"host.name", "env-host"}, {"dl.rank", "9"},
      {"service.instance.id", "env-instance"}, {"team", "ml,ops"},
  };
  const Env env = Env::from({});

  Attributes built = build_resource(config, rank_of(2, 4), {}, env, probe);
  EXPECT_EQ(built.at("telemetry.sdk.language"), AttributeValue("from-env"s));
  EXPECT_EQ(built.at("telemetry.sdk.name"), AttributeValue("opentelemetry"s));
  EXPECT_EQ(built.at("host.name"), AttributeValue("env-host"s));
  EXPECT_EQ(built.at("process.pid"), AttributeValue(std::int64_t{4321}));
  EXPECT_EQ(built.at("dl.rank"), AttributeValue(std::int64_t{2}));
  EXPECT_EQ(built.at("service.instance.id"), AttributeValue("r1-rank2"s));
  EXPECT_EQ(built.at("team"), AttributeValue("ml,ops"s));

  const Attributes caller = {
      {"telemetry.sdk.language", "caller-lang"s},
      {"host.name", "caller-host"s},
      {"dl.rank", std::int64_t{7}},
      {"service.instance.id", "caller-instance"s},
      {"process.pid", std::int64_t{1}},
      {"nemo.lens.job_uuid", "caller-job"s},
  };
  built = build_resource(config, rank_of(2, 4), caller, env, probe);
  EXPECT_EQ(built.at("telemetry.sdk.language"), AttributeValue("caller-lang"s));
  EXPECT_EQ(built.at("host.name"), AttributeValue("caller-host"s));
  EXPECT_EQ(built.at("dl.rank"), AttributeValue(std::int64_t{7}));
  EXPECT_EQ(built.at("service.instance.id"), AttributeValue("caller-instance"s));
  EXPECT_EQ(built.at("process.pid"), AttributeValue(std::int64_t{1}));
  EXPECT_EQ(built.at("nemo.lens.job_uuid"), AttributeValue("caller-job"s));
  EXPECT_EQ(built.at("nemo.run.id"), AttributeValue("r1"s));
}

TEST(ResourceBuild, DetectorsMergeLocalThenSlurmThenKubernetes) {
  FakeHostProbe probe;
  const Env env = Env::from({{"SLURM_JOB_ID", "1"},
                             {"KUBERNETES_SERVICE_HOST", "k"},
                             {"K8S_POD_NAME", "pod"},
                             {"CUDA_VISIBLE_DEVICES", "0,1"}});
  const Attributes built = build_resource(Config{}, rank_of(0, 1), {}, env, probe);
  EXPECT_EQ(built.at("host.gpu.count"), AttributeValue(std::int64_t{2}));
  EXPECT_EQ(built.at("slurm.job.id"), AttributeValue("1"s));
  EXPECT_EQ(built.at("k8s.pod.name"), AttributeValue("pod"s));
}

TEST(ResourceBuild, OtelResourceAttributesArriveAsStringsFromTheEnvironment) {
  FakeHostProbe probe;
  const Env::Map variables = {
      {"OTEL_RESOURCE_ATTRIBUTES", "dl.rank=9,team=ml%2Cops,cost.center=42"}};
  const Config config = config_from(variables);
  const Attributes built = build_resource(config, rank_of(1, 2), {}, Env::from(variables), probe);
  EXPECT_EQ(built.at("team"), AttributeValue("ml,ops"s));
  EXPECT_EQ(built.at("cost.center"), AttributeValue("42"s));
  EXPECT_EQ(built.at("dl.rank"), AttributeValue(std::int64_t{1}));
}

TEST(ResourceBuild, NoRunIdMeansNoRunAttributesAndBlankOptionalsAreOmitted) {
  FakeHostProbe probe;
  Config config;
  config.run_id = "  ";
  config.user_id = " ";
  const Attributes built = build_resource(config, rank_of(0, 1), {}, Env::from({}), probe);
  for (const char* key : {"nemo.run.id", "service.instance.id", "nemo.user.id", "wandb.entity",
                          "wandb.project", "deployment.environment"}) {
    EXPECT_EQ(built.count(key), 0U) << key;
  }
  EXPECT_EQ(built.at("dl.world_size"), AttributeValue(std::int64_t{1}));
}

TEST(ResourceBuild, DefaultProbeIsTheSystemProbe) {
  const Attributes built = build_resource(Config{}, rank_of(0, 1), {}, Env::from({}));
  ASSERT_TRUE(built.count("host.name"));
  EXPECT_EQ(built.at("process.pid"), AttributeValue(static_cast<std::int64_t>(::getpid())));
}

// ----- service name rule ---------------------------------------------------------------------

std::string service_name_of(const Config& config) {
  FakeHostProbe probe;
  const Attributes built = build_resource(config, rank_of(0, 1), {}, Env::from({}), probe);
  const auto it = built.find("service.name");
  return it == built.end() ? "<absent>" : std::get<std::string>(it->second);
}

TEST(ResourceServiceName, DefaultWhenNothingElseIsSet) {
  EXPECT_EQ(service_name_of(config_from({})), "nemo");
}

TEST(ResourceServiceName, ResourceAttributesBeatTheDefault) {
  EXPECT_EQ(service_name_of(config_from({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-ora"}})),
            "from-ora");
  // A default set in code (as the Megatron integration does) is still only a default.
  Config megatron = config_from({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-ora"}});
  megatron.service_name = "megatron-lm";
  EXPECT_EQ(service_name_of(megatron), "from-ora");
  megatron.otel.resource_attributes.value.clear();
  EXPECT_EQ(service_name_of(megatron), "megatron-lm");
}

TEST(ResourceServiceName, OtelServiceNameBeatsResourceAttributes) {
  EXPECT_EQ(service_name_of(config_from({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-ora"},
                                         {"OTEL_SERVICE_NAME", "from-otel"}})),
            "from-otel");
  // A config assembled in code that carries only otel.service_name.
  Config config;
  config.otel.service_name.value = "from-otel";
  config.otel.resource_attributes.value = {{"service.name", "from-ora"}};
  EXPECT_EQ(service_name_of(config), "from-otel");
}

TEST(ResourceServiceName, CliFlagBeatsEverything) {
  Config config = config_from(
      {{"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-ora"}, {"OTEL_SERVICE_NAME", "from-otel"}});
  CliOverrides overrides;
  overrides.service_name = "from-cli";
  config.apply(overrides);
  EXPECT_EQ(service_name_of(config), "from-cli");
}

TEST(ResourceServiceName, CallerAttributesStillWin) {
  FakeHostProbe probe;
  const Attributes built =
      build_resource(config_from({{"OTEL_SERVICE_NAME", "from-otel"}}), rank_of(0, 1),
                     {{"service.name", "from-caller"s}}, Env::from({}), probe);
  EXPECT_EQ(built.at("service.name"), AttributeValue("from-caller"s));
}

// ----- deployment.environment ----------------------------------------------------------------

std::optional<std::string> deployment_of(const Env::Map& variables) {
  FakeHostProbe probe;
  const Attributes built = build_resource(Config{}, rank_of(0, 1), {}, Env::from(variables), probe);
  const auto it = built.find("deployment.environment");
  if (it == built.end()) {
    return std::nullopt;
  }
  return std::get<std::string>(it->second);
}

TEST(ResourceDeploymentEnvironment, FallsThroughUnsetOrBlankDeploymentEnv) {
  EXPECT_EQ(deployment_of({{"DEPLOYMENT_ENV", "prod"}, {"ENVIRONMENT", "staging"}}), "prod");
  EXPECT_EQ(deployment_of({{"DEPLOYMENT_ENV", ""}, {"ENVIRONMENT", "staging"}}), "staging");
  EXPECT_EQ(deployment_of({{"DEPLOYMENT_ENV", "   "}, {"ENVIRONMENT", " dev "}}), "dev");
  EXPECT_EQ(deployment_of({{"ENVIRONMENT", "dev"}}), "dev");
  EXPECT_EQ(deployment_of({{"DEPLOYMENT_ENV", ""}, {"ENVIRONMENT", ""}}), std::nullopt);
  EXPECT_EQ(deployment_of({}), std::nullopt);
}

// ----- encode_resource_attributes ------------------------------------------------------------

TEST(ResourceEncode, PercentEncodesValuesAndRendersScalars) {
  const Attributes attributes = {
      {"a.text", "x, y=z%20~ok"s},
      {"b.flag", true},
      {"c.count", std::int64_t{-3}},
      {"d.ratio", 0.25},
  };
  EXPECT_EQ(encode_resource_attributes(attributes, ""),
            "a.text=x%2C%20y%3Dz%2520~ok,b.flag=true,c.count=-3,d.ratio=0.25");
}

TEST(ResourceEncode, DropsBadKeysAndArraysWithWarnings) {
  const Attributes attributes = {
      {"", "v"s},        {"bad,key", "v"s},
      {"bad=key", "v"s}, {"list", std::vector<std::string>{"a", "b"}},
      {"ok", "v"s},
  };
  std::vector<std::string> warnings;
  EXPECT_EQ(encode_resource_attributes(attributes, "", &warnings), "ok=v");
  const std::vector<std::string> expected = {
      "encode_resource_attributes: dropped key '': keys must be non-empty and contain neither "
      "',' nor '='",
      "encode_resource_attributes: dropped key 'bad,key': keys must be non-empty and contain "
      "neither ',' nor '='",
      "encode_resource_attributes: dropped key 'bad=key': keys must be non-empty and contain "
      "neither ',' nor '='",
      "encode_resource_attributes: dropped 'list': only string, bool, int and double values can "
      "be encoded",
  };
  EXPECT_EQ(warnings, expected);
}

TEST(ResourceEncode, KeepsInheritedSegmentsExceptBlankAndReplacedOnes) {
  const Attributes attributes = {{"team", "new"s}, {"dl.rank", std::int64_t{4}}};
  EXPECT_EQ(encode_resource_attributes(
                attributes, "team=old,, keep.me = %41b ,dl.rank=1,  ,odd-segment,team=older"),
            " keep.me = %41b ,odd-segment,dl.rank=4,team=new");
  EXPECT_EQ(encode_resource_attributes({}, "a=1,,b=2"), "a=1,b=2");
}

TEST(ResourceEncode, ReadsTheEnvironmentWithoutChangingIt) {
  const Env env = Env::from({{"OTEL_RESOURCE_ATTRIBUTES", "a=1,b=2"}});
  EXPECT_EQ(encode_resource_attributes({{"b", "3"s}}, env), "a=1,b=3");
  EXPECT_EQ(env.get_or("OTEL_RESOURCE_ATTRIBUTES"), "a=1,b=2");
  EXPECT_EQ(encode_resource_attributes({{"b", "3"s}}, Env::from({})), "b=3");
}

TEST(ResourceEncode, RoundTripsThroughOtelResourceAttributes) {
  const Attributes attributes = {
      {"path", "/data/run 1,a=b%c"s},
      {"unicode", "h\xc3\xa9llo"s},
      {"flag", false},
  };
  const std::string encoded = encode_resource_attributes(attributes, "inherited=yes");
  const Config config = config_from({{"OTEL_RESOURCE_ATTRIBUTES", encoded}});
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"inherited", "yes"},
      {"flag", "false"},
      {"path", "/data/run 1,a=b%c"},
      {"unicode", "h\xc3\xa9llo"},
  };
  EXPECT_EQ(config.otel.resource_attributes.value, expected);
}

// ----- the real host probe -------------------------------------------------------------------

bool nvml_loadable() {
  void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    return false;
  }
  ::dlclose(library);
  return true;
}

TEST(ResourceSystemProbe, WorksOnThisMachine) {
  const HostProbe& probe = system_host_probe();
  EXPECT_EQ(&probe, &system_host_probe());
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  EXPECT_FALSE(probe.hostname().empty());
  EXPECT_EQ(probe.hostname(), std::string(host));
  EXPECT_EQ(probe.pid(), static_cast<std::int64_t>(::getpid()));
  EXPECT_TRUE(probe.path_exists("/"));
  EXPECT_FALSE(probe.path_exists("/definitely/not/a/lens/path"));

  std::error_code error;
  const bool driver = std::filesystem::exists("/proc/driver/nvidia/gpus", error);
  EXPECT_EQ(probe.proc_driver_gpu_count().has_value(), driver);
  if (!nvml_loadable()) {
    // No NVIDIA driver here: every NVML query degrades to nullopt without crashing.
    EXPECT_EQ(probe.nvml_gpu_count(), std::nullopt);
    EXPECT_EQ(probe.gpu_identity(0), std::nullopt);
  } else {
    const std::optional<int> count = probe.nvml_gpu_count();
    ASSERT_TRUE(count.has_value());
    if (*count > 0) {
      const auto identity = probe.gpu_identity(0);
      ASSERT_TRUE(identity.has_value());
      EXPECT_FALSE(identity->name.empty());
      EXPECT_EQ(identity->uuid.rfind("GPU-", 0), 0U) << identity->uuid;
    }
    EXPECT_EQ(probe.gpu_identity(*count), std::nullopt);
  }
  EXPECT_EQ(probe.gpu_identity(-1), std::nullopt);
}

TEST(ResourceSystemProbe, MergedLocalDetectorAlwaysHasHostName) {
  const Attributes detected = detect_local_resource(Env::from({}), system_host_probe());
  ASSERT_TRUE(detected.count("host.name"));
  EXPECT_TRUE(std::holds_alternative<std::string>(detected.at("host.name")));
  EXPECT_EQ(detected.at("process.pid"), AttributeValue(static_cast<std::int64_t>(::getpid())));
}

}  // namespace
}  // namespace lens
