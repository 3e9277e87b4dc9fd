"""Export strategies: which ranks export. A strategy is a callable ``(config, rank, world_size)
-> bool``; four are built in, others are registered by name and selected with
``NemoLensConfig.export_strategy`` (or ``<PREFIX>_EXPORT_STRATEGY``)."""

from __future__ import annotations

import hashlib
import os
import threading
from typing import TYPE_CHECKING, Callable, Dict, List

if TYPE_CHECKING:
    from .config import NemoLensConfig

#: Callable taking ``(config, rank, world_size)``; True when this rank exports.
ExportStrategy = Callable[["NemoLensConfig", int, int], bool]

_REGISTRY: Dict[str, ExportStrategy] = {}
_REGISTRY_LOCK = threading.Lock()

#: The built-in names: replaced only with allow_override=True, never unregistered.
BUILTIN_STRATEGIES: frozenset = frozenset(
    {"all_ranks", "single_rank", "sampled", "first_rank_per_node"})


def _all_ranks(config: "NemoLensConfig", rank: int, world_size: int) -> bool:
    """Every rank exports."""
    return True


def _single_rank(config: "NemoLensConfig", rank: int, world_size: int) -> bool:
    """Only config.export_rank exports (-1: the last rank)."""
    chosen = config.export_rank if config.export_rank >= 0 else world_size - 1
    return rank == chosen


def rank_is_sampled(rank: int, rate: float) -> bool:
    """The `sampled` decision: a hash of the rank (MD5 of its decimal text, mod 10000) below
    `rate` x 10000. The same rank and rate give the same answer in every process."""
    digest = hashlib.md5(str(rank).encode()).hexdigest()
    return (int(digest, 16) % 10000) / 10000.0 < rate


def _sampled(config: "NemoLensConfig", rank: int, world_size: int) -> bool:
    """A deterministic fraction export_sample_rate of the ranks exports."""
    return rank_is_sampled(rank, config.export_sample_rate)


def _first_rank_per_node(config: "NemoLensConfig", rank: int, world_size: int) -> bool:
    """Local rank 0 of each node exports (LOCAL_RANK; missing means 0)."""
    return int(os.environ.get("LOCAL_RANK", "0")) == 0


def register_export_strategy(name: str, strategy: ExportStrategy, *,
                             allow_override: bool = False) -> None:
    """Registers `strategy` under `name`. Raises ValueError for an empty name, or a name already
    registered (built-in or not) unless allow_override=True."""
    if not name:
        raise ValueError("Strategy name must be a non-empty string.")
    with _REGISTRY_LOCK:
        if name in _REGISTRY and not allow_override:
            raise ValueError(
                f"Strategy {name!r} is already registered. Pass allow_override=True to replace it.")
        _REGISTRY[name] = strategy


def unregister_export_strategy(name: str) -> None:
    """Removes a registered strategy. Raises ValueError for a built-in or an unknown name."""
    if name in BUILTIN_STRATEGIES:
        raise ValueError(f"Cannot unregister built-in strategy {name!r}.")
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            raise ValueError(f"Strategy {name!r} is not registered.")
        del _REGISTRY[name]


def get_export_strategy(name: str) -> ExportStrategy:
    """The strategy registered as `name`. Raises ValueError listing the registered names."""
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            raise ValueError(
                f"Unknown export_strategy {name!r}. Registered strategies: {sorted(_REGISTRY)}.")
        return _REGISTRY[name]


def registered_strategies() -> List[str]:
    """The registered names, built-ins included, sorted."""
    with _REGISTRY_LOCK:
        return sorted(_REGISTRY)


with _REGISTRY_LOCK:
    _REGISTRY.update({"all_ranks": _all_ranks, "single_rank": _single_rank, "sampled": _sampled,
                      "first_rank_per_node": _first_rank_per_node})
