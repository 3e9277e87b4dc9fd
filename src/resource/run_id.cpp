// Run identification (docs/resources.md, "Run identification"): explicit id, launcher job ids,
// a random id shared over the job's collective, and only then a per-process random id with a
// warning.
// Thread-safety: stateless; the Collective's own contract applies to broadcast().
#include <random>
#include <string>

#include "core/parse.hpp"
#include "lens/resource.hpp"
#include "resource/resource_settings.hpp"
#include "resource/uuid.hpp"

namespace lens {
namespace {

// The trimmed value of `name`, or "" when unset or blank.
std::string trimmed(const Env& env, std::string_view name) {
  return std::string(detail::trim(env.get_or(name)));
}

}  // namespace

std::string random_run_id() {
  if (auto uuid = detail::random_uuid4()) {
    return detail::uuid_to_hex(*uuid).substr(0, 12);
  }
  // Only reachable when both getrandom and OpenSSL's RNG fail: std::random_device, which
  // on Linux also reads the kernel's entropy (and may throw, which must not escape).
  std::string out;
  try {
    std::random_device device;
    while (out.size() < 12) {
      out.push_back("0123456789abcdef"[device() & 0x0F]);
    }
  } catch (...) {
    out.assign(12, '0');
  }
  return out;
}

Result<RunId> resolve_run_id(const Config& config, const RankInfo& rank, const Env& env,
                             Collective* collective) {
  return resolve_run_id(ResourceSettings::of(config), rank, env, collective);
}

Result<RunId> resolve_run_id(const ResourceSettings& settings, const RankInfo& rank, const Env& env,
                             Collective* collective) {
  if (std::string value(detail::trim(settings.run_id)); !value.empty()) {
    std::string source = settings.run_id_source;
    if (source == "default") {
      source = "config.run_id";  // set in code rather than read from the environment
    }
    return RunId{std::move(value), std::move(source), {}};
  }
  if (std::string value = trimmed(env, "SLURM_JOB_ID"); !value.empty()) {
    return RunId{std::move(value), "env:SLURM_JOB_ID", {}};
  }
  if (std::string value = trimmed(env, "TORCHELASTIC_RUN_ID");
      !value.empty() && detail::to_lower(value) != "none") {
    return RunId{std::move(value), "env:TORCHELASTIC_RUN_ID", {}};
  }
  if (std::string value = trimmed(env, "OMPI_MCA_ess_base_jobid"); !value.empty()) {
    return RunId{std::move(value), "env:OMPI_MCA_ess_base_jobid", {}};
  }
  if (std::string value = trimmed(env, "PMIX_NAMESPACE"); !value.empty()) {
    return RunId{std::move(value), "env:PMIX_NAMESPACE", {}};
  }
  if (collective != nullptr) {
    const std::string payload = collective->rank() == 0 ? random_run_id() : std::string();
    Result<std::string> shared = collective->broadcast(payload, 0);
    if (!shared.ok()) {
      return Error("resolving the run id: broadcast from rank 0 failed: " + shared.message());
    }
    std::string value(detail::trim(*shared));
    if (value.empty()) {
      return Error("resolving the run id: the broadcast from rank 0 delivered an empty id");
    }
    return RunId{std::move(value), "collective", {}};
  }
  std::string value = random_run_id();
  std::string fix = "set NEMO_LENS_RUN_ID";
  if (!settings.prefix.empty() && settings.prefix != kDefaultPrefix) {
    fix = "set " + settings.prefix + "_RUN_ID or NEMO_LENS_RUN_ID";
  }
  if (rank.world_size <= 1) {
    return RunId{std::move(value), "random", {}};  // one process: nothing to share the id with
  }
  std::string warning = "rank " + std::to_string(rank.rank) + " uses the random run id '" + value +
                        "' (nemo.run.id), made by this process alone, so ranks will not " +
                        "share it; " + fix + " to the same value on every rank (or launch with " +
                        "SLURM or torchrun, or pass a Collective to setup)";
  return RunId{std::move(value), "random", std::move(warning)};
}

}  // namespace lens
