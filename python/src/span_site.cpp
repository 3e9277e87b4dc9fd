// SpanSite and TracedFunction: lens's Python span primitives as C-level types (see span_site.hpp).
// Entering a site yields a nemo.lens Span (span_object.hpp). Every entry point runs with the GIL
// held, which also guards the site caches below.
#include "span_site.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "c_api.hpp"
#include "lens/groups.hpp"
#include "lens/redaction.hpp"
#include "lens/span.hpp"
#include "lens/span_ref.hpp"
#include "span_object.hpp"

namespace lens::python {
namespace {

// Sites cached by managed_span/span_cm, keyed by the identity of their argument objects (a call
// site passes the same constant string objects every time). Bounded: past it a call builds a site
// of its own that copies its name.
constexpr std::size_t kMaxCachedSites = 4096;

struct SpanSiteObject {
  PyObject_HEAD SpanGroupHandle group;
  bool gated;              // false for span_cm: always starts a span
  bool status_with_type;   // span_cm: ERROR description "<Type>: <message>"
  bool exception_events;   // span_cm(record_exception=False): no `exception` event
  bool static_name;        // `name` is interned for the process lifetime
  std::string owned_name;  // the name of a site that is not cached
  std::string_view name;
  PyObject* attributes;  // a dict, or null
};

struct TracedFunctionObject {
  PyObject_HEAD PyObject* site;
  PyObject* function;
  PyObject* dict;
  vectorcallfunc vectorcall;
};

PyTypeObject g_site_type{};  // filled by add_span_types
PyTypeObject g_traced_type{};

// One entered `with` of the calling thread: `with` blocks nest, so __exit__ ends the innermost.
struct OpenSpan {
  SpanRef ref{nullptr, nullptr};
  bool started = false;
  PyObject* span = nullptr;  // the Span the `with` yielded (a strong reference), or null
};
thread_local std::vector<OpenSpan> t_open_spans;

// Names of cached sites. Never freed: exported span records keep their address.
std::string_view interned_name(std::string_view name) {
  static auto* names = new std::unordered_map<std::string_view, std::unique_ptr<std::string>>();
  auto found = names->find(name);
  if (found != names->end()) return *found->second;
  auto owned = std::make_unique<std::string>(name);
  std::string_view view = *owned;
  names->emplace(view, std::move(owned));
  return view;
}

struct PairHash {
  std::size_t operator()(const std::pair<PyObject*, PyObject*>& key) const noexcept {
    return std::hash<void*>()(key.first) * 31 ^ std::hash<void*>()(key.second);
  }
};
using SiteCache = std::unordered_map<std::pair<PyObject*, PyObject*>, PyObject*, PairHash>;
// Keys and values hold strong references for the life of the process. trace_fn's sites are
// apart: an exception they see is recorded as OpenTelemetry's start_as_current_span does
// ("<Type>: <message>"), managed_span's as NeMo Lens's managed_span (the message).
SiteCache& site_cache() {
  static auto* cache = new SiteCache();
  return *cache;
}
SiteCache& traced_site_cache() {
  static auto* cache = new SiteCache();
  return *cache;
}

// ---- Attributes --------------------------------------------------------------------------------

void set_attributes(const SpanRef& span, PyObject* dict) {
  AttributeBuffer attributes;
  if (!attributes.add_mapping(dict)) {
    PyErr_Clear();
    return;
  }
  for (const auto& [key, value] : attributes.span()) span_ref::set_attribute(span, key, value);
}

// ---- Starting and ending
// -------------------------------------------------------------------------

OpenSpan begin(SpanSiteObject* site) noexcept {
  OpenSpan open;
  if ((site->gated && !site->group.enabled()) || !span_ref::recording()) return open;
  open.ref = span_ref::begin(site->name, {}, site->exception_events, site->static_name);
  open.started = open.ref.frame != nullptr;
  if (open.started && site->attributes != nullptr) set_attributes(open.ref, site->attributes);
  return open;
}

// ---- SpanSite ----------------------------------------------------------------------------------

SpanSiteObject* new_site(PyObject* group, std::string_view name, bool cached) {
  auto* site = PyObject_New(SpanSiteObject, &g_site_type);
  if (site == nullptr) return nullptr;
  new (&site->group) SpanGroupHandle();
  new (&site->owned_name) std::string();
  new (&site->name) std::string_view();
  site->gated = group != nullptr;
  site->status_with_type = false;
  site->exception_events = true;
  site->attributes = nullptr;
  if (group != nullptr) {
    const char* group_name = PyUnicode_AsUTF8(group);
    if (group_name == nullptr) {
      Py_DECREF(site);
      return nullptr;
    }
    site->group = span_group_handle(group_name);
  }
  site->static_name = cached;
  if (cached) {
    site->name = interned_name(name);
  } else {
    site->owned_name.assign(name);
    site->name = site->owned_name;
  }
  return site;
}

void site_dealloc(PyObject* self) {
  auto* site = reinterpret_cast<SpanSiteObject*>(self);
  Py_XDECREF(site->attributes);
  site->owned_name.~basic_string();
  PyObject_Free(self);
}

// A managed_span whose group is off yields None (nothing is made); any other entry yields a Span,
// a non-recording one where nothing records (span_cm's contract, and a group on without setup).
PyObject* site_enter(PyObject* self, PyObject*) {
  auto* site = reinterpret_cast<SpanSiteObject*>(self);
  if (site->gated && !site->group.enabled()) {
    t_open_spans.emplace_back();
    Py_RETURN_NONE;
  }
  OpenSpan open = begin(site);
  open.span = new_stack_span(open.ref, site->exception_events, site->status_with_type);
  if (open.span == nullptr) {
    if (open.started) span_ref::end(open.ref);
    return nullptr;
  }
  t_open_spans.push_back(open);
  Py_INCREF(open.span);
  return open.span;
}

PyObject* site_exit(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  auto& open_spans = t_open_spans;
  if (open_spans.empty()) Py_RETURN_FALSE;
  OpenSpan open = open_spans.back();
  open_spans.pop_back();
  if (open.span != nullptr) {
    if (nargs >= 2 && args[1] != Py_None) {
      record_scope_exception(open.span, args[1], /*set_status=*/true, /*add_event=*/true);
    }
    close_stack_span(open.span);
    Py_DECREF(open.span);
  }
  if (open.started) span_ref::end(open.ref);
  Py_RETURN_FALSE;  // never swallows the exception
}

PyObject* site_name(PyObject* self, void*) {
  auto* site = reinterpret_cast<SpanSiteObject*>(self);
  return PyUnicode_FromStringAndSize(site->name.data(), static_cast<Py_ssize_t>(site->name.size()));
}

PyObject* site_group(PyObject* self, void*) {
  auto* site = reinterpret_cast<SpanSiteObject*>(self);
  if (!site->gated) Py_RETURN_NONE;
  std::string_view group = site->group.name();
  return PyUnicode_FromStringAndSize(group.data(), static_cast<Py_ssize_t>(group.size()));
}

PyObject* site_enabled(PyObject* self, void*) {
  auto* site = reinterpret_cast<SpanSiteObject*>(self);
  return PyBool_FromLong(!site->gated || site->group.enabled());
}

PyObject* traced_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames);

// site(function): the function traced by this site (the decorator form).
PyObject* site_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* function = nullptr;
  if ((kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) ||
      !PyArg_ParseTuple(args, "O:span site decorator", &function)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a span site decorates one function");
    return nullptr;
  }
  if (!PyCallable_Check(function)) {
    PyErr_Format(PyExc_TypeError, "a span site decorates a callable, not %.100s",
                 Py_TYPE(function)->tp_name);
    return nullptr;
  }
  auto* traced = PyObject_GC_New(TracedFunctionObject, &g_traced_type);
  if (traced == nullptr) return nullptr;
  Py_INCREF(self);
  Py_INCREF(function);
  traced->site = self;
  traced->function = function;
  traced->dict = nullptr;
  traced->vectorcall = traced_vectorcall;
  PyObject_GC_Track(traced);
  // functools.update_wrapper: __name__, __doc__, __wrapped__, ... (once, at decoration).
  static PyObject* update_wrapper = [] {
    PyObject* functools = PyImport_ImportModule("functools");
    PyObject* f = functools ? PyObject_GetAttrString(functools, "update_wrapper") : nullptr;
    Py_XDECREF(functools);
    return f;
  }();
  if (update_wrapper == nullptr) {
    Py_DECREF(traced);
    return nullptr;
  }
  PyObject* updated = PyObject_CallFunctionObjArgs(update_wrapper, traced, function, nullptr);
  if (updated == nullptr) {
    Py_DECREF(traced);
    return nullptr;
  }
  Py_DECREF(updated);
  return reinterpret_cast<PyObject*>(traced);
}

