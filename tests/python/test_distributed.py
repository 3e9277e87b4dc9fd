"""broadcast_trace_context over torch.distributed (Gloo, one process: the code path, not the
transport, which tests/multiprocess covers for C++); counted collectives: sequence numbers per
group, open inside the block, finished after it (also when it raises), and the broadcast
helpers counted on the world group."""

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


def test_counted_collective_numbers_each_collective_of_its_group():
    from nemo.lens import _lens
    from nemo.lens.distributed import counted_collective

    group = _lens.collective_group("py.test.dp", [0, 1, 2, 3])
    start = _lens.collective_state(group)["seq"]
    with counted_collective("py.test.dp", [0, 1, 2, 3], "all_reduce", 4096) as seq:
        assert seq == start + 1
        inside = _lens.collective_state(group)
        assert inside == {"op": "all_reduce", "seq": start + 1, "bytes": 4096,
                          "finished_seq": start, "finished_op": inside["finished_op"]}
    with pytest.raises(RuntimeError):
        with counted_collective("py.test.dp", [0, 1, 2, 3], "broadcast") as seq:
            assert seq == start + 2
            raise RuntimeError("peer gone")
    after = _lens.collective_state(group)
    assert (after["seq"], after["finished_seq"], after["finished_op"]) == (
        start + 2, start + 2, "broadcast")


def test_broadcast_helpers_are_counted_on_the_world_group(tmp_path):
    pytest.importorskip("torch")
    import torch.distributed as dist
    from nemo.lens import _lens

    world = _lens.collective_group("world", [0])
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        before = _lens.collective_state(world)["seq"]
        lens.broadcast_trace_context(0)
        lens.torch_broadcast()(b"run-id", 0)
    finally:
        dist.destroy_process_group()
    state = _lens.collective_state(world)
    assert (state["seq"], state["finished_seq"], state["op"], state["bytes"]) == (
        before + 2, before + 2, "broadcast", 6)
