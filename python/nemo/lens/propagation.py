"""W3C Trace Context and Baggage propagation of the calling thread's current span."""

from __future__ import annotations

from typing import MutableMapping

from . import _lens
from .trace import Context, NonRecordingSpan, SpanContext, set_span_in_context

__all__ = ["extract_context", "inject_context"]


def inject_context(carrier: MutableMapping[str, str]) -> None:
    """Adds the current span's ``traceparent`` (and ``tracestate``, ``baggage`` when there are
    any) to `carrier`, e.g. HTTP headers or a dict sent to another rank. Adds nothing where no
    span is current."""
    carrier.update(_lens.inject())


def extract_context(carrier: MutableMapping[str, str]) -> Context:
    """The Context of a carrier's ``traceparent``: a parent for tracer.start_span(context=...)
    and create_linked_span(remote_context=...). Empty (a span started in it roots a new trace)
    when the carrier holds no valid traceparent."""
    remote = _lens.extract(dict(carrier))
    if remote is None:
        return Context()
    context = SpanContext(int(remote["trace_id"], 16), int(remote["span_id"], 16), True,
                          0x01 if remote["sampled"] else 0x00)
    return set_span_in_context(NonRecordingSpan(context))
