"""nemo.lens.megatron: Megatron-LM's side of telemetry for a Python trainer.

What Megatron-LM's ``_set_telemetry()`` (``megatron/training/global_vars.py``), its
``MegatronSpanGroup`` and its ``record_training_metrics`` do, for trainers that are not Megatron-LM
itself (the example trainers here), with the names, keys, groups and defaults of the C++
integration in megatron/::

    import argparse
    from nemo.lens import managed_span
    import nemo.lens.megatron as lm
    parser = argparse.ArgumentParser()
    lm.add_otel_args(parser)          # --otel-enabled, --otel-service-name, --otel-span-groups
    args = parser.parse_args()
    handle = lm.set_telemetry(args)   # MEGATRON_OTEL_* with NEMO_LENS_* as fallback
    with managed_span(lm.TRAIN.group, lm.TRAIN.name):
        ...

The span catalogue (``PRETRAIN``, ``TRAIN_STEP``, ...), the groups and presets of the Megatron
vocabulary and the span attribute keys are constants here; tests check them against the C++
tables they mirror.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, ClassVar, Dict, Final, NamedTuple, Optional, Tuple

from . import _lens
from .config import NemoLensConfig
from .groups import SpanGroup
from .handle import TelemetryHandle, setup_telemetry
from .logging_bridge import setup_logging_bridge

__all__ = [
    "ALL_GROUPS", "CATALOGUE", "DEFAULT_SERVICE_NAME", "FALLBACK_PREFIX", "MEGATRON_GROUPS",
    "MegatronSpanGroup", "PREFIX", "PRESETS", "SpanDef", "TRAINING_METRICS", "TRAINING_RESOURCE_ATTRIBUTES",
    "add_otel_args", "attributes", "config_from_args", "config_from_env", "get_telemetry",
    "groups", "record_training_metrics", "register_span_groups", "set_telemetry",
    "training_resource_attributes",
]

PREFIX = "MEGATRON_OTEL"
FALLBACK_PREFIX = "NEMO_LENS"
DEFAULT_SERVICE_NAME = "megatron-lm"


class MegatronSpanGroup(SpanGroup):
    """The span groups of Megatron-LM: the shared ones and Megatron's own, with its presets
    (``default`` adds first_iteration and inference; ``per_step`` adds communication,
    data_loading, first_iteration and inference; ``profiling`` and ``all`` are every group).
    Megatron-LM defines the same class in megatron/core/telemetry/span_groups.py."""

    MICROBATCH = "microbatch"                  # per-microbatch forward/backward
    LAYER = "layer"                            # per-layer forward breakdown
    COMMUNICATION = "communication"            # P2P and gradient sync
    ACTIVATION_OFFLOAD = "activation_offload"  # GPU<->CPU activation offload/reload
    DATA_LOADING = "data_loading"              # dataset/dataloader/batches
    FIRST_ITERATION = "first_iteration"        # the warm-up iteration
    TRACE_REGION = "trace_region"              # shadowed trace regions
    INFERENCE = "inference"                    # inference-server requests

    ALL_GROUPS: Final[frozenset] = SpanGroup.ALL_GROUPS | frozenset((
        MICROBATCH, LAYER, COMMUNICATION, ACTIVATION_OFFLOAD, DATA_LOADING, FIRST_ITERATION,
        TRACE_REGION, INFERENCE))
    _PRESETS: ClassVar[dict] = {
        "default": SpanGroup._PRESETS["default"] | {FIRST_ITERATION, INFERENCE},
        "per_step": SpanGroup._PRESETS["per_step"] | {
            COMMUNICATION, DATA_LOADING, FIRST_ITERATION, INFERENCE},
        "profiling": ALL_GROUPS,
        "all": ALL_GROUPS,
    }


class groups(MegatronSpanGroup):  # noqa: N801 (a namespace of constants, as lens::megatron::groups)
    """The span groups of the Megatron vocabulary (MegatronSpanGroup's: the base groups of
    namespace `lens` and Megatron's own) and its preset names (docs/span-groups.md,
    "Vocabularies")."""
    NAMESPACE = "megatron"
    PRESET_DEFAULT = "default"
    PRESET_PER_STEP = "per_step"
    PRESET_PROFILING = "profiling"
    PRESET_ALL = "all"


MEGATRON_GROUPS: Tuple[str, ...] = (
    groups.MICROBATCH, groups.LAYER, groups.COMMUNICATION, groups.ACTIVATION_OFFLOAD,
    groups.DATA_LOADING, groups.FIRST_ITERATION, groups.TRACE_REGION, groups.INFERENCE)
ALL_GROUPS = MegatronSpanGroup.ALL_GROUPS
PRESETS: Dict[str, frozenset] = dict(MegatronSpanGroup._PRESETS)


class attributes:  # noqa: N801 (a namespace of constants, as lens::megatron::spans::attributes)
    """The documented span attribute keys (docs/megatron.md, "The span hierarchy")."""
    MODEL_TYPE = "megatron.model_type"              # pretrain
    TRAIN_ITERS = "megatron.train_iters"            # pretrain, train
    GLOBAL_BATCH_SIZE = "megatron.global_batch_size"  # pretrain
    ITERATION = "megatron.iteration"                # train_step, first_iteration, save_checkpoint
    LOSS = "megatron.loss"                          # train_step
    GRAD_NORM = "megatron.grad_norm"                # train_step, optimizer_step
    LEARNING_RATE = "megatron.learning_rate"        # train_step
    NUM_MICROBATCHES = "megatron.num_microbatches"  # forward_backward
    MICROBATCH_ID = "megatron.microbatch_id"        # microbatch.forward
    EVAL_ITERS = "megatron.eval_iters"              # evaluate
    EVAL_ITERATION = "megatron.eval_iteration"      # evaluate.step
    UPDATE_SUCCESSFUL = "megatron.update_successful"  # optimizer_step
    LAYER_NUMBER = "megatron.layer_number"          # layer.forward
    PIPELINE_RANK = "dl.pipeline_parallel.rank"     # pp.recv_forward.linked
    DL_MICROBATCH_ID = "dl.microbatch_id"           # pp.recv_forward.linked


class SpanDef(NamedTuple):
    """A span of the catalogue: its name, its group, the span it nests under (empty for a root),
    whether it starts a trace of its own linked to that parent (megatron.train_step: each
    iteration is one trace on every rank, see trace_root_span), and the attribute keys it sets."""
    name: str
    group: str
    parent: str = ""
    new_trace: bool = False
    keys: Tuple[str, ...] = ()


_a = attributes
PRETRAIN = SpanDef("megatron.pretrain", groups.JOB, "",
                   keys=(_a.MODEL_TYPE, _a.TRAIN_ITERS, _a.GLOBAL_BATCH_SIZE))
MODEL_INIT = SpanDef("megatron.model_init", groups.MODEL_INIT, "megatron.pretrain")
LOAD_CHECKPOINT = SpanDef("megatron.load_checkpoint", groups.LOAD_CHECKPOINT, "megatron.pretrain")
LOAD_CHECKPOINT_IO_READ = SpanDef("megatron.load_checkpoint.io_read", groups.LOAD_CHECKPOINT,
                                  "megatron.load_checkpoint")
TRAIN = SpanDef("megatron.train", groups.JOB, "megatron.pretrain", keys=(_a.TRAIN_ITERS,))
FIRST_ITERATION = SpanDef("megatron.first_iteration", groups.FIRST_ITERATION, "megatron.train",
                          keys=(_a.ITERATION,))
TRAIN_STEP = SpanDef("megatron.train_step", groups.STEP, "megatron.train", True,
                     (_a.ITERATION, _a.LOSS, _a.GRAD_NORM, _a.LEARNING_RATE))
FORWARD_BACKWARD = SpanDef("megatron.forward_backward", groups.FORWARD_BACKWARD,
                           "megatron.train_step", keys=(_a.NUM_MICROBATCHES,))
MICROBATCH_FORWARD = SpanDef("megatron.microbatch.forward", groups.MICROBATCH,
                             "megatron.forward_backward", keys=(_a.MICROBATCH_ID,))
DATA_NEXT_BATCH = SpanDef("megatron.data.next_batch", groups.DATA_LOADING,
                          "megatron.microbatch.forward")
LAYER_FORWARD = SpanDef("megatron.layer.forward", groups.LAYER, "megatron.microbatch.forward",
                        keys=(_a.LAYER_NUMBER,))
LAYER_SELF_ATTENTION = SpanDef("megatron.layer.self_attention", groups.LAYER,
                               "megatron.layer.forward")
LAYER_MLP = SpanDef("megatron.layer.mlp", groups.LAYER, "megatron.layer.forward")
MICROBATCH_BACKWARD = SpanDef("megatron.microbatch.backward", groups.MICROBATCH,
                              "megatron.forward_backward")
PP_RECV_FORWARD_LINKED = SpanDef("megatron.pp.recv_forward.linked", groups.COMMUNICATION,
                                 "megatron.forward_backward",
                                 keys=(_a.PIPELINE_RANK, _a.DL_MICROBATCH_ID))
P2P_RECV_FORWARD = SpanDef("megatron.p2p.recv_forward", groups.COMMUNICATION,
                           "megatron.forward_backward")
P2P_SEND_FORWARD = SpanDef("megatron.p2p.send_forward", groups.COMMUNICATION,
                           "megatron.forward_backward")
P2P_RECV_BACKWARD = SpanDef("megatron.p2p.recv_backward", groups.COMMUNICATION,
                            "megatron.forward_backward")
P2P_SEND_BACKWARD = SpanDef("megatron.p2p.send_backward", groups.COMMUNICATION,
                            "megatron.forward_backward")
ACTIVATION_OFFLOAD = SpanDef("megatron.activation.offload", groups.ACTIVATION_OFFLOAD,
                             "megatron.forward_backward")
ACTIVATION_RELOAD = SpanDef("megatron.activation.reload", groups.ACTIVATION_OFFLOAD,
                            "megatron.forward_backward")
# The gradient all-reduce as a counted collective (docs/distributed.md, "Counted collectives").
GRAD_SYNC_START = SpanDef("megatron.grad_sync.start", groups.COMMUNICATION, "megatron.train_step",
                          keys=("dl.collective.group", "dl.collective.group_ranks",
                                "dl.collective.op", "dl.collective.bytes", "dl.collective.seq"))
GRAD_SYNC_FINISH = SpanDef("megatron.grad_sync.finish", groups.COMMUNICATION,
                           "megatron.train_step",
                           keys=("dl.collective.group", "dl.collective.op", "dl.collective.seq"))
OPTIMIZER_STEP = SpanDef("megatron.optimizer_step", groups.OPTIMIZER, "megatron.train_step",
                         keys=(_a.UPDATE_SUCCESSFUL, _a.GRAD_NORM))
SAVE_CHECKPOINT = SpanDef("megatron.save_checkpoint", groups.CHECKPOINT, "megatron.train",
                          keys=(_a.ITERATION,))
SAVE_CHECKPOINT_STATE_DICT = SpanDef("megatron.save_checkpoint.state_dict", groups.CHECKPOINT,
                                     "megatron.save_checkpoint")
SAVE_CHECKPOINT_IO_WRITE = SpanDef("megatron.save_checkpoint.io_write", groups.CHECKPOINT,
                                   "megatron.save_checkpoint")
EVALUATE = SpanDef("megatron.evaluate", groups.EVALUATE, "megatron.train", keys=(_a.EVAL_ITERS,))
EVALUATE_STEP = SpanDef("megatron.evaluate.step", groups.EVALUATE, "megatron.evaluate",
                        keys=(_a.EVAL_ITERATION,))
del _a

# Every span above, parents before children (the order of lens::megatron::spans::catalogue()).
CATALOGUE: Tuple[SpanDef, ...] = (
    PRETRAIN, MODEL_INIT, LOAD_CHECKPOINT, LOAD_CHECKPOINT_IO_READ, TRAIN, FIRST_ITERATION,
    TRAIN_STEP, FORWARD_BACKWARD, MICROBATCH_FORWARD, DATA_NEXT_BATCH, LAYER_FORWARD,
    LAYER_SELF_ATTENTION, LAYER_MLP, MICROBATCH_BACKWARD, PP_RECV_FORWARD_LINKED,
    P2P_RECV_FORWARD, P2P_SEND_FORWARD, P2P_RECV_BACKWARD, P2P_SEND_BACKWARD, ACTIVATION_OFFLOAD,
    ACTIVATION_RELOAD, GRAD_SYNC_START, GRAD_SYNC_FINISH, OPTIMIZER_STEP, SAVE_CHECKPOINT,
    SAVE_CHECKPOINT_STATE_DICT, SAVE_CHECKPOINT_IO_WRITE, EVALUATE, EVALUATE_STEP)

# The training resource attributes (docs/megatron.md, "Training arguments") and the args field
# each comes from; megatron.precision is derived from args.fp16 / args.bf16.
TRAINING_RESOURCE_ATTRIBUTES: Tuple[Tuple[str, str], ...] = (
    ("dl.local_rank", "local_rank"),
    ("dl.tensor_parallel.size", "tensor_model_parallel_size"),
    ("dl.pipeline_parallel.size", "pipeline_model_parallel_size"),
    ("dl.data_parallel.size", "data_parallel_size"),
    ("dl.batch_size", "global_batch_size"),
    ("dl.sequence_length", "seq_length"),
    ("megatron.num_layers", "num_layers"),
    ("megatron.hidden_size", "hidden_size"),
    ("megatron.num_attention_heads", "num_attention_heads"),
    ("megatron.train_iters", "train_iters"),
    ("megatron.micro_batch_size", "micro_batch_size"),
    ("megatron.ckpt_format", "ckpt_format"),
    ("megatron.precision", ""),
)

# The megatron.training.* instruments (docs/python.md, "nemo.lens.megatron"), as
# record_training_metrics names them.
TRAINING_METRICS: Tuple[str, ...] = (
    "megatron.training.step_duration_ms", "megatron.training.loss",
    "megatron.training.throughput_tflops", "megatron.training.tokens_per_sec",
    "megatron.training.grad_norm", "megatron.training.skipped_iters",
    "megatron.training.learning_rate", "megatron.training.memory_allocated_gb")


def register_span_groups() -> None:
    """Registers the Megatron vocabulary (its 8 groups and the presets default, per_step,
    profiling) under namespace `megatron`. Idempotent."""
    _lens.megatron_register_span_groups()


# ---- flags and configuration -------------------------------------------------------------------

def _service_name(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError(
            f"Invalid value '{value}' for --otel-service-name; accepted: a non-blank service name")
    return value


def add_otel_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Adds --otel-enabled, --otel-service-name NAME and --otel-span-groups SPEC (Megatron-LM's
    flags; they override the MEGATRON_OTEL_* / NEMO_LENS_* environment) in a `telemetry` group.
    Returns the parser."""
    group = parser.add_argument_group("telemetry")
    group.add_argument("--otel-enabled", action="store_true", default=False,
                       help="enable OpenTelemetry telemetry (overrides MEGATRON_OTEL_ENABLED)")
    group.add_argument("--otel-service-name", metavar="NAME", type=_service_name, default=None,
                       help="override OTEL_SERVICE_NAME (default megatron-lm)")
    group.add_argument("--otel-span-groups", metavar="SPEC", default=None,
                       help="comma-separated span-group spec, e.g. default,checkpoint (overrides "
                            "MEGATRON_OTEL_SPAN_GROUPS)")
    return parser


