"""handle.tracer / get_tracer(): OpenTelemetry Python's tracer API on lens's span path, checked
on the exported records: start_as_current_span (context manager and decorator), start_span with
a context, links and explicit times, the span methods, and one current-span context shared by
every primitive (managed_span, tracer spans, span_cm, trace_fn)."""

import pytest

import nemo.lens as lens
from nemo.lens import _lens
from nemo.lens.trace import Context, Link, Status, StatusCode, get_current_span
from conftest import attributes

T0 = 1_700_000_000_000_000_000  # Unix nanoseconds


def ids(span_context):
    return f"{span_context.trace_id:032x}", f"{span_context.span_id:016x}"


def parent_of(span):
    return span.get("parentSpanId", "")


def test_start_as_current_span_is_the_parent_and_carries_attributes(telemetry):
    handle, exported = telemetry
    tracer = handle.tracer
    with tracer.start_as_current_span("outer", attributes={"phase": "train", "step": 3}) as outer:
        assert isinstance(outer, _lens.Span) and outer.is_recording() is True
        outer_ids = ids(outer.get_span_context())
        assert ids(get_current_span().get_span_context()) == outer_ids
        with tracer.start_as_current_span("inner") as inner:
            inner_ids = ids(inner.get_span_context())
    assert outer.is_recording() is False  # ended by the with block
    handle.shutdown(5000)
    outer_span, inner_span = exported.span("outer"), exported.span("inner")
    assert (outer_span["traceId"], outer_span["spanId"]) == outer_ids
    assert (inner_span["traceId"], inner_span["spanId"]) == inner_ids
    assert inner_span["traceId"] == outer_span["traceId"]
    assert parent_of(inner_span) == outer_span["spanId"]
    assert parent_of(outer_span) == ""
    assert attributes(outer_span) == {"phase": "train", "step": 3}


def test_start_as_current_span_as_a_decorator_makes_a_span_per_call(telemetry):
    handle, exported = telemetry

    @handle.tracer.start_as_current_span("decorated", attributes={"kind": "fn"})
    def add(a, b=1):
        """Adds."""
        with lens.managed_span("step", "inside_decorated"):
            pass
        if a < 0:
            raise ValueError("negative input")
        return a + b

    assert add.__name__ == "add" and add.__doc__ == "Adds."
    assert add(1) == 2 and add(2, b=5) == 7
    with pytest.raises(ValueError):
        add(-1)
    handle.shutdown(5000)
    spans = [s for s in exported.spans() if s["name"] == "decorated"]
    assert len(spans) == 3 and len({s["spanId"] for s in spans}) == 3
    assert all(attributes(s) == {"kind": "fn"} for s in spans)
    insides = [s for s in exported.spans() if s["name"] == "inside_decorated"]
    assert sorted(parent_of(s) for s in insides) == sorted(s["spanId"] for s in spans)
    failed = [s for s in spans if s.get("status", {}).get("code") == 2]
    assert len(failed) == 1
    assert failed[0]["status"] == {"code": 2, "message": "ValueError: negative input"}
    assert [e["name"] for e in failed[0]["events"]] == ["exception"]


def test_exception_handling_flags_of_start_as_current_span(telemetry):
    handle, exported = telemetry
    tracer = handle.tracer
    with pytest.raises(KeyError):
        with tracer.start_as_current_span("no_event", record_exception=False):
            raise KeyError("k")
    with pytest.raises(KeyError):
        with tracer.start_as_current_span("no_status", set_status_on_exception=False):
            raise KeyError("k")
    handle.shutdown(5000)
    no_event = exported.span("no_event")
    assert no_event["status"] == {"code": 2, "message": "KeyError: 'k'"}
    assert "events" not in no_event
    no_status = exported.span("no_status")
    assert no_status.get("status", {}).get("code", 0) == 0
    assert [e["name"] for e in no_status["events"]] == ["exception"]


def test_start_span_is_not_current_and_ends_when_told(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "current"):
        detached = handle.tracer.start_span("detached", attributes={"a": 1})
        with lens.managed_span("step", "sibling"):
            pass
        assert detached.is_recording() is True
    detached.end()
    assert detached.is_recording() is False
    detached.set_attribute("after_end", 1)  # ignored, never raises
    detached.end()  # a second end does nothing
    handle.shutdown(5000)
    current, sibling, span = (exported.span("current"), exported.span("sibling"),
                              exported.span("detached"))
    assert parent_of(span) == current["spanId"]
    assert parent_of(sibling) == current["spanId"]  # not the detached span
    assert attributes(span) == {"a": 1}


