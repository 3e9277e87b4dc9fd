// The direct trace-request encoder of otlp_json_traces.hpp. It reproduces what the generic path
// (protobuf's JSON printer, ids swapped to hex, nlohmann's dump) writes, byte for byte; the
// differential tests in tests/unit/codec/otlp_json_traces_test.cpp hold it to that. Thread-safe.
#include "otlp_json_traces.hpp"

#include <google/protobuf/descriptor.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>
#include <system_error>

namespace lens::otlp_json {
namespace {

namespace pb = google::protobuf;
namespace common = opentelemetry::proto::common::v1;
namespace resource = opentelemetry::proto::resource::v1;
namespace trace = opentelemetry::proto::trace::v1;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

// protobuf's printer (3.21) fails on messages nested deeper than 64 levels (e.g. 31 nested
// ArrayValues in a resource attribute); at a depth well short of that the generic path takes
// over and fails, or not, as it always did.
constexpr int kMaxDepth = 40;

constexpr std::string_view kHexDigits = "0123456789abcdef";
constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// What a byte needs in a JSON string as nlohmann's dump writes it (ensure_ascii off):
// 0 = itself, 1 = an escape, 2 = the start (or a stray continuation) of a multibyte sequence.
constexpr std::array<std::uint8_t, 256> kByteClass = [] {
  std::array<std::uint8_t, 256> table{};
  for (int c = 0; c < 0x20; ++c) table[static_cast<std::size_t>(c)] = 1;
  table['"'] = 1;
  table['\\'] = 1;
  for (int c = 0x80; c < 0x100; ++c) table[static_cast<std::size_t>(c)] = 2;
  return table;
}();

// The length of the well-formed UTF-8 sequence at `p` (Unicode table 3-7: no overlong forms,
// no surrogates, nothing above U+10FFFF; what nlohmann's parser accepts), or 0.
std::size_t utf8_sequence_length(const unsigned char* p, const unsigned char* end) {
  const unsigned char lead = p[0];
  const auto left = static_cast<std::size_t>(end - p);
  auto continuation = [](unsigned char c) { return c >= 0x80 && c <= 0xbf; };
  if (lead >= 0xc2 && lead <= 0xdf) return left >= 2 && continuation(p[1]) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef) {
    if (left < 3) return 0;
    const unsigned char low = lead == 0xe0 ? 0xa0 : 0x80;
    const unsigned char high = lead == 0xed ? 0x9f : 0xbf;
    return p[1] >= low && p[1] <= high && continuation(p[2]) ? 3 : 0;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    if (left < 4) return 0;
    const unsigned char low = lead == 0xf0 ? 0x90 : 0x80;
    const unsigned char high = lead == 0xf4 ? 0x8f : 0xbf;
    return p[1] >= low && p[1] <= high && continuation(p[2]) && continuation(p[3]) ? 4 : 0;
  }
  return 0;
}

// The OTLP schema this encoder writes: every field of every message, by number and name. A
// linked libopentelemetry_proto whose descriptors differ (say, a newer one with more fields)
// sends every request down the generic path.
struct FieldSpec {
  int number;
  std::string_view name;
};

bool has_fields(const pb::Descriptor* type, std::initializer_list<FieldSpec> fields) {
  if (type == nullptr || type->field_count() != static_cast<int>(fields.size()) ||
      type->extension_range_count() != 0) {
    return false;
  }
  for (const FieldSpec& spec : fields) {
    const pb::FieldDescriptor* field = type->FindFieldByNumber(spec.number);
    if (field == nullptr || field->name() != spec.name) return false;
  }
  return true;
}

bool schema_is_known() {
  static const bool known =
      has_fields(ExportTraceServiceRequest::descriptor(), {{1, "resource_spans"}}) &&
      has_fields(trace::ResourceSpans::descriptor(),
                 {{1, "resource"}, {2, "scope_spans"}, {3, "schema_url"}}) &&
      has_fields(trace::ScopeSpans::descriptor(),
                 {{1, "scope"}, {2, "spans"}, {3, "schema_url"}}) &&
      has_fields(trace::Span::descriptor(), {{1, "trace_id"},
                                             {2, "span_id"},
                                             {3, "trace_state"},
                                             {4, "parent_span_id"},
                                             {5, "name"},
                                             {6, "kind"},
                                             {7, "start_time_unix_nano"},
                                             {8, "end_time_unix_nano"},
                                             {9, "attributes"},
                                             {10, "dropped_attributes_count"},
                                             {11, "events"},
                                             {12, "dropped_events_count"},
                                             {13, "links"},
                                             {14, "dropped_links_count"},
                                             {15, "status"},
                                             {16, "flags"}}) &&
      has_fields(trace::Span::Event::descriptor(), {{1, "time_unix_nano"},
                                                    {2, "name"},
                                                    {3, "attributes"},
                                                    {4, "dropped_attributes_count"}}) &&
      has_fields(trace::Span::Link::descriptor(), {{1, "trace_id"},
                                                   {2, "span_id"},
                                                   {3, "trace_state"},
                                                   {4, "attributes"},
                                                   {5, "dropped_attributes_count"},
                                                   {6, "flags"}}) &&
      has_fields(trace::Status::descriptor(), {{2, "message"}, {3, "code"}}) &&
      has_fields(resource::Resource::descriptor(),
                 {{1, "attributes"}, {2, "dropped_attributes_count"}}) &&
      has_fields(
          common::InstrumentationScope::descriptor(),
          {{1, "name"}, {2, "version"}, {3, "attributes"}, {4, "dropped_attributes_count"}}) &&
      has_fields(common::KeyValue::descriptor(), {{1, "key"}, {2, "value"}}) &&
      has_fields(common::AnyValue::descriptor(), {{1, "string_value"},
                                                  {2, "bool_value"},
                                                  {3, "int_value"},
                                                  {4, "double_value"},
                                                  {5, "array_value"},
                                                  {6, "kvlist_value"},
                                                  {7, "bytes_value"}}) &&
      has_fields(common::ArrayValue::descriptor(), {{1, "values"}}) &&
      has_fields(common::KeyValueList::descriptor(), {{1, "values"}});
  return known;
}

// Appends JSON to `out`. Each message is written field by field in field-number order, as
// protobuf's printer does, skipping what proto3 does not serialize (zero, empty, unset).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  bool request(const ExportTraceServiceRequest& message) {
    return object([&](bool& first) {
      return array_field(first, R"("resourceSpans":[)", message.resource_spans(),
                         [this](const trace::ResourceSpans& item) { return resource_spans(item); });
    });
  }

 private:
  // Separates the fields of one object (or the elements of one array).
  void comma(bool& first) {
    if (!first) out_ += ',';
    first = false;
  }

  // `"name":`, after a comma unless it is the object's first field.
  void key(bool& first, std::string_view quoted_name_colon) {
    comma(first);
    out_.append(quoted_name_colon);
  }

  // `{...}` with fields(first) writing the fields; false when fields fails.
  template <class Fields>
  bool object(Fields&& fields) {
    out_ += '{';
    bool first = true;
    if (!fields(first)) return false;
    out_ += '}';
    return true;
  }

  // A message field: omitted when unset, else `"name":{...}` with write(value).
  template <class Message, class Write>
  bool message_field(bool& first, std::string_view quoted_name_colon, bool has,
                     const Message& value, Write&& write) {
    if (!has) return true;
    key(first, quoted_name_colon);
    return write(value);
  }

  // A repeated message field: omitted when empty, else `"name":[...]` with write(item) each.
  template <class Items, class Write>
  bool array_field(bool& first, std::string_view quoted_name_colon_bracket, const Items& items,
                   Write&& write) {
    if (items.empty()) return true;
    key(first, quoted_name_colon_bracket);
    bool first_item = true;
    for (const auto& item : items) {
      comma(first_item);
      if (!write(item)) return false;
    }
    out_ += ']';
    return true;
  }

  bool resource_spans(const trace::ResourceSpans& message) {
    return object([&](bool& first) {
      return message_field(first, R"("resource":)", message.has_resource(), message.resource(),
                           [this](const resource::Resource& item) { return resource(item); }) &&
             array_field(first, R"("scopeSpans":[)", message.scope_spans(),
                         [this](const trace::ScopeSpans& item) { return scope_spans(item); }) &&
             string_field(first, R"("schemaUrl":)", message.schema_url());
    });
  }

  bool resource(const resource::Resource& message) {
    return object([&](bool& first) {
      if (!attributes(first, R"("attributes":[)", message.attributes(), 3)) return false;
      uint32_field(first, R"("droppedAttributesCount":)", message.dropped_attributes_count());
      return true;
    });
  }

  bool scope_spans(const trace::ScopeSpans& message) {
    return object([&](bool& first) {
      return message_field(
                 first, R"("scope":)", message.has_scope(), message.scope(),
                 [this](const common::InstrumentationScope& item) { return scope(item); }) &&
             array_field(first, R"("spans":[)", message.spans(),
                         [this](const trace::Span& item) { return span(item); }) &&
             string_field(first, R"("schemaUrl":)", message.schema_url());
    });
  }

  bool scope(const common::InstrumentationScope& message) {
    return object([&](bool& first) {
      if (!string_field(first, R"("name":)", message.name()) ||
          !string_field(first, R"("version":)", message.version()) ||
          !attributes(first, R"("attributes":[)", message.attributes(), 4)) {
        return false;
      }
      uint32_field(first, R"("droppedAttributesCount":)", message.dropped_attributes_count());
      return true;
    });
  }

  bool span(const trace::Span& message) {
    return object([&](bool& first) {
      hex_field(first, R"("traceId":)", message.trace_id());
      hex_field(first, R"("spanId":)", message.span_id());
      if (!string_field(first, R"("traceState":)", message.trace_state())) return false;
      hex_field(first, R"("parentSpanId":)", message.parent_span_id());
      if (!string_field(first, R"("name":)", message.name())) return false;
      int32_field(first, R"("kind":)", message.kind());
      uint64_field(first, R"("startTimeUnixNano":)", message.start_time_unix_nano());
      uint64_field(first, R"("endTimeUnixNano":)", message.end_time_unix_nano());
      if (!attributes(first, R"("attributes":[)", message.attributes(), 4)) return false;
      uint32_field(first, R"("droppedAttributesCount":)", message.dropped_attributes_count());
      if (!array_field(first, R"("events":[)", message.events(),
                       [this](const trace::Span::Event& item) { return event(item); })) {
        return false;
      }
      uint32_field(first, R"("droppedEventsCount":)", message.dropped_events_count());
      if (!array_field(first, R"("links":[)", message.links(),
                       [this](const trace::Span::Link& item) { return link(item); })) {
        return false;
      }
      uint32_field(first, R"("droppedLinksCount":)", message.dropped_links_count());
      if (!message_field(first, R"("status":)", message.has_status(), message.status(),
                         [this](const trace::Status& item) { return status(item); })) {
        return false;
      }
      uint32_field(first, R"("flags":)", message.flags());
      return true;
    });
  }

  bool event(const trace::Span::Event& message) {
    return object([&](bool& first) {
      uint64_field(first, R"("timeUnixNano":)", message.time_unix_nano());
      if (!string_field(first, R"("name":)", message.name()) ||
          !attributes(first, R"("attributes":[)", message.attributes(), 5)) {
        return false;
      }
      uint32_field(first, R"("droppedAttributesCount":)", message.dropped_attributes_count());
      return true;
    });
  }

  bool link(const trace::Span::Link& message) {
    return object([&](bool& first) {
      hex_field(first, R"("traceId":)", message.trace_id());
      hex_field(first, R"("spanId":)", message.span_id());
      if (!string_field(first, R"("traceState":)", message.trace_state()) ||
          !attributes(first, R"("attributes":[)", message.attributes(), 5)) {
        return false;
      }
      uint32_field(first, R"("droppedAttributesCount":)", message.dropped_attributes_count());
      uint32_field(first, R"("flags":)", message.flags());
      return true;
    });
  }

  bool status(const trace::Status& message) {
    return object([&](bool& first) {
      if (!string_field(first, R"("message":)", message.message())) return false;
      int32_field(first, R"("code":)", message.code());
      return true;
    });
  }

  // A repeated KeyValue field whose elements sit at message depth `depth`.
  bool attributes(bool& first, std::string_view quoted_name_colon_bracket,
                  const pb::RepeatedPtrField<common::KeyValue>& values, int depth) {
    return array_field(first, quoted_name_colon_bracket, values,
                       [&](const common::KeyValue& item) { return key_value(item, depth); });
  }

  bool key_value(const common::KeyValue& message, int depth) {
    return object([&](bool& first) {
      return string_field(first, R"("key":)", message.key()) &&
             message_field(
                 first, R"("value":)", message.has_value(), message.value(),
                 [&](const common::AnyValue& item) { return any_value(item, depth + 1); });
    });
  }

  bool any_value(const common::AnyValue& message, int depth) {
    if (depth > kMaxDepth) return false;
    switch (message.value_case()) {
      case common::AnyValue::kStringValue:
        out_ += R"({"stringValue":)";
        if (!string(message.string_value())) return false;
        break;
      case common::AnyValue::kBoolValue:
        out_ += message.bool_value() ? R"({"boolValue":true)" : R"({"boolValue":false)";
        break;
      case common::AnyValue::kIntValue:
        out_ += R"({"intValue":")";
        integer(message.int_value());
        out_ += '"';
        break;
      case common::AnyValue::kDoubleValue:
        out_ += R"({"doubleValue":)";
        floating(message.double_value());
        break;
      case common::AnyValue::kArrayValue:
        out_ += R"({"arrayValue":)";
        if (!values(message.array_value().values(),
                    [&](const common::AnyValue& item) { return any_value(item, depth + 2); })) {
          return false;
        }
        break;
      case common::AnyValue::kKvlistValue:
        out_ += R"({"kvlistValue":)";
        if (!values(message.kvlist_value().values(),
                    [&](const common::KeyValue& item) { return key_value(item, depth + 2); })) {
          return false;
        }
        break;
      case common::AnyValue::kBytesValue:
        out_ += R"({"bytesValue":)";
        base64(message.bytes_value());
        break;
      case common::AnyValue::VALUE_NOT_SET:
        out_ += '{';
        break;
    }
    out_ += '}';
    return true;
  }

  // An ArrayValue or KeyValueList: `{"values":[...]}`.
  template <class Items, class Write>
  bool values(const Items& items, Write&& write) {
    return object([&](bool& first) { return array_field(first, R"("values":[)", items, write); });
  }

  bool string_field(bool& first, std::string_view quoted_name_colon, const std::string& value) {
    if (value.empty()) return true;
    key(first, quoted_name_colon);
    return string(value);
  }

  void hex_field(bool& first, std::string_view quoted_name_colon, const std::string& value) {
    if (value.empty()) return;
    key(first, quoted_name_colon);
    hex(value);
  }

  // Enums are numbers.
  void int32_field(bool& first, std::string_view quoted_name_colon, int value) {
    if (value == 0) return;
    key(first, quoted_name_colon);
    integer(static_cast<std::int32_t>(value));
  }

  void uint32_field(bool& first, std::string_view quoted_name_colon, std::uint32_t value) {
    if (value == 0) return;
    key(first, quoted_name_colon);
    integer(value);
  }

  // 64-bit integers are JSON strings.
  void uint64_field(bool& first, std::string_view quoted_name_colon, std::uint64_t value) {
    if (value == 0) return;
    key(first, quoted_name_colon);
    out_ += '"';
    integer(value);
    out_ += '"';
  }

  template <class Integer>
  void integer(Integer value) {
    std::array<char, 24> buffer;
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    out_.append(buffer.data(), result.ptr);
  }

  // The string as nlohmann's dump escapes it: '"', '\\' and control characters only, the
  // latter as \b \t \n \f \r or \u00xx; everything else (UTF-8 included) as is. False if it is
  // not valid UTF-8.
  bool string(std::string_view value) {
    out_ += '"';
    const auto* p = reinterpret_cast<const unsigned char*>(value.data());
    const auto* const end = p + value.size();
    const auto* run = p;  // the start of the bytes to copy as they are
    while (p < end) {
      const std::uint8_t kind = kByteClass[*p];
      if (kind == 0) {
        ++p;
      } else if (kind == 2) {
        const std::size_t length = utf8_sequence_length(p, end);
        if (length == 0) return false;
        p += length;
      } else {
        out_.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(p - run));
        escape(*p);
        run = ++p;
      }
    }
    out_.append(reinterpret_cast<const char*>(run), static_cast<std::size_t>(end - run));
    out_ += '"';
    return true;
  }

  void escape(unsigned char c) {
    static constexpr std::string_view kEscaped = "\"\\\b\t\n\f\r";
    static constexpr std::string_view kLetters = "\"\\btnfr";
    if (const std::size_t i = kEscaped.find(static_cast<char>(c)); i != std::string_view::npos) {
      const char text[] = {'\\', kLetters[i]};
      out_.append(text, sizeof(text));
      return;
    }
    const char text[] = {'\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0x0f]};
    out_.append(text, sizeof(text));
  }

  void hex(std::string_view bytes) {
    out_ += '"';
    append_hex(bytes, out_);
    out_ += '"';
  }

  void base64(std::string_view bytes) {
    out_ += '"';
    append_base64(bytes, out_);
    out_ += '"';
  }

  // A double as the generic path writes it. protobuf prints it as "NaN", "Infinity" or
  // "-Infinity" (strings), or as printf's %.15g, %.17g where that does not read back exactly;
  // nlohmann then reads that text back — as an integer where it has no '.' or exponent, so
  // "-0" becomes 0 — and writes the integer, or the double in its own shortest form.
  void floating(double value) {
    if (std::isnan(value)) {
      out_ += R"("NaN")";
      return;
    }
    if (std::isinf(value)) {
      out_ += value > 0 ? R"("Infinity")" : R"("-Infinity")";
      return;
    }
    std::array<char, 64> buffer;
    char* const begin = buffer.data();
    char* const last = begin + buffer.size();
    const double magnitude = std::fabs(value);
    if (value == 0 && std::signbit(value)) {
      out_ += "-0.0";  // as nlohmann writes it (an integer 0 would lose the sign)
      return;
    }
    if (value == std::trunc(value) && magnitude < 1e17) {
      if (magnitude < 1e15) {
        // At most 15 digits: %.15g writes the integer exactly.
        integer(static_cast<std::int64_t>(value));
        return;
      }
      // %.15g is in exponent form from 1e15 on; %.17g, where needed, writes the integer.
      auto printed = std::to_chars(begin, last, value, std::chars_format::general, 15);
      double read_back = 0;
      std::from_chars(begin, printed.ptr, read_back);
      if (read_back != value) {
        printed = std::to_chars(begin, last, value, std::chars_format::general, 17);
      }
      if (std::string_view(begin, static_cast<std::size_t>(printed.ptr - begin))
              .find_first_of(".e") == std::string_view::npos) {
        out_.append(begin, printed.ptr);
        return;
      }
    }
    // Not an integer, or in exponent form: nlohmann's shortest round-trip form.
    char* const end = nlohmann::detail::to_chars(begin, last, value);
    out_.append(begin, end);
  }

  std::string& out_;
};

}  // namespace

