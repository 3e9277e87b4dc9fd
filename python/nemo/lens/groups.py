"""SpanGroup: the shared span groups and presets, and how a span-group spec resolves. Libraries
subclass it with their own groups and presets (``ALL_GROUPS``, ``_PRESETS``), as Megatron-LM's
MegatronSpanGroup does; ``NemoLensConfig(_span_group_cls=...)`` picks the class that resolves."""

from __future__ import annotations

from typing import ClassVar, Final


class SpanGroup:
    """Named span groups. Presets: ``default`` (job, checkpoint, evaluate), ``per_step`` (adds
    the per-step groups), ``all`` (every group)."""

    # Coarse (in "default").
    JOB = "job"
    CHECKPOINT = "checkpoint"
    EVALUATE = "evaluate"
    # Per step (in "per_step").
    MODEL_INIT = "model_init"
    LOAD_CHECKPOINT = "load_checkpoint"
    STEP = "step"
    FORWARD_BACKWARD = "forward_backward"
    OPTIMIZER = "optimizer"

    ALL_GROUPS: Final[frozenset] = frozenset(
        [JOB, CHECKPOINT, EVALUATE, MODEL_INIT, LOAD_CHECKPOINT, STEP, FORWARD_BACKWARD,
         OPTIMIZER])

    _PRESETS: ClassVar[dict] = {
        "default": frozenset([JOB, CHECKPOINT, EVALUATE]),
        "per_step": frozenset([JOB, CHECKPOINT, EVALUATE, MODEL_INIT, LOAD_CHECKPOINT, STEP,
                               FORWARD_BACKWARD, OPTIMIZER]),
        "all": ALL_GROUPS,
    }

    @classmethod
    def resolve(cls, spec: str) -> frozenset:
        """The groups of a spec: comma-separated presets and group names, in any case; empty
        parts are skipped. Raises ValueError for an unknown name, listing the valid ones."""
        result: set = set()
        for part in (p.strip().lower() for p in spec.split(",") if p.strip()):
            if part in cls._PRESETS:
                result |= cls._PRESETS[part]
            elif part in cls.ALL_GROUPS:
                result.add(part)
            else:
                valid = sorted(cls.ALL_GROUPS | set(cls._PRESETS))
                raise ValueError(f"Unknown span group or preset: {part!r}. Valid options: {valid}")
        return frozenset(result)

    @classmethod
    def categories(cls) -> dict:
        """Each preset with its groups, and ``groups`` with every group (for documentation and
        `lens config`-style listings)."""
        out = {name: frozenset(groups) for name, groups in cls._PRESETS.items()}
        out["groups"] = frozenset(cls.ALL_GROUPS)
        return out
