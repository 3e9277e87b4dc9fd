// nemo.lens._lens.Span: one Python type for every span the package hands out, with the
// OpenTelemetry Python API's span methods (set_attribute(s), add_event, add_link, set_status,
// record_exception, is_recording, get_span_context, update_name, end). A span is either on the
// calling thread's span stack (managed_span, span_cm, trace_fn, tracer.start_as_current_span:
// a lens::SpanRef, no C++ allocation) or detached (tracer.start_span, create_linked_span: a
// lens::Span, ended by end() from any thread). Not API: registered by module.cpp.
#pragma once

#include <Python.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lens/attributes.hpp"
#include "lens/span.hpp"
#include "lens/span_ref.hpp"

namespace lens::python {

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

// The attribute value of a Python object, or nullopt for a type attributes do not take.
std::optional<AttributeValue> attribute_value_of(PyObject* value);

// A stack span as a Python Span (a new reference). `exception_events` false: record_exception
// sets the status only. `status_with_type`: an exception escaping the scope sets ERROR with
// "<Type>: <message>" (OpenTelemetry's start_as_current_span) instead of the message alone.
PyObject* new_stack_span(const SpanRef& ref, bool exception_events, bool status_with_type);
// Marks a stack span as ended by its scope (later calls do nothing); the scope ends the frame.
void close_stack_span(PyObject* span);
// Records the exception instance `exception` on a stack span's frame as a scope's exit does.
void record_scope_exception(PyObject* span, PyObject* exception, bool set_status, bool add_event);

// Readies a static type made at run time (PyType_Ready fills ob_type; the module keeps a
// reference) and adds it to `module` under its short name. `type` may have more slots set before
// the call (tp_call, tp_getset, ...). False with a Python error set on failure.
bool add_static_type(PyObject* module, PyTypeObject& type, const char* name, Py_ssize_t size,
                     unsigned long flags, const char* doc, destructor dealloc,
                     PyMethodDef* methods);

// Adds the Span type and the functions start_span, start_current_span (a scope) and
// _set_span_context_factory to `module`. False with a Python error set on failure.
bool add_span_object_type(PyObject* module);

}  // namespace lens::python
