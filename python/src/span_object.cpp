// nemo.lens._lens.Span (see span_object.hpp): its attributes, events, links, status and exception
// events, its span context, its end and its `with` protocol. Every entry point runs with the GIL
// held, which also serialises the calls on one span.
#include "span_object.hpp"

#include <pythread.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "c_api.hpp"

namespace lens::python {
namespace {

namespace otel = opentelemetry;

PyObject* g_context_factory = nullptr;  // SpanContext(trace_id, span_id, is_remote, trace_flags)
PyObject* g_invalid_context = nullptr;  // the invalid SpanContext

PyTypeObject g_span_type{};

// Whether calls on the span still record something.
bool live(const SpanObject* span) {
  if (span->closed) return false;
  if (!span->stack) return span->detached != nullptr && static_cast<bool>(*span->detached);
  return !span->end_requested && span->ref.frame != nullptr &&
         span->owner == PyThread_get_thread_ident();
}

template <class Stack, class Detached>
void apply(SpanObject* span, Stack&& on_stack, Detached&& on_detached) {
  if (!live(span)) return;
  if (span->stack) {
    on_stack(span->ref);
  } else {
    on_detached(*span->detached);
  }
}

void set_one(SpanObject* span, PyObject* key, PyObject* value) {
  if (!PyUnicode_Check(key) || value == Py_None) return;
  std::optional<AttributeValue> converted = attribute_value_of(value);
  if (!converted) return;
  const std::string_view name = utf8_of(key);
  const AttributeArg arg(*converted);
  apply(
      span, [&](const SpanRef& ref) { span_ref::set_attribute(ref, name, arg); },
      [&](Span& detached) { detached.set_attribute(name, arg); });
}

PyObject* span_set_attribute(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "set_attribute(key, value) takes 2 arguments");
    return nullptr;
  }
  set_one(as_span(self), args[0], args[1]);
  Py_RETURN_NONE;
}

PyObject* span_set_attributes(PyObject* self, PyObject* attributes) {
  if (!live(as_span(self)) || attributes == Py_None) Py_RETURN_NONE;
  PyObject* items = PyMapping_Items(attributes);
  if (items == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); ++i) {
    PyObject* item = PyList_GET_ITEM(items, i);
    set_one(as_span(self), PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1));
  }
  Py_DECREF(items);
  Py_RETURN_NONE;
}

void add_event_to(SpanObject* span, std::string_view name, const AttributeBuffer& attributes,
                  std::int64_t nanos) {
  apply(
      span, [&](const SpanRef& ref) { span_ref::add_event(ref, name, attributes.span(), nanos); },
      [&](Span& detached) { detached.add_event(name, attributes.span(), nanos); });
}

PyObject* span_add_event(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames) {
  static const char* const kNames[] = {"name", "attributes", "timestamp"};
  PyObject* a[3];
  if (!parse_arguments("add_event", args, nargs, kwnames, kNames, 3, a)) return nullptr;
  if (a[0] == nullptr || !PyUnicode_Check(a[0])) {
    PyErr_SetString(PyExc_TypeError,
                    "add_event(name, attributes=None, timestamp=None): name "
                    "must be a str");
    return nullptr;
  }
  if (!live(as_span(self))) Py_RETURN_NONE;
  AttributeBuffer attributes;
  if (a[1] != nullptr && a[1] != Py_None && !attributes.add_mapping(a[1])) return nullptr;
  add_event_to(as_span(self), utf8_of(a[0]), attributes, nanos_of(a[2]));
  Py_RETURN_NONE;
}

PyObject* span_add_link(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  static const char* const kNames[] = {"context", "attributes"};
  PyObject* a[2];
  if (!parse_arguments("add_link", args, nargs, kwnames, kNames, 2, a)) return nullptr;
  const otel::trace::SpanContext link = span_context_of(a[0]);
  apply(
      as_span(self), [&](const SpanRef& ref) { span_ref::add_link(ref, link); },
      [&](Span& detached) { detached.add_link(link); });
  Py_RETURN_NONE;
}

