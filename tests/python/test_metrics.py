"""Counters, histograms and gauges from handle.meter, checked in the exported OTLP JSON."""

import json

import nemo.lens as lens
from conftest import attributes, clear_telemetry_variables


def test_instruments_export_their_values(monkeypatch, tmp_path):
    clear_telemetry_variables(monkeypatch)
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")
    monkeypatch.setenv("NEMO_LENS_FILE_PATH", str(tmp_path) + "/")
    monkeypatch.setenv("NEMO_LENS_EXPORT_STRATEGY", "all_ranks")
    handle = lens.setup_telemetry(lens.NemoLensConfig.from_env(), rank=0, world_size=1,
                                  _allow_reinit=True)
    assert handle.is_exporting is True
    tokens = handle.meter.create_counter("train.tokens", unit="{token}", description="tokens seen")
    loss = handle.meter.create_histogram("train.loss")
    lr = handle.meter.create_gauge("train.lr")
    tokens.add(100)
    tokens.add(28)
    tokens.add(5, {"split": "val"})
    loss.record(2.5)
    loss.record(1.5)
    lr.set(0.001, {"group": "decay"})
    handle.shutdown(5000)

    points, units = {}, {}
    with open(tmp_path / "metrics.jsonl") as f:
        for line in f:
            for resource in json.loads(line)["resourceMetrics"]:
                for scope in resource["scopeMetrics"]:
                    for metric in scope["metrics"]:
                        kind = next(k for k in ("sum", "histogram", "gauge") if k in metric)
                        for point in metric[kind]["dataPoints"]:
                            key = (metric["name"], tuple(sorted(attributes(point).items())))
                            points[key] = point  # the last collection wins
                            units[metric["name"]] = (metric.get("unit", ""),
                                                     metric.get("description", ""))
    assert points[("train.tokens", ())]["asDouble"] == 128
    assert points[("train.tokens", (("split", "val"),))]["asDouble"] == 5
    histogram = points[("train.loss", ())]
    assert (int(histogram["count"]), histogram["sum"]) == (2, 4.0)
    assert points[("train.lr", (("group", "decay"),))]["asDouble"] == 0.001
    assert units["train.tokens"] == ("{token}", "tokens seen")