def config_from_env() -> NemoLensConfig:
    """NemoLensConfig.from_env('MEGATRON_OTEL', 'NEMO_LENS', MegatronSpanGroup), with service
    name megatron-lm unless OTEL_SERVICE_NAME sets one (as Megatron-LM does). Raises ValueError
    as from_env does."""
    register_span_groups()
    config = NemoLensConfig.from_env(prefix=PREFIX, fallback_prefix=FALLBACK_PREFIX,
                                     span_group_cls=MegatronSpanGroup)
    if not os.environ.get("OTEL_SERVICE_NAME", "").strip():
        config.service_name = DEFAULT_SERVICE_NAME
    return config


def config_from_args(args: Any) -> NemoLensConfig:
    """config_from_env() with the --otel-* flags of `args` over it (a missing attribute is a
    flag not given). --otel-enabled can only turn telemetry on."""
    config = config_from_env()
    if getattr(args, "otel_enabled", False):
        config.enabled = True
    if getattr(args, "otel_service_name", None):
        config.service_name = args.otel_service_name
    if getattr(args, "otel_span_groups", None):
        config.span_groups = args.otel_span_groups
    return config


# The parallel coordinates of a rank (resource attributes, for lens report's blame by node,
# pipeline stage and parallel group) and the args fields they are read from when present.
COORDINATE_ATTRIBUTES: Tuple[Tuple[str, str], ...] = (
    ("dl.data_parallel.rank", "data_parallel_rank"),
    ("dl.tensor_parallel.rank", "tensor_model_parallel_rank"),
    ("dl.pipeline_parallel.rank", "pipeline_model_parallel_rank"),
)


