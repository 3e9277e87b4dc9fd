"""Trace context alongside tensors sent between pipeline stages: serialize the current context
to bytes on the sender, turn the bytes back into a parent or link context on the receiver."""

from __future__ import annotations

import json
from typing import Any, Optional

from ..propagation import extract_context, inject_context
from ..trace import Context, get_current_span, set_span_in_context


def serialize_context() -> bytes:
    """The current trace context as JSON bytes of a W3C carrier."""
    carrier: dict = {}
    inject_context(carrier)
    return json.dumps(carrier).encode("utf-8")


def deserialize_context(data: bytes) -> Optional[Any]:
    """The decoded JSON of serialize_context's bytes (a carrier dict); None when the bytes are not
    JSON text."""
    try:
        return json.loads(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def extract_nccl_context(data: bytes) -> Context:
    """The Context of received bytes; the calling thread's current context (its current span,
    none when no span is open) when the bytes do not decode, as NeMo Lens does."""
    carrier = deserialize_context(data)
    if not isinstance(carrier, dict):
        return set_span_in_context(get_current_span())
    return extract_context(carrier)
