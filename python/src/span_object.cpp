// nemo.lens._lens.Span and the tracer's span entry points (see span_object.hpp). Every entry point
// runs with the GIL held, which also serialises the calls on one span.
#include "span_object.hpp"

#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <pythread.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <new>

namespace lens::python {
namespace {

namespace otel = opentelemetry;

// ---- Conversions -------------------------------------------------------------------------------

std::int64_t now_unix_nanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view utf8_of(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) {
    PyErr_Clear();
    return {};
  }
  return {data, static_cast<std::size_t>(size)};
}

// An unsigned Python int as big-endian bytes; false (no error set) when it does not fit or is
// not an int.
bool id_bytes(PyObject* value, std::uint8_t* out, std::size_t size) {
  if (value == nullptr || !PyLong_Check(value)) return false;
  if (_PyLong_AsByteArray(reinterpret_cast<PyLongObject*>(value), out, size,
                          /*little_endian=*/0, /*is_signed=*/0) != 0) {
    PyErr_Clear();
    return false;
  }
  return true;
}

// An attribute of `object`, or null without an error.
PyObject* attribute_or_null(PyObject* object, const char* name) {
  PyObject* value = PyObject_GetAttrString(object, name);
  if (value == nullptr) PyErr_Clear();
  return value;
}

// A span context from a Python SpanContext-like object (trace_id and span_id as ints, trace_flags,
// is_remote), as OpenTelemetry Python's. Invalid when it is not one.
otel::trace::SpanContext span_context_of(PyObject* object) {
  if (object == nullptr || object == Py_None) return otel::trace::SpanContext::GetInvalid();
  PyObject* trace_id = attribute_or_null(object, "trace_id");
  PyObject* span_id = attribute_or_null(object, "span_id");
  PyObject* flags = attribute_or_null(object, "trace_flags");
  PyObject* remote = attribute_or_null(object, "is_remote");
  std::uint8_t trace[16] = {};
  std::uint8_t span[8] = {};
  const bool ok = id_bytes(trace_id, trace, sizeof(trace)) && id_bytes(span_id, span, sizeof(span));
  long flag_bits = flags != nullptr ? PyLong_AsLong(flags) : 0;
  if (flag_bits == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    flag_bits = 0;
  }
  const bool is_remote = remote != nullptr && PyObject_IsTrue(remote) == 1;
  Py_XDECREF(trace_id);
  Py_XDECREF(span_id);
  Py_XDECREF(flags);
  Py_XDECREF(remote);
  if (!ok) return otel::trace::SpanContext::GetInvalid();
  return otel::trace::SpanContext(otel::trace::TraceId(trace), otel::trace::SpanId(span),
                                  otel::trace::TraceFlags(static_cast<std::uint8_t>(flag_bits)),
                                  is_remote);
}

// Unix nanoseconds from an int timestamp (OpenTelemetry's start_time/end_time/timestamp); 0 for
// None or anything else.
std::int64_t nanos_of(PyObject* value) {
  if (value == nullptr || value == Py_None || !PyLong_Check(value)) return 0;
  const long long nanos = PyLong_AsLongLong(value);
  if (nanos == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return nanos > 0 ? nanos : 0;
}

// The status code of a Status (its .status_code) or a StatusCode (its .value, or an int) as
// lens's, with the description of a Status when `description` is None.
SpanStatusCode status_of(PyObject* status, PyObject** description) {
  PyObject* code = attribute_or_null(status, "status_code");
  if (code != nullptr) {
    if (*description == nullptr || *description == Py_None) {
      *description = attribute_or_null(status, "description");
    } else {
      Py_INCREF(*description);
    }
  } else {
    code = status;
    Py_INCREF(code);
    if (*description != nullptr) Py_INCREF(*description);
  }
  PyObject* value = attribute_or_null(code, "value");
  long number = PyLong_AsLong(value != nullptr ? value : code);
  if (number == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    number = 0;
  }
  Py_XDECREF(value);
  Py_DECREF(code);
  switch (number) {
    case 1:
      return SpanStatusCode::ok;
    case 2:
      return SpanStatusCode::error;
    default:
      return SpanStatusCode::unset;
  }
}

// Positional and keyword arguments of a METH_FASTCALL | METH_KEYWORDS call into `out` (borrowed;
// null when not given). False with TypeError set for an unknown keyword or too many arguments.
bool parse(const char* function, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
           const char* const* names, Py_ssize_t count, PyObject** out) {
  for (Py_ssize_t i = 0; i < count; ++i) out[i] = nullptr;
  if (nargs > count) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments", function, count);
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  const Py_ssize_t keywords = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    Py_ssize_t i = 0;
    while (i < count && PyUnicode_CompareWithASCIIString(key, names[i]) != 0) ++i;
    if (i == count) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", function, key);
      return false;
    }
    out[i] = args[nargs + k];
  }
  return true;
}

