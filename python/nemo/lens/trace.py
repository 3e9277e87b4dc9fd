"""The tracing API that ``handle.tracer`` and ``get_tracer()`` return: OpenTelemetry Python's API
surface (``Tracer.start_as_current_span`` / ``start_span``, ``SpanContext``, ``Status``,
``StatusCode``, ``Link``, ``SpanKind``, ``Context``), on lens's native span path.

Spans are ``nemo.lens._lens.Span`` objects, whatever primitive made them (``managed_span``,
``span_cm``, ``trace_fn`` or the tracer), and they share one current-span context per thread:
a span opened by any of them is the parent of the next one opened by any other.

Differences from the OpenTelemetry API, all deliberate:

* there is one tracer: the instrumentation scope is always ``nemo.lens`` (``get_tracer(name)``
  accepts and ignores the name, as a no-op provider would);
* ``kind`` is accepted and not exported (every lens span is INTERNAL);
* a link's own attributes are not kept (the link is);
* a span opened with ``start_as_current_span(..., end_on_exit=False)`` still leaves the thread's
  span stack when its ``with`` block ends, at that time unless ``end(end_time)`` gave another.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Iterator, Optional, Sequence

from . import _lens

__all__ = [
    "Context", "INVALID_SPAN", "INVALID_SPAN_CONTEXT", "Link", "NonRecordingSpan", "Span",
    "SpanContext", "SpanKind", "Status", "StatusCode", "TraceFlags", "Tracer", "attach", "detach",
    "get_current_span", "get_tracer", "set_span_in_context",
]

Span = _lens.Span


class SpanKind(enum.Enum):
    """As OpenTelemetry's; lens exports every span as INTERNAL."""
    INTERNAL = 0
    SERVER = 1
    CLIENT = 2
    PRODUCER = 3
    CONSUMER = 4


class StatusCode(enum.Enum):
    """A span's status code, numbered as OpenTelemetry's."""
    UNSET = 0
    OK = 1
    ERROR = 2


class Status:
    """A status code with a description (kept for ERROR only, as OpenTelemetry does)."""

    __slots__ = ("status_code", "description")

    def __init__(self, status_code: StatusCode = StatusCode.UNSET,
                 description: Optional[str] = None) -> None:
        self.status_code = status_code
        self.description = description if status_code is StatusCode.ERROR else None

    @property
    def is_ok(self) -> bool:
        return self.status_code is not StatusCode.ERROR

    @property
    def is_unset(self) -> bool:
        return self.status_code is StatusCode.UNSET

    def __repr__(self) -> str:
        return f"Status(status_code={self.status_code}, description={self.description!r})"


class TraceFlags(int):
    """W3C trace flags; SAMPLED is 0x01."""
    DEFAULT = 0x00
    SAMPLED = 0x01

    @property
    def sampled(self) -> bool:
        return bool(self & TraceFlags.SAMPLED)


class SpanContext:
    """The identity of a span: trace and span ids as ints, as OpenTelemetry Python's."""

    __slots__ = ("trace_id", "span_id", "is_remote", "trace_flags", "trace_state")

    def __init__(self, trace_id: int, span_id: int, is_remote: bool,
                 trace_flags: int = TraceFlags.DEFAULT, trace_state: Any = None) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.is_remote = is_remote
        self.trace_flags = TraceFlags(trace_flags)
        self.trace_state = trace_state if trace_state is not None else {}

    @property
    def is_valid(self) -> bool:
        return 0 < self.trace_id < 2 ** 128 and 0 < self.span_id < 2 ** 64

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, SpanContext) and self.trace_id == other.trace_id
                and self.span_id == other.span_id and self.is_remote == other.is_remote
                and self.trace_flags == other.trace_flags)

    def __hash__(self) -> int:
        return hash((self.trace_id, self.span_id, self.is_remote, int(self.trace_flags)))

    def __repr__(self) -> str:
        return (f"SpanContext(trace_id=0x{self.trace_id:032x}, span_id=0x{self.span_id:016x}, "
                f"trace_flags=0x{int(self.trace_flags):02x}, is_remote={self.is_remote})")


