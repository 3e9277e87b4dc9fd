// Counting a request's items and decoded size on its encoded bytes (see request_limits.hpp).
#include "collect_server/request_limits.hpp"

#include <google/protobuf/message.h>
#include <malloc.h>

#include <unordered_map>

namespace lens::cli {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// protobuf's own recursion limit: deeper bodies fail to parse, so there is nothing to count.
constexpr int kMaxDepth = 100;
// A string or bytes field (or an unknown field, kept as bytes): the std::string plus its text.
constexpr std::uint64_t kStringBytes = 32;
// A repeated field's element slot (pointer array, grown by doubling).
constexpr std::uint64_t kRepeatedSlotBytes = 16;
// One JSON object: its parsed tree node and members (nlohmann) and then its protobuf message.
constexpr std::uint64_t kJsonObjectBytes = 256;
// The JSON line a request is written as: a string byte takes up to 6 bytes there ("\u0001"), a
// bytes field two hex digits per byte, a number up to 24 characters, a field's name about 24, an
// element of an array of messages its braces and comma.
constexpr std::uint64_t kWrittenNumberBytes = 24;
constexpr std::uint64_t kWrittenNameBytes = 24;
constexpr std::uint64_t kWrittenObjectBytes = 3;

// What `text` takes in the JSON line: control characters as \u00XX, '"' and '\\' escaped; any
// other byte as it is, or escaped by protobuf's printer (metrics and logs go through it; it
// escapes non-ASCII and HTML-sensitive characters too): counted at 6 to stay on the safe side.
std::uint64_t written_string_bytes(const char* p, std::uint64_t length) {
  std::uint64_t bytes = 2;  // the quotes
  for (std::uint64_t i = 0; i < length; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c < 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '&' || c == '\'') {
      bytes += 6;
    } else if (c == '"' || c == '\\') {
      bytes += 2;
    } else {
      bytes += 1;
    }
  }
  return bytes;
}

std::string items_message(const RequestLimits& limits) {
  return "request holds more than " + std::to_string(limits.max_items) +
         " items (resources, scopes, spans, log records, metrics, data points, attributes, ...);"
         " the limit is --max-request-items";
}

std::string memory_message(const RequestLimits& limits) {
  return "request would take more than " + std::to_string(limits.max_memory) +
         " bytes of memory once decoded; the limit is --max-request-memory";
}

class WireWalker {
 public:
  enum class Step { kGoOn, kOverLimit, kMalformed };

  WireWalker(const RequestLimits& limits, RequestSize& size) : limits_(limits), size_(size) {}

  Step walk(const Descriptor* type, const char* p, const char* end, int depth) {
    while (p < end) {
      std::uint64_t tag = 0;
      if (!read_varint(p, end, tag)) return Step::kMalformed;
      const auto number = static_cast<int>(tag >> 3);
      const FieldDescriptor* field =
          type != nullptr && number > 0 ? type->FindFieldByNumber(number) : nullptr;
      const bool repeated = field != nullptr && field->is_repeated();
      switch (tag & 7) {
        case 0: {  // varint
          std::uint64_t ignored = 0;
          if (!read_varint(p, end, ignored)) return Step::kMalformed;
          if (repeated) size_.memory += 8;
          if (field != nullptr) written(kWrittenNameBytes + kWrittenNumberBytes);
          break;
        }
        case 1:    // fixed64
        case 5: {  // fixed32
          const std::ptrdiff_t width = (tag & 7) == 1 ? 8 : 4;
          if (end - p < width) return Step::kMalformed;
          p += width;
          if (repeated) size_.memory += 8;
          if (field != nullptr) written(kWrittenNameBytes + kWrittenNumberBytes);
          break;
        }
        case 2: {  // length-delimited: a message, a string or bytes, or a packed array
          std::uint64_t length = 0;
          if (!read_varint(p, end, length)) return Step::kMalformed;
          if (length > static_cast<std::uint64_t>(end - p)) return Step::kMalformed;
          if (field != nullptr && field->type() == FieldDescriptor::TYPE_MESSAGE) {
            ++size_.items;
            size_.memory +=
                message_bytes(field->message_type()) + (repeated ? kRepeatedSlotBytes : 0);
            written(kWrittenObjectBytes + (repeated ? 0 : kWrittenNameBytes));
            if (over_limit()) return Step::kOverLimit;
            if (depth < kMaxDepth) {
              const Step inner = walk(field->message_type(), p, p + length, depth + 1);
              if (inner != Step::kGoOn) return inner;
            }
          } else if (repeated && field->is_packable()) {
            size_.memory += 8 * length;  // at worst one 8-byte element per encoded byte
            written(kWrittenNumberBytes * length);
          } else {
            size_.memory += kStringBytes + length + (repeated ? kRepeatedSlotBytes : 0);
            if (field != nullptr) {  // unknown fields are not written
              written(kWrittenNameBytes + (field->type() == FieldDescriptor::TYPE_STRING
                                               ? written_string_bytes(p, length)
                                               : 2 + 2 * length));
            }
          }
          p += length;
          break;
        }
        default:  // groups (not in OTLP) or not a wire type at all
          return Step::kMalformed;
      }
      if (over_limit()) return Step::kOverLimit;
    }
    return Step::kGoOn;
  }

