"""The metrics API that ``handle.meter`` and ``get_meter()`` return: OpenTelemetry Python's
Meter surface (counters, up-down counters, histograms, gauges and observable instruments) on
lens's metric pipeline.

A meter keeps each instrument it made: creating the same name and kind again returns the same
instrument, so ``meter.create_histogram("x").record(1.0)`` inline records like a kept one. On a
rank that does not export, and when telemetry is off, the instruments record nothing. Nothing here
raises into training code after creation (a value that is not a number is dropped)."""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple

__all__ = [
    "CallbackOptions", "Counter", "Gauge", "Histogram", "Meter", "ObservableCounter",
    "ObservableGauge", "ObservableUpDownCounter", "Observation", "UpDownCounter",
]


class Observation:
    """One value an observable instrument's callback reports, with its attributes."""

    __slots__ = ("value", "attributes")

    def __init__(self, value: float, attributes: Optional[Mapping[str, Any]] = None) -> None:
        self.value = value
        self.attributes = attributes

    def __repr__(self) -> str:
        return f"Observation(value={self.value!r}, attributes={self.attributes!r})"


class CallbackOptions:
    """What a callback is called with (OpenTelemetry's; lens sets no timeout)."""

    __slots__ = ("timeout_millis",)

    def __init__(self, timeout_millis: float = 10_000) -> None:
        self.timeout_millis = timeout_millis


def _number(value: Any) -> Optional[float]:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _attributes(attributes: Optional[Mapping[str, Any]]) -> dict:
    return dict(attributes) if attributes else {}


class _Instrument:
    __slots__ = ("name", "unit", "description", "_native")

    def __init__(self, name: str, unit: str, description: str, native: Any) -> None:
        self.name = name
        self.unit = unit
        self.description = description
        self._native = native


class Counter(_Instrument):
    """A monotonic sum; negative amounts are dropped (as OpenTelemetry does)."""

    __slots__ = ()

    def add(self, amount: float, attributes: Optional[Mapping[str, Any]] = None,
            context: Any = None) -> None:
        value = _number(amount)
        if self._native is not None and value is not None and value >= 0:
            self._native.add(value, _attributes(attributes))


class UpDownCounter(_Instrument):
    """A sum that may go down."""

    __slots__ = ()

    def add(self, amount: float, attributes: Optional[Mapping[str, Any]] = None,
            context: Any = None) -> None:
        value = _number(amount)
        if self._native is not None and value is not None:
            self._native.add(value, _attributes(attributes))


class Histogram(_Instrument):
    """A distribution of recorded values (explicit buckets)."""

    __slots__ = ()

    def record(self, amount: float, attributes: Optional[Mapping[str, Any]] = None,
               context: Any = None) -> None:
        value = _number(amount)
        if self._native is not None and value is not None:
            self._native.record(value, _attributes(attributes))


class Gauge(_Instrument):
    """The last value set, per attribute set."""

    __slots__ = ()

    def set(self, amount: float, attributes: Optional[Mapping[str, Any]] = None,
            context: Any = None) -> None:
        value = _number(amount)
        if self._native is not None and value is not None:
            self._native.record(value, _attributes(attributes))


class _Observable(_Instrument):
    __slots__ = ()


class ObservableCounter(_Observable):
    __slots__ = ()


class ObservableUpDownCounter(_Observable):
    __slots__ = ()


class ObservableGauge(_Observable):
    __slots__ = ()


class Meter:
    """Makes instruments on a telemetry handle's meter (a meter of a handle that does not
    export makes instruments that record nothing)."""

    def __init__(self, native_handle: Any = None, name: str = "nemo.lens",
                 version: Optional[str] = None) -> None:
        self._handle = native_handle
        self.name = name
        self.version = version
        self._lock = threading.Lock()
        self._instruments: Dict[Tuple[str, str], _Instrument] = {}

    def _make(self, kind: type, name: str, unit: str, description: str,
              make: Callable[[], Any]) -> Any:
        key = (kind.__name__, name)
        with self._lock:
            instrument = self._instruments.get(key)
            if instrument is None:
                native = make() if self._handle is not None else None
                instrument = kind(name, unit, description, native)
                self._instruments[key] = instrument
            return instrument

    def create_counter(self, name: str, unit: str = "", description: str = "") -> Counter:
        return self._make(Counter, name, unit, description,
                          lambda: self._handle.counter(name, description, unit))

    def create_up_down_counter(self, name: str, unit: str = "",
                               description: str = "") -> UpDownCounter:
        return self._make(UpDownCounter, name, unit, description,
                          lambda: self._handle.up_down_counter(name, description, unit))

    def create_histogram(self, name: str, unit: str = "", description: str = "",
                         explicit_bucket_boundaries_advisory: Optional[Sequence[float]] = None
                         ) -> Histogram:
        """A histogram (the bucket advice is not taken: views set buckets, docs/metrics.md)."""
        return self._make(Histogram, name, unit, description,
                          lambda: self._handle.histogram(name, description, unit))

    def create_gauge(self, name: str, unit: str = "", description: str = "") -> Gauge:
        return self._make(Gauge, name, unit, description,
                          lambda: self._handle.gauge(name, description, unit))

    def _observable(self, kind: type, native_kind: str, name: str,
                    callbacks: Optional[Iterable[Callable]], unit: str, description: str) -> Any:
        return self._make(kind, name, unit, description,
                          lambda: self._handle.observable(native_kind, name, description, unit,
                                                          list(callbacks or ())))

    def create_observable_counter(self, name: str, callbacks: Optional[Iterable[Callable]] = None,
                                  unit: str = "", description: str = "") -> ObservableCounter:
        """Each callback(options) returns Observations, read at every export."""
        return self._observable(ObservableCounter, "counter", name, callbacks, unit, description)

    def create_observable_up_down_counter(self, name: str,
                                          callbacks: Optional[Iterable[Callable]] = None,
                                          unit: str = "", description: str = ""
                                          ) -> ObservableUpDownCounter:
        return self._observable(ObservableUpDownCounter, "up_down_counter", name, callbacks, unit,
                                description)

    def create_observable_gauge(self, name: str, callbacks: Optional[Iterable[Callable]] = None,
                                unit: str = "", description: str = "") -> ObservableGauge:
        return self._observable(ObservableGauge, "gauge", name, callbacks, unit, description)