void append_hex(std::string_view bytes, std::string& out) {
  const std::size_t start = out.size();
  out.resize(start + 2 * bytes.size());
  char* p = out.data() + start;
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    *p++ = kHexDigits[byte >> 4];
    *p++ = kHexDigits[byte & 0x0f];
  }
}

void append_base64(std::string_view bytes, std::string& out) {
  const std::size_t start = out.size();
  out.resize(start + (bytes.size() + 2) / 3 * 4);
  char* p = out.data() + start;
  auto at = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]));
  };
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t n = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    for (int shift = 18; shift >= 0; shift -= 6) *p++ = kBase64Alphabet[(n >> shift) & 0x3f];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = at(i) << 16;
    if (rest == 2) n |= at(i + 1) << 8;
    *p++ = kBase64Alphabet[(n >> 18) & 0x3f];
    *p++ = kBase64Alphabet[(n >> 12) & 0x3f];
    *p++ = rest == 2 ? kBase64Alphabet[(n >> 6) & 0x3f] : '=';
    *p++ = '=';
  }
}

bool encode_trace_request_fast(const ExportTraceServiceRequest& request, std::string& out) {
  if (!schema_is_known()) return false;
  const std::size_t mark = out.size();
  std::size_t spans = 0;
  for (const trace::ResourceSpans& resource_spans : request.resource_spans()) {
    for (const trace::ScopeSpans& scope_spans : resource_spans.scope_spans()) {
      spans += static_cast<std::size_t>(scope_spans.spans_size());
    }
  }
  // A span with a few attributes takes 300-500 bytes.
  out.reserve(mark + 256 + 384 * spans);
  if (!Writer(out).request(request)) {
    out.resize(mark);
    return false;
  }
  return true;
}

}  // namespace lens::otlp_json