PyObject* span_set_status(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                          PyObject* kwnames) {
  static const char* const kNames[] = {"status", "description"};
  PyObject* a[2];
  if (!parse_arguments("set_status", args, nargs, kwnames, kNames, 2, a)) return nullptr;
  if (a[0] == nullptr) {
    PyErr_SetString(PyExc_TypeError, "set_status(status, description=None) needs a status");
    return nullptr;
  }
  PyObject* description = a[1];
  const SpanStatusCode code = status_of(a[0], &description);  // description: a new reference
  std::string text;
  if (description != nullptr && description != Py_None) {
    PyObject* str = PyObject_Str(description);
    if (str != nullptr) text.assign(utf8_of(str));
    Py_XDECREF(str);
    PyErr_Clear();
  }
  Py_XDECREF(description);
  apply(
      as_span(self), [&](const SpanRef& ref) { span_ref::set_status(ref, code, text); },
      [&](Span& detached) { detached.set_status(code, text); });
  Py_RETURN_NONE;
}

// OpenTelemetry's exception event: type, message, stacktrace, escaped, plus `extra`.
void add_exception_event(SpanObject* span, PyObject* exception, bool escaped, PyObject* extra,
                         std::int64_t nanos) {
  AttributeBuffer attributes;
  attributes.add("exception.type", AttributeValue(exception_type_name(exception)));
  attributes.add("exception.message", AttributeValue(message_of(exception)));
  attributes.add("exception.stacktrace", AttributeValue(stacktrace_of(exception)));
  attributes.add("exception.escaped", AttributeValue(std::string(escaped ? "True" : "False")));
  if (extra != nullptr && extra != Py_None && !attributes.add_mapping(extra)) PyErr_Clear();
  add_event_to(span, "exception", attributes, nanos);
}

PyObject* span_record_exception(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                                PyObject* kwnames) {
  static const char* const kNames[] = {"exception", "attributes", "timestamp", "escaped"};
  PyObject* a[4];
  if (!parse_arguments("record_exception", args, nargs, kwnames, kNames, 4, a)) return nullptr;
  if (a[0] == nullptr || !PyExceptionInstance_Check(a[0])) {
    PyErr_SetString(PyExc_TypeError, "record_exception(exception, ...) needs an exception");
    return nullptr;
  }
  if (!live(as_span(self))) Py_RETURN_NONE;
  add_exception_event(as_span(self), a[0], a[3] != nullptr && PyObject_IsTrue(a[3]) == 1, a[1],
                      nanos_of(a[2]));
  Py_RETURN_NONE;
}

PyObject* span_is_recording(PyObject* self, PyObject*) {
  SpanObject* span = as_span(self);
  if (!live(span)) Py_RETURN_FALSE;
  const bool recording =
      span->stack ? span_ref::is_recording(span->ref) : span->detached->context().IsValid();
  return PyBool_FromLong(recording);
}

otel::trace::SpanContext context_of(const SpanObject* span) {
  if (span->stack) return span_ref::context(span->ref);
  return span->detached != nullptr ? span->detached->context()
                                   : otel::trace::SpanContext::GetInvalid();
}

PyObject* python_context(const otel::trace::SpanContext& context) {
  if (!context.IsValid() || g_context_factory == nullptr) {
    if (g_invalid_context == nullptr) Py_RETURN_NONE;
    Py_INCREF(g_invalid_context);
    return g_invalid_context;
  }
  PyObject* trace_id = _PyLong_FromByteArray(context.trace_id().Id().data(), 16, 0, 0);
  PyObject* span_id = _PyLong_FromByteArray(context.span_id().Id().data(), 8, 0, 0);
  PyObject* result = nullptr;
  if (trace_id != nullptr && span_id != nullptr) {
    result = PyObject_CallFunction(g_context_factory, "OOOi", trace_id, span_id,
                                   context.IsRemote() ? Py_True : Py_False,
                                   static_cast<int>(context.trace_flags().flags()));
  }
  Py_XDECREF(trace_id);
  Py_XDECREF(span_id);
  return result;
}

