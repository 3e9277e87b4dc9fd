"""nemo.lens configuration end to end: NemoLensConfig.from_env with the prefix/fallback model,
lens's own settings read from the same prefixes at setup, and setup_telemetry's validation
(the native core's messages). test_nemo_lens_config.py covers the dataclass itself."""


import pytest

from conftest import clear_telemetry_variables
import nemo.lens as lens
from nemo.lens import _lens


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    clear_telemetry_variables(monkeypatch)


def test_defaults_are_disabled_single_rank():
    config = lens.NemoLensConfig.from_env()
    assert config.enabled is False
    assert config.service_name == "nemo"
    assert config.export_strategy == "single_rank"
    assert config.export_rank == -1
    assert config.span_groups == "default"
    assert config.exporter == "otlp"
    assert _lens.NativeConfig.from_env("NEMO_LENS", "").source_of("enabled") == "default"


def test_fallback_prefix_and_sources(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "yes")
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step")
    monkeypatch.setenv("MEGATRON_OTEL_SPAN_GROUPS", " all ")
    config = lens.NemoLensConfig.from_env("MEGATRON_OTEL", "NEMO_LENS")
    assert config.enabled is True
    assert config.span_groups == "all"
    # lens's own settings (not fields of NemoLensConfig) come from the same prefixes at setup.
    monkeypatch.setenv("NEMO_LENS_FILE_PATH", "/tmp/fallback/")
    native = _lens.NativeConfig.from_env("MEGATRON_OTEL", "NEMO_LENS")
    assert native.source_of("enabled") == "env:NEMO_LENS_ENABLED"
    assert native.source_of("span_groups") == "env:MEGATRON_OTEL_SPAN_GROUPS"
    assert (native.file_path, native.source_of("file_path")) == (
        "/tmp/fallback/", "env:NEMO_LENS_FILE_PATH")


def test_bad_boolean_names_the_variable(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "maybe")
    with pytest.raises(ValueError) as error:
        lens.NemoLensConfig.from_env()
    assert str(error.value) == ("Invalid boolean for NEMO_LENS_ENABLED: 'maybe'. Expected "
                                "'1'/'0', 'true'/'false', 'yes'/'no', 'on'/'off'.")


def test_a_bad_sample_rate_is_refused_at_construction(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_EXPORT_SAMPLE_RATE", "-0.1")
    with pytest.raises(ValueError) as error:
        lens.NemoLensConfig.from_env()
    assert str(error.value) == "export_sample_rate must be in [0.0, 1.0], got -0.1"


def test_setup_reports_a_bad_lens_setting_naming_the_variable(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_HANG_TIMEOUT", "abc")
    with pytest.raises(ValueError) as error:
        lens.setup_telemetry(lens.NemoLensConfig(enabled=True, exporter="none"),
                             _allow_reinit=True)
    assert str(error.value) == ("Invalid hang timeout for NEMO_LENS_HANG_TIMEOUT: 'abc'; "
                                "accepted: auto, off, or a number of seconds > 0 such as 90 "
                                "or 2.5")
    assert lens.is_span_group_enabled("job") is False


def test_unknown_exporter_in_code_is_refused_at_setup():
    with pytest.raises(ValueError) as error:
        lens.setup_telemetry(lens.NemoLensConfig(enabled=True, exporter="jaeger"),
                             _allow_reinit=True)
    assert str(error.value) == ("Unknown exporter type: 'jaeger'. Expected one of: otlp, "
                                "console, file, none")


def test_disabled_setup_exports_nothing_and_gates_every_group():
    handle = lens.setup_telemetry(lens.NemoLensConfig(), rank=0, world_size=1)
    assert handle.is_exporting is False
    assert lens.is_span_group_enabled("job") is False
    with lens.managed_span("job", "never") as span:
        assert span is None
    assert handle.force_flush(1000) is True
    handle.shutdown(1000)