// ---- The Span type
// -------------------------------------------------------------------------------

PyObject* g_context_factory = nullptr;  // SpanContext(trace_id, span_id, is_remote, trace_flags)
PyObject* g_invalid_context = nullptr;  // the invalid SpanContext

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

PyTypeObject g_span_type{};

SpanObject* as_span(PyObject* self) { return reinterpret_cast<SpanObject*>(self); }

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
  if (!parse("add_event", args, nargs, kwnames, kNames, 3, a)) return nullptr;
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
  if (!parse("add_link", args, nargs, kwnames, kNames, 2, a)) return nullptr;
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
  if (!parse("set_status", args, nargs, kwnames, kNames, 2, a)) return nullptr;
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

// "<module>.<qualname>" of an exception's type, without the builtins module.
std::string exception_type_name(PyObject* exception) {
  PyTypeObject* type = Py_TYPE(exception);
  std::string_view name = type->tp_name;
  if (auto dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
  return std::string(name);
}

// The formatted traceback of an exception instance ("" when it cannot be formatted).
std::string stacktrace_of(PyObject* exception) {
  static PyObject* format = [] {
    PyObject* traceback = PyImport_ImportModule("traceback");
    PyObject* f = traceback ? PyObject_GetAttrString(traceback, "format_exception") : nullptr;
    Py_XDECREF(traceback);
    return f;
  }();
  std::string text;
  if (format == nullptr) {
    PyErr_Clear();
    return text;
  }
  PyObject* tb = PyException_GetTraceback(exception);
  PyObject* lines =
      PyObject_CallFunctionObjArgs(format, reinterpret_cast<PyObject*>(Py_TYPE(exception)),
                                   exception, tb != nullptr ? tb : Py_None, nullptr);
  Py_XDECREF(tb);
  if (lines != nullptr) {
    PyObject* empty = PyUnicode_FromString("");
    PyObject* joined = empty != nullptr ? PyUnicode_Join(empty, lines) : nullptr;
    if (joined != nullptr) text.assign(utf8_of(joined));
    Py_XDECREF(joined);
    Py_XDECREF(empty);
    Py_DECREF(lines);
  }
  PyErr_Clear();
  return text;
}

std::string message_of(PyObject* exception) {
  PyObject* str = PyObject_Str(exception);
  std::string text = str != nullptr ? std::string(utf8_of(str)) : std::string();
  Py_XDECREF(str);
  PyErr_Clear();
  return text;
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
  if (!parse("record_exception", args, nargs, kwnames, kNames, 4, a)) return nullptr;
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
  if (!parse("end", args, nargs, kwnames, kNames, 1, a)) return nullptr;
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

#define LENS_FASTCALL(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

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

// ---- Parents, links, start times ----------------------------------------------------------------

// How a span finds its parent: the current context, none (the root of a new trace), or a given
// span context.
enum class ParentMode : int { kCurrent = 0, kRoot = 1, kExplicit = 2 };

// Attaches `parent` as the calling thread's current span for its lifetime (kExplicit only; with
// kRoot and `attach_empty`, a context without a span: spans started there root new traces).
class ParentScope {
 public:
  ParentScope(ParentMode mode, const otel::trace::SpanContext& parent, bool attach_empty = false) {
    if (mode == ParentMode::kRoot && attach_empty) {
      scope_ = std::make_unique<ContextScope>(otel::context::Context{});
      return;
    }
    if (mode != ParentMode::kExplicit) return;
    try {
      const otel::nostd::shared_ptr<otel::trace::Span> view(new otel::trace::DefaultSpan(parent));
      otel::context::Context current = otel::context::RuntimeContext::GetCurrent();
      scope_ = std::make_unique<ContextScope>(otel::trace::SetSpan(current, view));
    } catch (...) {  // out of memory: the span's parent is the current context
    }
  }

 private:
  std::unique_ptr<ContextScope> scope_;
};

bool parent_mode_of(PyObject* value, ParentMode& mode) {
  const long number = PyLong_AsLong(value);
  if (number < 0 || number > 2) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "parent mode is 0, 1 or 2");
    return false;
  }
  mode = static_cast<ParentMode>(number);
  return true;
}

