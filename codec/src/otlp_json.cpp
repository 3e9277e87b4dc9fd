// OTLP JSON codec (see otlp_json.hpp). protobuf's JSON mapping does everything except the ids:
// it writes bytes as base64 and reads only base64, so encode and decode pass the JSON through
// nlohmann and, guided by the message's descriptor, swap base64 and hex in the id fields. Trace
// requests go to the direct encoder of otlp_json_traces.cpp first, with the same output.
#include "lens/otlp_json.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "otlp_json_traces.hpp"

namespace lens::otlp_json {
namespace {

namespace pb = google::protobuf;
// Keeps protobuf's field order, so a line reads like the message.
using Json = nlohmann::ordered_json;

// Bounds the recursion of the walk below and of nlohmann's dump on untrusted input. An OTLP
// message at protobuf's own nesting limit (100) stays well below it.
constexpr int kMaxJsonDepth = 1000;

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;  // standard and URL-safe alphabets
  if (c == '/' || c == '_') return 63;
  return -1;
}

// Decodes what protobuf's printer writes (standard alphabet, padded); nullopt if malformed.
std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t bits = 0;
  int bit_count = 0;
  for (char c : text) {
    const int value = base64_value(c);
    if (value < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      out += static_cast<char>((bits >> bit_count) & 0xff);
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Either case; nullopt on an odd length or a non-hex digit.
std::optional<std::string> hex_decode(std::string_view text) {
  if (text.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int high = hex_value(text[i]);
    const int low = hex_value(text[i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high << 4 | low);
  }
  return out;
}

// The length in bytes of an id field (the OTLP JSON exception to base64), or 0 for any other.
std::size_t id_length(const pb::FieldDescriptor& field) {
  if (field.type() != pb::FieldDescriptor::TYPE_BYTES || field.is_repeated()) return 0;
  if (field.name() == "trace_id") return 16;
  if (field.name() == "span_id" || field.name() == "parent_span_id") return 8;
  return 0;
}

// A JSON key names a field by its proto name or its JSON name (the parser accepts both).
const pb::FieldDescriptor* find_field(const pb::Descriptor& type, const std::string& key) {
  if (const pb::FieldDescriptor* field = type.FindFieldByName(key)) return field;
  for (int i = 0; i < type.field_count(); ++i) {
    if (type.field(i)->json_name() == key) return type.field(i);
  }
  return nullptr;
}

// Well-known types have JSON forms of their own (OTLP uses none); nothing to convert inside.
bool is_well_known(const pb::Descriptor& type) {
  return type.file()->name().rfind("google/protobuf/", 0) == 0;
}

std::string dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// For error messages: the value as JSON, cut short.
std::string shown(const Json& value) {
  constexpr std::size_t kMax = 80;
  std::string text = dump(value);
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

enum class Direction { kBase64ToHex, kHexToBase64 };

// Walks a JSON document along a message descriptor and rewrites the id fields. Values of the
// wrong JSON type are left for protobuf's parser to report, except where a list is expected:
// protobuf 3.21 reads a lone object or scalar there as a one-element list, so decoding rejects
// it here.
class IdConverter {
 public:
  explicit IdConverter(Direction direction) : direction_(direction) {}

  Status message(Json& object, const pb::Descriptor& type) {
    if (!object.is_object() || is_well_known(type)) return {};
    for (auto it = object.begin(); it != object.end(); ++it) {
      const pb::FieldDescriptor* field = find_field(type, it.key());
      if (field == nullptr) continue;  // unknown: ignored by the parser
      const std::size_t mark = path_.size();
      if (!path_.empty()) path_ += '.';
      path_ += it.key();
      Status status = this->field(it.value(), *field);
      path_.resize(mark);
      if (!status.ok()) return status;
    }
    return {};
  }

 private:
  Status field(Json& value, const pb::FieldDescriptor& field) {
    if (direction_ == Direction::kHexToBase64 && field.is_repeated() && !value.is_null() &&
        (field.is_map() ? !value.is_object() : !value.is_array())) {
      return Error("OTLP JSON: invalid " + path_ + ": expected " +
                   (field.is_map() ? "an object" : "an array") + ", got " + value.type_name());
    }
    if (const std::size_t length = id_length(field); length > 0) return id(value, length);
    if (field.cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) return {};
    if (field.is_map()) {
      const pb::FieldDescriptor* mapped = field.message_type()->map_value();
      if (mapped->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE || !value.is_object()) {
        return {};
      }
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (Status status = element(it.value(), *mapped->message_type(), it.key()); !status.ok()) {
          return status;
        }
      }
      return {};
    }
    if (field.is_repeated()) {
      if (!value.is_array()) return {};
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (Status status = element(value[i], *field.message_type(), std::to_string(i));
            !status.ok()) {
          return status;
        }
      }
      return {};
    }
    return message(value, *field.message_type());
  }

  Status element(Json& value, const pb::Descriptor& type, const std::string& index) {
    const std::size_t mark = path_.size();
    path_ += '[' + index + ']';
    Status status = message(value, type);
    path_.resize(mark);
    return status;
  }

  Status id(Json& value, std::size_t length) {
    if (direction_ == Direction::kBase64ToHex) {
      // protobuf's own output: always a base64 string.
      if (value.is_string()) {
        if (auto bytes = base64_decode(value.get_ref<const std::string&>())) {
          value = "";
          append_hex(*bytes, value.get_ref<std::string&>());
        }
      }
      return {};
    }
    if (value.is_null()) return {};  // the parser reads null as unset
    if (value.is_string()) {
      const auto& text = value.get_ref<const std::string&>();
      if (text.empty()) return {};  // unset, e.g. the parentSpanId of a root span
      if (text.size() == 2 * length) {
        if (auto bytes = hex_decode(text)) {
          value = "";
          append_base64(*bytes, value.get_ref<std::string&>());
          return {};
        }
      }
    }
    return Error("OTLP JSON: invalid " + path_ + " " + shown(value) + ": expected " +
                 std::to_string(2 * length) + " hex digits");
  }

  Direction direction_;
  std::string path_;  // of the value being converted, e.g. resourceSpans[0].scopeSpans[0]
};

// Calls `fn(i)` for each position of JSON `text` outside string literals (escapes skipped).
template <class Fn>
void for_each_outside_strings(std::string_view text, Fn&& fn) {
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else {
      fn(i);
    }
  }
}

// The deepest nesting of objects and arrays in `text`, ignoring brackets inside strings.
int nesting_depth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  for_each_outside_strings(text, [&](std::size_t i) {
    if (text[i] == '{' || text[i] == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (text[i] == '}' || text[i] == ']') {
      --depth;
    }
  });
  return deepest;
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; keep what follows.
std::string parse_error_text(const std::string& what) {
  const std::size_t end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

template <class ProtobufStatus>
std::string message_of(const ProtobufStatus& status) {
  const auto text = status.message();
  return std::string(text.data(), text.size());
}

// protobuf prints a negative zero double as the number -0, which nlohmann reads as the integer
// 0: written -0.0 instead (outside strings), the sign survives the round through nlohmann.
std::string keep_negative_zeros(std::string printed) {
  std::string out;
  std::size_t copied = 0;
  for_each_outside_strings(printed, [&](std::size_t i) {
    if (printed.compare(i, 2, "-0") != 0) return;
    const char next = i + 2 < printed.size() ? printed[i + 2] : ',';
    if (next != ',' && next != '}' && next != ']' && next != ' ' && next != '\n') return;
    out.append(printed, copied, i + 2 - copied);
    out += ".0";
    copied = i + 2;
  });
  if (copied == 0) return printed;
  out.append(printed, copied, std::string::npos);
  return out;
}

}  // namespace

std::string encode(const google::protobuf::Message& message) {
  // Trace requests (what `lens collect` mostly writes) have a direct encoder with the same output.
  using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
  if (const auto* traces = dynamic_cast<const ExportTraceServiceRequest*>(&message)) {
    std::string line;
    if (encode_trace_request_fast(*traces, line)) return line;
  }
  return encode_generic(message);
}

std::string encode_generic(const google::protobuf::Message& message) {
  pb::util::JsonPrintOptions options;
  options.always_print_enums_as_ints = true;
  std::string printed;
  if (auto status = pb::util::MessageToJsonString(message, &printed, options); !status.ok()) {
    throw std::runtime_error("OTLP JSON: cannot print " + message.GetTypeName() + ": " +
                             message_of(status));
  }
  Json json = Json::parse(keep_negative_zeros(std::move(printed)));
  // Cannot fail in this direction.
  (void)IdConverter(Direction::kBase64ToHex).message(json, *message.GetDescriptor());
  return dump(json);
}

lens::Status decode(std::string_view json, google::protobuf::Message& message) {
  message.Clear();
  if (nesting_depth(json) > kMaxJsonDepth) {
    return Error("OTLP JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  Json parsed;
  try {
    parsed = Json::parse(json);
  } catch (const Json::parse_error& e) {
    return Error("OTLP JSON: not valid JSON: " + parse_error_text(e.what()));
  }
  if (!parsed.is_object()) {
    return Error("OTLP JSON: expected an object for " + message.GetTypeName() + ", got " +
                 parsed.type_name());
  }
  if (Status status =
          IdConverter(Direction::kHexToBase64).message(parsed, *message.GetDescriptor());
      !status.ok()) {
    return status;
  }
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (auto status = pb::util::JsonStringToMessage(dump(parsed), &message, options); !status.ok()) {
    message.Clear();
    return Error("OTLP JSON: invalid " + message.GetTypeName() + ": " + message_of(status));
  }
  return {};
}

}  // namespace lens::otlp_json
