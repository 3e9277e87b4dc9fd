"""The typical configurations (docs/python.md) with the Python examples: the console exporter, a
local collector on an OTLP endpoint (a free loopback port instead of 4317), and a remote collector
that requires a bearer token. (Per-step sampling: test_example_sampling.py.)"""

import collections
import json

import pytest

from example_runs import PRETRAIN_GPT, SHORT_RUN, SIMPLE_TRAIN_LOOP, Collector, run_example

pytest.importorskip("torch")


def test_console_exporter_prints_spans_and_metrics_to_stdout(tmp_path):
    # export MEGATRON_OTEL_ENABLED=1 MEGATRON_OTEL_EXPORTER=console
    # python examples/run_simple_mcore_train_loop.py
    result = run_example(SIMPLE_TRAIN_LOOP, tmp_path, {"MEGATRON_OTEL_ENABLED": "1",
                                                       "MEGATRON_OTEL_EXPORTER": "console"},
                         SHORT_RUN)
    assert result.returncode == 0, result.stdout
    records = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    spans = [r for r in records if "name" in r]
    # The default preset: job, checkpoint, evaluate, first_iteration, inference.
    assert collections.Counter(s["name"] for s in spans) == {
        "megatron.pretrain": 1, "megatron.train": 1, "megatron.first_iteration": 1,
        "megatron.evaluate": 1, "megatron.evaluate.step": 1}
    ids = {s["name"]: s["context"]["span_id"] for s in spans}
    parents = {s["name"]: s["parent_id"] for s in spans}
    assert parents["megatron.first_iteration"] == ids["megatron.train"]
    assert parents["megatron.evaluate.step"] == ids["megatron.evaluate"]
    assert spans[0]["resource"]["attributes"]["megatron.train_iters"] == 4
    metric_names = {m["name"] for r in records if "resource_metrics" in r
                    for rm in r["resource_metrics"] for sm in rm["scope_metrics"]
                    for m in sm["metrics"]}
    assert {"megatron.training.loss", "megatron.training.tokens_per_sec"} <= metric_names
    assert "training done: 4 iterations" in result.stdout


def test_local_collector_receives_the_last_rank_of_a_torchrun_job(tmp_path):
    # export MEGATRON_OTEL_ENABLED=1 OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:PORT
    # torchrun --nproc_per_node=2 pretrain_gpt.py
    collector = Collector(tmp_path)
    port = collector.grpc.rsplit(":", 1)[1]
    result = run_example(PRETRAIN_GPT, tmp_path, {
        "MEGATRON_OTEL_ENABLED": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:" + port,
        "OTEL_BSP_SCHEDULE_DELAY": "200"}, SHORT_RUN, nproc=2)
    assert result.returncode == 0, result.stdout
    assert collector.stop() == 0, collector.err()
    instances = {resource["service.instance.id"] for resource, _ in collector.spans()}
    # single_rank (the default) exports the last rank only.
    assert len(instances) == 1 and next(iter(instances)).endswith("-rank1"), instances
    names = collections.Counter(span["name"] for _, span in collector.spans())
    assert names["megatron.train"] == 1 and names["megatron.pretrain"] == 1
    assert (next(iter(instances)), "megatron.training.loss") in collector.metric_names()


@pytest.mark.parametrize("right_token", [True, False])
def test_remote_collector_with_a_bearer_token(tmp_path, right_token):
    # export MEGATRON_OTEL_ENABLED=1 MEGATRON_OTEL_SPAN_GROUPS=default
    # export OTEL_EXPORTER_OTLP_ENDPOINT=http://<collector-host>:4317
    # export OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"
    # python pretrain_gpt.py
    token = "seed-token-7c2e9a"
    collector = Collector(tmp_path, "--token", token)
    sent = token if right_token else "not-" + token
    result = run_example(PRETRAIN_GPT, tmp_path, {
        "MEGATRON_OTEL_ENABLED": "1",
        "MEGATRON_OTEL_SPAN_GROUPS": "default",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + collector.grpc,
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer " + sent,
        "OTEL_BSP_SCHEDULE_DELAY": "200"}, SHORT_RUN)
    # Training goes on either way, and the token is never printed.
    assert result.returncode == 0, result.stdout
    assert "training done: 4 iterations" in result.stdout
    assert sent not in result.stdout
    assert collector.stop() == 0, collector.err()
    spans = collector.spans()
    if right_token:
        assert {r["service.instance.id"].rsplit("-", 1)[1] for r, _ in spans} == {"rank0"}
        assert "megatron.train" in {span["name"] for _, span in spans}
    else:
        assert spans == []
        assert "UNAUTHENTICATED" in result.stdout, result.stdout
