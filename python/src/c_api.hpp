// What the C-level types of nemo.lens._lens (span_site.cpp, span_object.cpp, span_start.cpp) share
// over CPython's C API: Python objects read as lens values (text, span contexts, times, statuses,
// attributes, exceptions), argument parsing and static type registration. Not API; every function
// runs with the GIL held, and none leaves a Python error set unless it says so.
#pragma once

#include <Python.h>
#include <opentelemetry/trace/span_context.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/span.hpp"

// A METH_FASTCALL function as the PyCFunction of a PyMethodDef.
#define LENS_FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

namespace lens::python {

// ---- Python objects as lens values --------------------------------------------------------------

// The wall clock in Unix nanoseconds.
std::int64_t now_unix_nanos();

// The UTF-8 text of a str ("" when it has none).
std::string_view utf8_of(PyObject* text);

// An attribute of `object`, or null without an error.
PyObject* attribute_or_null(PyObject* object, const char* name);

// A span context from a Python SpanContext-like object (trace_id and span_id as ints, trace_flags,
// is_remote), as OpenTelemetry Python's. Invalid when it is not one.
opentelemetry::trace::SpanContext span_context_of(PyObject* object);

// Unix nanoseconds from an int timestamp (OpenTelemetry's start_time/end_time/timestamp); 0 for
// None or anything else.
std::int64_t nanos_of(PyObject* value);

// The status code of a Status (its .status_code) or a StatusCode (its .value, or an int) as
// lens's, with the description of a Status when `description` is None. `*description` becomes a
// new reference (or null) the caller releases.
SpanStatusCode status_of(PyObject* status, PyObject** description);

// The attribute value of a Python object, or nullopt for a type attributes do not take.
std::optional<AttributeValue> attribute_value_of(PyObject* value);

// Attribute values taken from Python objects: bool, int (64 bits), float, str and homogeneous
// lists/tuples of them; anything else is left out (as NeMo Lens's safe_set_span_attributes).
// Owns what it converted for the AttributeSpan it hands out.
class AttributeBuffer {
 public:
  // Converts the items of a dict or Mapping (non-str keys and None values are left out). False
  // with a Python error set when `mapping` is neither.
  bool add_mapping(PyObject* mapping);
  void add(std::string_view key, const AttributeValue& value);
  AttributeSpan span() const noexcept { return {pairs_.data(), pairs_.size()}; }

 private:
  std::deque<std::string> keys_;  // deques: the views in pairs_ stay valid as they grow
  std::deque<AttributeValue> values_;
  std::vector<std::pair<std::string_view, AttributeArg>> pairs_;
};

// ---- Exceptions ---------------------------------------------------------------------------------

// "<qualname>" of an exception's type, without its module.
std::string exception_type_name(PyObject* exception);
// The formatted traceback of an exception instance ("" when it cannot be formatted).
std::string stacktrace_of(PyObject* exception);
// str(exception) ("" when it fails).
std::string message_of(PyObject* exception);

// ---- Calls and types ----------------------------------------------------------------------------

// Positional and keyword arguments of a METH_FASTCALL | METH_KEYWORDS call into `out` (borrowed;
// null when not given). False with TypeError set for an unknown keyword or too many arguments.
bool parse_arguments(const char* function, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames, const char* const* names, Py_ssize_t count, PyObject** out);

// Readies a static type made at run time (PyType_Ready fills ob_type; the module keeps a
// reference) and adds it to `module` under its short name. `type` may have more slots set before
// the call (tp_call, tp_getset, ...). False with a Python error set on failure.
bool add_static_type(PyObject* module, PyTypeObject& type, const char* name, Py_ssize_t size,
                     unsigned long flags, const char* doc, destructor dealloc,
                     PyMethodDef* methods);

}  // namespace lens::python