// The span contexts of `links`: Link-like objects (their .context) or SpanContext-like ones.
std::vector<otel::trace::SpanContext> links_of(PyObject* links) {
  std::vector<otel::trace::SpanContext> result;
  if (links == nullptr || links == Py_None) return result;
  PyObject* iterator = PyObject_GetIter(links);
  if (iterator == nullptr) {
    PyErr_Clear();
    return result;
  }
  while (PyObject* item = PyIter_Next(iterator)) {
    PyObject* context = attribute_or_null(item, "context");
    const otel::trace::SpanContext link = span_context_of(context != nullptr ? context : item);
    if (link.IsValid()) result.push_back(link);
    Py_XDECREF(context);
    Py_DECREF(item);
  }
  Py_DECREF(iterator);
  PyErr_Clear();
  return result;
}

// start_span(name, mode, parent, links, attributes, start_time): a detached span.
PyObject* start_span(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  ParentMode mode{};
  if (nargs != 6 || !PyUnicode_Check(args[0]) || !parent_mode_of(args[1], mode)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "start_span takes 6 arguments");
    return nullptr;
  }
  AttributeBuffer attributes;
  if (args[4] != Py_None && !attributes.add_mapping(args[4])) return nullptr;
  const std::vector<otel::trace::SpanContext> links = links_of(args[3]);
  SpanObject* span = new_span_object(/*stack=*/false);
  if (span == nullptr) return nullptr;
  const std::string_view name = utf8_of(args[0]);
  Span started;
  {
    ParentScope parent(mode, span_context_of(args[2]));
    started = mode == ParentMode::kRoot ? lens::start_span(name, {}, NewTrace{})
                                        : lens::start_span(name, {});
  }
  if (started) {
    for (const auto& [key, value] : attributes.span()) started.set_attribute(key, value);
    for (const otel::trace::SpanContext& link : links) started.add_link(link);
    if (const std::int64_t nanos = nanos_of(args[5]); nanos != 0) started.set_start_time(nanos);
    span->detached = new (std::nothrow) Span(std::move(started));
  }
  return reinterpret_cast<PyObject*>(span);
}

// ---- start_current_span: a scope ---------------------------------------------------------------

// One `with tracer.start_as_current_span(...)` with a parent, links, a start time or flags that
// the site fast path does not take: begins a stack span at __enter__ (the parent attached while
// it is open), ends it at __exit__.
struct ScopeObject {
  PyObject_HEAD PyObject* name;
  PyObject* parent;
  PyObject* links;
  PyObject* attributes;
  PyObject* start_time;
  ParentMode mode;
  bool record_exception;
  bool set_status_on_exception;
  bool end_on_exit;
  bool entered;
  PyObject* span;  // the entered span
  ParentScope* parent_scope;
};

PyTypeObject g_scope_type{};