def training_resource_attributes(args: Any) -> Dict[str, Any]:
    """The training resource attributes from `args`, as Megatron-LM's
    build_telemetry_resource_attrs: each of the 12 of TRAINING_RESOURCE_ATTRIBUTES taken from its
    args field when present and not None, megatron.precision always (fp16 if args.fp16, else bf16
    if args.bf16, else fp32); and the rank's parallel coordinates (COORDINATE_ATTRIBUTES) when
    `args` has them."""
    out: Dict[str, Any] = {}
    for key, field in TRAINING_RESOURCE_ATTRIBUTES + COORDINATE_ATTRIBUTES:
        if not field:
            continue
        value = getattr(args, field, None)
        if value is not None:
            out[key] = value
    out["megatron.precision"] = ("fp16" if getattr(args, "fp16", False)
                                 else "bf16" if getattr(args, "bf16", False) else "fp32")
    return out


_handle: Optional[TelemetryHandle] = None


def set_telemetry(args: Any, rank: Optional[int] = None, world_size: Optional[int] = None,
                  _allow_reinit: bool = False) -> TelemetryHandle:
    """Megatron-LM's _set_telemetry(args): config_from_args(args), the training resource
    attributes (only when enabled: a disabled run probes nothing), rank and world size from
    `rank`/`world_size`, else args.rank / args.world_size, else the launcher's RANK and
    WORLD_SIZE; then setup_telemetry. With logs enabled on an exporting rank, the root logger
    is bridged (INFO). Raises ValueError naming the bad variable or flag."""
    global _handle
    config = config_from_args(args)
    resource = training_resource_attributes(args) if config.enabled else {}
    if rank is None:
        rank = getattr(args, "rank", None)
    if world_size is None:
        world_size = getattr(args, "world_size", None)
    rank = int(rank if rank is not None else os.environ.get("RANK", "0"))
    world_size = int(world_size if world_size is not None else os.environ.get("WORLD_SIZE", "1"))
    handle = setup_telemetry(config, rank=rank, world_size=world_size,
                             resource_attributes=resource, _allow_reinit=_allow_reinit)
    _handle = handle
    if config.enabled and config.logs_enabled and handle.is_exporting:
        setup_logging_bridge()
    return handle