PyObject* span_get_span_context(PyObject* self, PyObject*) {
  // A closed span keeps its identity (a link to it after it ended is common).
  return python_context(context_of(as_span(self)));
}

PyObject* span_update_name(PyObject* self, PyObject* name) {
  if (!PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "update_name(name): name must be a str");
    return nullptr;
  }
  const std::string_view text = utf8_of(name);
  apply(
      as_span(self), [&](const SpanRef& ref) { span_ref::update_name(ref, text); },
      [&](Span& detached) { detached.update_name(text); });
  Py_RETURN_NONE;
}

void end_span_object(SpanObject* span, std::int64_t nanos) {
  if (span->closed) return;
  if (span->stack) {
    // The frame is on the thread's stack: it ends when its scope exits, at this time.
    if (live(span)) span_ref::set_end_time(span->ref, nanos != 0 ? nanos : now_unix_nanos());
    span->end_requested = true;
    return;
  }
  span->closed = true;
  if (span->detached != nullptr) span->detached->end(nanos);
}

PyObject* span_end(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  static const char* const kNames[] = {"end_time"};
  PyObject* a[1];
  if (!parse_arguments("end", args, nargs, kwnames, kNames, 1, a)) return nullptr;
  end_span_object(as_span(self), nanos_of(a[0]));
  Py_RETURN_NONE;
}

PyObject* span_enter(PyObject* self, PyObject*) {
  Py_INCREF(self);
  return self;
}

// `with span:` (OpenTelemetry's Span as a context manager): an Exception is recorded, then the
// span ends. Never suppresses the exception.
PyObject* span_exit(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  SpanObject* span = as_span(self);
  if (nargs >= 2 && args[1] != Py_None) record_scope_exception(self, args[1], true, true);
  end_span_object(span, 0);
  Py_RETURN_FALSE;
}

PyObject* span_repr(PyObject* self) {
  const otel::trace::SpanContext context = context_of(as_span(self));
  char trace[32];
  char span[16];
  context.trace_id().ToLowerBase16(trace);
  context.span_id().ToLowerBase16(span);
  return PyUnicode_FromFormat("<nemo.lens Span trace_id=0x%.32s span_id=0x%.16s%s>", trace, span,
                              live(as_span(self)) ? "" : " ended");
}

void span_dealloc(PyObject* self) {
  SpanObject* span = as_span(self);
  if (!span->stack && span->detached != nullptr) {
    // A detached span nobody ended ends when its last reference goes (as lens::Span).
    delete span->detached;
    span->detached = nullptr;
  }
  PyObject_Free(self);
}

PyMethodDef g_span_methods[] = {
    {"set_attribute", LENS_FASTCALL(span_set_attribute), METH_FASTCALL,
     "set_attribute(key, value): bool, int, float, str or a list of one of them."},
    {"set_attributes", span_set_attributes, METH_O, "set_attributes(mapping)."},
    {"add_event", LENS_FASTCALL(span_add_event), METH_FASTCALL | METH_KEYWORDS,
     "add_event(name, attributes=None, timestamp=None): timestamp in Unix nanoseconds."},
    {"add_link", LENS_FASTCALL(span_add_link), METH_FASTCALL | METH_KEYWORDS,
     "add_link(context, attributes=None): a link to a SpanContext (its attributes are not kept)."},
    {"set_status", LENS_FASTCALL(span_set_status), METH_FASTCALL | METH_KEYWORDS,
     "set_status(status, description=None): a Status or a StatusCode."},
    {"record_exception", LENS_FASTCALL(span_record_exception), METH_FASTCALL | METH_KEYWORDS,
     "record_exception(exception, attributes=None, timestamp=None, escaped=False): the "
     "`exception` event (type, message, stacktrace, escaped); the status is left as it is."},
    {"is_recording", span_is_recording, METH_NOARGS,
     "True while the span records (telemetry on, kept by the sampler, not ended)."},
    {"get_span_context", span_get_span_context, METH_NOARGS, "The span's SpanContext."},
    {"update_name", span_update_name, METH_O, "update_name(name)."},
    {"end", LENS_FASTCALL(span_end), METH_FASTCALL | METH_KEYWORDS,
     "end(end_time=None): ends the span (end_time in Unix nanoseconds); later calls do nothing. "
     "A span of a `with` block ends at the block's exit, with this end time."},
    {"__enter__", span_enter, METH_NOARGS, nullptr},
    {"__exit__", LENS_FASTCALL(span_exit), METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyObject* set_span_context_factory(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "_set_span_context_factory(factory, invalid)");
    return nullptr;
  }
  Py_XSETREF(g_context_factory, Py_NewRef(args[0]));
  Py_XSETREF(g_invalid_context, Py_NewRef(args[1]));
  Py_RETURN_NONE;
}