PyMethodDef g_site_methods[] = {
    {"__enter__", site_enter, METH_NOARGS, "Starts the span (when its group is on)."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(site_exit)),
     METH_FASTCALL, "Records an Exception, ends the span; never suppresses the exception."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_site_getset[] = {
    {"name", site_name, nullptr, "The span name.", nullptr},
    {"group", site_group, nullptr, "The span group (None: ungated).", nullptr},
    {"enabled", site_enabled, nullptr, "Whether entering now starts a span.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- TracedFunction ----------------------------------------------------------------------------

PyObject* traced_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
  auto* traced = reinterpret_cast<TracedFunctionObject*>(self);
  auto* site = reinterpret_cast<SpanSiteObject*>(traced->site);
  if (site->gated && !site->group.enabled()) {
    return PyObject_Vectorcall(traced->function, args, nargsf, kwnames);
  }
  OpenSpan open = begin(site);
  PyObject* result = PyObject_Vectorcall(traced->function, args, nargsf, kwnames);
  if (open.started) {
    if (result == nullptr) {
      PyObject* type = nullptr;
      PyObject* value = nullptr;
      PyObject* traceback = nullptr;
      PyErr_Fetch(&type, &value, &traceback);
      PyErr_NormalizeException(&type, &value, &traceback);
      // Its frames, for the event's stacktrace (a `with` exit finds them on the exception).
      if (traceback != nullptr && value != nullptr) PyException_SetTraceback(value, traceback);
      // The exception as the site's `with` records it (a Span only on this rare path).
      if (PyObject* span =
              new_stack_span(open.ref, site->exception_events, site->status_with_type)) {
        record_scope_exception(span, value, /*set_status=*/true, /*add_event=*/true);
        close_stack_span(span);
        Py_DECREF(span);
      }
      PyErr_Clear();
      PyErr_Restore(type, value, traceback);
    }
    span_ref::end(open.ref);
  }
  return result;
}

PyObject* traced_get(PyObject* self, PyObject* instance, PyObject*) {
  if (instance == nullptr || instance == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, instance);
}

int traced_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* traced = reinterpret_cast<TracedFunctionObject*>(self);
  Py_VISIT(traced->site);
  Py_VISIT(traced->function);
  Py_VISIT(traced->dict);
  return 0;
}

int traced_clear(PyObject* self) {
  auto* traced = reinterpret_cast<TracedFunctionObject*>(self);
  Py_CLEAR(traced->site);
  Py_CLEAR(traced->function);
  Py_CLEAR(traced->dict);
  return 0;
}

void traced_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  traced_clear(self);
  PyObject_GC_Del(self);
}