  // The JSON line is in memory once the request is written: its size counts.
  void written(std::uint64_t bytes) {
    size_.written += bytes;
    size_.memory += bytes;
  }

  bool over_limit() const {
    return size_.items > limits_.max_items || size_.memory > limits_.max_memory;
  }

 private:
  static bool read_varint(const char*& p, const char* end, std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
      const auto byte = static_cast<unsigned char>(*p++);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // The size of an empty message of `type` (what the parser allocates for it before its fields).
  std::uint64_t message_bytes(const Descriptor* type) {
    auto it = message_bytes_.find(type);
    if (it == message_bytes_.end()) {
      const google::protobuf::Message* prototype =
          google::protobuf::MessageFactory::generated_factory()->GetPrototype(type);
      const std::uint64_t bytes =
          prototype != nullptr ? static_cast<std::uint64_t>(prototype->SpaceUsedLong()) : 64;
      it = message_bytes_.emplace(type, bytes).first;
    }
    return it->second;
  }

  const RequestLimits& limits_;
  RequestSize& size_;
  std::unordered_map<const Descriptor*, std::uint64_t> message_bytes_;
};

}  // namespace

std::string protobuf_over_limits(const Descriptor& type, std::string_view body,
                                 const RequestLimits& limits, RequestSize& size) {
  size = {};
  size.memory = body.size();
  WireWalker walker(limits, size);
  if (walker.over_limit()) return memory_message(limits);
  if (walker.walk(&type, body.data(), body.data() + body.size(), 0) !=
      WireWalker::Step::kOverLimit) {
    return {};
  }
  return size.items > limits.max_items ? items_message(limits) : memory_message(limits);
}

std::string json_over_limits(std::string_view body, const RequestLimits& limits,
                             RequestSize& size) {
  size = {};
  // The body, and the JSON line it is written as: about as long (escapes are kept as escapes).
  size.written = body.size();
  size.memory = body.size() + size.written;
  bool in_string = false;
  bool escaped = false;
  for (const char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++size.items;
      size.memory += kJsonObjectBytes;
      if (size.items > limits.max_items) return items_message(limits);
      if (size.memory > limits.max_memory) return memory_message(limits);
    }
  }
  return size.memory > limits.max_memory ? memory_message(limits) : std::string();
}

bool MemoryBudget::Share::grow_to(std::uint64_t total) {
  if (total <= held_) return true;
  const std::uint64_t more = total - held_;
  std::uint64_t used = budget_.in_use_.load();
  do {
    const bool alone = used == held_;  // no other request holds a share
    if (!alone && used + more > budget_.bytes_) return false;
  } while (!budget_.in_use_.compare_exchange_weak(used, used + more));
  held_ = total;
  return true;
}

ReleaseMemoryAfterLargeRequest::~ReleaseMemoryAfterLargeRequest() {
  if (largest_ >= kLargeRequestBytes) malloc_trim(0);
}

}  // namespace lens::cli
