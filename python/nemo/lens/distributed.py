"""Across ranks: broadcast a trace context from one rank to all (one trace for a distributed
step), spans linked to a remote context (pipeline stages), and counted collectives (each
collective's process group, operation, size and per-group sequence number, seen by the hang
watchdog while it is open; docs/collectives.md)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Mapping, Optional, Sequence

from . import _lens
from .propagation import extract_context, inject_context
from .trace import Link, Tracer, get_current_span

__all__ = ["broadcast_trace_context", "create_linked_span", "torch_broadcast",
           "counted_collective"]


@contextlib.contextmanager
def counted_collective(group: str, ranks: Sequence[int], op: str,
                       nbytes: int = 0) -> Iterator[int]:
    """Counts one collective of process group `group` (its global `ranks`, kept from the first
    call for that name): entered on entry, finished on exit (also when it raises). Yields its
    per-group sequence number, for the span's dl.collective.seq. A hang inside it shows in the
    hang reports and `lens run`'s verdict."""
    counter = _lens.collective_group(group, list(ranks))
    seq = _lens.collective_enter(counter, op, int(nbytes))
    try:
        yield seq
    finally:
        _lens.collective_finish(counter, seq)


def _world(dist: Any, group: Any) -> tuple:
    """The counter name and global ranks of `group` (None: the world)."""
    if group is None:
        return "world", range(dist.get_world_size())
    ranks = dist.get_process_group_ranks(group)
    name = getattr(group, "group_name", None) or "ranks " + ",".join(str(r) for r in ranks)
    return name, ranks


def broadcast_trace_context(rank: int, src_rank: int = 0) -> Optional[dict]:
    """A collective over torch.distributed (every rank calls it): `src_rank`'s current trace
    context as a W3C carrier dict, on every rank (empty when `src_rank` has no current span).
    None when torch.distributed is not available or not initialised."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None
    box = [None]
    if rank == src_rank:
        carrier: dict = {}
        inject_context(carrier)
        box[0] = carrier
    name, ranks = _world(dist, None)
    with counted_collective(name, ranks, "broadcast"):
        dist.broadcast_object_list(box, src=src_rank)
    return dict(box[0]) if box[0] is not None else None


def create_linked_span(tracer: Optional[Tracer], name: str, remote_context: Any = None,
                       remote_carrier: Optional[Mapping[str, str]] = None,
                       **attributes: Any) -> Any:
    """A started span `name` (a child of the current span) with a link to the span of
    `remote_context` (an extract_context result) or `remote_carrier` (a W3C carrier); the caller
    ends it. An invalid or absent remote context gives an unlinked span. `tracer` may be None
    (lens has one tracer)."""
    if remote_carrier is not None and remote_context is None:
        remote_context = extract_context(dict(remote_carrier))
    links = []
    if remote_context is not None:
        span_context = get_current_span(remote_context).get_span_context()
        if span_context.is_valid:
            links.append(Link(span_context))
    return _lens.start_span(name, 0, None, links, attributes or None, None)


def torch_broadcast(group: Any = None) -> Any:
    """broadcast(payload: bytes, root: int) -> bytes over torch.distributed (`group`, default the
    world), for setup_telemetry's run id and share_trace_seed; None when torch.distributed is
    not initialised (lens's addition)."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if not dist.is_available() or not dist.is_initialized():
        return None

    def broadcast(payload: bytes, root: int) -> bytes:
        box = [payload if dist.get_rank() == root else None]
        name, ranks = _world(dist, group)
        with counted_collective(name, ranks, "broadcast", len(payload) if payload else 0):
            dist.broadcast_object_list(box, src=root, group=group)
        return box[0]

    return broadcast
