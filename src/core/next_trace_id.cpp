// The per-thread trace id request (core/next_trace_id.hpp).
#include "core/next_trace_id.hpp"

namespace lens::core {
namespace {

thread_local bool t_pending = false;
thread_local std::array<std::uint8_t, 16> t_id{};

}  // namespace

void request_next_trace_id(const std::array<std::uint8_t, 16>& id) noexcept {
  t_pending = false;
  for (std::uint8_t byte : id) {
    if (byte != 0) {
      t_pending = true;
      break;
    }
  }
  if (t_pending) t_id = id;
}

void clear_next_trace_id() noexcept { t_pending = false; }

bool take_next_trace_id(std::array<std::uint8_t, 16>& out) noexcept {
  if (!t_pending) return false;
  t_pending = false;
  out = t_id;
  return true;
}

}  // namespace lens::core
