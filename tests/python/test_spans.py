"""managed_span, trace_fn, span_cm: nesting, attributes, exceptions, gating, propagation."""

import pytest

import nemo.lens as lens
from nemo.lens import _lens
from nemo.lens.trace import get_current_span
from conftest import attributes


def test_nested_spans_share_the_trace_and_nest(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "outer", iteration=3) as outer:
        assert isinstance(outer, _lens.Span) and outer.is_recording()
        with lens.managed_span("forward_backward", "inner"):
            pass
    handle.shutdown(5000)
    outer_span, inner_span = exported.span("outer"), exported.span("inner")
    assert inner_span["traceId"] == outer_span["traceId"]
    assert inner_span["parentSpanId"] == outer_span["spanId"]
    assert "parentSpanId" not in outer_span or outer_span["parentSpanId"] == ""
    assert attributes(outer_span) == {"iteration": 3}


def test_attributes_are_typed_redacted_and_unsupported_ones_skipped(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "typed", flag=True, rate=0.5, name="x", token="secret-value",
                           ids=[1, 2], words=["a", "b"], skipped={"a": 1}, nothing=None) as span:
        span.set_attribute("later", 7)
    handle.shutdown(5000)
    assert attributes(exported.span("typed")) == {
        "flag": True, "rate": 0.5, "name": "x", "token": "[REDACTED]", "ids": [1, 2],
        "words": ["a", "b"], "later": 7}


def test_the_binding_redacts_by_the_native_table_on_every_path(telemetry):
    # One table (lens/redaction.hpp): the module's constant, nemo.lens's default, what
    # redact_value and safe_set_span_attributes decide, and what the native span path writes for
    # attributes given at entry and set later, all agree on every key; near misses pass through.
    keys = ("prompt", "input_text", "output_text", "text", "password", "token", "secret", "key")
    assert _lens.DEFAULT_REDACT_KEYS == frozenset(keys)
    assert lens.DEFAULT_REDACT_KEYS is _lens.DEFAULT_REDACT_KEYS
    assert _lens.REDACTED == "[REDACTED]"
    near = ("Key", "keys", "tokens", "TEXT", "model")
    handle, exported = telemetry
    for key in keys + near:
        expected = "[REDACTED]" if key in keys else "v"
        assert lens.redact_value(key, "v") == expected
        with lens.managed_span("step", "entry:" + key, **{key: "v"}):
            pass
        with lens.managed_span("step", "set:" + key) as span:
            span.set_attribute(key, "v")
        with lens.managed_span("step", "safe:" + key) as span:
            lens.safe_set_span_attributes(span, {key: "v"})
    handle.shutdown(5000)
    for key in keys + near:
        expected = "[REDACTED]" if key in keys else "v"
        for how in ("entry", "set", "safe"):
            assert attributes(exported.span(how + ":" + key)) == {key: expected}, (how, key)


def test_exception_is_recorded_and_reraised_untouched(telemetry):
    handle, exported = telemetry
    raised = ValueError("bad batch")
    with pytest.raises(ValueError) as caught:
        with lens.managed_span("step", "failing"):
            raise raised
    assert caught.value is raised
    handle.shutdown(5000)
    span = exported.span("failing")
    assert span["status"] == {"code": 2, "message": "bad batch"}
    (event,) = span["events"]
    assert event["name"] == "exception"
    recorded = attributes(event)
    assert sorted(recorded) == ["exception.escaped", "exception.message",
                                "exception.stacktrace", "exception.type"]
    assert (recorded["exception.type"], recorded["exception.message"]) == ("ValueError",
                                                                          "bad batch")
    # NeMo Lens's managed_span records the exception itself: escaped False.
    assert recorded["exception.escaped"] == "False"
    assert recorded["exception.stacktrace"].startswith("Traceback (most recent call last):")
    assert recorded["exception.stacktrace"].rstrip().endswith("ValueError: bad batch")


def test_base_exceptions_end_the_span_without_error(telemetry):
    handle, exported = telemetry
    with pytest.raises(KeyboardInterrupt):
        with lens.managed_span("step", "interrupted"):
            raise KeyboardInterrupt()
    handle.shutdown(5000)
    span = exported.span("interrupted")
    assert "events" not in span
    assert span.get("status", {}).get("code", 0) == 0


def test_span_cm_is_ungated_and_describes_errors_with_the_type(telemetry):
    handle, exported = telemetry
    lens.set_enabled_span_groups(set())
    with pytest.raises(RuntimeError):
        with lens.span_cm("ungated", phase="load"):
            raise RuntimeError("disk gone")
    with pytest.raises(RuntimeError):
        with lens.span_cm("no_event", record_exception=False):
            raise RuntimeError("quiet")
    handle.shutdown(5000)
    span = exported.span("ungated")
    assert attributes(span) == {"phase": "load"}
    assert span["status"] == {"code": 2, "message": "RuntimeError: disk gone"}
    assert [e["name"] for e in span["events"]] == ["exception"]
    quiet = exported.span("no_event")
    assert quiet["status"] == {"code": 2, "message": "RuntimeError: quiet"}
    assert "events" not in quiet


def test_a_disabled_group_yields_none_and_records_nothing(telemetry):
    handle, exported = telemetry
    lens.set_enabled_span_groups({"step"})
    with lens.managed_span("checkpoint", "skipped", expensive=1) as span:
        assert span is None
    with lens.managed_span("step", "kept"):
        pass
    handle.shutdown(5000)
    assert [s["name"] for s in exported.spans()] == ["kept"]


