// NativeAwareContextStorage (see context_storage.hpp).
#include "native/context_storage.hpp"

#include <opentelemetry/context/runtime_context.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "native/thread_spans.hpp"

namespace lens::native {
namespace {

namespace ctx = opentelemetry::context;

thread_local std::vector<ctx::Context> t_stack;

void publish_depth() noexcept { set_context_depth(static_cast<std::int64_t>(t_stack.size())); }

class NativeAwareContextStorage final : public ctx::RuntimeContextStorage {
 public:
  ctx::Context GetCurrent() noexcept override { return overlay_current_span(attached_context()); }

  opentelemetry::nostd::unique_ptr<ctx::Token> Attach(
      const ctx::Context& context) noexcept override {
    try {
      t_stack.push_back(context);
    } catch (...) {
      // Out of memory: the context is not attached; its token detaches nothing.
    }
    publish_depth();
    return CreateToken(context);
  }

  bool Detach(ctx::Token& token) noexcept override {
    // Usually the top; otherwise everything above the token goes too (as opentelemetry-cpp).
    for (std::size_t i = t_stack.size(); i-- > 0;) {
      if (token == t_stack[i]) {
        t_stack.resize(i);
        publish_depth();
        return true;
      }
    }
    return false;
  }
};

std::atomic<bool> g_installed{false};

}  // namespace

ctx::Context attached_context() noexcept {
  return t_stack.empty() ? ctx::Context{} : t_stack.back();
}

void install_context_storage() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    auto current = ctx::RuntimeContext::GetConstRuntimeContextStorage();
    if (dynamic_cast<const ctx::ThreadLocalContextStorage*>(current.get()) == nullptr) return;
    ctx::RuntimeContext::SetRuntimeContextStorage(
        opentelemetry::nostd::shared_ptr<ctx::RuntimeContextStorage>(
            new NativeAwareContextStorage()));
    g_installed.store(true, std::memory_order_release);
  });
}

bool context_storage_installed() noexcept { return g_installed.load(std::memory_order_acquire); }

}  // namespace lens::native
