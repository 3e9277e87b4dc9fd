// lens::log::emit and the logging bridge switch (see lens/log.hpp).
#include "lens/log.hpp"

#include <opentelemetry/logs/log_record.h>
#include <opentelemetry/logs/severity.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "logs/active_logger.hpp"

namespace lens {

namespace log {
namespace {

namespace nostd = opentelemetry::nostd;

// Shortens a string to the limit without splitting a UTF-8 sequence.
std::string_view truncated(std::string_view value, const std::optional<std::int64_t>& limit) {
  if (!limit || value.size() <= static_cast<std::size_t>(*limit)) return value;
  std::size_t end = static_cast<std::size_t>(*limit);
  while (end > 0 && (static_cast<unsigned char>(value[end]) & 0xC0) == 0x80) --end;
  return value.substr(0, end);
}

// Hands one attribute to the record, which copies it before returning (both recordables
// lens exporters use do), so views into temporaries are safe here.
void set_attribute(opentelemetry::logs::LogRecord& record, const std::string& key,
                   const AttributeValue& value, const std::optional<std::int64_t>& length) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string>) {
          const std::string_view s = truncated(v, length);
          record.SetAttribute(key, nostd::string_view(s.data(), s.size()));
        } else if constexpr (std::is_same_v<V, std::vector<bool>>) {
          std::unique_ptr<bool[]> values(new bool[v.size()]);
          for (std::size_t i = 0; i < v.size(); ++i) values[i] = v[i];
          record.SetAttribute(key, nostd::span<const bool>(values.get(), v.size()));
        } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
          std::vector<nostd::string_view> views;
          views.reserve(v.size());
          for (const std::string& item : v) {
            const std::string_view s = truncated(item, length);
            views.emplace_back(s.data(), s.size());
          }
          record.SetAttribute(key,
                              nostd::span<const nostd::string_view>(views.data(), views.size()));
        } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>> ||
                             std::is_same_v<V, std::vector<double>>) {
          using E = typename V::value_type;
          record.SetAttribute(key, nostd::span<const E>(v.data(), v.size()));
        } else {
          record.SetAttribute(key, v);
        }
      },
      value);
}

}  // namespace

namespace detail {

void append(std::string& out, double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out.append(buffer, result.ptr);
}

}  // namespace detail

void emit(Level level, std::string_view body, const Attributes& attributes,
          std::string_view event_name) noexcept {
  if (!enabled(level)) return;
  const logs::ActiveLogger* active = logs::active_logger();
  if (active->logger == nullptr) return;
  try {
    auto record = active->logger->CreateLogRecord();
    if (record == nullptr) return;
    record->SetTimestamp(std::chrono::system_clock::now());
    record->SetSeverity(static_cast<opentelemetry::logs::Severity>(static_cast<int>(level)));
    record->SetBody(nostd::string_view(body.data(), body.size()));
    std::int64_t count = 0;
    for (const auto& [key, value] : attributes) {
      if (count++ >= active->attribute_count_limit) break;
      set_attribute(*record, key, value, active->attribute_value_length_limit);
    }
    if (!event_name.empty()) {
      record->SetEventId(0, nostd::string_view(event_name.data(), event_name.size()));
    }
    active->logger->EmitLogRecord(std::move(record));
  } catch (...) {
    // Out of memory: the record is lost, the caller is not disturbed.
  }
}

}  // namespace log

bool setup_logging_bridge(log::Level level) noexcept {
  logs::set_bridge_level(static_cast<int>(level));
  return logs::active_logger()->logger != nullptr;
}

void remove_logging_bridge() noexcept { logs::set_bridge_level(0); }

}  // namespace lens
