"""Gym environment-server metrics (gym.*)."""

from __future__ import annotations

from typing import Any, Optional

from ._cache import InstrumentCache

_HISTOGRAMS = (
    ("server_request_duration_ms", "gym.server.request_duration_ms",
     "Gym server request duration in milliseconds."),
    ("rollout_duration_ms", "gym.rollout.duration_ms",
     "Rollout collection duration in milliseconds."),
    ("verify_duration_ms", "gym.verify.duration_ms",
     "Verification endpoint duration in milliseconds."),
)
_GAUGES = (
    ("verify_success_rate", "gym.verify.success_rate", "Fraction of successful verifications."),
    ("active_servers", "gym.servers.active", "Number of active Gym servers."),
)


def _make(meter: Any) -> dict:
    instruments = {argument: meter.create_histogram(name=name, unit="ms", description=description)
                   for argument, name, description in _HISTOGRAMS}
    instruments.update({argument: meter.create_gauge(name=name, description=description)
                        for argument, name, description in _GAUGES})
    return instruments


_cache = InstrumentCache(_make)


def record_gym_metrics(meter: Any, server_request_duration_ms: Optional[float] = None,
                       rollout_duration_ms: Optional[float] = None,
                       verify_duration_ms: Optional[float] = None,
                       verify_success_rate: Optional[float] = None,
                       active_servers: Optional[int] = None) -> None:
    """Records the three duration histograms (ms) and sets the two gauges; None is skipped."""
    instruments = _cache.get(meter, "Gym")
    if instruments is None:
        return
    values = locals()
    for argument, *_ in _HISTOGRAMS:
        if values[argument] is not None:
            instruments[argument].record(values[argument])
    for argument, *_ in _GAUGES:
        if values[argument] is not None:
            instruments[argument].set(values[argument])
