"""NemoLensConfig.from_env and setup_telemetry's validation: the C++ core's messages."""

import pytest

import lens


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    import os
    for name in list(os.environ):
        if name.startswith(("NEMO_LENS_", "MEGATRON_OTEL_", "OTEL_")):
            monkeypatch.delenv(name)


def test_defaults_are_disabled_single_rank():
    config = lens.NemoLensConfig.from_env()
    assert config.enabled is False
    assert config.service_name == "nemo"
    assert config.export_strategy == "single_rank"
    assert config.export_rank == -1
    assert config.span_groups == "default"
    assert config.exporter == "otlp"
    assert config.source_of("enabled") == "default"


def test_fallback_prefix_and_sources(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "yes")
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step")
    monkeypatch.setenv("MEGATRON_OTEL_SPAN_GROUPS", " all ")
    config = lens.NemoLensConfig.from_env("MEGATRON_OTEL", "NEMO_LENS")
    assert config.enabled is True
    assert config.span_groups == "all"
    assert config.source_of("enabled") == "env:NEMO_LENS_ENABLED"
    assert config.source_of("span_groups") == "env:MEGATRON_OTEL_SPAN_GROUPS"


def test_bad_boolean_names_the_variable(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "maybe")
    with pytest.raises(ValueError) as error:
        lens.NemoLensConfig.from_env()
    assert str(error.value) == ("Invalid boolean for NEMO_LENS_ENABLED: 'maybe'; accepted: 1, "
                                "true, yes, on / 0, false, no, off (any case)")


def test_setup_reports_a_bad_sample_rate(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_EXPORT_SAMPLE_RATE", "-0.1")
    config = lens.NemoLensConfig.from_env()
    with pytest.raises(ValueError) as error:
        lens.setup_telemetry(config, rank=0, world_size=1)
    assert str(error.value) == ("Invalid value for NEMO_LENS_EXPORT_SAMPLE_RATE: '-0.1'; "
                                "accepted: export_sample_rate in [0.0, 1.0]")


def test_unknown_exporter_in_code_is_refused():
    config = lens.NemoLensConfig()
    with pytest.raises(ValueError) as error:
        config.exporter = "jaeger"
    assert str(error.value) == ("Unknown exporter type: 'jaeger'. Expected one of: otlp, "
                                "console, file, none")


def test_disabled_setup_exports_nothing_and_gates_every_group():
    handle = lens.setup_telemetry(lens.NemoLensConfig(), rank=0, world_size=1)
    assert handle.is_exporting() is False
    assert lens.is_span_group_enabled("job") is False
    with lens.managed_span("job", "never") as span:
        assert span is None
    assert handle.shutdown(1000) is True