def test_trace_fn_checks_the_group_at_call_time_and_keeps_the_identity(telemetry):
    handle, exported = telemetry

    @lens.trace_fn("optimizer", "optimizer.step")
    def step(x, *, scale=1):
        """Does a step."""
        return x * scale

    assert step.__name__ == "step" and step.__doc__ == "Does a step."
    assert step(2, scale=3) == 6
    lens.set_enabled_span_groups(set())
    assert step(1) == 1
    lens.set_enabled_span_groups({"optimizer"})
    assert step(5) == 5
    handle.shutdown(5000)
    assert [s["name"] for s in exported.spans()] == ["optimizer.step", "optimizer.step"]


def test_trace_fn_records_exceptions_and_binds_as_a_method(telemetry):
    handle, exported = telemetry

    class Model:
        @lens.managed_span("forward_backward", "model.forward")
        def forward(self, x):
            if x < 0:
                raise ValueError("negative")
            return x + 1

    model = Model()
    assert model.forward(1) == 2
    with pytest.raises(ValueError):
        model.forward(-1)
    handle.shutdown(5000)
    spans = exported.spans()
    assert [s["name"] for s in spans] == ["model.forward", "model.forward"]
    assert spans[1]["status"] == {"code": 2, "message": "negative"}


def test_linked_spans_and_propagation_see_the_python_span(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "parent"):
        carrier = {}
        lens.inject_context(carrier)
        child = lens.create_linked_span(None, "native_child")
        assert child.is_recording()
        child.end()
    linked = lens.create_linked_span(handle.tracer, "linked_root", remote_carrier=carrier)
    linked.end()
    handle.shutdown(5000)
    parent, child_span = exported.span("parent"), exported.span("native_child")
    assert child_span["parentSpanId"] == parent["spanId"]
    assert "links" not in child_span
    assert carrier == {"traceparent": f"00-{parent['traceId']}-{parent['spanId']}-01"}
    linked_span = exported.span("linked_root")
    (link,) = linked_span["links"]
    assert (link["traceId"], link["spanId"]) == (parent["traceId"], parent["spanId"])
    assert linked_span["traceId"] != parent["traceId"]  # no current span: a trace of its own
    assert linked_span.get("parentSpanId", "") == ""


def test_extract_context_reads_a_w3c_carrier():
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    context = get_current_span(lens.extract_context(carrier)).get_span_context()
    assert (context.trace_id, context.span_id) == (0x0af7651916cd43dd8448eb211c80319c,
                                                   0xb7ad6b7169203331)
    assert (context.is_remote, context.trace_flags.sampled, context.is_valid) == (True, True, True)
    unsampled = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}
    assert get_current_span(lens.extract_context(unsampled)).get_span_context().trace_flags == 0
    assert dict(lens.extract_context({"traceparent": "00-zz-b7ad6b7169203331-01"})) == {}
    assert dict(lens.extract_context({})) == {}


def test_a_decorator_made_while_its_group_is_off_keeps_its_attributes(telemetry):
    handle, exported = telemetry
    lens.set_enabled_span_groups(set())

    @lens.managed_span("step", "decorated", phase="warmup")
    def work():
        return 7

    assert work() == 7
    lens.set_enabled_span_groups({"step"})
    assert work() == 7
    handle.shutdown(5000)
    assert attributes(exported.span("decorated")) == {"phase": "warmup"}


def test_the_tracer_keyword_is_taken_and_not_an_attribute(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "managed_with_tracer", tracer=handle.tracer, a=1):
        with lens.span_cm("cm_with_tracer", tracer=handle.tracer, record_exception=True, b=2):
            pass

    @lens.trace_fn("step", "fn_with_tracer", handle.tracer)
    def work():
        return 1

    assert work() == 1
    handle.shutdown(5000)
    assert attributes(exported.span("managed_with_tracer")) == {"a": 1}
    assert attributes(exported.span("cm_with_tracer")) == {"b": 2}
    assert attributes(exported.span("fn_with_tracer")) == {}


def test_the_tracer_may_be_given_positionally(telemetry):
    handle, exported = telemetry
    with lens.managed_span("step", "positional_managed", handle.tracer):
        with lens.span_cm("positional_cm", handle.tracer, False):
            pass
    handle.shutdown(5000)
    assert [s["name"] for s in exported.spans()] == ["positional_cm", "positional_managed"]


def test_group_and_name_may_be_keywords_and_trace_fn_pickles_as_its_function(telemetry):
    import copy
    import pickle
    handle, exported = telemetry
    with lens.managed_span(group="step", name="keywords", phase="x") as span:
        assert span.is_recording()
    with lens.span_cm(name="cm_keywords"):
        pass
    with pytest.raises(TypeError) as error:
        lens.managed_span(name="no_group")
    assert str(error.value) == "managed_span() missing required argument 'group'"
    # Pickled and deep-copied by reference, like the plain function it decorates.
    assert pickle.loads(pickle.dumps(traced_module_function)) is traced_module_function
    assert copy.deepcopy(traced_module_function) is traced_module_function
    with pytest.raises(RuntimeError):
        traced_module_function(-1)
    handle.shutdown(5000)
    assert attributes(exported.span("keywords")) == {"phase": "x"}
    exported.span("cm_keywords")
    failed = exported.span("module.function")
    assert failed["status"] == {"code": 2, "message": "RuntimeError: negative"}
    (event,) = failed["events"]
    stack = attributes(event)["exception.stacktrace"]
    # The frames of the call, not only the exception's line.
    assert stack.startswith("Traceback (most recent call last):")
    assert "in traced_module_function" in stack


@lens.trace_fn("step", "module.function")
def traced_module_function(x):
    if x < 0:
        raise RuntimeError("negative")
    return x