def test_start_span_in_an_empty_context_starts_a_new_trace(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "surrounding"):
        root = handle.tracer.start_span("new_root", context=Context())
        root.end()
        with handle.tracer.start_as_current_span("new_current_root", context=Context()) as span:
            with lens.span_cm("under_new_root"):
                pass
            root_ids = ids(span.get_span_context())
    handle.shutdown(5000)
    surrounding = exported.span("surrounding")
    for name in ("new_root", "new_current_root"):
        span = exported.span(name)
        assert parent_of(span) == "" and span["traceId"] != surrounding["traceId"], name
    under = exported.span("under_new_root")
    assert (under["traceId"], parent_of(under)) == root_ids


def test_start_span_under_an_extracted_remote_parent(telemetry):
    handle, exported = telemetry
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    remote = lens.extract_context(carrier)
    span = handle.tracer.start_span("remote_child", context=remote)
    assert span.get_span_context().trace_id == 0x0af7651916cd43dd8448eb211c80319c
    span.end()
    with handle.tracer.start_as_current_span("remote_current", context=remote):
        with lens.managed_span("step", "grandchild"):
            pass
    handle.shutdown(5000)
    for name in ("remote_child", "remote_current"):
        exported_span = exported.span(name)
        assert exported_span["traceId"] == "0af7651916cd43dd8448eb211c80319c", name
        assert parent_of(exported_span) == "b7ad6b7169203331", name
    grandchild = exported.span("grandchild")
    assert parent_of(grandchild) == exported.span("remote_current")["spanId"]


