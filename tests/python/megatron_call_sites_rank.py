"""One rank of a job that makes nemo.lens's calls the way Megatron-LM's telemetry code makes them
as it stands upstream (megatron/training/global_vars.py::_set_telemetry, the module-level imports
and job/interval spans of megatron/training/training.py, megatron/core/telemetry/), written here
without Megatron: setup with a SpanGroup subclass of Megatron's shape, the helpers imported in one
try block, handle.is_exporting as an attribute, handle.tracer's explicit spans (a startup trace
rooted in an empty Context with back-dated children, per-interval traces linked in a chain),
managed_span / trace_fn / span_cm nested under them, handle.meter's training instruments, the
logging bridge, and shutdown. Run under torchrun by test_megatron_call_sites.py."""

import logging
import os
import sys
import time
from typing import ClassVar, Final

import torch.distributed as dist

from nemo.lens import NemoLensConfig, setup_telemetry
from nemo.lens.groups import SpanGroup
from nemo.lens.trace import Context, Link, attach, detach, set_span_in_context

# training.py's module-level imports: all four or the no-op fallbacks.
try:
    from nemo.lens.state import is_span_group_enabled as _otel_sg_enabled
    from nemo.lens.helpers import managed_span as _otel_managed_span
    from nemo.lens.helpers import safe_set_span_attributes as _otel_safe_set_attrs
    from nemo.lens.helpers import trace_fn as _otel_trace_fn
except ImportError as error:  # the test fails on this line: no span would be made
    print(f"FALLBACK: {error}", flush=True)
    sys.exit(3)


class TrainerSpanGroup(SpanGroup):
    """Megatron-LM's MegatronSpanGroup shape: extra groups and presets of its own."""

    MICROBATCH = "microbatch"
    COMMUNICATION = "communication"
    DATA_LOADING = "data_loading"
    FIRST_ITERATION = "first_iteration"
    INFERENCE = "inference"

    ALL_GROUPS: Final[frozenset] = SpanGroup.ALL_GROUPS | frozenset(
        [MICROBATCH, COMMUNICATION, DATA_LOADING, FIRST_ITERATION, INFERENCE])
    _PRESETS: ClassVar[dict] = {
        "default": frozenset([SpanGroup.JOB, SpanGroup.CHECKPOINT, SpanGroup.EVALUATE,
                              FIRST_ITERATION, INFERENCE]),
        "per_step": frozenset([SpanGroup.JOB, SpanGroup.CHECKPOINT, SpanGroup.EVALUATE,
                               SpanGroup.MODEL_INIT, SpanGroup.LOAD_CHECKPOINT, SpanGroup.STEP,
                               SpanGroup.FORWARD_BACKWARD, SpanGroup.OPTIMIZER, COMMUNICATION,
                               DATA_LOADING, FIRST_ITERATION, INFERENCE]),
        "all": ALL_GROUPS,
    }


ITERATIONS = 4
SAVE_INTERVAL = 2  # a new megatron.train trace every 2 iterations


def set_telemetry(rank, world_size):
    """_set_telemetry(args) with --otel-enabled --otel-span-groups per_step,microbatch."""
    config = NemoLensConfig.from_env(prefix="MEGATRON_OTEL", fallback_prefix="NEMO_LENS",
                                     span_group_cls=TrainerSpanGroup)
    if not os.environ.get("OTEL_SERVICE_NAME", "").strip():
        config.service_name = "megatron-lm"
    config.enabled = True
    config.span_groups = "per_step,microbatch"
    resource_attrs = {"dl.local_rank": int(os.environ["LOCAL_RANK"]),
                      "dl.data_parallel.size": world_size, "megatron.precision": "bf16"}
    handle = setup_telemetry(config, rank=rank, world_size=world_size,
                             resource_attributes=resource_attrs)
    if config.enabled and config.logs_enabled and handle.is_exporting:
        from nemo.lens.logging_bridge import setup_logging_bridge
        setup_logging_bridge()
    return handle


@_otel_trace_fn("microbatch", "megatron.microbatch.backward")
def backward(microbatch):
    return microbatch * 2


