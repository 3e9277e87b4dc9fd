// lens::log::emit and the logging bridge switch (see lens/log.hpp).
#include "lens/log.hpp"

#include "logs/active_logger.hpp"
#include "native/thread_logs.hpp"

namespace lens {

namespace log {

namespace detail {

void append(BodyBuilder& out, double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(std::string_view(buffer, static_cast<std::size_t>(result.ptr - buffer)));
}

}  // namespace detail

void emit(Level level, std::string_view body, AttributeList attributes,
          std::string_view event_name) noexcept {
  if (!enabled(level)) return;
  const logs::ActiveLogger* active = logs::active_logger();
  if (active->registry == nullptr) return;
  native::write_log(*active->registry, static_cast<int>(level), body, attributes, event_name);
}

}  // namespace log

bool setup_logging_bridge(log::Level level) noexcept {
  logs::set_bridge_level(static_cast<int>(level));
  return logs::active_logger()->registry != nullptr;
}

void remove_logging_bridge() noexcept { logs::set_bridge_level(0); }

}  // namespace lens
