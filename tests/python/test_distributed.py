"""broadcast_trace_context over torch.distributed (Gloo, one process: the code path, not the
transport, which tests/multiprocess covers for C++)."""

import pytest

import nemo.lens as lens


def test_broadcast_trace_context_returns_the_source_ranks_context(telemetry, tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    handle, exported = telemetry
    assert lens.broadcast_trace_context(0) is None  # not initialised: as the original
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        with lens.managed_span("job", "pretrain"):
            carrier = lens.broadcast_trace_context(0, src_rank=0)
        outside = lens.broadcast_trace_context(0)  # no current span: an empty carrier
    finally:
        dist.destroy_process_group()
    handle.shutdown(5000)
    span = exported.span("pretrain")
    assert carrier == {"traceparent": f"00-{span['traceId']}-{span['spanId']}-01"}
    assert outside == {}
