"""Trace context across Ray remote calls: the driver injects a carrier into the call, the worker
resumes the trace under it. Ray itself is not imported (nor needed to import this module)."""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from ..propagation import extract_context, inject_context
from ..trace import Context, Tracer, get_current_span, get_tracer, set_span_in_context


def inject_ray_context() -> dict:
    """A carrier with the current trace context, for the driver side of a remote call."""
    carrier: dict = {}
    inject_context(carrier)
    return carrier


def extract_ray_context(carrier: Optional[dict] = None) -> Context:
    """The Context of a carrier, for the worker side; without one, the current context (its
    span, when one is current)."""
    if carrier is not None:
        return extract_context(carrier)
    current = get_current_span()
    return set_span_in_context(current) if current.get_span_context().is_valid else Context()


def traced_remote_call(method: Callable, tracer: Optional[Tracer] = None) -> Callable:
    """Wraps a worker method: each call is a span named after its qualified name, a child of the
    context in the `_otel_carrier` keyword argument (which the method does not receive)."""

    @functools.wraps(method)
    def wrapper(*args: Any, _otel_carrier: Optional[dict] = None, **kwargs: Any) -> Any:
        with (tracer or get_tracer("nemo.lens.ray")).start_as_current_span(
                method.__qualname__, context=extract_ray_context(_otel_carrier)):
            return method(*args, **kwargs)

    return wrapper


def ray_dispatch_with_context(remote_fn: Any, *args: Any, _carrier: Optional[dict] = None,
                              **kwargs: Any) -> Any:
    """remote_fn.remote(*args, _otel_carrier=carrier, **kwargs), the carrier being the current
    context unless `_carrier` is given."""
    return remote_fn.remote(*args, _otel_carrier=_carrier if _carrier is not None
                            else inject_ray_context(), **kwargs)
