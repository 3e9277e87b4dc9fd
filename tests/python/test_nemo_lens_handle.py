"""setup_telemetry and TelemetryHandle as NeMo Lens defines them: disabled, exporting and
non-exporting ranks, is_exporting as an attribute, the double-init RuntimeError, _allow_reinit,
an export_strategy override, the refused SDK objects, an idempotent shutdown, get_tracer and
get_meter; checked on what the file exporter wrote."""

import os

import pytest

import nemo.lens as lens
from nemo.lens import _lens
from nemo.lens.handle import TelemetryHandle
from nemo.lens.metrics import Meter
from nemo.lens.trace import Tracer
from conftest import Exported, attributes

DOUBLE_INIT = ("setup_telemetry() has already been initialised for this process. Call it once at "
               "startup. Pass _allow_reinit=True to override (testing only).")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith(("NEMO_LENS_", "MEGATRON_OTEL_", "OTEL_")) or name == "SLURM_JOB_ID":
            monkeypatch.delenv(name)
    monkeypatch.setenv("NEMO_LENS_FILE_PATH", str(tmp_path) + "/")
    yield
    current = lens.get_telemetry()
    if current is not None:
        current.shutdown(1000)
    lens.set_enabled_span_groups(frozenset())


def file_config(**fields):
    values = dict(enabled=True, exporter="file", export_strategy="all_ranks", span_groups="all",
                  metrics_enabled=False)
    values.update(fields)
    return lens.NemoLensConfig(**values)


def test_a_disabled_setup_records_nothing_and_its_handle_still_works(tmp_path):
    config = lens.NemoLensConfig()
    handle = lens.setup_telemetry(config)
    assert isinstance(handle, TelemetryHandle)
    assert handle.is_exporting is False
    assert isinstance(handle.tracer, Tracer) and isinstance(handle.meter, Meter)
    # As the original: a run id even when off (12 hex digits without SLURM).
    assert len(config.run_id) == 12 and int(config.run_id, 16) >= 0
    assert lens.is_span_group_enabled("job") is False
    with lens.managed_span("job", "never") as span:
        assert span is None
    with lens.span_cm("ungated") as span:
        assert span.is_recording() is False
        span.set_attribute("ignored", 1)  # a non-recording span takes every call
    with handle.tracer.start_as_current_span("tracer_span") as span:
        assert span.is_recording() is False
    handle.meter.create_counter("nothing").add(1)
    assert handle.force_flush(1000) is True
    handle.shutdown(1000)
    assert os.listdir(tmp_path) == []