def get_telemetry() -> Optional[TelemetryHandle]:
    """The handle set_telemetry made, or None (also in a forked child: telemetry is off there)."""
    return _handle


def _after_fork_in_child() -> None:
    global _handle
    _handle = None


os.register_at_fork(after_in_child=_after_fork_in_child)


# ---- training metrics --------------------------------------------------------------------------

def record_training_metrics(meter: Any = None, **values: Any) -> None:
    """Records Megatron-LM's training metrics (megatron/core/telemetry/training_metrics.py: the
    same names, kinds and units, from the C++ integration's one table) on the meter of `meter`
    (a TelemetryHandle or its Meter; default: set_telemetry's handle): step_duration_ms
    (histogram, ms), loss, throughput_tflops, grad_norm, learning_rate, tokens_per_sec,
    memory_allocated_gb (gauges), skipped_iters (a counter, added only when > 0). None values,
    other keywords and values that are not numbers are skipped; a meter that does not export
    records nothing. Never raises."""
    if meter is None:
        meter = _handle
    native = getattr(getattr(meter, "meter", meter), "_handle", None)
    if native is None:
        return
    known = {}
    for name, value in values.items():
        if name not in _METRIC_ARGUMENTS or value is None:
            continue
        try:
            known[name] = float(value)
        except (TypeError, ValueError):
            continue
    try:
        _lens.megatron_record_training_metrics(native, **known)
    except Exception:  # never into training code
        pass


# record_training_metrics's keywords; others are ignored (nothing raises into training code).
_METRIC_ARGUMENTS = frozenset(name[len("megatron.training."):] for name in TRAINING_METRICS)
