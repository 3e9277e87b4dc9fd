// The trainer's bindings (see training_bindings.hpp). Entry points run with the GIL held; the
// collective takes it again when the core calls it from inside setup.
#include "training_bindings.hpp"

#include <opentelemetry/trace/context.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "bindings.hpp"
#include "lens/distributed.hpp"
#include "lens/groups.hpp"
#include "lens/propagation.hpp"
#include "lens/span.hpp"

namespace py = pybind11;

namespace lens::python {

Result<std::string> PythonCollective::broadcast(const std::string& payload, int root) {
  py::gil_scoped_acquire gil;
  try {
    py::object received = broadcast_(py::bytes(payload), root);
    return received.cast<std::string>();
  } catch (py::error_already_set& error) {
    return Error(std::string(py::str(error.type().attr("__name__"))) + ": " +
                 std::string(py::str(error.value())));
  } catch (const py::cast_error&) {
    return Error("the broadcast callable must return bytes");
  }
}

namespace {

std::string to_hex(const std::array<std::uint8_t, 16>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (std::uint8_t byte : bytes) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 0x0F]);
  }
  return out;
}

// 32 hex digits as 16 bytes; all zero (lens then draws a random trace id) when malformed.
std::array<std::uint8_t, 16> from_hex(std::string_view hex) {
  std::array<std::uint8_t, 16> out{};
  if (hex.size() != 32) return out;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < 16; ++i) {
    const int high = digit(hex[2 * i]);
    const int low = digit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return {};
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return out;
}

// A span that starts a trace of its own (NewTrace): with the given trace id and a link to the
// span of a W3C carrier; current while entered, so the spans entered inside are its children.
// Gated by its group like managed_span. One `with` at a time per object.
struct TraceRootSpan {
  SpanGroupHandle group;
  std::string name;
  NewTrace root;
  py::dict attributes;
  Span span;
  std::unique_ptr<SpanScope> scope;

  void set(std::string_view key, const AttributeValue& value) {
    span.set_attribute(key, AttributeArg(value));
  }
};

py::object enter_site(py::object self) {
  auto& site = self.cast<TraceRootSpan&>();
  if (site.scope || !site.group.enabled()) return py::none();
  site.span = start_span(site.name, {}, site.root);
  for (const auto& [key, value] : to_attributes(site.attributes)) site.set(key, value);
  site.scope = std::make_unique<SpanScope>(site.span);
  return self;
}

// Records an Exception (not other BaseExceptions) as managed_span does: the `exception` event
// and status ERROR with its message. Never suppresses it.
bool exit_site(TraceRootSpan& site, const py::object& type, const py::object& value,
               const py::object&) {
  if (!site.scope) return false;
  if (!value.is_none() &&
      PyObject_TypeCheck(value.ptr(), reinterpret_cast<PyTypeObject*>(PyExc_Exception))) {
    const std::string type_name = py::str(type.attr("__name__"));
    const std::string message = py::str(value);
    site.span.add_event("exception",
                        {{"exception.type", type_name}, {"exception.message", message}});
    site.span.set_error(message);
  }
  site.scope.reset();
  site.span.end();
  return false;
}

}  // namespace

void add_training_bindings(py::module_& m) {
  py::class_<TraceSeed>(m, "TraceSeed",
                        "The seed every rank derives the same trace id from for the same item (a "
                        "training iteration); see share_trace_seed.")
      .def(py::init([](const py::bytes& seed) {
             const std::string bytes = seed;
             if (bytes.size() != 16) {
               throw py::value_error("TraceSeed: " + std::to_string(bytes.size()) +
                                     " bytes given; accepted: exactly 16 bytes");
             }
             std::array<std::uint8_t, 16> array{};
             for (std::size_t i = 0; i < 16; ++i) array[i] = static_cast<std::uint8_t>(bytes[i]);
             return TraceSeed(array);
           }),
           py::arg("seed"))
      .def_property_readonly("bytes",
                             [](const TraceSeed& seed) {
                               return py::bytes(reinterpret_cast<const char*>(seed.bytes().data()),
                                                seed.bytes().size());
                             })
      .def(
          "trace_id_for",
          [](const TraceSeed& seed, std::uint64_t n) { return to_hex(seed.trace_id_for(n)); },
          py::arg("n"), "The trace id (32 hex digits) of item n: the same on every rank.");
  m.def(
      "share_trace_seed",
      [](py::object broadcast, int rank, int world_size, int src_rank) {
        if (broadcast.is_none()) return share_trace_seed(nullptr, src_rank);
        PythonCollective collective(std::move(broadcast), rank, world_size);
        return share_trace_seed(&collective, src_rank);
      },
      py::arg("broadcast") = py::none(), py::arg("rank") = 0, py::arg("world_size") = 1,
      py::arg("src_rank") = 0,
      "A collective: src_rank draws 16 random bytes and broadcast(payload, root) shares them; "
      "without broadcast (or when it fails) each rank has its own random seed.");

  py::class_<TraceRootSpan>(m, "TraceRootSpan",
                            "A span that starts a trace of its own (see trace_root_span).")
      .def("__enter__", &enter_site)
      .def("__exit__", &exit_site)
      .def(
          "set_attribute",
          [](TraceRootSpan& site, const std::string& key, py::object value) {
            if (!site.scope) return;
            py::dict one;
            one[py::str(key)] = std::move(value);
            for (const auto& [k, v] : to_attributes(one)) site.set(k, v);
          },
          py::arg("key"), py::arg("value"))
      .def_property_readonly(
          "trace_id",
          [](const TraceRootSpan& site) { return hex_id(site.span.context().trace_id()); })
      .def_property_readonly("span_id", [](const TraceRootSpan& site) {
        return hex_id(site.span.context().span_id());
      });
  m.def(
      "trace_root_span",
      [](const std::string& group, const std::string& name, const std::string& trace_id,
         std::optional<Carrier> link, py::kwargs attributes) {
        auto site = std::make_unique<TraceRootSpan>();
        site->group = span_group_handle(group);
        site->name = name;
        site->root.trace_id = from_hex(trace_id);
        if (link) {
          const auto context = extract_context(*link, opentelemetry::context::Context{});
          site->root.link = opentelemetry::trace::GetSpan(context)->GetContext();
        }
        site->attributes = py::dict(attributes);
        return site;
      },
      py::arg("group"), py::arg("name"), py::arg("trace_id") = "", py::arg("link") = py::none(),
      "trace_root_span(group, name, trace_id='', link=None, **attributes): a context manager "
      "gated by `group` whose span is the root of a new trace, with trace id `trace_id` (32 hex "
      "digits, e.g. TraceSeed.trace_id_for(iteration); random when empty) and a link to the "
      "span of the W3C carrier `link` (inject()'s dict). Yields itself when it records, else "
      "None.");
}

}  // namespace lens::python