PyObject* start_current_span(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  ParentMode mode{};
  if (nargs != 9 || !PyUnicode_Check(args[0]) || !parent_mode_of(args[1], mode)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "start_current_span takes 9 arguments");
    return nullptr;
  }
  auto* scope = PyObject_New(ScopeObject, &g_scope_type);
  if (scope == nullptr) return nullptr;
  PyObject* const objects[] = {args[0], args[2], args[3], args[4], args[5]};
  for (PyObject* object : objects) Py_INCREF(object);
  scope->name = args[0];
  scope->parent = args[2];
  scope->links = args[3];
  scope->attributes = args[4];
  scope->start_time = args[5];
  scope->mode = mode;
  scope->record_exception = PyObject_IsTrue(args[6]) == 1;
  scope->set_status_on_exception = PyObject_IsTrue(args[7]) == 1;
  scope->end_on_exit = PyObject_IsTrue(args[8]) == 1;
  scope->entered = false;
  scope->span = nullptr;
  scope->parent_scope = nullptr;
  return reinterpret_cast<PyObject*>(scope);
}

PyObject* scope_enter(PyObject* self, PyObject*) {
  auto* scope = reinterpret_cast<ScopeObject*>(self);
  if (scope->entered) {
    PyErr_SetString(PyExc_RuntimeError, "this span scope was already entered");
    return nullptr;
  }
  scope->entered = true;
  AttributeBuffer attributes;
  if (scope->attributes != Py_None && !attributes.add_mapping(scope->attributes)) return nullptr;
  const std::vector<otel::trace::SpanContext> links = links_of(scope->links);
  SpanObject* span = new_span_object(/*stack=*/true);
  if (span == nullptr) return nullptr;
  span->exception_events = scope->record_exception;
  const std::string_view name = utf8_of(scope->name);
  scope->parent_scope = new (std::nothrow) ParentScope(scope->mode, span_context_of(scope->parent));
  span->ref = scope->mode == ParentMode::kRoot
                  ? span_ref::begin_root(name, {}, NewTrace{}, scope->record_exception)
                  : span_ref::begin(name, {}, scope->record_exception);
  for (const auto& [key, value] : attributes.span()) span_ref::set_attribute(span->ref, key, value);
  for (const otel::trace::SpanContext& link : links) span_ref::add_link(span->ref, link);
  if (const std::int64_t nanos = nanos_of(scope->start_time); nanos != 0) {
    span_ref::set_start_time(span->ref, nanos);
  }
  scope->span = reinterpret_cast<PyObject*>(span);
  Py_INCREF(scope->span);
  return scope->span;
}

PyObject* scope_exit(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  auto* scope = reinterpret_cast<ScopeObject*>(self);
  if (scope->span == nullptr) Py_RETURN_FALSE;
  SpanObject* span = as_span(scope->span);
  if (nargs >= 2 && args[1] != Py_None) {
    record_scope_exception(scope->span, args[1], scope->set_status_on_exception,
                           scope->record_exception);
  }
  // The frame leaves the stack in any case (the stack is the thread's); without end_on_exit the
  // span's end is the time end() gave, or now.
  const SpanRef ref = span->ref;
  span->closed = true;
  if (ref.thread != nullptr && span->owner == PyThread_get_thread_ident()) span_ref::end(ref);
  delete scope->parent_scope;
  scope->parent_scope = nullptr;
  Py_CLEAR(scope->span);
  Py_RETURN_FALSE;
}

void scope_dealloc(PyObject* self) {
  auto* scope = reinterpret_cast<ScopeObject*>(self);
  Py_XDECREF(scope->name);
  Py_XDECREF(scope->parent);
  Py_XDECREF(scope->links);
  Py_XDECREF(scope->attributes);
  Py_XDECREF(scope->start_time);
  Py_XDECREF(scope->span);
  delete scope->parent_scope;
  PyObject_Free(self);
}

