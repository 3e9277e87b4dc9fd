// W3C trace-context propagation from Python (see bindings.hpp): the current span context as
// headers, and the span context of received headers. Entry points run with the GIL held.
#include <opentelemetry/trace/context.h>

#include "bindings.hpp"
#include "lens/propagation.hpp"

namespace py = pybind11;

namespace lens::python {

void add_propagation_bindings(py::module_& m) {
  m.def(
      "extract",
      [](const Carrier& carrier) -> py::object {
        opentelemetry::context::Context context =
            extract_context(carrier, opentelemetry::context::Context{});
        auto span = opentelemetry::trace::GetSpan(context);
        opentelemetry::trace::SpanContext remote = span->GetContext();
        if (!remote.IsValid()) return py::none();
        py::dict result;
        result["trace_id"] = hex_id(remote.trace_id());
        result["span_id"] = hex_id(remote.span_id());
        result["sampled"] = remote.IsSampled();
        result["remote"] = remote.IsRemote();
        return result;
      },
      py::arg("carrier"),
      "The span context of a W3C carrier (trace_id, span_id, sampled, remote), or None.");
  m.def(
      "inject",
      []() {
        Carrier carrier;
        inject_context(carrier);
        return carrier;
      },
      "The current span context as W3C headers (traceparent, tracestate, baggage).");
}

}  // namespace lens::python
