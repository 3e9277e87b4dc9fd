// The token check and the budget message of `lens collect`'s servers (see request_accounting.hpp).
#include "collect_server/request_accounting.hpp"

#include <cctype>

namespace lens::cli {
namespace {

// Compares without an early exit so that timing does not reveal how much of a token matched.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// "Bearer <token>"; the scheme is case-insensitive (RFC 7235).
bool bearer_matches(std::string_view header, const std::string& token) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return false;
  }
  header.remove_prefix(kScheme.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  return same_secret(header, token);
}

}  // namespace

bool RequestAccounting::authorized(std::string_view authorization) const {
  return token.empty() || bearer_matches(authorization, token);
}

std::string budget_message(const MemoryBudget& budget) {
  return "lens collect is at its memory budget for requests in flight (--max-memory-in-flight " +
         std::to_string(budget.bytes()) + " bytes); retry later";
}

}  // namespace lens::cli