// Pickled (and deep-copied) by reference, as the plain function it stands for: its qualified name
// in its module (functools.update_wrapper set both).
PyObject* traced_reduce(PyObject* self, PyObject*) {
  return PyObject_GetAttrString(self, "__qualname__");
}

PyMethodDef g_traced_methods[] = {
    {"__reduce__", traced_reduce, METH_NOARGS, "Pickled by its module and qualified name."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_traced_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// ---- The module functions ----------------------------------------------------------------------

bool is_keyword(PyObject* name, const char* keyword) {
  return PyUnicode_CompareWithASCIIString(name, keyword) == 0;
}

// The cached site for (group, name), made on first use; a new reference.
PyObject* cached_site(PyObject* group, PyObject* name, SiteCache& cache = site_cache()) {
  if ((group != nullptr && !PyUnicode_Check(group)) || !PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "span group and name must be str");
    return nullptr;
  }
  auto found = cache.find({group, name});
  if (found != cache.end()) {
    Py_INCREF(found->second);
    return found->second;
  }
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &size);
  if (text == nullptr) return nullptr;
  bool cache_it = cache.size() < kMaxCachedSites;
  SpanSiteObject* site =
      new_site(group, std::string_view(text, static_cast<std::size_t>(size)), cache_it);
  if (site == nullptr) return nullptr;
  site->status_with_type = group == nullptr || &cache == &traced_site_cache();
  if (cache_it) {
    Py_XINCREF(group);
    Py_INCREF(name);
    Py_INCREF(site);
    cache.emplace(std::make_pair(group, name), reinterpret_cast<PyObject*>(site));
  }
  return reinterpret_cast<PyObject*>(site);
}

