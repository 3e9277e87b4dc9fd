"""NemoLensConfig: the configuration of NeMo Lens, field for field, with its keyword constructor
and its prefix/fallback environment model (``from_env``).

Each library reads its own ``<PREFIX>_*`` variables first and falls back to ``NEMO_LENS_*``.
lens's own settings that the original does not have (sampling strategy, console format, file
exporter path, hang timeout, span buffer; docs/configuration.md) and the standard ``OTEL_*``
variables are read from the same prefixes when ``setup_telemetry`` builds the native
configuration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class NemoLensConfig:
    """Configuration of telemetry for one process (see docs/python.md for each field)."""

    #: Must be explicitly True to activate telemetry.
    enabled: bool = False
    #: service.name of every record.
    service_name: str = "nemo"
    #: Which ranks export: a name of nemo.lens.strategies' registry ("all_ranks", "single_rank",
    #: "sampled", "first_rank_per_node", or one registered with register_export_strategy).
    export_strategy: str = "single_rank"
    #: For ``single_rank``: which rank exports (-1 = the last rank).
    export_rank: int = -1
    #: For ``sampled``: the fraction of ranks that export (0.0-1.0).
    export_sample_rate: float = 1.0
    #: Sample spans by rank in the span pipeline (the RankAwareSampler at export_sample_rate).
    sampler_enabled: bool = False
    traces_enabled: bool = True
    metrics_enabled: bool = True
    logs_enabled: bool = False
    #: Comma-separated span-group spec (presets or group names), resolved by the SpanGroup class.
    span_groups: str = "default"
    #: ``otlp``, ``console``, ``file`` or ``none``.
    exporter: str = "otlp"
    #: Shared by every rank of a job; resolved at setup when empty (launcher ids, else generated).
    run_id: str = ""
    user: str = ""
    wandb_entity: str = ""
    wandb_project: str = ""
    #: The SpanGroup subclass that resolves span_groups (e.g. Megatron's MegatronSpanGroup).
    _span_group_cls: Optional[type] = field(default=None, repr=False)

    # Where lens's own settings are read at setup: from_env's prefixes (not fields, so the
    # dataclass has exactly NeMo Lens's fields).
    _prefix = "NEMO_LENS"
    _fallback_prefix = None
    def __post_init__(self) -> None:
        if not (0.0 <= self.export_sample_rate <= 1.0):
            raise ValueError(
                f"export_sample_rate must be in [0.0, 1.0], got {self.export_sample_rate}")

    @property
    def resolved_span_groups(self) -> frozenset:
        """span_groups resolved to a frozenset of group names by the SpanGroup class."""
        from .groups import SpanGroup

        cls = self._span_group_cls or SpanGroup
        return cls.resolve(self.span_groups)

    @classmethod
    def from_env(cls, prefix: str = "NEMO_LENS", fallback_prefix: Optional[str] = None,
                 span_group_cls: Optional[type] = None) -> "NemoLensConfig":
        """Reads ``{prefix}_KEY``, then ``{fallback_prefix}_KEY``, then the default, for each
        field (OTEL_SERVICE_NAME, WANDB_ENTITY and WANDB_PROJECT bare; export_strategy from
        EXPORT_STRATEGY, else RANK_STRATEGY). Raises ValueError naming the variable for a value
        that does not parse as its type."""

        def env(key: str, default: str = "") -> str:
            value = os.environ.get(f"{prefix}_{key}", "").strip()
            if not value and fallback_prefix:
                value = os.environ.get(f"{fallback_prefix}_{key}", "").strip()
            return value if value else default

        def boolean(key: str, default: bool) -> bool:
            value = env(key).lower()
            if not value:
                return default
            if value in ("1", "true", "yes", "on"):
                return True
            if value in ("0", "false", "no", "off"):
                return False
            raise ValueError(
                f"Invalid boolean for {prefix}_{key}: {value!r}. "
                "Expected '1'/'0', 'true'/'false', 'yes'/'no', 'on'/'off'.")

        def integer(key: str, default: int) -> int:
            value = env(key)
            if not value:
                return default
            try:
                return int(value)
            except ValueError as error:
                raise ValueError(f"Invalid integer for {prefix}_{key}: {value!r}.") from error

        def number(key: str, default: float) -> float:
            value = env(key)
            if not value:
                return default
            try:
                return float(value)
            except ValueError as error:
                raise ValueError(f"Invalid float for {prefix}_{key}: {value!r}.") from error

        config = cls(
            enabled=boolean("ENABLED", False),
            service_name=os.environ.get("OTEL_SERVICE_NAME", "").strip() or "nemo",
            # EXPORT_STRATEGY is NeMo Lens's name; RANK_STRATEGY, Megatron-LM's documented one.
            export_strategy=env("EXPORT_STRATEGY") or env("RANK_STRATEGY", "single_rank"),
            export_rank=integer("EXPORT_RANK", -1),
            export_sample_rate=number("EXPORT_SAMPLE_RATE", 1.0),
            sampler_enabled=boolean("SAMPLER_ENABLED", False),
            traces_enabled=boolean("TRACES_ENABLED", True),
            metrics_enabled=boolean("METRICS_ENABLED", True),
            logs_enabled=boolean("LOGS_ENABLED", False),
            span_groups=env("SPAN_GROUPS", "default"),
            exporter=env("EXPORTER", "otlp"),
            run_id=env("RUN_ID", ""),
            user=env("USER_ID", ""),
            wandb_entity=os.environ.get("WANDB_ENTITY", ""),
            wandb_project=os.environ.get("WANDB_PROJECT", ""),
            _span_group_cls=span_group_cls,
        )
        config._prefix = prefix
        config._fallback_prefix = fallback_prefix
        return config
