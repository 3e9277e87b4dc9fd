// Process groups of the example trainer (see parallel_state.hpp).
#include "parallel_state.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <vector>

namespace lens::megatron::example {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

c10::intrusive_ptr<c10d::ProcessGroup> make_group(const c10::intrusive_ptr<c10d::Store>& store,
                                                  const std::string& prefix, int rank, int size,
                                                  const std::string& host, const Env& env) {
  auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::seconds(120));
  if (auto interface = env.get("GLOO_SOCKET_IFNAME"); interface && !interface->empty()) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(*interface));
  } else if (is_loopback(host)) {
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
}

}  // namespace

Result<ParallelState> init_parallel_state(const RankInfo& rank, int data_parallel_size,
                                          int pipeline_size, const Env& env) {
  ParallelState state;
  state.rank = rank.rank;
  state.world_size = rank.world_size;
  state.data_parallel_size = data_parallel_size;
  state.pipeline_size = pipeline_size;
  state.pipeline_rank = rank.rank / data_parallel_size;
  state.data_parallel_rank = rank.rank % data_parallel_size;
  if (rank.world_size == 1) return state;

  const std::string host = env.get("MASTER_ADDR").value_or("");
  const std::string port_text = env.get("MASTER_PORT").value_or("");
  if (host.empty()) {
    return Error(
        "MASTER_ADDR is not set; accepted: the host of rank 0 (torchrun sets it; set it "
        "yourself under mpirun or srun)");
  }
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 1 || port > 65535) {
    return Error("Invalid value '" + port_text + "' for MASTER_PORT; accepted: a port 1..65535");
  }
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(port);
    // Under torchrun the elastic agent already serves the store at MASTER_PORT.
    options.isServer =
        rank.rank == 0 && env.get("TORCHELASTIC_USE_AGENT_STORE").value_or("") != "True";
    options.numWorkers = static_cast<std::size_t>(rank.world_size);
    options.timeout = std::chrono::seconds(120);
    auto store = c10::make_intrusive<c10d::TCPStore>(host, options);
    state.world = make_group(store, "world/", rank.rank, rank.world_size, host, env);
    state.collective = std::make_unique<C10dCollective>(state.world);
    // Each rank builds only the groups it belongs to; distinct prefixes keep them apart.
    if (data_parallel_size > 1) {
      state.data_parallel = make_group(store, "dp" + std::to_string(state.pipeline_rank) + "/",
                                       state.data_parallel_rank, data_parallel_size, host, env);
    }
    if (pipeline_size > 1) {
      state.pipeline = make_group(store, "pp" + std::to_string(state.data_parallel_rank) + "/",
                                  state.pipeline_rank, pipeline_size, host, env);
    }
  } catch (const std::exception& e) {
    return Error("Cannot set up the process groups at " + host + ":" + port_text + ": " + e.what());
  }
  return state;
}

}  // namespace lens::megatron::example
