"""Export strategies as Python callables (nemo.lens.strategies), the logging handler, sampling
strategies (nemo.lens.sampling), and shutdown at exit."""

import logging
import os
import subprocess
import sys

import pytest

import nemo.lens as lens
from nemo.lens import sampling
from nemo.lens.logging_bridge import LensLoggingHandler
from nemo.lens.strategies import get_export_strategy
from conftest import attributes, clear_telemetry_variables


def test_a_python_export_strategy_decides_and_sees_the_rank(monkeypatch, tmp_path):
    calls = []

    def odd_ranks(config, rank, world_size):
        calls.append((config.service_name, rank, world_size))
        return rank % 2 == 1

    lens.register_export_strategy("odd_ranks_py", odd_ranks, allow_override=True)
    try:
        assert "odd_ranks_py" in lens.registered_strategies()
        assert get_export_strategy("odd_ranks_py") is odd_ranks
        config = lens.NemoLensConfig(enabled=True, exporter="none", export_strategy="odd_ranks_py")
        handle = lens.setup_telemetry(config, rank=2, world_size=4, _allow_reinit=True)
        assert handle.is_exporting is False
        assert lens.is_span_group_enabled("job") is False
        handle.shutdown(1000)
        handle = lens.setup_telemetry(config, rank=3, world_size=4, _allow_reinit=True)
        assert handle.is_exporting is True
        assert lens.is_span_group_enabled("job") is True
        handle.shutdown(1000)
        assert calls == [("nemo", 2, 4), ("nemo", 3, 4)]
    finally:
        lens.unregister_export_strategy("odd_ranks_py")
    assert "odd_ranks_py" not in lens.registered_strategies()


def test_an_exception_in_a_strategy_propagates_from_setup():
    def broken(config, rank, world_size):
        raise KeyError("LOCAL_RANK")

    lens.register_export_strategy("broken_py", broken, allow_override=True)
    config = lens.NemoLensConfig(enabled=True, exporter="none", export_strategy="broken_py")
    try:
        with pytest.raises(KeyError, match="LOCAL_RANK"):
            lens.setup_telemetry(config, rank=0, world_size=1, _allow_reinit=True)
    finally:
        lens.unregister_export_strategy("broken_py")
    assert lens.is_span_group_enabled("job") is False


def test_registering_twice_names_the_problem():
    lens.register_export_strategy("twice_py", lambda c, r, w: True, allow_override=True)
    try:
        with pytest.raises(ValueError) as error:
            lens.register_export_strategy("twice_py", lambda c, r, w: True)
        assert str(error.value) == ("Strategy 'twice_py' is already registered. Pass "
                                    "allow_override=True to replace it.")
    finally:
        lens.unregister_export_strategy("twice_py")
    with pytest.raises(ValueError) as error:
        lens.unregister_export_strategy("all_ranks")
    assert str(error.value) == "Cannot unregister built-in strategy 'all_ranks'."
    with pytest.raises(ValueError) as error:
        lens.unregister_export_strategy("twice_py")
    assert str(error.value) == "Strategy 'twice_py' is not registered."


def test_log_records_carry_the_active_span(telemetry):
    handle, exported = telemetry
    logger = logging.getLogger("lens.test")
    logger.setLevel(logging.DEBUG)
    handler = LensLoggingHandler(logging.INFO)
    logger.addHandler(handler)
    try:
        with lens.managed_span("step", "logged"):
            logger.warning("loss is %s", "nan")
        logger.debug("below the level")
        logger.error("outside")
    finally:
        logger.removeHandler(handler)
    handle.shutdown(5000)
    span = exported.span("logged")
    records = exported.logs()
    assert [r["body"]["stringValue"] for r in records] == ["loss is nan", "outside"]
    assert [r["severityText"] for r in records] == ["WARN", "ERROR"]
    assert records[0]["traceId"] == span["traceId"] and records[0]["spanId"] == span["spanId"]
    assert "traceId" not in records[1] or records[1]["traceId"] == ""
    assert attributes(records[0])["logger.name"] == "lens.test"
    assert attributes(records[0])["code.function"] == "test_log_records_carry_the_active_span"


def test_atexit_shuts_down_and_exports(tmp_path):
    script = (
        "import nemo.lens as lens\n"
        "h = lens.setup_telemetry(lens.NemoLensConfig.from_env(), rank=0, world_size=1)\n"
        "with lens.managed_span('step', 'at_exit'):\n"
        "    pass\n")
    env = dict(os.environ, NEMO_LENS_ENABLED="1", NEMO_LENS_EXPORTER="file",
               NEMO_LENS_FILE_PATH=str(tmp_path) + "/", NEMO_LENS_SPAN_GROUPS="all",
               NEMO_LENS_EXPORT_STRATEGY="all_ranks", NEMO_LENS_METRICS_ENABLED="0")
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=30)
    with open(tmp_path / "traces.jsonl") as f:
        assert '"name":"at_exit"' in f.read()


def _file_config(monkeypatch, tmp_path, **variables):
    clear_telemetry_variables(monkeypatch)
    base = {"NEMO_LENS_ENABLED": "1", "NEMO_LENS_EXPORTER": "file",
            "NEMO_LENS_FILE_PATH": str(tmp_path) + "/", "NEMO_LENS_SPAN_GROUPS": "all",
            "NEMO_LENS_EXPORT_STRATEGY": "all_ranks", "NEMO_LENS_METRICS_ENABLED": "0"}
    for name, value in {**base, **variables}.items():
        monkeypatch.setenv(name, value)
    return lens.NemoLensConfig.from_env()


def test_a_python_sampling_strategy_builds_the_sampler(monkeypatch, tmp_path):
    seen = []

    def drop_even_ranks(config, rank, world_size, default_sampler):
        seen.append((rank, world_size, default_sampler.description))
        return sampling.rank_aware_sampler(rank, world_size, 1.0 if rank % 2 else 0.0,
                                       sampling.standard_sampler("always_on"))

    sampling.register_sampling_strategy("drop_even_py", drop_even_ranks, allow_override=True)
    assert "drop_even_py" in sampling.registered_sampling_strategies()
    config = _file_config(monkeypatch, tmp_path, NEMO_LENS_SAMPLING_STRATEGY="drop_even_py")
    for rank in (0, 1):
        handle = lens.setup_telemetry(config, rank=rank, world_size=2, _allow_reinit=True)
        with lens.managed_span("step", f"rank{rank}"):
            pass
        handle.shutdown(5000)
    assert seen == [(0, 2, "ParentBased{AlwaysOnSampler}"), (1, 2, "ParentBased{AlwaysOnSampler}")]
    with open(tmp_path / "traces.jsonl") as f:
        exported = f.read()
    assert '"name":"rank1"' in exported and '"name":"rank0"' not in exported


def test_a_failing_sampling_factory_fails_setup_with_its_error(monkeypatch, tmp_path):
    def broken(config, rank, world_size, default_sampler):
        raise RuntimeError("no sampler today")

    sampling.register_sampling_strategy("broken_sampler_py", broken, allow_override=True)
    config = _file_config(monkeypatch, tmp_path, NEMO_LENS_SAMPLING_STRATEGY="broken_sampler_py")
    with pytest.raises(ValueError) as error:
        lens.setup_telemetry(config, rank=0, world_size=1, _allow_reinit=True)
    assert str(error.value) == ("Sampling strategy 'broken_sampler_py' failed: RuntimeError: "
                                "no sampler today")
    with pytest.raises(ValueError, match="Unknown sampler 'ratio'"):
        sampling.standard_sampler("ratio")