def test_links_are_exported(telemetry):
    handle, exported = telemetry
    with handle.tracer.start_as_current_span("target") as target:
        target_context = target.get_span_context()
    remote = get_current_span(lens.extract_context(
        {"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}))
    span = handle.tracer.start_span(
        "linking", links=[Link(target_context), Link(remote.get_span_context(), {"x": 1})])
    span.add_link(target_context)
    span.end()
    handle.shutdown(5000)
    target_span = exported.span("target")
    assert [(l["traceId"], l["spanId"]) for l in exported.span("linking")["links"]] == [
        (target_span["traceId"], target_span["spanId"]),
        ("11111111111111111111111111111111", "2222222222222222"),
        (target_span["traceId"], target_span["spanId"])]


def test_explicit_start_end_and_event_times_are_exported_exactly(telemetry):
    handle, exported = telemetry
    span = handle.tracer.start_span("timed", start_time=T0)
    span.add_event("checkpoint.saved", {"bytes": 1024, "path": "/ckpt"}, timestamp=T0 + 250)
    span.add_event("no_time")
    span.end(end_time=T0 + 1_000_000)
    with handle.tracer.start_as_current_span("timed_current", start_time=T0 + 5) as current:
        current.end(end_time=T0 + 6)
    handle.shutdown(5000)
    timed = exported.span("timed")
    assert (int(timed["startTimeUnixNano"]), int(timed["endTimeUnixNano"])) == (
        T0, T0 + 1_000_000)
    first, second = timed["events"]
    assert (first["name"], int(first["timeUnixNano"])) == ("checkpoint.saved", T0 + 250)
    assert attributes(first) == {"bytes": 1024, "path": "/ckpt"}
    assert second["name"] == "no_time" and int(second["timeUnixNano"]) > T0 + 1_000_000
    current_span = exported.span("timed_current")
    assert (int(current_span["startTimeUnixNano"]), int(current_span["endTimeUnixNano"])) == (
        T0 + 5, T0 + 6)


def test_set_status_forms_update_name_and_set_attributes(telemetry):
    handle, exported = telemetry
    tracer = handle.tracer
    with tracer.start_as_current_span("with_status_object") as span:
        span.set_status(Status(StatusCode.ERROR, "boom"))
    with tracer.start_as_current_span("with_code_and_description") as span:
        span.set_status(StatusCode.ERROR, "bad shard")
    with tracer.start_as_current_span("ok") as span:
        span.set_status(Status(StatusCode.OK))
    with tracer.start_as_current_span("first_name") as span:
        span.update_name("renamed")
        span.set_attributes({"a": 1, "b": [1.5, 2.5], "c": True})
        span.set_attribute("d", "x")
    handle.shutdown(5000)
    assert exported.span("with_status_object")["status"] == {"code": 2, "message": "boom"}
    assert exported.span("with_code_and_description")["status"] == {
        "code": 2, "message": "bad shard"}
    assert exported.span("ok")["status"]["code"] == 1
    assert "first_name" not in [s["name"] for s in exported.spans()]
    assert attributes(exported.span("renamed")) == {"a": 1, "b": [1.5, 2.5], "c": True, "d": "x"}


def test_record_exception_adds_the_event_with_its_attributes(telemetry):
    handle, exported = telemetry
    span = handle.tracer.start_span("recorded")
    try:
        raise RuntimeError("disk full")
    except RuntimeError as error:
        span.record_exception(error, attributes={"shard": 3}, timestamp=T0)
    span.end()
    handle.shutdown(5000)
    recorded = exported.span("recorded")
    (event,) = recorded["events"]
    assert (event["name"], int(event["timeUnixNano"])) == ("exception", T0)
    values = attributes(event)
    assert {k: v for k, v in values.items() if k != "exception.stacktrace"} == {
        "exception.type": "RuntimeError", "exception.message": "disk full",
        "exception.escaped": "False", "shard": 3}
    assert values["exception.stacktrace"].startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("disk full")' in values["exception.stacktrace"]
    assert recorded.get("status", {}).get("code", 0) == 0  # recording is not a status


def test_get_span_context_ids_are_the_exported_ones(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "managed") as managed:
        managed_context = managed.get_span_context()
    with lens.span_cm("cm") as cm:
        cm_context = cm.get_span_context()
    started = handle.tracer.start_span("started")
    started_context = started.get_span_context()
    started.end()
    handle.shutdown(5000)
    for name, context in (("managed", managed_context), ("cm", cm_context),
                          ("started", started_context)):
        span = exported.span(name)
        assert ids(context) == (span["traceId"], span["spanId"]), name
        assert context.is_valid and context.is_remote is False and context.trace_flags.sampled


def test_parents_are_right_across_every_primitive(telemetry):
    handle, exported = telemetry

    @lens.trace_fn("optimizer", "traced_fn", tracer=handle.tracer)
    def work():
        with lens.span_cm("innermost"):
            pass

    with lens.managed_span("step", "managed"):
        with handle.tracer.start_as_current_span("tracer_span"):
            with lens.span_cm("cm_span"):
                work()
            sibling = handle.tracer.start_span("started_in_tracer_span")
            sibling.end()
        with lens.span_cm("after_tracer_span"):
            pass
    handle.shutdown(5000)
    spans = {s["name"]: s for s in exported.spans()}
    assert len({s["traceId"] for s in spans.values()}) == 1
    chain = ["managed", "tracer_span", "cm_span", "traced_fn", "innermost"]
    assert parent_of(spans["managed"]) == ""
    for parent, child in zip(chain, chain[1:]):
        assert parent_of(spans[child]) == spans[parent]["spanId"], child
    assert parent_of(spans["started_in_tracer_span"]) == spans["tracer_span"]["spanId"]
    assert parent_of(spans["after_tracer_span"]) == spans["managed"]["spanId"]


def test_a_tracer_span_is_the_parent_of_a_linked_span_and_attributes_are_filtered(telemetry):
    handle, exported = telemetry
    with handle.tracer.start_as_current_span("stage"):
        carrier = {}
        lens.inject_context(carrier)
        linked = lens.create_linked_span(handle.tracer, "stage.recv", remote_carrier=carrier,
                                         microbatch=2, token="s3cret", skipped=None)
        linked.end()
    handle.shutdown(5000)
    stage, recv = exported.span("stage"), exported.span("stage.recv")
    assert parent_of(recv) == stage["spanId"]
    assert [(l["traceId"], l["spanId"]) for l in recv["links"]] == [
        (stage["traceId"], stage["spanId"])]
    # As the original's create_linked_span (safe_set_span_attributes): None skipped, redacted.
    assert attributes(recv) == {"microbatch": 2, "token": "[REDACTED]"}
