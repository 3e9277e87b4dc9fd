"""handle.meter / get_meter(): OpenTelemetry Python's meter API on lens's metric pipeline, every
instrument kind checked on the exported OTLP JSON (kind, monotonicity, unit, description, value
per attribute set); a rank that does not export records nothing."""


import pytest

import nemo.lens as lens
from nemo.lens.metrics import CallbackOptions, Observation
from conftest import Exported, clear_telemetry_variables


def test_counter_sums_per_attribute_set_and_drops_negatives(metered):
    handle, exported = metered
    counter = handle.meter.create_counter("t.requests", unit="{request}",
                                          description="Requests served.")
    counter.add(3)
    counter.add(4.5)
    counter.add(-2)  # a monotonic sum takes no negative amount
    counter.add("not a number")
    counter.add(1, {"route": "/a"})
    handle.shutdown(5000)
    points = exported.metrics()
    metric, point = points[("t.requests", ())]
    assert (metric["unit"], metric["description"]) == ("{request}", "Requests served.")
    assert metric["sum"]["isMonotonic"] is True
    assert point["asDouble"] == 7.5
    assert points[("t.requests", (("route", "/a"),))][1]["asDouble"] == 1


def test_up_down_counter_takes_negative_amounts(metered):
    # OTLP JSON leaves out a false isMonotonic (proto3 default).
    handle, exported = metered
    queue = handle.meter.create_up_down_counter("t.queue_depth", unit="{item}")
    queue.add(5)
    queue.add(-7)
    queue.add(-0.5, {"queue": "b"})
    handle.shutdown(5000)
    points = exported.metrics()
    metric, point = points[("t.queue_depth", ())]
    assert metric["sum"].get("isMonotonic", False) is False and metric["unit"] == "{item}"
    assert point["asDouble"] == -2
    assert points[("t.queue_depth", (("queue", "b"),))][1]["asDouble"] == -0.5


def test_histogram_counts_sums_and_bounds(metered):
    handle, exported = metered
    latency = handle.meter.create_histogram("t.latency", unit="ms", description="Latency.",
                                            explicit_bucket_boundaries_advisory=[1.0, 10.0])
    for value in (0.5, 2.0, 40.0):
        latency.record(value)
    latency.record(7.0, attributes={"op": "read"})
    handle.shutdown(5000)
    points = exported.metrics()
    metric, point = points[("t.latency", ())]
    assert (metric["unit"], metric["description"]) == ("ms", "Latency.")
    assert (int(point["count"]), point["sum"], point["min"], point["max"]) == (3, 42.5, 0.5, 40.0)
    assert sum(int(c) for c in point["bucketCounts"]) == 3
    _, read = points[("t.latency", (("op", "read"),))]
    assert (int(read["count"]), read["sum"]) == (1, 7.0)


def test_an_inline_instrument_records_like_a_kept_one(metered):
    handle, exported = metered
    handle.meter.create_histogram("x").record(0.31)
    assert handle.meter.create_histogram("x") is handle.meter.create_histogram("x")
    lens.get_meter().create_gauge("inline.gauge").set(0.31)
    handle.shutdown(5000)
    points = exported.metrics()
    _, histogram = points[("x", ())]
    assert (int(histogram["count"]), histogram["sum"]) == (1, 0.31)
    assert points[("inline.gauge", ())][1]["asDouble"] == 0.31


def test_gauge_keeps_the_last_value_per_attribute_set(metered):
    handle, exported = metered
    gauge = handle.meter.create_gauge("t.temperature", unit="Cel")
    gauge.set(70.0)
    gauge.set(65.5)
    gauge.set(80, {"gpu": 1})
    handle.shutdown(5000)
    points = exported.metrics()
    metric, point = points[("t.temperature", ())]
    assert "gauge" in metric and metric["unit"] == "Cel"
    assert point["asDouble"] == 65.5
    assert points[("t.temperature", (("gpu", 1),))][1]["asDouble"] == 80


def test_observable_instruments_call_their_callbacks_at_collection(metered):
    handle, exported = metered
    calls = []

    def memory(options):
        calls.append(options)
        return [Observation(12.5, {"gpu": 0}), Observation(14.0, {"gpu": 1})]

    def served(options):
        yield Observation(42)

    def in_flight(options):
        return [Observation(-3)]

    handle.meter.create_observable_gauge("t.memory", callbacks=[memory], unit="GiB")
    handle.meter.create_observable_counter("t.served", callbacks=[served])
    handle.meter.create_observable_up_down_counter("t.in_flight", callbacks=[in_flight])
    handle.shutdown(5000)
    assert calls and isinstance(calls[0], CallbackOptions)
    points = exported.metrics()
    metric, gpu0 = points[("t.memory", (("gpu", 0),))]
    assert "gauge" in metric and metric["unit"] == "GiB"
    assert gpu0["asDouble"] == 12.5
    assert points[("t.memory", (("gpu", 1),))][1]["asDouble"] == 14.0
    served_metric, served_point = points[("t.served", ())]
    assert served_metric["sum"]["isMonotonic"] is True and served_point["asDouble"] == 42
    in_flight_metric, in_flight_point = points[("t.in_flight", ())]
    assert in_flight_metric["sum"].get("isMonotonic", False) is False and in_flight_point["asDouble"] == -3


def test_a_rank_that_does_not_export_records_nothing(monkeypatch, tmp_path):
    clear_telemetry_variables(monkeypatch)
    monkeypatch.setenv("NEMO_LENS_FILE_PATH", str(tmp_path) + "/")
    called = []
    config = lens.NemoLensConfig(enabled=True, exporter="file", export_strategy="single_rank",
                                 export_rank=0)
    handle = lens.setup_telemetry(config, rank=1, world_size=2, _allow_reinit=True)
    assert handle.is_exporting is False
    meter = handle.meter
    meter.create_counter("c").add(1)
    meter.create_up_down_counter("u").add(-1)
    meter.create_histogram("h").record(0.31)
    meter.create_gauge("g").set(2)
    meter.create_observable_gauge("o", callbacks=[lambda options: called.append(1) or []])
    lens.get_meter().create_counter("via_get_meter").add(1)
    handle.shutdown(5000)
    assert called == []
    assert Exported(str(tmp_path)).metrics() == {}
