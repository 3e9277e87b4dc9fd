"""setup_telemetry and TelemetryHandle: set telemetry up once per process, and the handle with
its tracer and meter.

``setup_telemetry`` decides whether this rank exports (nemo.lens.strategies), resolves the span
groups with the config's SpanGroup class, and starts lens's native pipelines (spans, metrics,
logs, as the config says). Configuration errors raise ValueError naming the variable or field,
the bad value and what is accepted; after setup nothing raises into training code."""

from __future__ import annotations

import atexit
import os
import threading
import uuid
from typing import TYPE_CHECKING, Any, Dict, Optional

from . import _lens
from .distributed import torch_broadcast
from .metrics import Meter
from .trace import Tracer, get_tracer

if TYPE_CHECKING:
    from .config import NemoLensConfig
    from .strategies import ExportStrategy

_INSTRUMENTATION_SCOPE = "nemo.lens"
_INITIALIZED = False

# Shutdown at interpreter exit is bounded by this many milliseconds.
ATEXIT_SHUTDOWN_TIMEOUT_MS = 5000

_lock = threading.Lock()
_current: Optional["TelemetryHandle"] = None
_atexit_registered = False


class TelemetryHandle:
    """The tracer and meter of this process (they record nothing on a rank that does not
    export, or when telemetry is off), with is_exporting, force_flush and shutdown."""

    def __init__(self, tracer: Tracer, meter: Meter, is_exporting: bool = False,
                 native: Any = None) -> None:
        self._tracer = tracer
        self._meter = meter
        self.is_exporting = is_exporting
        self._native = native
        self._shutdown_done = False

    @property
    def tracer(self) -> Tracer:
        return self._tracer

    @property
    def meter(self) -> Meter:
        return self._meter

    @property
    def run_id(self) -> str:
        """The run id every rank of the job shares ("" when telemetry is off)."""
        return self._native.run_id if self._native is not None else ""

    @property
    def stats(self) -> Dict[str, int]:
        """lens's own counts: spans started/exported/dropped, metric points, log records."""
        return dict(self._native.stats) if self._native is not None else {}

    def force_flush(self, timeout_ms: int = 5000) -> bool:
        """Exports what has finished so far; False when it did not finish within timeout_ms."""
        return self._native.force_flush(timeout_ms) if self._native is not None else True

    def shutdown(self, timeout_ms: int = 5000) -> None:
        """Ends spans still open (marked nemo.span.truncated), flushes and stops every pipeline
        within timeout_ms. Idempotent: only the first call does anything."""
        if self._shutdown_done:
            return
        self._shutdown_done = True
        if self._native is not None:
            self._native.shutdown(timeout_ms)


def _should_export(config: "NemoLensConfig", rank: int, world_size: int,
                   override: Optional["ExportStrategy"] = None) -> bool:
    """Whether this rank exports: `override` when given, else the registered strategy named by
    config.export_strategy (ValueError when none is registered under that name)."""
    from .strategies import get_export_strategy

    strategy = override if override is not None else get_export_strategy(config.export_strategy)
    return bool(strategy(config, rank, world_size))


def _native_config(config: "NemoLensConfig", exporting: bool) -> Any:
    """lens's native configuration: lens's own settings from the config's prefixes, then every
    field of `config`. Span groups are resolved here (by the config's SpanGroup class) and set
    after setup, so the native spec is left empty."""
    native = _lens.NativeConfig.from_env(config._prefix, config._fallback_prefix or "")
    native.enabled = config.enabled
    native.service_name = config.service_name
    # Which ranks export was decided in Python; the native strategy only has to let it through.
    native.export_strategy = "all_ranks"
    native.export_rank = config.export_rank
    native.export_sample_rate = config.export_sample_rate
    if config.sampler_enabled and not native.sampling_strategy:
        native.sampling_strategy = "rank_aware"
    native.traces_enabled = config.traces_enabled
    native.metrics_enabled = config.metrics_enabled
    native.logs_enabled = config.logs_enabled
    native.span_groups = ","
    native.exporter = config.exporter
    native.run_id = config.run_id
    native.user = config.user
    native.wandb_entity = config.wandb_entity
    native.wandb_project = config.wandb_project
    return native


def _shutdown_at_exit() -> None:
    handle = _current
    if handle is not None:
        handle.shutdown(ATEXIT_SHUTDOWN_TIMEOUT_MS)
    _lens._stop_observing()


