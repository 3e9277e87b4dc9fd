"""lens: telemetry for distributed training on the OpenTelemetry data model, for Python.

The native core of lens-cpp behind the API of the Python original (NeMo Lens):

    import lens
    config = lens.NemoLensConfig.from_env("MEGATRON_OTEL", "NEMO_LENS")
    handle = lens.setup_telemetry(config, rank=rank, world_size=world_size)
    with lens.managed_span("step", "megatron.train_step", iteration=3):
        ...
    handle.shutdown(5000)

Spans are recorded by lens's native span path: a ``with lens.managed_span(...)`` whose group is
off costs one flag load; one that records allocates nothing in C++. After setup nothing here
raises into training code. See docs/python.md.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from typing import Any, Callable, Dict, Optional

from . import _lens
from ._lens import (
    Counter,
    Gauge,
    Histogram,
    NemoLensConfig,
    Sampler,
    Span,
    SpanSite,
    TelemetryHandle,
    TracedFunction,
    TraceRootSpan,
    TraceSeed,
    create_linked_span,
    enabled_span_groups,
    extract,
    inject,
    is_span_group_enabled,
    managed_span,
    note_step_completed,
    rank_aware_sampler,
    register_rank_strategy,
    register_sampling_strategy,
    register_span_groups,
    registered_rank_strategies,
    registered_sampling_strategies,
    registered_span_groups,
    resolve_span_groups,
    set_enabled_span_groups,
    span_cm,
    standard_sampler,
    trace_fn,
    trace_root_span,
    unregister_rank_strategy,
    unregister_sampling_strategy,
)

__all__ = [
    "Counter", "Gauge", "Histogram", "LensLoggingHandler", "NemoLensConfig", "Sampler", "Span",
    "SpanSite", "TelemetryHandle", "TraceRootSpan", "TraceSeed", "TracedFunction",
    "broadcast_trace_context", "create_linked_span", "enabled_span_groups", "extract",
    "get_telemetry", "inject", "is_span_group_enabled", "managed_span", "note_step_completed", "rank_aware_sampler",
    "register_export_strategy", "register_rank_strategy", "register_sampling_strategy",
    "register_span_groups", "registered_rank_strategies", "registered_sampling_strategies",
    "registered_span_groups", "resolve_span_groups", "set_enabled_span_groups",
    "setup_telemetry", "share_trace_seed", "span_cm", "standard_sampler", "torch_broadcast",
    "trace_fn", "trace_root_span", "unregister_rank_strategy", "unregister_sampling_strategy",
]

# The seed's name for register_rank_strategy.
register_export_strategy = register_rank_strategy

_state_lock = threading.Lock()
_handle: Optional[TelemetryHandle] = None
_atexit_registered = False

# Shutdown at interpreter exit is bounded by this many milliseconds.
ATEXIT_SHUTDOWN_TIMEOUT_MS = 5000


def setup_telemetry(config: NemoLensConfig, rank: Optional[int] = None,
                    world_size: Optional[int] = None,
                    resource_attributes: Optional[Dict[str, Any]] = None,
                    _allow_reinit: bool = False,
                    broadcast: Optional[Callable[[bytes, int], bytes]] = None
                    ) -> TelemetryHandle:
    """Sets telemetry up for this process and returns its handle.

    rank/world_size default to the launcher's variables (torchrun, MPI, SLURM). Raises ValueError
    with the message of the C++ core (naming the variable, the bad value and what is accepted)
    when the configuration is invalid; after that, nothing raises. The handle is shut down at
    interpreter exit (atexit) within ATEXIT_SHUTDOWN_TIMEOUT_MS.

    broadcast (e.g. torch_broadcast()) is the job's collective: when no run id is configured
    and the launcher gives none, rank 0 generates one and shares it, so every rank calls setup.
    """
    global _handle, _atexit_registered
    handle = _lens.setup_telemetry(config, rank=rank, world_size=world_size,
                                   resource_attributes=resource_attributes or {},
                                   allow_reinit=_allow_reinit, broadcast=broadcast)
    with _state_lock:
        _handle = handle
        if not _atexit_registered:
            atexit.register(_shutdown_at_exit)
            _atexit_registered = True
    return handle


def get_telemetry() -> Optional[TelemetryHandle]:
    """The handle of the last setup_telemetry in this process, or None."""
    return _handle


def _shutdown_at_exit() -> None:
    handle = _handle
    if handle is not None:
        handle.shutdown(ATEXIT_SHUTDOWN_TIMEOUT_MS)


def _after_fork_in_child() -> None:
    # The core turned telemetry off in the child (it may set up again); the parent's handle
    # and the spans the forking thread had entered are not the child's.
    global _handle
    _handle = None
    _lens._forget_open_spans()


os.register_at_fork(after_in_child=_after_fork_in_child)


class LensLoggingHandler(logging.Handler):
    """A logging.Handler whose records become lens log records, correlated with the active span
    (its trace and span ids are stamped on the record). Records flow when setup_telemetry built
    a log pipeline (P_LOGS_ENABLED=1 on an exporting rank). Never raises from emit()."""

    def __init__(self, level: int = logging.INFO) -> None:
        super().__init__(level)
        _lens.setup_logging_bridge(level)

    def setLevel(self, level: Any) -> None:  # noqa: N802 (logging's name)
        super().setLevel(level)
        _lens.setup_logging_bridge(self.level)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _lens.emit_log(record.levelno, self.format(record), record.name, record.pathname,
                           record.lineno, record.funcName or "")
        except Exception:  # never into the caller's code
            pass


def broadcast_trace_context(src: int = 0, group: Any = None) -> Dict[str, str]:
    """Rank `src`'s current span context (W3C headers), broadcast over torch.distributed to
    every rank of `group`; returns it (an empty dict when torch.distributed is not initialised).
    Link to it with create_linked_span(name, carrier)."""
    try:
        import torch.distributed as dist
    except ImportError:
        return {}
    if not dist.is_available() or not dist.is_initialized():
        return {}
    payload = [inject() if dist.get_rank() == src else None]
    dist.broadcast_object_list(payload, src=src, group=group)
    return payload[0] or {}


def torch_broadcast(group: Any = None) -> Optional[Callable[[bytes, int], bytes]]:
    """broadcast(payload, root) -> root's payload over torch.distributed (`group`, default the
    world), for setup_telemetry and share_trace_seed; None when torch.distributed is not
    initialised. Every rank must call what it is given to."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None

    def broadcast(payload: bytes, root: int) -> bytes:
        box = [payload if dist.get_rank() == root else None]
        dist.broadcast_object_list(box, src=root, group=group)
        return box[0]

    return broadcast


def share_trace_seed(src_rank: int = 0) -> TraceSeed:
    """A collective over torch.distributed (every rank calls it): rank `src_rank`'s random seed,
    from which every rank derives the same trace id for the same iteration
    (seed.trace_id_for(iteration), for trace_root_span). Without torch.distributed each process
    has its own seed."""
    broadcast = torch_broadcast()
    if broadcast is None:
        return _lens.share_trace_seed(None, 0, 1, src_rank)
    import torch.distributed as dist
    return _lens.share_trace_seed(broadcast, dist.get_rank(), dist.get_world_size(), src_rank)
