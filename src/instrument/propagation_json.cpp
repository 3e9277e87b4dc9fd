// serialize_context / deserialize_context (lens/propagation.hpp): the injected carrier as a flat
// JSON object of strings, the byte form broadcast over NCCL/MPI (docs/tracing.md, "Propagating a
// context between processes").
// Thread-safe: no shared state; nothing throws out of these functions.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "core/utf8.hpp"
#include "lens/propagation.hpp"

namespace lens {
namespace {

using Json = nlohmann::json;

// SAX handler accepting exactly one flat object of string values: any other event stops the
// parse at once, so nesting depth never exceeds one and no DOM is built.
class FlatStringObject final : public nlohmann::json_sax<Json> {
 public:
  Carrier carrier;

  bool null() override { return false; }
  bool boolean(bool) override { return false; }
  bool number_integer(number_integer_t) override { return false; }
  bool number_unsigned(number_unsigned_t) override { return false; }
  bool number_float(number_float_t, const string_t&) override { return false; }
  bool binary(binary_t&) override { return false; }
  bool start_array(std::size_t) override { return false; }
  bool end_array() override { return false; }

  bool start_object(std::size_t) override {
    if (opened_) {
      return false;
    }
    opened_ = true;
    return true;
  }
  bool key(string_t& name) override {
    key_ = std::move(name);
    return true;
  }
  bool string(string_t& value) override {
    if (!opened_) {
      return false;  // a top-level string is not an object
    }
    carrier.insert_or_assign(std::move(key_), std::move(value));
    key_.clear();
    return true;
  }
  bool end_object() override {
    closed_ = true;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  bool complete() const noexcept { return opened_ && closed_; }

 private:
  std::string key_;
  bool opened_ = false;
  bool closed_ = false;
};

}  // namespace

std::string serialize_context(const opentelemetry::context::Context& context) noexcept {
  try {
    Carrier carrier;
    inject_context(carrier, context);
    Json object = Json::object();
    for (auto& [key, value] : carrier) {
      object[key] = std::move(value);
    }
    // Injected headers are ASCII; `replace` keeps dump() from throwing regardless.
    return object.dump(-1, ' ', false, Json::error_handler_t::replace);
  } catch (...) {
    return "{}";  // only std::bad_alloc can get here
  }
}

std::optional<Carrier> deserialize_context(std::string_view bytes) noexcept {
  try {
    if (!core::is_valid_utf8(bytes)) {
      return std::nullopt;
    }
    FlatStringObject handler;
    const bool parsed = Json::sax_parse(bytes.begin(), bytes.end(), &handler,
                                        nlohmann::json::input_format_t::json, /*strict=*/true);
    if (!parsed || !handler.complete()) {
      return std::nullopt;
    }
    return std::move(handler.carrier);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace lens