// A site for one call with attributes: shares the cached site's gate and interned name.
PyObject* site_with_attributes(SpanSiteObject* base, PyObject* const* values, PyObject* kwnames,
                               bool* record_exception) {
  PyObject* attributes = PyDict_New();
  if (attributes == nullptr) return nullptr;
  Py_ssize_t count = PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, i);
    if (is_keyword(key, "tracer")) continue;  // NeMo Lens's parameter; lens has one tracer
    if (record_exception != nullptr && is_keyword(key, "record_exception")) {
      *record_exception = PyObject_IsTrue(values[i]) == 1;
      continue;
    }
    if (PyDict_SetItem(attributes, key, values[i]) != 0) {
      Py_DECREF(attributes);
      return nullptr;
    }
  }
  auto* site = PyObject_New(SpanSiteObject, &g_site_type);
  if (site == nullptr) {
    Py_DECREF(attributes);
    return nullptr;
  }
  new (&site->group) SpanGroupHandle(base->group);
  new (&site->owned_name) std::string(base->static_name ? std::string() : base->owned_name);
  new (&site->name) std::string_view(base->static_name ? base->name : site->owned_name);
  site->gated = base->gated;
  site->status_with_type = base->status_with_type;
  site->exception_events = record_exception != nullptr ? *record_exception : true;
  site->static_name = base->static_name && site->exception_events;
  site->attributes = PyDict_GET_SIZE(attributes) != 0 ? attributes : nullptr;
  if (site->attributes == nullptr) Py_DECREF(attributes);
  return reinterpret_cast<PyObject*>(site);
}

