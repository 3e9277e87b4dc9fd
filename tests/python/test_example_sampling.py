"""The per-step configuration with trace sampling (docs/python.md) from Python: per_step and
parentbased_traceidratio 0.1 keep about a tenth of the iterations' traces, the same iterations on
both ranks of a torchrun job, each with its whole subtree."""

import collections

import pytest

from example_runs import PRETRAIN_GPT, Collector, run_example
from conftest import attributes

pytest.importorskip("torch")

# 200 iterations of a tiny model: about two seconds of training.
ARGS = ["--train-iters", "200", "--log-interval", "50", "--eval-iters", "0", "--seq-length", "8",
        "--num-layers", "1", "--hidden-size", "16", "--num-attention-heads", "2"]


def test_per_step_with_traceidratio_keeps_whole_iterations_alike_on_every_rank(tmp_path):
    collector = Collector(tmp_path)
    result = run_example(PRETRAIN_GPT, tmp_path, collector.megatron_env(
        "per_step", OTEL_TRACES_SAMPLER="parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG="0.1"),
        ARGS, nproc=2)
    assert result.returncode == 0, result.stdout
    assert collector.stop() == 0, collector.err()
    spans = collector.spans()
    kept = collections.defaultdict(set)  # instance -> iterations
    step_traces = set()
    for resource, span in spans:
        if span["name"] == "megatron.train_step":
            kept[resource["service.instance.id"]].add(attributes(span)["megatron.iteration"])
            step_traces.add(span["traceId"])
    assert len(kept) == 2, collector.err()
    first, second = kept.values()
    assert first == second, "both ranks keep the same iterations"
    # Binomial(200, 0.1): mean 20, standard deviation 4.2; the bounds are over 3 deviations away.
    assert 7 <= len(first) <= 33, len(first)
    assert len(step_traces) == len(first)  # one trace per kept iteration, shared by the ranks
    # The per_step children exist only in kept iterations' traces, and every kept step has them
    # on both ranks.
    children = collections.defaultdict(collections.Counter)  # trace id -> names
    for _, span in spans:
        if span["name"] in ("megatron.forward_backward", "megatron.optimizer_step",
                            "megatron.data.next_batch", "megatron.grad_sync.finish"):
            assert span["traceId"] in step_traces, span["name"]
            children[span["traceId"]][span["name"]] += 1
    assert set(children) == step_traces
    for names in children.values():
        assert names == {"megatron.forward_backward": 2, "megatron.optimizer_step": 2,
                         "megatron.data.next_batch": 2, "megatron.grad_sync.finish": 2}