INVALID_SPAN_CONTEXT = SpanContext(0, 0, False)
_lens._set_span_context_factory(SpanContext, INVALID_SPAN_CONTEXT)


class Link:
    """A link to another span's context (its attributes are not exported by lens)."""

    __slots__ = ("context", "attributes")

    def __init__(self, context: SpanContext, attributes: Optional[Mapping[str, Any]] = None
                 ) -> None:
        self.context = context
        self.attributes = attributes


class NonRecordingSpan:
    """A span that records nothing: the parent in a Context made by extract_context, or the
    current span where none is open. Every method does nothing."""

    __slots__ = ("_context",)

    def __init__(self, context: SpanContext) -> None:
        self._context = context

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return False

    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        pass

    def add_event(self, name: str, attributes: Any = None, timestamp: Any = None) -> None:
        pass

    def add_link(self, context: Any, attributes: Any = None) -> None:
        pass

    def set_status(self, status: Any, description: Optional[str] = None) -> None:
        pass

    def record_exception(self, exception: BaseException, attributes: Any = None,
                         timestamp: Any = None, escaped: bool = False) -> None:
        pass

    def update_name(self, name: str) -> None:
        pass

    def end(self, end_time: Optional[int] = None) -> None:
        pass

    def __enter__(self) -> "NonRecordingSpan":
        return self

    def __exit__(self, *exc: Any) -> bool:
        return False

    def __repr__(self) -> str:
        return f"NonRecordingSpan({self._context!r})"


INVALID_SPAN = NonRecordingSpan(INVALID_SPAN_CONTEXT)

_SPAN_KEY = "current-span"


class Context(Mapping):
    """An immutable mapping that may hold a span (under ``current-span``): what
    ``extract_context`` returns and ``start_span(context=...)`` takes. ``Context()`` holds no
    span: a span started in it is the root of a new trace."""

    __slots__ = ("_values",)

    def __init__(self, values: Optional[Mapping[str, Any]] = None) -> None:
        self._values = dict(values) if values else {}

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Context({self._values!r})"


def set_span_in_context(span: Any, context: Optional[Mapping[str, Any]] = None) -> Context:
    """A Context holding `span` (and what `context` holds)."""
    values = dict(context) if context else {}
    values[_SPAN_KEY] = span
    return Context(values)


def _span_in(context: Mapping[str, Any]) -> Any:
    """The span a context holds: ours under its key, or any value with get_span_context (an
    OpenTelemetry Context, whose key differs); None when it holds none."""
    span = context.get(_SPAN_KEY)
    if span is not None:
        return span
    for value in context.values():
        if hasattr(value, "get_span_context"):
            return value
    return None


def _current_span_context() -> SpanContext:
    carrier = _lens.inject()
    parent = carrier.get("traceparent", "")
    parts = parent.split("-")
    if len(parts) != 4:
        return INVALID_SPAN_CONTEXT
    try:
        return SpanContext(int(parts[1], 16), int(parts[2], 16), False, int(parts[3], 16))
    except ValueError:
        return INVALID_SPAN_CONTEXT


def attach(context: Mapping[str, Any]) -> Any:
    """Makes `context`'s span the calling thread's current span (spans started on this thread
    are its children; a Context without a span makes them roots) until ``detach(token)``: what
    ``opentelemetry.context.attach(set_span_in_context(span))`` does, for a span that outlives
    the function that starts it. Detach on the same thread, innermost first."""
    mode, parent = _parent_of(context)
    if mode == _PARENT_CURRENT:
        mode = _PARENT_ROOT
    return _lens.attach(mode, parent)


def detach(token: Any) -> None:
    """Restores the context that was current before ``attach`` returned `token`."""
    token.detach()