// A vectorcall's arguments with the keyword arguments `names` (those past the `nargs` given
// positionally) moved into positions nargs.., for the rare call that names them (`group=`,
// `name=`); the other keyword arguments stay keywords. False (a TypeError set) when one is missing.
struct Rearranged {
  std::vector<PyObject*> args;  // positional, then the remaining keyword values
  PyObject* kwnames = nullptr;  // a new reference (null: none left)
  ~Rearranged() { Py_XDECREF(kwnames); }
};
bool keywords_to_positions(const char* function, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames, const std::vector<const char*>& names,
                           Rearranged& out) {
  const Py_ssize_t keywords = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  out.args.assign(args, args + nargs);
  for (std::size_t n = static_cast<std::size_t>(nargs); n < names.size(); ++n) {
    Py_ssize_t k = 0;
    while (k < keywords && !is_keyword(PyTuple_GET_ITEM(kwnames, k), names[n])) ++k;
    if (k == keywords) {
      PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function, names[n]);
      return false;
    }
    out.args.push_back(args[nargs + k]);
  }
  std::vector<PyObject*> rest_names;
  std::vector<PyObject*> rest_values;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    bool moved = false;
    for (std::size_t n = static_cast<std::size_t>(nargs); n < names.size(); ++n) {
      moved = moved || is_keyword(key, names[n]);
    }
    if (!moved) {
      rest_names.push_back(key);
      rest_values.push_back(args[nargs + k]);
    }
  }
  out.args.insert(out.args.end(), rest_values.begin(), rest_values.end());
  if (!rest_names.empty()) {
    out.kwnames = PyTuple_New(static_cast<Py_ssize_t>(rest_names.size()));
    if (out.kwnames == nullptr) return false;
    for (std::size_t i = 0; i < rest_names.size(); ++i) {
      Py_INCREF(rest_names[i]);
      PyTuple_SET_ITEM(out.kwnames, static_cast<Py_ssize_t>(i), rest_names[i]);
    }
  }
  return true;
}

// managed_span(group, name, tracer=None, **attributes): a third positional argument is the
// tracer (lens has one; it is not used).
PyObject* managed_span(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs < 2 && kwnames != nullptr) {
    Rearranged call;
    if (!keywords_to_positions("managed_span", args, nargs, kwnames, {"group", "name"}, call)) {
      return nullptr;
    }
    return managed_span(self, call.args.data(), 2, call.kwnames);
  }
  if (nargs != 2 && nargs != 3) {
    PyErr_SetString(PyExc_TypeError,
                    "managed_span(group, name, tracer=None, **attributes) takes 2 or 3 "
                    "positional arguments");
    return nullptr;
  }
  PyObject* site = cached_site(args[0], args[1]);
  if (site == nullptr || kwnames == nullptr || PyTuple_GET_SIZE(kwnames) == 0) return site;
  // Built even while the group is off: a decorator made now keeps its attributes for the calls
  // made once the group is on (the values are only referenced, nothing is converted).
  auto* base = reinterpret_cast<SpanSiteObject*>(site);
  PyObject* with_attributes = site_with_attributes(base, args + nargs, kwnames, nullptr);
  Py_DECREF(site);
  return with_attributes;
}

// span_cm(name, tracer=None, record_exception=True, **attributes): positional tracer (not used)
// and record_exception as NeMo Lens's signature.
PyObject* span_cm(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs < 1 && kwnames != nullptr) {
    Rearranged call;
    if (!keywords_to_positions("span_cm", args, nargs, kwnames, {"name"}, call)) return nullptr;
    return span_cm(self, call.args.data(), 1, call.kwnames);
  }
  if (nargs < 1 || nargs > 3) {
    PyErr_SetString(PyExc_TypeError,
                    "span_cm(name, tracer=None, record_exception=True, **attributes) takes 1 to 3 "
                    "positional arguments");
    return nullptr;
  }
  PyObject* site = cached_site(nullptr, args[0]);
  if (site == nullptr) return nullptr;
  const bool keywords = kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0;
  if (!keywords && nargs < 3) return site;
  bool record_exception = nargs < 3 || PyObject_IsTrue(args[2]) == 1;
  static PyObject* const no_keywords = PyTuple_New(0);
  PyObject* with_attributes =
      site_with_attributes(reinterpret_cast<SpanSiteObject*>(site), args + nargs,
                           keywords ? kwnames : no_keywords, &record_exception);
  Py_DECREF(site);
  return with_attributes;
}

PyObject* trace_fn(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs != 2 || (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0)) {
    PyErr_SetString(PyExc_TypeError, "trace_fn(group, name) takes 2 arguments");
    return nullptr;
  }
  return cached_site(args[0], args[1], traced_site_cache());
}

