"""nemo.lens: telemetry for distributed training on the OpenTelemetry data model.

NeMo Lens's API (module layout, names, signatures, defaults, exceptions) on lens-cpp's native
core: spans are recorded by a C-level span path, metrics and logs by native pipelines, exported
as OTLP (gRPC, HTTP), console lines or files, without the OpenTelemetry Python SDK::

    from nemo.lens import NemoLensConfig, setup_telemetry, managed_span
    handle = setup_telemetry(NemoLensConfig.from_env(), rank, world_size)
    with managed_span("step", "train_step", iteration=3) as span:
        ...
    handle.shutdown()

See docs/python.md (with a table of every difference from the original).
"""

import os as _os

from . import _lens
from .config import NemoLensConfig
from .distributed import broadcast_trace_context, create_linked_span, torch_broadcast
from .groups import SpanGroup
from .handle import TelemetryHandle, current_handle as _current_handle, setup_telemetry
from .helpers import (
    DEFAULT_REDACT_KEYS,
    managed_span,
    redact_value,
    safe_set_span_attributes,
    span_cm,
    trace_fn,
)
from .metrics import Meter
from .package_info import (
    __contact_emails__,
    __contact_names__,
    __download_url__,
    __homepage__,
    __package_name__,
    __repository_url__,
    __version__,
)
from .propagation import extract_context, inject_context
from .state import is_span_group_enabled, set_enabled_span_groups
from .strategies import (
    ExportStrategy,
    register_export_strategy,
    registered_strategies,
    unregister_export_strategy,
)
from .trace import Tracer, get_tracer as _get_tracer

# lens's own additions (not in NeMo Lens): documented in docs/python.md.
from ._lens import TraceSeed, note_step_completed, trace_root_span


def get_tracer(name: str = "nemo.lens") -> Tracer:
    """lens's tracer (one per process; the name is accepted and not used)."""
    return _get_tracer(name)


def get_meter(name: str = "nemo.lens") -> Meter:
    """The meter of the current telemetry handle (one that records nothing before setup, on a
    rank that does not export, or when telemetry is off)."""
    handle = _current_handle()
    return handle.meter if handle is not None else Meter(None, name)


def get_telemetry():
    """The handle of the last setup_telemetry in this process, or None (lens's addition)."""
    return _current_handle()


def share_trace_seed(src_rank: int = 0) -> TraceSeed:
    """A collective over torch.distributed (every rank calls it): `src_rank`'s random seed, from
    which every rank derives the same trace id for the same iteration
    (seed.trace_id_for(iteration), for trace_root_span). Without torch.distributed each process
    has its own (lens's addition)."""
    broadcast = torch_broadcast()
    if broadcast is None:
        return _lens.share_trace_seed(None, 0, 1, src_rank)
    import torch.distributed as dist
    return _lens.share_trace_seed(broadcast, dist.get_rank(), dist.get_world_size(), src_rank)


def _after_fork_in_child() -> None:
    # The native core turned telemetry off in the child (it may set up again); the parent's
    # handle and the spans the forking thread had entered are not the child's.
    from . import handle as _handle_module
    _handle_module._forget_after_fork()
    _lens._forget_open_spans()


_os.register_at_fork(after_in_child=_after_fork_in_child)

__all__ = [
    "__version__",
    "__package_name__",
    "__contact_names__",
    "__contact_emails__",
    "__homepage__",
    "__repository_url__",
    "__download_url__",
    "NemoLensConfig",
    "SpanGroup",
    "TelemetryHandle",
    "setup_telemetry",
    "span_cm",
    "managed_span",
    "trace_fn",
    "safe_set_span_attributes",
    "redact_value",
    "DEFAULT_REDACT_KEYS",
    "inject_context",
    "extract_context",
    "get_tracer",
    "get_meter",
    "is_span_group_enabled",
    "set_enabled_span_groups",
    "broadcast_trace_context",
    "create_linked_span",
    "ExportStrategy",
    "register_export_strategy",
    "registered_strategies",
    "unregister_export_strategy",
]
