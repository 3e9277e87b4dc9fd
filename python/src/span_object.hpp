// nemo.lens._lens.Span: one Python type for every span the package hands out, with the
// OpenTelemetry Python API's span methods (set_attribute(s), add_event, add_link, set_status,
// record_exception, is_recording, get_span_context, update_name, end). A span is either on the
// calling thread's span stack (managed_span, span_cm, trace_fn, tracer.start_as_current_span:
// a lens::SpanRef, no C++ allocation) or detached (tracer.start_span, create_linked_span: a
// lens::Span, ended by end() from any thread). Not API: registered by module.cpp; every function
// runs with the GIL held.
#pragma once

#include <Python.h>

#include "lens/span.hpp"
#include "lens/span_ref.hpp"

namespace lens::python {

// A Span's object. span_start.cpp makes them (new_span_object) and ends the stack ones its
// scopes began.
struct SpanObject {
  PyObject_HEAD bool stack;  // on the owner thread's span stack (else detached)
  bool closed;               // ended: nothing more is recorded
  bool end_requested;        // a stack span whose end() ran inside its scope (ends at the exit)
  bool exception_events;     // record_exception in a scope adds the `exception` event
  bool status_with_type;     // a scope's exception sets ERROR "<Type>: <message>"
  unsigned long owner;       // PyThread_get_thread_ident() of the thread that began a stack span
  SpanRef ref;               // stack spans
  Span* detached;            // detached spans (owned)
};

inline SpanObject* as_span(PyObject* self) { return reinterpret_cast<SpanObject*>(self); }

// A new Span owned by the calling thread, not closed, with no span yet (ref and detached null),
// or null with a Python error set.
SpanObject* new_span_object(bool stack);

// A stack span as a Python Span (a new reference). `exception_events` false: record_exception
// sets the status only. `status_with_type`: an exception escaping the scope sets ERROR with
// "<Type>: <message>" (OpenTelemetry's start_as_current_span) instead of the message alone.
PyObject* new_stack_span(const SpanRef& ref, bool exception_events, bool status_with_type);
// Marks a stack span as ended by its scope (later calls do nothing); the scope ends the frame.
void close_stack_span(PyObject* span);
// Records the exception instance `exception` on a stack span's frame as a scope's exit does.
void record_scope_exception(PyObject* span, PyObject* exception, bool set_status, bool add_event);

// Adds the Span type and the function _set_span_context_factory to `module`. False with a Python
// error set on failure.
bool add_span_object_type(PyObject* module);

}  // namespace lens::python
