// The tracer's span entry points (see span_start.hpp): the parent a span starts under, its links,
// and the Spans they make (span_object.hpp). Every entry point runs with the GIL held.
#include "span_start.hpp"

#include <opentelemetry/context/runtime_context.h>
#include <opentelemetry/trace/context.h>
#include <opentelemetry/trace/default_span.h>
#include <pythread.h>

#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

#include "c_api.hpp"
#include "lens/span.hpp"
#include "lens/span_ref.hpp"
#include "span_object.hpp"

namespace lens::python {
namespace {

namespace otel = opentelemetry;

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
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool add_span_start_functions(PyObject* module) {
  if (!add_static_type(module, g_scope_type, "nemo.lens._lens.SpanScope", sizeof(ScopeObject),
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
