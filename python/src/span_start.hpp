// The tracer's span entry points of nemo.lens._lens: start_span (a detached Span),
// start_current_span (a SpanScope whose span is current while it is open) and attach (a
// ContextToken), each with a parent (the current context, a new trace, or a given span context),
// links, attributes and a start time. Not API: registered by module.cpp.
#pragma once

#include <Python.h>

namespace lens::python {

// Adds the SpanScope and ContextToken types and the functions start_span, start_current_span and
// attach to `module`. False with a Python error set on failure.
bool add_span_start_functions(PyObject* module);

}  // namespace lens::python
