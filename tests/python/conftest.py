"""Fixtures of the nemo.lens Python suite: telemetry set up with the file exporter into a temporary
directory, readers that decode what it exported (OTLP JSON lines) independently of lens, and the
logging bridge's handlers on a logger."""

import json
import os

import pytest

import nemo.lens as lens
from nemo.lens.logging_bridge import LensLoggingHandler


def _value(v):
    kind, inner = next(iter(v.items()))
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [_value(x) for x in inner.get("values", [])]
    return inner


def attributes(item):
    return {a["key"]: _value(a["value"]) for a in item.get("attributes", [])}


def lens_handlers(logger):
    """The logging bridge's handlers on `logger`."""
    return [h for h in logger.handlers if isinstance(h, LensLoggingHandler)]


def remove_lens_handlers(logger):
    """Takes the logging bridge's handlers off `logger`: a test leaves the loggers as it found
    them, or every later test in the process gets each bridged record twice."""
    for handler in lens_handlers(logger):
        logger.removeHandler(handler)


def json_lines(path):
    """The JSON objects of a JSON-lines file, one a line; none when there is no file."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Exported:
    def __init__(self, directory):
        self.directory = directory

    def _lines(self, name):
        return json_lines(os.path.join(self.directory, name))

    def spans(self):
        return [span for request in self._lines("traces.jsonl")
                for resource in request["resourceSpans"]
                for scope in resource["scopeSpans"] for span in scope["spans"]]

    def span(self, name):
        found = [s for s in self.spans() if s["name"] == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r}"
        return found[0]

    def resources(self):
        return [attributes(resource["resource"]) for request in self._lines("traces.jsonl")
                for resource in request["resourceSpans"]]

    def metrics(self):
        """{(name, sorted attribute items): (metric, point)}: the last point of each series."""
        points = {}
        for request in self._lines("metrics.jsonl"):
            for resource in request["resourceMetrics"]:
                for scope in resource["scopeMetrics"]:
                    for metric in scope["metrics"]:
                        kind = next(k for k in ("sum", "histogram", "gauge") if k in metric)
                        for point in metric[kind].get("dataPoints", []):
                            key = (metric["name"], tuple(sorted(attributes(point).items())))
                            points[key] = (metric, point)
        return points

    def logs(self):
        return [record for request in self._lines("logs.jsonl")
                for resource in request["resourceLogs"]
                for scope in resource["scopeLogs"] for record in scope["logRecords"]]


def clear_telemetry_variables(monkeypatch):
    """The test runs without any NEMO_LENS_, MEGATRON_OTEL_ or OTEL_ variable of its caller."""
    for name in list(os.environ):
        if name.startswith(("NEMO_LENS_", "MEGATRON_OTEL_", "OTEL_")):
            monkeypatch.delenv(name)


@pytest.fixture
def telemetry(tmp_path, monkeypatch):
    """Sets up an exporting rank (file exporter, every group on, logs on); yields
    (handle, exported). Shutting the handle down writes everything out."""
    clear_telemetry_variables(monkeypatch)
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")
    monkeypatch.setenv("NEMO_LENS_FILE_PATH", str(tmp_path) + "/")
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "all")
    monkeypatch.setenv("NEMO_LENS_EXPORT_STRATEGY", "all_ranks")
    monkeypatch.setenv("NEMO_LENS_LOGS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_METRICS_ENABLED", "0")
    handle = lens.setup_telemetry(lens.NemoLensConfig.from_env(), rank=0, world_size=1,
                                  _allow_reinit=True)
    assert handle.is_exporting is True
    yield handle, Exported(str(tmp_path))
    handle.shutdown(5000)


@pytest.fixture
def metered(monkeypatch, tmp_path):
    """An exporting rank with metrics on and traces off (file exporter, one collection at
    shutdown); yields (handle, exported)."""
    clear_telemetry_variables(monkeypatch)
    monkeypatch.setenv("NEMO_LENS_FILE_PATH", str(tmp_path) + "/")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000")
    config = lens.NemoLensConfig(enabled=True, exporter="file", export_strategy="all_ranks",
                                 traces_enabled=False)
    handle = lens.setup_telemetry(config, _allow_reinit=True)
    assert handle.is_exporting is True
    yield handle, Exported(str(tmp_path))
    handle.shutdown(1000)
