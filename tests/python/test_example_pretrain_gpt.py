"""torchrun --nproc_per_node 2 examples/python/pretrain_gpt.py exporting over OTLP to
`lens collect`, checked record by record (run id, instances, the 13 resource attributes, the span hierarchy by
parent ids, the step traces, metrics, log records), then read by `lens report`."""

import collections
import json
import os
import re
import subprocess

import pytest

import nemo.lens.megatron as lm
from example_runs import LENS_CLI, PRETRAIN_GPT, SHORT_RUN, Collector, run_example
from conftest import attributes

pytest.importorskip("torch")

# Two microbatches per step and rank: global batch 4 = micro-batch 1 x 2 ranks x 2.
ARGS = SHORT_RUN + ["--micro-batch-size", "1", "--global-batch-size", "4",
                    "--ckpt-format", "torch_dist", "--bf16"]

# Every span's parent with MEGATRON_OTEL_SPAN_GROUPS=all ("" = a root), and its count per rank:
# 4 iterations of 2 microbatches and one layer, one evaluation of one step at iteration 4.
EXPECTED = {
    "megatron.pretrain": ({""}, 1),
    "megatron.model_init": ({"megatron.pretrain"}, 1),
    "megatron.train": ({"megatron.pretrain"}, 1),
    "megatron.first_iteration": ({"megatron.train"}, 1),
    "megatron.train_step": ({""}, 4),
    "megatron.forward_backward": ({"megatron.train_step"}, 4),
    "megatron.microbatch.forward": ({"megatron.forward_backward"}, 8),
    "megatron.data.next_batch": ({"megatron.microbatch.forward"}, 8),
    "megatron.layer.forward": ({"megatron.microbatch.forward", "megatron.evaluate.step"}, 9),
    "megatron.layer.self_attention": ({"megatron.layer.forward"}, 9),
    "megatron.layer.mlp": ({"megatron.layer.forward"}, 9),
    "megatron.microbatch.backward": ({"megatron.forward_backward"}, 8),
    "megatron.grad_sync.start": ({"megatron.train_step"}, 4),
    "megatron.grad_sync.finish": ({"megatron.train_step"}, 4),
    "megatron.optimizer_step": ({"megatron.train_step"}, 4),
    "megatron.evaluate": ({"megatron.train"}, 1),
    "megatron.evaluate.step": ({"megatron.evaluate"}, 1),
}


def test_two_ranks_export_the_documented_run_to_lens_collect_and_lens_report_reads_it(tmp_path):
    collector = Collector(tmp_path)
    result = run_example(PRETRAIN_GPT, tmp_path,
                         collector.megatron_env("all", MEGATRON_OTEL_LOGS_ENABLED="1"), ARGS,
                         nproc=2)
    assert result.returncode == 0, result.stdout
    assert "training done: 4 iterations" in result.stdout
    assert collector.stop() == 0, collector.err()

    # Resources: one run id, one instance per rank, the 13 training attributes.
    by_instance = collections.defaultdict(list)
    resources = {}
    for resource, span in collector.spans():
        by_instance[resource["service.instance.id"]].append(span)
        resources[resource["service.instance.id"]] = resource
    run_ids = {r["nemo.run.id"] for r in resources.values()}
    assert len(run_ids) == 1, run_ids
    (run_id,) = run_ids
    assert re.fullmatch(r"[0-9a-f]{12}", run_id), run_id  # rank 0's, shared over Gloo
    assert set(by_instance) == {f"{run_id}-rank0", f"{run_id}-rank1"}
    for rank in (0, 1):
        resource = resources[f"{run_id}-rank{rank}"]
        assert {key: resource.get(key) for key, _ in lm.TRAINING_RESOURCE_ATTRIBUTES} == {
            "dl.local_rank": rank, "dl.tensor_parallel.size": 1, "dl.pipeline_parallel.size": 1,
            "dl.data_parallel.size": 2, "dl.batch_size": 4, "dl.sequence_length": 16,
            "megatron.num_layers": 1, "megatron.hidden_size": 32,
            "megatron.num_attention_heads": 2, "megatron.train_iters": 4,
            "megatron.micro_batch_size": 1, "megatron.ckpt_format": "torch_dist",
            "megatron.precision": "bf16"}
        assert (resource["service.name"], resource["dl.rank"], resource["dl.world_size"]) == (
            "megatron-lm", rank, 2)

    # The hierarchy, by parent ids, on each rank.
    steps = {}  # (rank, iteration) -> step span
    for rank in (0, 1):
        spans = by_instance[f"{run_id}-rank{rank}"]
        by_id = {s["spanId"]: s for s in spans}
        counts = collections.Counter(s["name"] for s in spans)
        assert dict(counts) == {name: count for name, (_, count) in EXPECTED.items()}
        for span in spans:
            parent = by_id.get(span.get("parentSpanId", ""))
            assert span.get("parentSpanId", "") == "" or parent is not None, span["name"]
            assert (parent["name"] if parent else "") in EXPECTED[span["name"]][0], span["name"]
            if parent:
                assert parent["traceId"] == span["traceId"]
        (train,) = [s for s in spans if s["name"] == "megatron.train"]
        for step in (s for s in spans if s["name"] == "megatron.train_step"):
            values = attributes(step)
            steps[rank, values["megatron.iteration"]] = step
            assert [(l["traceId"], l["spanId"]) for l in step["links"]] == [
                (train["traceId"], train["spanId"])]
            assert set(values) == {"megatron.iteration", "megatron.loss", "megatron.grad_norm",
                                   "megatron.learning_rate"}
            assert values["megatron.learning_rate"] == 0.001
        assert attributes(next(s for s in spans if s["name"] == "megatron.pretrain")) == {
            "megatron.model_type": "gpt", "megatron.train_iters": 4,
            "megatron.global_batch_size": 4}
    # Iteration N is one trace on both ranks, with the same (all-reduced) loss.
    for iteration in range(1, 5):
        first, second = steps[0, iteration], steps[1, iteration]
        assert first["traceId"] == second["traceId"]
        assert attributes(first)["megatron.loss"] == attributes(second)["megatron.loss"]
    assert len({steps[0, i]["traceId"] for i in range(1, 5)}) == 4

    # Training metrics from both ranks; rank 0's iteration lines as log records of their step.
    for rank in (0, 1):
        assert (f"{run_id}-rank{rank}", "megatron.training.loss") in collector.metric_names()
    lines = [(resource["service.instance.id"], record) for resource, record in collector.logs()
             if "| lm loss:" in record["body"]["stringValue"]]
    assert [r["body"]["stringValue"].split("|")[0].split() for _, r in lines] == [
        ["iteration", "1/", "4"], ["iteration", "2/", "4"], ["iteration", "4/", "4"]]
    for (instance, record), iteration in zip(lines, (1, 2, 4)):
        assert instance == f"{run_id}-rank0"
        assert (record["traceId"], record["spanId"]) == (steps[0, iteration]["traceId"],
                                                         steps[0, iteration]["spanId"])

    # lens report reads it as the C++ trainer's.
    report = subprocess.run([LENS_CLI, "report", collector.out], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=30)
    assert report.returncode == 0, report.stdout
    assert "ranks: 2 of world size 2, iterations: 4 (1-4)" in report.stdout
    with open(os.path.join(collector.out, "summary.json")) as f:
        summary = json.load(f)
    assert (summary["ranks"], summary["run_id"], summary["first_iteration"],
            summary["last_iteration"]) == (2, run_id, 1, 4)
