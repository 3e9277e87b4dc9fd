"""The instrumentation primitives: span_cm, managed_span, trace_fn, safe_set_span_attributes and
redaction. The primitives are native (C-level) objects: a managed_span whose group is off costs
one flag load, a recorded span allocates nothing in C++."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from . import _lens

__all__ = ["DEFAULT_REDACT_KEYS", "managed_span", "redact_value", "safe_set_span_attributes",
           "span_cm", "trace_fn"]

#: Attribute keys whose string values are replaced by "[REDACTED]" (by exact key, any primitive):
#: the native table of lens/redaction.hpp, which the native span path redacts by too.
DEFAULT_REDACT_KEYS: frozenset = _lens.DEFAULT_REDACT_KEYS

_SCALARS = (bool, int, float, str)

#: managed_span(group, name, tracer=None, **attributes): a span gated by `group`, as a context
#: manager (it yields the Span, or None when the group is off: nothing is made then) or a
#: decorator (the group is checked at each call). An Exception leaving the block adds the
#: `exception` event and sets status ERROR with its message; the exception propagates.
managed_span = _lens.managed_span

#: span_cm(name, tracer=None, record_exception=True, **attributes): an ungated span; it always
#: yields a Span (one that does not record when telemetry is off). An Exception sets status ERROR
#: "<Type>: <message>", and adds the `exception` event unless record_exception=False.
span_cm = _lens.span_cm


def redact_value(key: str, value: str, redact_keys: frozenset = DEFAULT_REDACT_KEYS) -> str:
    """"[REDACTED]" when `key` is one of `redact_keys`, else `value`."""
    return _lens.REDACTED if key in redact_keys else value


def safe_set_span_attributes(span: Any, attributes: Mapping[str, Any],
                             redact_keys: frozenset = DEFAULT_REDACT_KEYS) -> None:
    """Sets the scalar attributes (bool, int, float, str) and lists/tuples of scalars on a
    recording span; None and other values are skipped, strings under `redact_keys` redacted.
    Does nothing for a span that does not record (or None)."""
    if span is None or not span.is_recording():
        return
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, _SCALARS):
            if isinstance(value, str):
                value = redact_value(key, value, redact_keys)
            span.set_attribute(key, value)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS) for v in value):
            span.set_attribute(key, list(value))


def trace_fn(group: str, name: str, tracer: Any = None) -> Callable[[Callable], Callable]:
    """A decorator: each call of the function is a span `name` when `group` is on at call time
    (a plain call when it is off). An Exception sets status ERROR "<Type>: <message>" with the
    `exception` event. `tracer` is accepted for NeMo Lens's signature; lens has one tracer."""
    return _lens.trace_fn(group, name)