PyMethodDef g_functions[] = {
    {"_set_span_context_factory", LENS_FASTCALL(set_span_context_factory), METH_FASTCALL,
     "Registers the SpanContext class of nemo.lens.trace and its INVALID_SPAN_CONTEXT."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

SpanObject* new_span_object(bool stack) {
  auto* span = PyObject_New(SpanObject, &g_span_type);
  if (span == nullptr) return nullptr;
  span->stack = stack;
  span->closed = false;
  span->end_requested = false;
  span->exception_events = true;
  span->status_with_type = true;
  span->owner = PyThread_get_thread_ident();
  span->ref = SpanRef{nullptr, nullptr};
  span->detached = nullptr;
  return span;
}

PyObject* new_stack_span(const SpanRef& ref, bool exception_events, bool status_with_type) {
  SpanObject* span = new_span_object(/*stack=*/true);
  if (span == nullptr) return nullptr;
  span->ref = ref;
  span->exception_events = exception_events;
  span->status_with_type = status_with_type;
  return reinterpret_cast<PyObject*>(span);
}

void close_stack_span(PyObject* span) { as_span(span)->closed = true; }

void record_scope_exception(PyObject* self, PyObject* exception, bool set_status, bool add_event) {
  SpanObject* span = as_span(self);
  // An Exception only: KeyboardInterrupt, SystemExit and GeneratorExit end the span without
  // error (as NeMo Lens's managed_span, which catches Exception).
  if (!PyObject_TypeCheck(exception, reinterpret_cast<PyTypeObject*>(PyExc_Exception))) return;
  // The span may have been ended with end() inside the block: the exception still belongs to it.
  const bool was_requested = span->end_requested;
  span->end_requested = false;
  if (live(span)) {
    // escaped: OpenTelemetry's scope exit says True; NeMo Lens's managed_span records the
    // exception itself (False).
    if (add_event && span->exception_events) {
      add_exception_event(span, exception, /*escaped=*/span->status_with_type, nullptr, 0);
    }
    if (set_status) {
      const std::string message = message_of(exception);
      const std::string description =
          span->status_with_type ? exception_type_name(exception) + ": " + message : message;
      apply(
          span,
          [&](const SpanRef& ref) {
            span_ref::set_status(ref, SpanStatusCode::error, description);
          },
          [&](Span& detached) { detached.set_status(SpanStatusCode::error, description); });
    }
  }
  span->end_requested = was_requested;
}

bool add_span_object_type(PyObject* module) {
  g_span_type.tp_repr = span_repr;
  if (!add_static_type(module, g_span_type, "nemo.lens._lens.Span", sizeof(SpanObject),
                       Py_TPFLAGS_DEFAULT,
                       "A span, with the methods of OpenTelemetry Python's Span (set_attribute, "
                       "add_event, set_status, record_exception, get_span_context, update_name, "
                       "end, ...).",
                       span_dealloc, g_span_methods)) {
    return false;
  }
  return PyModule_AddFunctions(module, g_functions) == 0;
}

}  // namespace lens::python