def get_current_span(context: Optional[Mapping[str, Any]] = None) -> Any:
    """The span of `context`, or (without one) a non-recording view of the calling thread's
    current span; INVALID_SPAN when there is none."""
    if context is not None:
        span = _span_in(context)
        return span if span is not None else INVALID_SPAN
    current = _current_span_context()
    return NonRecordingSpan(current) if current.is_valid else INVALID_SPAN


# How _lens.start_span / start_current_span find the parent.
_PARENT_CURRENT, _PARENT_ROOT, _PARENT_GIVEN = 0, 1, 2


def _parent_of(context: Optional[Mapping[str, Any]]) -> tuple:
    if context is None:
        return _PARENT_CURRENT, None
    span = _span_in(context)
    if span is None:
        return _PARENT_ROOT, None
    span_context = span.get_span_context()
    if not getattr(span_context, "is_valid", False):
        return _PARENT_ROOT, None
    return _PARENT_GIVEN, span_context


class _CurrentSpan:
    """start_as_current_span with a context, links, a start time or flags the native site does
    not take: a context manager (a fresh scope per `with`) and a decorator."""

    __slots__ = ("_args", "_scopes")

    def __init__(self, *args: Any) -> None:
        self._args = args
        self._scopes: list = []

    def __enter__(self) -> Span:
        scope = _lens.start_current_span(*self._args)
        self._scopes.append(scope)
        return scope.__enter__()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        return self._scopes.pop().__exit__(exc_type, exc, tb)

    def __call__(self, function: Any) -> Any:
        import functools

        @functools.wraps(function)
        def traced(*args: Any, **kwargs: Any) -> Any:
            with _lens.start_current_span(*self._args):
                return function(*args, **kwargs)
        return traced


class Tracer:
    """OpenTelemetry Python's Tracer on lens's span path (see the module's docstring)."""

    __slots__ = ("instrumentation_scope",)

    def __init__(self, instrumentation_scope: str = "nemo.lens") -> None:
        self.instrumentation_scope = instrumentation_scope

    def start_span(self, name: str, context: Optional[Mapping[str, Any]] = None,
                   kind: SpanKind = SpanKind.INTERNAL,
                   attributes: Optional[Mapping[str, Any]] = None,
                   links: Optional[Sequence[Any]] = None, start_time: Optional[int] = None,
                   record_exception: bool = True, set_status_on_exception: bool = True) -> Span:
        """A span that is not made current: end it with end() (from any thread). Its parent is
        `context`'s span, the root of a new trace for a Context without one, or the current
        span. start_time and end(end_time) take Unix nanoseconds."""
        mode, parent = _parent_of(context)
        return _lens.start_span(name, mode, parent, links, attributes, start_time)

    def start_as_current_span(self, name: str, context: Optional[Mapping[str, Any]] = None,
                              kind: SpanKind = SpanKind.INTERNAL,
                              attributes: Optional[Mapping[str, Any]] = None,
                              links: Optional[Sequence[Any]] = None,
                              start_time: Optional[int] = None, record_exception: bool = True,
                              set_status_on_exception: bool = True,
                              end_on_exit: bool = True) -> Any:
        """A span that is the current span of its `with` block (or of each call, as a
        decorator). An Exception leaving the block adds the `exception` event (record_exception)
        and sets status ERROR "<Type>: <message>" (set_status_on_exception)."""
        if (context is None and links is None and start_time is None and end_on_exit
                and set_status_on_exception):
            if attributes:
                return _lens.span_cm(name, record_exception=record_exception, **attributes)
            if record_exception:
                return _lens.span_cm(name)
            return _lens.span_cm(name, record_exception=False)
        mode, parent = _parent_of(context)
        return _CurrentSpan(name, mode, parent, links, attributes, start_time, record_exception,
                            set_status_on_exception, end_on_exit)


_TRACER = Tracer()


def get_tracer(instrumentation_module_name: str = "nemo.lens", *args: Any, **kwargs: Any
               ) -> Tracer:
    """lens's tracer (one for the process; the name is accepted and not used)."""
    return _TRACER
