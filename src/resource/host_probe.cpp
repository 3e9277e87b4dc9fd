// The real HostProbe: gethostname, getpid, /proc/driver/nvidia/gpus, and NVML loaded at run
// time with dlopen so that lens never requires the NVIDIA driver. Thread-safety: the library
// handle is loaded once (function-local static) and never closed; each query brackets its
// NVML calls with nvmlInit_v2/nvmlShutdown, which NVML reference-counts and makes thread-safe.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <string>
#include <system_error>

#include "lens/resource.hpp"

namespace lens {
namespace {

// The few NVML declarations lens needs (nvml.h is not required to build lens).
using NvmlReturn = int;    // nvmlReturn_t; NVML_SUCCESS == 0
using NvmlDevice = void*;  // nvmlDevice_t, an opaque pointer
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned int kNvmlTextBufferSize = 256;  // >= NVML's name/UUID/serial buffer sizes

struct NvmlPciInfo {  // nvmlPciInfo_t as read by nvmlDeviceGetPciInfo_v3
  char bus_id_legacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];
};

struct Nvml {
  using InitFn = NvmlReturn (*)();
  using ShutdownFn = NvmlReturn (*)();
  using CountFn = NvmlReturn (*)(unsigned int*);
  using HandleFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
  using TextFn = NvmlReturn (*)(NvmlDevice, char*, unsigned int);
  using PciFn = NvmlReturn (*)(NvmlDevice, NvmlPciInfo*);

  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  CountFn count = nullptr;
  HandleFn handle_by_index = nullptr;
  TextFn name = nullptr;
  TextFn uuid = nullptr;
  TextFn serial = nullptr;   // optional
  PciFn pci_info = nullptr;  // optional

  bool usable() const {
    return init != nullptr && shutdown != nullptr && count != nullptr &&
           handle_by_index != nullptr && name != nullptr && uuid != nullptr;
  }
};

template <class Fn>
Fn symbol(void* library, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(library, name));
}

// Loaded once per process; the handle is deliberately never closed (NVML keeps state that
// must not be unmapped while another thread may still be inside it).
const Nvml* nvml() {
  static const Nvml* const loaded = []() -> const Nvml* {
    void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return nullptr;
    }
    static Nvml functions;
    functions.init = symbol<Nvml::InitFn>(library, "nvmlInit_v2");
    functions.shutdown = symbol<Nvml::ShutdownFn>(library, "nvmlShutdown");
    functions.count = symbol<Nvml::CountFn>(library, "nvmlDeviceGetCount_v2");
    functions.handle_by_index = symbol<Nvml::HandleFn>(library, "nvmlDeviceGetHandleByIndex_v2");
    functions.name = symbol<Nvml::TextFn>(library, "nvmlDeviceGetName");
    functions.uuid = symbol<Nvml::TextFn>(library, "nvmlDeviceGetUUID");
    functions.serial = symbol<Nvml::TextFn>(library, "nvmlDeviceGetSerial");
    functions.pci_info = symbol<Nvml::PciFn>(library, "nvmlDeviceGetPciInfo_v3");
    return functions.usable() ? &functions : nullptr;
  }();
  return loaded;
}

// nvmlInit_v2 on construction, nvmlShutdown on destruction when the init succeeded.
class NvmlSession {
 public:
  explicit NvmlSession(const Nvml* api) : api_(api) {
    active_ = api_ != nullptr && api_->init() == kNvmlSuccess;
  }
  ~NvmlSession() {
    if (active_) {
      api_->shutdown();
    }
  }
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;
  bool active() const { return active_; }

 private:
  const Nvml* api_;
  bool active_ = false;
};

// A NUL-terminated NVML text field, or "" when the call fails.
std::string read_text(Nvml::TextFn fn, NvmlDevice device) {
  if (fn == nullptr) {
    return {};
  }
  char buffer[kNvmlTextBufferSize] = {};
  if (fn(device, buffer, kNvmlTextBufferSize) != kNvmlSuccess) {
    return {};
  }
  buffer[kNvmlTextBufferSize - 1] = '\0';
  return std::string(buffer);
}

class SystemHostProbe final : public HostProbe {
 public:
  std::string hostname() const override {
    char buffer[HOST_NAME_MAX + 2] = {};
    if (::gethostname(buffer, sizeof(buffer) - 1) != 0) {
      return {};
    }
    return std::string(buffer);
  }

  std::int64_t pid() const override { return static_cast<std::int64_t>(::getpid()); }

  std::optional<int> nvml_gpu_count() const override {
    const Nvml* api = nvml();
    NvmlSession session(api);
    if (!session.active()) {
      return std::nullopt;
    }
    unsigned int count = 0;
    if (api->count(&count) != kNvmlSuccess) {
      return std::nullopt;
    }
    return static_cast<int>(count);
  }

  std::optional<int> proc_driver_gpu_count() const override {
    std::error_code error;
    std::filesystem::directory_iterator it("/proc/driver/nvidia/gpus", error);
    if (error) {
      return std::nullopt;
    }
    int count = 0;
    for (const std::filesystem::directory_iterator end; it != end; it.increment(error)) {
      if (error) {
        return std::nullopt;
      }
      ++count;
    }
    return count;
  }

  bool path_exists(const std::string& path) const override {
    std::error_code error;
    return std::filesystem::exists(path, error);
  }

  std::optional<GpuIdentity> gpu_identity(int physical_index) const override {
    if (physical_index < 0) {
      return std::nullopt;
    }
    const Nvml* api = nvml();
    NvmlSession session(api);
    if (!session.active()) {
      return std::nullopt;
    }
    NvmlDevice device = nullptr;
    if (api->handle_by_index(static_cast<unsigned int>(physical_index), &device) != kNvmlSuccess) {
      return std::nullopt;
    }
    GpuIdentity identity;
    identity.name = read_text(api->name, device);
    identity.uuid = read_text(api->uuid, device);
    if (identity.name.empty() || identity.uuid.empty()) {
      return std::nullopt;
    }
    identity.serial = read_text(api->serial, device);
    if (api->pci_info != nullptr) {
      NvmlPciInfo pci{};
      if (api->pci_info(device, &pci) == kNvmlSuccess) {
        pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
        identity.pci_bus_id = pci.bus_id;
      }
    }
    return identity;
  }
};

}  // namespace

const HostProbe& system_host_probe() {
  // Never destroyed, so that code running during static destruction can still use it.
  static const SystemHostProbe* const probe = new SystemHostProbe();
  return *probe;
}

}  // namespace lens