PyMethodDef g_scope_methods[] = {
    {"__enter__", scope_enter, METH_NOARGS, "Begins the span as the current span."},
    {"__exit__", LENS_FASTCALL(scope_exit), METH_FASTCALL,
     "Records an Exception (as the flags say) and ends the span; never suppresses it."},
    {nullptr, nullptr, 0, nullptr}};

// ---- attach / detach: a context current until detached
// -------------------------------------------

struct TokenObject {
  PyObject_HEAD ParentScope* scope;  // null once detached
  unsigned long owner;
};

PyTypeObject g_token_type{};

// attach(parent_mode, parent): makes `parent` (mode 2) or no span (mode 1) the calling thread's
// current context until the token's detach(); a token that is never detached detaches when it is
// collected, on its thread.
PyObject* attach(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  ParentMode mode{};
  if (nargs != 2 || !parent_mode_of(args[0], mode)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "attach(parent_mode, parent)");
    return nullptr;
  }
  auto* token = PyObject_New(TokenObject, &g_token_type);
  if (token == nullptr) return nullptr;
  token->owner = PyThread_get_thread_ident();
  token->scope = new (std::nothrow) ParentScope(mode, span_context_of(args[1]), true);
  return reinterpret_cast<PyObject*>(token);
}

void detach_token(TokenObject* token) {
  if (token->scope == nullptr) return;
  // Another thread's context stack is not this thread's to change.
  if (token->owner == PyThread_get_thread_ident()) delete token->scope;
  token->scope = nullptr;
}

PyObject* token_detach(PyObject* self, PyObject*) {
  detach_token(reinterpret_cast<TokenObject*>(self));
  Py_RETURN_NONE;
}

void token_dealloc(PyObject* self) {
  detach_token(reinterpret_cast<TokenObject*>(self));
  PyObject_Free(self);
}

PyMethodDef g_token_methods[] = {
    {"detach", token_detach, METH_NOARGS,
     "Restores the context that was current before attach (later calls do nothing)."},
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
    {"start_span", LENS_FASTCALL(start_span), METH_FASTCALL,
     "start_span(name, parent_mode, parent, links, attributes, start_time): a detached Span "
     "(parent_mode 0: the current context, 1: a new trace, 2: `parent`)."},
    {"start_current_span", LENS_FASTCALL(start_current_span), METH_FASTCALL,
     "start_current_span(name, parent_mode, parent, links, attributes, start_time, "
     "record_exception, set_status_on_exception, end_on_exit): a scope whose __enter__ begins "
     "the current span."},
    {"attach", LENS_FASTCALL(attach), METH_FASTCALL,
     "attach(parent_mode, parent): a ContextToken; the parent (mode 2) or no span (mode 1) is "
     "the current context of this thread until token.detach()."},
    {"_set_span_context_factory", LENS_FASTCALL(set_span_context_factory), METH_FASTCALL,
     "Registers the SpanContext class of nemo.lens.trace and its INVALID_SPAN_CONTEXT."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

// ---- Shared with span_site.cpp -----------------------------------------------------------------

std::optional<AttributeValue> attribute_value_of(PyObject* value) {
  if (PyBool_Check(value)) return AttributeValue(value == Py_True);
  if (PyLong_Check(value)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return std::nullopt;
    }
    return AttributeValue(std::int64_t{v});
  }
  if (PyFloat_Check(value)) return AttributeValue(PyFloat_AS_DOUBLE(value));
  if (PyUnicode_Check(value)) return AttributeValue(std::string(utf8_of(value)));
  if (!PyList_Check(value) && !PyTuple_Check(value)) return std::nullopt;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
  PyObject** items = PySequence_Fast_ITEMS(value);
  auto all = [&](auto check) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!check(items[i])) return false;
    }
    return true;
  };
  if (all([](PyObject* e) { return PyBool_Check(e) != 0; })) {
    std::vector<bool> v;
    for (Py_ssize_t i = 0; i < n; ++i) v.push_back(items[i] == Py_True);
    return AttributeValue(std::move(v));
  }
  if (all([](PyObject* e) { return PyLong_Check(e) && !PyBool_Check(e); })) {
    std::vector<std::int64_t> v;
    for (Py_ssize_t i = 0; i < n; ++i) v.push_back(PyLong_AsLongLong(items[i]));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return AttributeValue(std::move(v));
  }
  if (all([](PyObject* e) { return PyFloat_Check(e) != 0; })) {
    std::vector<double> v;
    for (Py_ssize_t i = 0; i < n; ++i) v.push_back(PyFloat_AS_DOUBLE(items[i]));
    return AttributeValue(std::move(v));
  }
  if (all([](PyObject* e) { return PyUnicode_Check(e) != 0; })) {
    std::vector<std::string> v;
    for (Py_ssize_t i = 0; i < n; ++i) v.emplace_back(utf8_of(items[i]));
    return AttributeValue(std::move(v));
  }
  return std::nullopt;
}