def main():
    # As Megatron stamps it before its imports (Unix nanoseconds: exact in the export).
    program_start_ns = time.time_ns() - 500_000_000
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    handle = set_telemetry(rank, world_size)
    # _otel_telemetry_active(): the attribute, not a method.
    assert handle is not None and bool(getattr(handle, "is_exporting", False))
    tracer = handle.tracer

    # _start_otel_job_spans: a back-dated top-level span, then megatron.startup rooted in an empty
    # Context, made current, with a back-dated child.
    startup_ctx = None
    startup_token = None
    startup = None
    if _otel_sg_enabled("job"):
        pre = tracer.start_span("pre_startup", start_time=program_start_ns - 1_000_000_000)
        pre.set_attribute("is_goodput_span", True)
        pre.end(end_time=program_start_ns - 500_000_000)
        startup = tracer.start_span("megatron.startup", context=Context(),
                                    start_time=program_start_ns)
        startup.set_attribute("is_goodput_span", True)
        _otel_safe_set_attrs(startup, {"megatron.model_type": "ModelType.encoder_or_decoder",
                                       "prompt": "not exported"})
        startup_ctx = startup.get_span_context()
        startup_token = attach(set_span_in_context(startup))
        imports = tracer.start_span("megatron.startup.imports", start_time=program_start_ns)
        imports.end(end_time=program_start_ns + 250_000_000)
    with _otel_managed_span("model_init", "megatron.model_init"):
        pass
    # _end_otel_startup_span
    if startup is not None:
        detach(startup_token)
        startup.end()

    log = logging.getLogger("megatron.training")
    log.setLevel(logging.INFO)  # as Megatron-LM's --logging-level does
    meter = handle.meter
    step_ms = meter.create_histogram("megatron.training.step_duration_ms", unit="ms",
                                     description="Duration of one training step in milliseconds.")
    loss_gauge = meter.create_gauge("megatron.training.loss",
                                    description="Training loss value at each log interval.")

    interval, interval_token = None, None
    for iteration in range(1, ITERATIONS + 1):
        # _maybe_reroot_otel_interval: each interval is a new trace linked to the previous one
        # (the first to the startup trace).
        if _otel_sg_enabled("job") and (iteration - 1) % SAVE_INTERVAL == 0:
            links = [Link(interval.get_span_context())] if interval is not None else (
                [Link(startup_ctx)] if startup_ctx is not None else [])
            if interval is not None:
                detach(interval_token)
                interval.end()
            interval = tracer.start_span("megatron.train", context=Context(), links=links)
            interval.set_attribute("is_goodput_span", True)
            interval_token = attach(set_span_in_context(interval))
        first = _otel_managed_span("first_iteration", "megatron.first_iteration",
                                   **{"megatron.iteration": iteration}) if iteration == 1 else None
        if first is not None:
            first.__enter__()
        started = time.perf_counter()
        with _otel_managed_span("step", "megatron.train_step",
                                **{"megatron.iteration": iteration}) as step:
            with _otel_managed_span("forward_backward", "megatron.forward_backward"):
                for microbatch in range(2):
                    with _otel_managed_span("microbatch", "megatron.microbatch.forward",
                                            **{"megatron.microbatch_id": microbatch}):
                        with tracer.start_as_current_span("megatron.data.next_batch"):
                            pass
                    backward(microbatch)
            with _otel_managed_span("communication", "megatron.grad_sync.finish"):
                dist.barrier()
            loss = 4.0 - iteration * 0.25
            _otel_safe_set_attrs(step, {"megatron.loss": loss, "megatron.grad_norm": None})
        if first is not None:
            first.__exit__(None, None, None)
        step_ms.record((time.perf_counter() - started) * 1000.0)
        loss_gauge.set(loss)
        if rank == 0:
            log.info("iteration %d | lm loss: %.3f", iteration, loss)
    # _end_otel_job_spans: the interval, then shutdown.
    if interval is not None:
        detach(interval_token)
        interval.end()
    handle.shutdown()
    dist.destroy_process_group()
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    main()
