"""Megatron-LM's telemetry call sites (megatron_call_sites_rank.py) on two torchrun ranks,
exporting over OTLP/gRPC to `lens collect`, checked record by record: every span with its parent,
trace, links, times and attributes, the resource of each rank, the training metrics and the log
records correlated with the current span."""

import collections

import pytest

from conftest import attributes
from example_runs import Collector, run_example

pytest.importorskip("torch")

RANK_PROGRAM = __file__.replace("test_megatron_call_sites.py", "megatron_call_sites_rank.py")


def by_id(spans):
    return {span["spanId"]: span for span in spans}


def test_megatron_call_sites_export_the_documented_traces_from_two_ranks(tmp_path):
    collector = Collector(tmp_path)
    result = run_example(RANK_PROGRAM, tmp_path, {
        **collector.export_env(),
        "MEGATRON_OTEL_EXPORT_STRATEGY": "all_ranks",
        "MEGATRON_OTEL_LOGS_ENABLED": "1",
    }, nproc=2)
    assert result.returncode == 0, result.stdout
    assert "FALLBACK" not in result.stdout
    assert "rank 0 done" in result.stdout and "rank 1 done" in result.stdout
    assert collector.stop() == 0, collector.err()

    spans_by_rank = collections.defaultdict(list)
    resources = {}
    for resource, span in collector.spans():
        spans_by_rank[resource["dl.rank"]].append(span)
        resources[resource["dl.rank"]] = resource
    assert sorted(spans_by_rank) == [0, 1]
    assert resources[0]["nemo.run.id"] == resources[1]["nemo.run.id"] != ""
    for rank, resource in resources.items():
        assert resource["service.name"] == "megatron-lm"
        assert resource["dl.world_size"] == 2
        assert resource["dl.local_rank"] == rank
        assert resource["dl.data_parallel.size"] == 2
        assert resource["megatron.precision"] == "bf16"
        assert resource["service.instance.id"] == f"{resource['nemo.run.id']}-rank{rank}"

    for rank, spans in spans_by_rank.items():
        ids = by_id(spans)
        named = collections.defaultdict(list)
        for span in spans:
            named[span["name"]].append(span)
        counts = {name: len(found) for name, found in named.items()}
        assert counts == {
            "pre_startup": 1, "megatron.startup": 1, "megatron.startup.imports": 1,
            "megatron.model_init": 1, "megatron.train": 2, "megatron.first_iteration": 1,
            "megatron.train_step": 4, "megatron.forward_backward": 4,
            "megatron.microbatch.forward": 8, "megatron.data.next_batch": 8,
            "megatron.microbatch.backward": 8, "megatron.grad_sync.finish": 4,
        }, rank

        def parent(span):
            return ids[span["parentSpanId"]]["name"] if span.get("parentSpanId") else ""

        pre, = named["pre_startup"]
        startup, = named["megatron.startup"]
        imports, = named["megatron.startup.imports"]
        # Back-dated spans: exact times; the startup trace rooted in an empty Context.
        assert parent(pre) == "" and parent(startup) == ""
        assert pre["traceId"] != startup["traceId"]
        assert int(pre["endTimeUnixNano"]) - int(pre["startTimeUnixNano"]) == 500_000_000
        assert attributes(pre)["is_goodput_span"] is True
        assert attributes(startup) == {"is_goodput_span": True,
                                       "megatron.model_type": "ModelType.encoder_or_decoder",
                                       "prompt": "[REDACTED]"}
        assert parent(imports) == "megatron.startup"
        assert imports["startTimeUnixNano"] == startup["startTimeUnixNano"]
        assert int(imports["endTimeUnixNano"]) - int(imports["startTimeUnixNano"]) == 250_000_000
        assert parent(named["megatron.model_init"][0]) == "megatron.startup"

        # Two interval traces, each a root linked to the one before (the first to startup).
        first_interval, second_interval = sorted(named["megatron.train"],
                                                 key=lambda s: int(s["startTimeUnixNano"]))
        for interval in (first_interval, second_interval):
            assert parent(interval) == ""
            assert attributes(interval) == {"is_goodput_span": True}
        assert len({startup["traceId"], first_interval["traceId"],
                    second_interval["traceId"]}) == 3
        assert [(l["traceId"], l["spanId"]) for l in first_interval["links"]] == [
            (startup["traceId"], startup["spanId"])]
        assert [(l["traceId"], l["spanId"]) for l in second_interval["links"]] == [
            (first_interval["traceId"], first_interval["spanId"])]

        first, = named["megatron.first_iteration"]
        assert parent(first) == "megatron.train" and first["traceId"] == first_interval["traceId"]
        assert attributes(first) == {"megatron.iteration": 1}
        steps = sorted(named["megatron.train_step"],
                       key=lambda s: attributes(s)["megatron.iteration"])
        for iteration, step in enumerate(steps, start=1):
            assert attributes(step) == {"megatron.iteration": iteration,
                                        "megatron.loss": 4.0 - iteration * 0.25}
            interval = first_interval if iteration <= 2 else second_interval
            assert step["traceId"] == interval["traceId"]
            assert parent(step) == ("megatron.first_iteration" if iteration == 1
                                    else "megatron.train")
        for span in named["megatron.forward_backward"] + named["megatron.grad_sync.finish"]:
            assert parent(span) == "megatron.train_step"
        for span in named["megatron.microbatch.forward"] + named["megatron.microbatch.backward"]:
            assert parent(span) == "megatron.forward_backward"
        assert sorted(attributes(s)["megatron.microbatch_id"]
                      for s in named["megatron.microbatch.forward"]) == [0, 0, 0, 0, 1, 1, 1, 1]
        for span in named["megatron.data.next_batch"]:
            assert parent(span) == "megatron.microbatch.forward"

    # Metrics: Megatron's instruments, with its kinds and units, from both ranks.
    histograms = {}
    gauges = {}
    for line in collector.lines("metrics.jsonl"):
        for rm in line["resourceMetrics"]:
            rank = attributes(rm["resource"])["dl.rank"]
            for scope in rm["scopeMetrics"]:
                for metric in scope["metrics"]:
                    if metric["name"] == "megatron.training.step_duration_ms":
                        assert metric["unit"] == "ms"
                        point, = metric["histogram"]["dataPoints"]
                        histograms[rank] = int(point["count"])
                    elif metric["name"] == "megatron.training.loss":
                        assert metric.get("unit", "") == ""
                        point, = metric["gauge"]["dataPoints"]
                        gauges[rank] = point["asDouble"]
    assert histograms == {0: 4, 1: 4}
    assert gauges == {0: 3.0, 1: 3.0}

    # Log records of rank 0, in the interval trace that was current when each was written.
    logs = [(resource, record) for resource, record in collector.logs()
            if record["body"]["stringValue"].startswith("iteration ")]
    assert [r["body"]["stringValue"] for _, r in logs] == [
        f"iteration {i} | lm loss: {4.0 - i * 0.25:.3f}" for i in range(1, 5)]
    rank0 = by_id(spans_by_rank[0])
    for resource, record in logs:
        assert resource["dl.rank"] == 0
        assert record["severityText"] == "INFO"
        assert rank0[record["spanId"]]["name"] == "megatron.train"