bool AttributeBuffer::add_mapping(PyObject* mapping) {
  if (!PyDict_Check(mapping) && !PyMapping_Check(mapping)) {
    PyErr_Format(PyExc_TypeError, "attributes must be a dict, not %.100s",
                 Py_TYPE(mapping)->tp_name);
    return false;
  }
  PyObject* items = PyMapping_Items(mapping);
  if (items == nullptr) return false;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); ++i) {
    PyObject* item = PyList_GET_ITEM(items, i);
    PyObject* key = PyTuple_GET_ITEM(item, 0);
    PyObject* value = PyTuple_GET_ITEM(item, 1);
    if (!PyUnicode_Check(key) || value == Py_None) continue;
    if (std::optional<AttributeValue> converted = attribute_value_of(value)) {
      add(utf8_of(key), *converted);
    }
  }
  Py_DECREF(items);
  return true;
}

void AttributeBuffer::add(std::string_view key, const AttributeValue& value) {
  const std::string& stored_key = keys_.emplace_back(key);
  const AttributeValue& stored_value = values_.emplace_back(value);
  pairs_.emplace_back(stored_key, AttributeArg(stored_value));
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

bool add_static_type(PyObject* module, PyTypeObject& type, const char* name, Py_ssize_t size,
                     unsigned long flags, const char* doc, destructor dealloc,
                     PyMethodDef* methods) {
  Py_SET_REFCNT(&type, 1);
  type.tp_name = name;
  type.tp_basicsize = size;
  type.tp_flags = flags;
  type.tp_doc = doc;
  type.tp_dealloc = dealloc;
  type.tp_methods = methods;
  if (PyType_Ready(&type) != 0) return false;
  const char* short_name = std::strrchr(name, '.');
  return PyModule_AddObjectRef(module, short_name != nullptr ? short_name + 1 : name,
                               reinterpret_cast<PyObject*>(&type)) == 0;
}

bool add_span_object_type(PyObject* module) {
  g_span_type.tp_repr = span_repr;
  if (!add_static_type(module, g_span_type, "nemo.lens._lens.Span", sizeof(SpanObject),
                       Py_TPFLAGS_DEFAULT,
                       "A span, with the methods of OpenTelemetry Python's Span (set_attribute, "
                       "add_event, set_status, record_exception, get_span_context, update_name, "
                       "end, ...).",
                       span_dealloc, g_span_methods) ||
      !add_static_type(module, g_scope_type, "nemo.lens._lens.SpanScope", sizeof(ScopeObject),
                       Py_TPFLAGS_DEFAULT,
                       "A `with` scope whose span is the current span while it is open.",
                       scope_dealloc, g_scope_methods) ||
      !add_static_type(module, g_token_type, "nemo.lens._lens.ContextToken", sizeof(TokenObject),
                       Py_TPFLAGS_DEFAULT,
                       "What attach returns: detach() restores the previous context.",
                       token_dealloc, g_token_methods)) {
    return false;
  }
  return PyModule_AddFunctions(module, g_functions) == 0;
}

}  // namespace lens::python