def current_handle() -> Optional[TelemetryHandle]:
    """The handle of the last setup_telemetry in this process (None in a forked child)."""
    return _current


def _forget_after_fork() -> None:
    global _current, _INITIALIZED
    _current = None
    _INITIALIZED = False


def setup_telemetry(config: "NemoLensConfig", rank: int = 0, world_size: int = 1,
                    resource_attributes: Optional[dict] = None, span_exporter: Any = None,
                    metric_reader: Any = None, export_strategy: Optional["ExportStrategy"] = None,
                    _allow_reinit: bool = False) -> TelemetryHandle:
    """Sets telemetry up for this process and returns its handle; call it once per process.

    Disabled: a handle that records nothing, every span group off. Enabled on an exporting rank:
    lens's pipelines with the config's exporter, the resolved span groups on. Enabled on another
    rank: like disabled. A second enabled setup raises RuntimeError unless _allow_reinit.
    `export_strategy` (a callable (config, rank, world_size) -> bool) decides instead of the
    registry. span_exporter and metric_reader (OpenTelemetry SDK objects) are not taken: lens
    exports natively (ValueError says what to use instead). resource_attributes are added to
    every record's resource. Raises ValueError for a bad configuration (naming the variable or
    field, the value and what is accepted)."""
    global _INITIALIZED, _current, _atexit_registered
    if span_exporter is not None or metric_reader is not None:
        which = "span_exporter" if span_exporter is not None else "metric_reader"
        raise ValueError(
            f"setup_telemetry({which}=...) takes an OpenTelemetry SDK object, which lens does not "
            "use: lens exports natively. Choose the exporter with NemoLensConfig.exporter "
            "('otlp', 'console', 'file' or 'none') and the OTEL_EXPORTER_OTLP_* variables "
            "(docs/exporters.md); in tests, read what lens exported with exporter='file' or a "
            "`lens collect` receiver.")
    if _INITIALIZED and config.enabled and not _allow_reinit:
        raise RuntimeError(
            "setup_telemetry() has already been initialised for this process. "
            "Call it once at startup. Pass _allow_reinit=True to override (testing only).")

    if not config.run_id and not config.enabled:
        # As NeMo Lens: a run id even when off (SLURM's job id, else 12 random hex digits). When
        # on, the native core resolves it (configured, launcher ids, else generated).
        config.run_id = os.environ.get("SLURM_JOB_ID", "") or uuid.uuid4().hex[:12]
    # The strategy decides (and an unknown name raises) whether or not telemetry is on, as in
    # NeMo Lens.
    should_export = _should_export(config, rank, world_size, export_strategy)
    exporting = config.enabled and should_export
    groups = config.resolved_span_groups if exporting else frozenset()
    native_handle = None
    with _lock:
        previous = _current
        if previous is not None and previous._native is not None and not previous._shutdown_done:
            # The process's pipelines are replaced (a reinit, or a disabled setup after an
            # enabled one): the old handle's are shut down first.
            previous.shutdown(1000)
        if config.enabled:
            native = _native_config(config, exporting)
            # Without a configured run id or a launcher's (SLURM, torchrun's rendezvous id, ...),
            # rank 0 shares the one it generates over torch.distributed when the job has
            # initialised it: every rank of such a job calls setup_telemetry, as Megatron-LM's.
            broadcast = torch_broadcast() if not config.run_id and world_size > 1 else None
            native_handle = _lens.setup_telemetry(
                native, rank=rank, world_size=world_size,
                resource_attributes=dict(resource_attributes or {}), allow_reinit=True,
                broadcast=broadcast, exporting=exporting)
            if not config.run_id:
                config.run_id = native_handle.run_id
        exporting_now = native_handle is not None and native_handle.is_exporting()
        _lens.set_enabled_span_groups(set(groups) if exporting_now else set())
        handle = TelemetryHandle(get_tracer(_INSTRUMENTATION_SCOPE),
                                 Meter(native_handle if exporting_now else None,
                                       _INSTRUMENTATION_SCOPE),
                                 is_exporting=exporting_now, native=native_handle)
        _current = handle
        if config.enabled:
            _INITIALIZED = True
        if not _atexit_registered:
            atexit.register(_shutdown_at_exit)
            _atexit_registered = True
    return handle
