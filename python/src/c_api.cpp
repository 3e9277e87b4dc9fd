// The CPython helpers of the C-level types (see c_api.hpp). Every function runs with the GIL held.
#include "c_api.hpp"

#include <chrono>
#include <cstring>

namespace lens::python {
namespace {

namespace otel = opentelemetry;

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

}  // namespace

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

PyObject* attribute_or_null(PyObject* object, const char* name) {
  PyObject* value = PyObject_GetAttrString(object, name);
  if (value == nullptr) PyErr_Clear();
  return value;
}

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

std::int64_t nanos_of(PyObject* value) {
  if (value == nullptr || value == Py_None || !PyLong_Check(value)) return 0;
  const long long nanos = PyLong_AsLongLong(value);
  if (nanos == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return nanos > 0 ? nanos : 0;
}

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

std::string exception_type_name(PyObject* exception) {
  PyTypeObject* type = Py_TYPE(exception);
  std::string_view name = type->tp_name;
  if (auto dot = name.rfind('.'); dot != std::string_view::npos) name.remove_prefix(dot + 1);
  return std::string(name);
}

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

bool parse_arguments(const char* function, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames, const char* const* names, Py_ssize_t count,
                     PyObject** out) {
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

}  // namespace lens::python
