"""One set of instruments per meter, made on first use (a meter keeps its instruments too)."""

import logging
import weakref
from typing import Any, Callable, Dict, Optional

_logger = logging.getLogger("nemo.lens.instruments")


class InstrumentCache:
    def __init__(self, make: Callable[[Any], Dict[str, Any]]) -> None:
        self._make = make
        self._by_meter: "weakref.WeakKeyDictionary[Any, Dict[str, Any]]" = \
            weakref.WeakKeyDictionary()

    def get(self, meter: Any, what: str) -> Optional[Dict[str, Any]]:
        instruments = self._by_meter.get(meter)
        if instruments is None:
            try:
                instruments = self._make(meter)
            except Exception:  # a broken meter must not break the caller
                _logger.warning("Failed to create %s metric instruments", what, exc_info=True)
                return None
            self._by_meter[meter] = instruments
        return instruments
