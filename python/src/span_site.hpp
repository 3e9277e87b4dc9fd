// The Python span primitives as C-level types (no pybind11 on the hot path): a span site holds its
// group's handle and its interned name, so entering it costs one flag load when the group is off
// and one call into the native span path when it is on — no string conversion, no group lookup,
// no allocation. Not API: registered into lens._lens by module.cpp.
#pragma once

#include <Python.h>

namespace lens::python {

// Adds SpanSite, TracedFunction and the functions managed_span, span_cm, trace_fn and span_site
// to `module`. Returns false with a Python exception set on failure.
bool add_span_types(PyObject* module);

}  // namespace lens::python
