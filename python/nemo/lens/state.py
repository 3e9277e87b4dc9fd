"""Which span groups are on, and the pipeline-parallel trace carrier. Importable from anywhere
without the rest of the package. The enabled groups live in lens's native core: every
instrumentation site (Python or C++) reads the same flags, set by setup_telemetry."""

from __future__ import annotations

import threading
from typing import Optional

from . import _lens


def set_enabled_span_groups(groups: frozenset) -> None:
    """Turns exactly `groups` on (every other group off). setup_telemetry calls it; later calls
    override it (tests do)."""
    _lens.set_enabled_span_groups(set(groups))


def is_span_group_enabled(group: str) -> bool:
    """True when the named group is on. False before setup_telemetry, on a rank that does not
    export, and when telemetry is off. A group that is not a str (None, a number) is never on, as
    in NeMo Lens, whose check is `group in <set of names>`; an unhashable one raises TypeError
    there and here."""
    try:
        return _lens.is_span_group_enabled(group)
    except TypeError:  # costs nothing on the str path
        hash(group)
        return False


_PP_LOCK = threading.Lock()
_PP_TRACE_CARRIER: Optional[dict] = None


def set_pp_trace_carrier(carrier: Optional[dict]) -> None:
    """Keeps the pipeline-parallel trace carrier (a W3C carrier from broadcast_trace_context)
    for linking spans across stages."""
    global _PP_TRACE_CARRIER
    with _PP_LOCK:
        _PP_TRACE_CARRIER = carrier


def get_pp_trace_carrier() -> Optional[dict]:
    """The carrier set_pp_trace_carrier kept, or None."""
    return _PP_TRACE_CARRIER