// In a forked child (os.register_at_fork): the spans the forking thread had entered belong to
// the parent's pipeline, which the child forgot; their __exit__ must not end them.
PyObject* forget_open_spans(PyObject*, PyObject*) {
  for (OpenSpan& open : t_open_spans) {
    if (open.span != nullptr) close_stack_span(open.span);
    open.ref = SpanRef{nullptr, nullptr};
    open.started = false;
  }
  Py_RETURN_NONE;
}

PyMethodDef g_functions[] = {
    {"_forget_open_spans", forget_open_spans, METH_NOARGS,
     "After fork, in the child: the spans entered before the fork are no longer ended."},
    {"managed_span", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(managed_span)),
     METH_FASTCALL | METH_KEYWORDS,
     "managed_span(group, name, **attributes): a span gated by `group`, as a context manager or "
     "a decorator. Entering yields the site (set_attribute, record_exception) when the span "
     "records, else None."},
    {"span_cm", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(span_cm)),
     METH_FASTCALL | METH_KEYWORDS,
     "span_cm(name, record_exception=True, **attributes): an ungated span (context manager)."},
    {"trace_fn", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(trace_fn)),
     METH_FASTCALL | METH_KEYWORDS,
     "trace_fn(group, name): a decorator; each call of the function is a span when `group` is on "
     "at call time."},
    {nullptr, nullptr, 0, nullptr}};

// DEFAULT_REDACT_KEYS (a frozenset) and REDACTED from lens/redaction.hpp's table: what
// nemo.lens.helpers redacts by is what the native span path redacts.
bool add_redaction(PyObject* module) {
  PyObject* keys = PyFrozenSet_New(nullptr);
  if (keys == nullptr) return false;
  for (const std::string_view key : kDefaultRedactKeys) {
    PyObject* name = PyUnicode_FromStringAndSize(key.data(), static_cast<Py_ssize_t>(key.size()));
    if (name == nullptr || PySet_Add(keys, name) != 0) {
      Py_XDECREF(name);
      Py_DECREF(keys);
      return false;
    }
    Py_DECREF(name);
  }
  if (PyModule_AddObject(module, "DEFAULT_REDACT_KEYS", keys) != 0) {
    Py_DECREF(keys);
    return false;
  }
  PyObject* redacted =
      PyUnicode_FromStringAndSize(kRedacted.data(), static_cast<Py_ssize_t>(kRedacted.size()));
  if (redacted == nullptr) return false;
  if (PyModule_AddObject(module, "REDACTED", redacted) != 0) {
    Py_DECREF(redacted);
    return false;
  }
  return true;
}

}  // namespace

bool add_span_types(PyObject* module) {
  g_site_type.tp_call = site_call;
  g_site_type.tp_getset = g_site_getset;
  g_traced_type.tp_traverse = traced_traverse;
  g_traced_type.tp_clear = traced_clear;
  g_traced_type.tp_call = PyVectorcall_Call;
  g_traced_type.tp_vectorcall_offset = offsetof(TracedFunctionObject, vectorcall);
  g_traced_type.tp_descr_get = traced_get;
  g_traced_type.tp_dictoffset = offsetof(TracedFunctionObject, dict);
  g_traced_type.tp_getset = g_traced_getset;
  if (!add_static_type(module, g_site_type, "nemo.lens._lens.SpanSite", sizeof(SpanSiteObject),
                       Py_TPFLAGS_DEFAULT,
                       "A span site: a span name with its group's handle, resolved once.",
                       site_dealloc, g_site_methods) ||
      !add_static_type(
          module, g_traced_type, "nemo.lens._lens.TracedFunction", sizeof(TracedFunctionObject),
          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
          "A function whose calls are spans of its site.", traced_dealloc, g_traced_methods)) {
    return false;
  }
  return PyModule_AddFunctions(module, g_functions) == 0 && add_redaction(module);
}

}  // namespace lens::python
