// UUIDv4 from OS entropy and UUIDv5 via OpenSSL's EVP SHA-1 (see uuid.hpp and
// include/lens/resource.hpp). Thread-safe: no shared state.
#include "resource/uuid.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/random.h>

#include <cerrno>
#include <cstddef>

#include "core/hex.hpp"
#include "lens/resource.hpp"

namespace lens {
namespace detail {
namespace {

bool fill_from_kernel(UuidBytes& bytes) {
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return false;
    }
    filled += static_cast<std::size_t>(got);
  }
  return true;
}

}  // namespace

std::optional<UuidBytes> os_random_bytes() {
  UuidBytes bytes{};
  if (fill_from_kernel(bytes)) {
    return bytes;
  }
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) == 1) {
    return bytes;
  }
  return std::nullopt;
}

std::optional<UuidBytes> random_uuid4() {
  auto bytes = os_random_bytes();
  if (!bytes) {
    return std::nullopt;
  }
  (*bytes)[6] = static_cast<std::uint8_t>(((*bytes)[6] & 0x0F) | 0x40);  // version 4
  (*bytes)[8] = static_cast<std::uint8_t>(((*bytes)[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return bytes;
}

std::string uuid_to_hex(const UuidBytes& bytes) {
  std::string out;
  out.reserve(32);
  core::append_lower_hex(out, bytes);
  return out;
}

std::string uuid_to_string(const UuidBytes& bytes) {
  const std::string hex = uuid_to_hex(bytes);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

std::optional<UuidBytes> parse_uuid(std::string_view text) {
  std::string digits;
  if (text.size() == 36) {
    for (std::size_t i = 0; i < text.size(); ++i) {
      const bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash_position != (text[i] == '-')) {
        return std::nullopt;
      }
      if (!dash_position) {
        digits.push_back(text[i]);
      }
    }
  } else if (text.size() == 32) {
    digits.assign(text);
  } else {
    return std::nullopt;
  }
  UuidBytes bytes{};
  if (!core::decode_hex(digits, bytes)) {
    return std::nullopt;
  }
  return bytes;
}

}  // namespace detail

std::string uuid5(std::string_view namespace_uuid, std::string_view name) {
  const auto ns = detail::parse_uuid(namespace_uuid);
  if (!ns) {
    return {};
  }
  std::string input(ns->begin(), ns->end());
  input.append(name);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  if (EVP_Digest(input.data(), input.size(), digest, &digest_size, EVP_sha1(), nullptr) != 1 ||
      digest_size < 16) {
    return {};
  }
  detail::UuidBytes bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = digest[i];
  }
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0F) | 0x50);  // version 5
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3F) | 0x80);  // RFC 4122 variant
  return detail::uuid_to_string(bytes);
}

}  // namespace lens