def test_a_disabled_setup_takes_slurms_job_id_as_run_id(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    config = lens.NemoLensConfig()
    lens.setup_telemetry(config)
    assert config.run_id == "4242"


def test_an_exporting_rank_exports_the_resolved_groups(tmp_path):
    config = file_config(span_groups="per_step", run_id="run-h1", service_name="handle-test")
    handle = lens.setup_telemetry(config, rank=1, world_size=2,
                                  resource_attributes={"team": "lens", "dl.rank": 1},
                                  _allow_reinit=True)
    assert handle.is_exporting is True
    assert lens.get_telemetry() is handle
    assert _lens.enabled_span_groups() == set(config.resolved_span_groups)
    with lens.managed_span("step", "kept", iteration=1):
        with lens.managed_span("layer", "not_a_group_of_per_step") as off:
            assert off is None
    handle.shutdown(5000)
    exported = Exported(str(tmp_path))
    (span,) = exported.spans()
    assert span["name"] == "kept" and attributes(span) == {"iteration": 1}
    (resource,) = exported.resources()
    assert resource["service.name"] == "handle-test"
    assert resource["nemo.run.id"] == "run-h1"
    assert (resource["team"], resource["dl.rank"]) == ("lens", 1)


def test_a_rank_the_strategy_leaves_out_does_not_export(tmp_path):
    handle = lens.setup_telemetry(file_config(export_strategy="single_rank", export_rank=0),
                                  rank=1, world_size=2, _allow_reinit=True)
    assert handle.is_exporting is False
    assert lens.is_span_group_enabled("step") is False
    with lens.managed_span("step", "dropped") as span:
        assert span is None
    with handle.tracer.start_as_current_span("dropped_too") as span:
        assert span.is_recording() is False
    handle.meter.create_histogram("dropped.histogram").record(1.0)
    handle.shutdown(5000)
    assert Exported(str(tmp_path)).spans() == []
    # export_rank -1 is the last rank.
    last = lens.setup_telemetry(file_config(export_strategy="single_rank"), rank=1, world_size=2,
                                _allow_reinit=True)
    assert last.is_exporting is True
    last.shutdown(1000)


def test_is_exporting_is_an_attribute_not_a_method():
    handle = lens.setup_telemetry(file_config(exporter="none"), _allow_reinit=True)
    assert handle.is_exporting is True and not callable(handle.is_exporting)
    handle.shutdown(1000)


def test_a_second_enabled_setup_raises_unless_reinit_is_allowed(tmp_path):
    first = lens.setup_telemetry(file_config(), _allow_reinit=True)
    with pytest.raises(RuntimeError) as error:
        lens.setup_telemetry(file_config())
    assert str(error.value) == DOUBLE_INIT
    assert lens.get_telemetry() is first and first.is_exporting is True
    # A disabled setup after an enabled one is allowed (as the original).
    off = lens.setup_telemetry(lens.NemoLensConfig())
    assert off.is_exporting is False and lens.is_span_group_enabled("job") is False
    with pytest.raises(RuntimeError) as error:
        lens.setup_telemetry(file_config())
    assert str(error.value) == DOUBLE_INIT
    again = lens.setup_telemetry(file_config(), _allow_reinit=True)
    assert again.is_exporting is True and lens.get_telemetry() is again
    with lens.managed_span("job", "after_reinit"):
        pass
    again.shutdown(5000)
    assert [s["name"] for s in Exported(str(tmp_path)).spans()] == ["after_reinit"]


def test_an_export_strategy_override_decides_instead_of_the_registry():
    calls = []

    def only_rank_three(config, rank, world_size):
        calls.append((rank, world_size))
        return rank == 3

    config = file_config(exporter="none", export_strategy="single_rank", export_rank=0)
    handle = lens.setup_telemetry(config, rank=0, world_size=4, export_strategy=only_rank_three,
                                  _allow_reinit=True)
    assert handle.is_exporting is False
    handle = lens.setup_telemetry(config, rank=3, world_size=4, export_strategy=only_rank_three,
                                  _allow_reinit=True)
    assert handle.is_exporting is True
    assert calls == [(0, 4), (3, 4)]
    handle.shutdown(1000)


def test_an_unknown_strategy_name_is_refused_with_the_registered_ones():
    with pytest.raises(ValueError) as error:
        lens.setup_telemetry(file_config(exporter="none", export_strategy="every_other"),
                             _allow_reinit=True)
    assert str(error.value) == (
        f"Unknown export_strategy 'every_other'. Registered strategies: "
        f"{lens.registered_strategies()}.")
    for name in ("all_ranks", "single_rank", "sampled", "first_rank_per_node"):
        assert name in lens.registered_strategies()


@pytest.mark.parametrize("keyword", ["span_exporter", "metric_reader"])
def test_sdk_exporters_and_readers_are_refused_saying_what_to_use(keyword):
    with pytest.raises(ValueError) as error:
        lens.setup_telemetry(file_config(exporter="none"), _allow_reinit=True,
                             **{keyword: object()})
    assert str(error.value) == (
        f"setup_telemetry({keyword}=...) takes an OpenTelemetry SDK object, which lens does not "
        "use: lens exports natively. Choose the exporter with NemoLensConfig.exporter "
        "('otlp', 'console', 'file' or 'none') and the OTEL_EXPORTER_OTLP_* variables "
        "(docs/exporters.md); in tests, read what lens exported with exporter='file' or a "
        "`lens collect` receiver.")


def test_shutdown_is_idempotent_and_ends_open_spans(tmp_path):
    handle = lens.setup_telemetry(file_config(), _allow_reinit=True)
    scope = lens.managed_span("job", "left_open")
    scope.__enter__()
    handle.shutdown(5000)
    handle.shutdown(5000)  # the second does nothing
    handle.shutdown()
    spans = Exported(str(tmp_path)).spans()
    assert [s["name"] for s in spans] == ["left_open"]
    assert attributes(spans[0])["nemo.span.truncated"] is True
    scope.__exit__(None, None, None)


def test_get_tracer_and_get_meter(tmp_path):
    tracer = lens.get_tracer("my.library")
    assert isinstance(tracer, Tracer) and tracer is lens.get_tracer()
    before = lens.get_meter("x")  # before any enabled setup: records nothing
    assert isinstance(before, Meter)
    handle = lens.setup_telemetry(file_config(metrics_enabled=True), _allow_reinit=True)
    assert lens.get_meter() is handle.meter
    assert handle.tracer is lens.get_tracer()
    with lens.get_tracer("other").start_as_current_span("via_get_tracer") as span:
        assert span.is_recording() is True
    lens.get_meter().create_counter("via.get_meter").add(3)
    handle.shutdown(5000)
    exported = Exported(str(tmp_path))
    assert [s["name"] for s in exported.spans()] == ["via_get_tracer"]
    metric, point = exported.metrics()[("via.get_meter", ())]
    assert point["asDouble"] == 3 and metric["sum"]["isMonotonic"] is True
