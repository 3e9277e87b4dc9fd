// Internal UUID helpers for the resource layer: OS-entropy random bytes and UUIDv4/UUIDv5.
// Pure functions; thread-safe (getrandom and OpenSSL's RAND_bytes are).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lens::detail {

using UuidBytes = std::array<std::uint8_t, 16>;

// 16 bytes from the kernel (getrandom), falling back to OpenSSL's RAND_bytes.
// nullopt only when both fail.
std::optional<UuidBytes> os_random_bytes();

// A random RFC 4122 version-4 UUID (version and variant bits set).
std::optional<UuidBytes> random_uuid4();

// Canonical text form (8-4-4-4-12 lower-case hex) and the 32-hex-digit form.
std::string uuid_to_string(const UuidBytes& bytes);
std::string uuid_to_hex(const UuidBytes& bytes);

// Parses the canonical form or 32 hex digits, any case.
std::optional<UuidBytes> parse_uuid(std::string_view text);

}  // namespace lens::detail
