"""Rank-aware sampling: keep or drop all spans of a rank, by a deterministic hash of the rank.

``RankAwareSampler`` is NeMo Lens's class (``should_sample`` answers a bool, as the original does
without the OpenTelemetry SDK); ``NemoLensConfig(sampler_enabled=True)`` puts the same decision
into lens's span pipeline. lens's own samplers compose with it: ``standard_sampler`` (the six
OTEL_TRACES_SAMPLER samplers), ``rank_aware_sampler`` and the sampling-strategy registry
(``<PREFIX>_SAMPLING_STRATEGY``, docs/strategies.md)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ._lens import (
    Sampler,
    rank_aware_sampler,
    register_sampling_strategy,
    registered_sampling_strategies,
    standard_sampler,
    unregister_sampling_strategy,
)
from .strategies import rank_is_sampled

__all__ = [
    "RankAwareSampler", "Sampler", "rank_aware_sampler", "register_sampling_strategy",
    "registered_sampling_strategies", "standard_sampler", "unregister_sampling_strategy",
]


class RankAwareSampler:
    """Samples every span of a rank or none: ``rank_is_sampled(rank, sample_rate)``, decided
    once at construction."""

    def __init__(self, rank: int, world_size: int, sample_rate: float = 1.0) -> None:
        self._rank = rank
        self._world_size = world_size
        self._sample_rate = sample_rate
        if sample_rate >= 1.0:
            self._should_sample = True
        elif sample_rate <= 0.0:
            self._should_sample = False
        else:
            self._should_sample = rank_is_sampled(rank, sample_rate)

    def should_sample(self, parent_context: Any = None, trace_id: int = 0, name: str = "",
                      kind: Any = None, attributes: Any = None,
                      links: Optional[Sequence[Any]] = None) -> bool:
        """True when this rank's spans are sampled (the same answer for every span)."""
        return self._should_sample

    def get_description(self) -> str:
        return f"RankAwareSampler(rank={self._rank}, rate={self._sample_rate})"

    def native(self) -> Sampler:
        """The same decision as a native sampler, for register_sampling_strategy factories."""
        return rank_aware_sampler(self._rank, self._world_size, self._sample_rate)
