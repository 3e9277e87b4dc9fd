"""nemo.lens.megatron: the --otel-* flags, set_telemetry (MEGATRON_OTEL_* over NEMO_LENS_*, flags over
both, the 13 training resource attributes, the vocabulary), the catalogue against the C++
tables, training metrics, and the trace-root spans and collective the trainers use."""

import argparse
import logging
import os

import pytest

import nemo.lens as lens
import nemo.lens.megatron as lm
from nemo.lens import _lens
from conftest import Exported, attributes, lens_handlers, remove_lens_handlers

LAUNCHER_VARIABLES = ("SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid",
                      "PMIX_NAMESPACE")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("NEMO_LENS_", "MEGATRON_OTEL_", "OTEL_")) or name in LAUNCHER_VARIABLES:
            monkeypatch.delenv(name)
    yield
    lens.set_enabled_span_groups(set())


def training_args(**overrides):
    """The args Megatron's _set_telemetry reads, as argparse leaves them."""
    values = dict(rank=0, world_size=1, local_rank=0, tensor_model_parallel_size=1,
                  pipeline_model_parallel_size=1, data_parallel_size=1, global_batch_size=8,
                  seq_length=32, num_layers=2, hidden_size=64, num_attention_heads=4,
                  train_iters=10, micro_batch_size=2, ckpt_format="torch", fp16=False, bf16=True,
                  otel_enabled=False, otel_service_name=None, otel_span_groups=None)
    values.update(overrides)
    return argparse.Namespace(**values)


def exporting_to_files(monkeypatch, tmp_path, logs=False):
    monkeypatch.setenv("MEGATRON_OTEL_ENABLED", "1")
    monkeypatch.setenv("MEGATRON_OTEL_EXPORTER", "file")
    monkeypatch.setenv("MEGATRON_OTEL_FILE_PATH", str(tmp_path) + "/")
    monkeypatch.setenv("MEGATRON_OTEL_RANK_STRATEGY", "all_ranks")
    monkeypatch.setenv("MEGATRON_OTEL_LOGS_ENABLED", "1" if logs else "0")
    return Exported(str(tmp_path))


# ---- flags ---------------------------------------------------------------------------------------

def test_add_otel_args_adds_the_three_seed_flags():
    parser = lm.add_otel_args(argparse.ArgumentParser())
    defaults = parser.parse_args([])
    assert (defaults.otel_enabled, defaults.otel_service_name, defaults.otel_span_groups) == (
        False, None, None)
    given = parser.parse_args(["--otel-enabled", "--otel-service-name", "gpt-run",
                               "--otel-span-groups", "default,step"])
    assert (given.otel_enabled, given.otel_service_name, given.otel_span_groups) == (
        True, "gpt-run", "default,step")


def test_a_blank_service_name_flag_is_refused_with_the_flag_and_what_is_accepted(capsys):
    parser = lm.add_otel_args(argparse.ArgumentParser(prog="train"))
    with pytest.raises(SystemExit) as exit_status:
        parser.parse_args(["--otel-service-name", " "])
    assert exit_status.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "train: error: argument --otel-service-name: Invalid value ' ' for --otel-service-name; "
        "accepted: a non-blank service name")


# ---- configuration -------------------------------------------------------------------------------

def test_megatron_variables_win_over_nemo_lens_and_the_service_name_defaults_to_megatron_lm(
        monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step")
    monkeypatch.setenv("MEGATRON_OTEL_SPAN_GROUPS", "profiling")
    config = lm.config_from_env()
    assert config.enabled is True
    assert config.span_groups == "profiling"
    assert config.service_name == "megatron-lm"
    assert config._span_group_cls is lm.MegatronSpanGroup
    assert config.resolved_span_groups == lm.MegatronSpanGroup.ALL_GROUPS
    native = _lens.NativeConfig.from_env(lm.PREFIX, lm.FALLBACK_PREFIX)
    assert native.source_of("enabled") == "env:NEMO_LENS_ENABLED"
    assert native.source_of("span_groups") == "env:MEGATRON_OTEL_SPAN_GROUPS"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-otel")
    assert lm.config_from_env().service_name == "from-otel"


def test_flags_apply_over_the_environment(monkeypatch):
    monkeypatch.setenv("MEGATRON_OTEL_SPAN_GROUPS", "default")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "from-env")
    config = lm.config_from_args(training_args(otel_enabled=True, otel_service_name="from-flag",
                                               otel_span_groups="per_step"))
    assert (config.enabled, config.service_name, config.span_groups) == (
        True, "from-flag", "per_step")
    assert config.resolved_span_groups == lm.MegatronSpanGroup.resolve("per_step")
    # Flags not given leave the environment's values; --otel-enabled cannot turn telemetry off.
    monkeypatch.setenv("MEGATRON_OTEL_ENABLED", "1")
    config = lm.config_from_args(argparse.Namespace())
    assert (config.enabled, config.service_name, config.span_groups) == (
        True, "from-env", "default")


def test_an_unknown_group_flag_fails_setup_naming_the_part_and_the_vocabulary(monkeypatch):
    with pytest.raises(ValueError) as error:
        lm.set_telemetry(training_args(otel_enabled=True, otel_span_groups="default,full"),
                         _allow_reinit=True)
    valid = sorted(lm.MegatronSpanGroup.ALL_GROUPS | set(lm.MegatronSpanGroup._PRESETS))
    assert str(error.value) == f"Unknown span group or preset: 'full'. Valid options: {valid}"
    for name in ("profiling", "first_iteration", "trace_region", "per_step"):
        assert name in valid
    assert lens.is_span_group_enabled("job") is False


# ---- the vocabulary and the catalogue mirror the C++ tables --------------------------------------

def test_the_catalogue_constants_are_the_cpp_catalogue():
    ours = [(s.name, s.group, s.parent, s.new_trace, list(s.keys)) for s in lm.CATALOGUE]
    assert ours == [tuple(entry) for entry in lens._lens.megatron_span_catalogue()]
    assert len(lm.CATALOGUE) == 29
    assert lm.TRAIN_STEP == lm.SpanDef("megatron.train_step", "step", "megatron.train", True,
                                       ("megatron.iteration", "megatron.loss",
                                        "megatron.grad_norm", "megatron.learning_rate"))


def test_groups_presets_metrics_and_resource_keys_are_the_cpp_ones():
    assert set(lm.ALL_GROUPS) == lens._lens.megatron_span_groups()
    assert len(lm.ALL_GROUPS) == 16
    assert {name: set(members) for name, members in lm.PRESETS.items()} == (
        lens._lens.megatron_span_group_presets())
    assert list(lm.TRAINING_METRICS) == lens._lens.megatron_training_metric_names()
    # The training resource attributes and the rank's parallel coordinates, as the C++ trainer's.
    assert sorted(key for key, _ in lm.TRAINING_RESOURCE_ATTRIBUTES + lm.COORDINATE_ATTRIBUTES) == (
        sorted(lens._lens.megatron_training_resource_attribute_keys()))


def test_the_vocabulary_is_registered_and_resolves_the_megatron_presets():
    lm.register_span_groups()
    lm.register_span_groups()  # idempotent
    assert _lens.resolve_span_groups("per_step") == set(lm.PRESETS["per_step"])
    assert _lens.resolve_span_groups("PROFILING") == set(lm.ALL_GROUPS)
    assert _lens.resolve_span_groups("default, layer") == {
        "job", "checkpoint", "evaluate", "first_iteration", "inference", "layer"}
    # The SpanGroup subclass resolves exactly as the native vocabulary does.
    for spec in ("per_step", "PROFILING", "default, layer"):
        assert set(lm.MegatronSpanGroup.resolve(spec)) == _lens.resolve_span_groups(spec), spec


# ---- resource attributes -------------------------------------------------------------------------

def test_training_resource_attributes_are_the_seeds_thirteen():
    assert lm.training_resource_attributes(training_args()) == {
        "dl.local_rank": 0, "dl.tensor_parallel.size": 1, "dl.pipeline_parallel.size": 1,
        "dl.data_parallel.size": 1, "dl.batch_size": 8, "dl.sequence_length": 32,
        "megatron.num_layers": 2, "megatron.hidden_size": 64, "megatron.num_attention_heads": 4,
        "megatron.train_iters": 10, "megatron.micro_batch_size": 2,
        "megatron.ckpt_format": "torch", "megatron.precision": "bf16"}


def test_missing_or_none_fields_are_left_out_and_precision_is_always_there():
    assert lm.training_resource_attributes(argparse.Namespace(seq_length=None, fp16=True)) == {
        "megatron.precision": "fp16"}
    assert lm.training_resource_attributes(argparse.Namespace()) == {"megatron.precision": "fp32"}


def test_set_telemetry_exports_with_the_training_resource_and_the_run_id(monkeypatch, tmp_path):
    exported = exporting_to_files(monkeypatch, tmp_path)
    monkeypatch.setenv("MEGATRON_OTEL_SPAN_GROUPS", "per_step")
    monkeypatch.setenv("NEMO_LENS_RUN_ID", "run-py-5")
    handle = lm.set_telemetry(training_args(), _allow_reinit=True)
    assert lm.get_telemetry() is handle
    assert handle.is_exporting is True and handle.run_id == "run-py-5"
    assert _lens.enabled_span_groups() == set(lm.PRESETS["per_step"])
    with lens.managed_span(lm.TRAIN.group, lm.TRAIN.name):
        pass
    handle.shutdown(5000)
    (resource,) = exported.resources()
    for key, value in lm.training_resource_attributes(training_args()).items():
        assert resource[key] == value, key
    assert resource["service.name"] == "megatron-lm"
    assert resource["nemo.run.id"] == "run-py-5"
    assert resource["service.instance.id"] == "run-py-5-rank0"
    assert [s["name"] for s in exported.spans()] == ["megatron.train"]


def test_a_forked_child_has_no_handle(monkeypatch, tmp_path):
    exporting_to_files(monkeypatch, tmp_path)
    handle = lm.set_telemetry(training_args(), _allow_reinit=True)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running the parent's exit hooks
        os.write(write, b"none" if lm.get_telemetry() is None else b"handle")
        os._exit(0)
    os.close(write)
    assert os.read(read, 16) == b"none"
    os.close(read)
    assert os.waitpid(pid, 0)[1] == 0
    assert lm.get_telemetry() is handle
    handle.shutdown(1000)


def test_a_disabled_run_builds_nothing_and_gates_every_group():
    handle = lm.set_telemetry(training_args())
    assert handle.is_exporting is False
    assert _lens.enabled_span_groups() == set()
    assert handle.force_flush(1000) is True
    handle.shutdown(1000)


def test_logs_enabled_attaches_the_logging_handler_to_the_root_logger(monkeypatch, tmp_path):
    exported = exporting_to_files(monkeypatch, tmp_path, logs=True)
    handle = lm.set_telemetry(training_args(), _allow_reinit=True)
    handlers = lens_handlers(logging.getLogger())
    assert len(handlers) == 1
    # The bridge leaves the loggers' levels to the application (as NeMo Lens's): Megatron-LM
    # sets its own (--logging-level); a trainer logging at INFO sets INFO.
    assert logging.getLogger().level == logging.WARNING
    monkeypatch.setattr(logging.getLogger("megatron.training"), "level", logging.INFO)
    try:
        with lens.managed_span("job", "megatron.train") as span:
            logging.getLogger("megatron.training").info("iteration 1 done")
        handle.shutdown(5000)
        (record,) = [r for r in exported.logs() if r["body"]["stringValue"] == "iteration 1 done"]
        train = exported.span("megatron.train")
        assert (record["traceId"], record["spanId"]) == (train["traceId"], train["spanId"])
        assert span is not None
        # A second enabled set-up keeps the one handler (no duplicate records).
        handle = lm.set_telemetry(training_args(), _allow_reinit=True)
        assert lens_handlers(logging.getLogger()) == handlers
        handle.shutdown(1000)
    finally:
        monkeypatch.setenv("MEGATRON_OTEL_ENABLED", "0")
        lm.set_telemetry(training_args())  # disabled: the handler stays (as NeMo Lens's) and
        logging.getLogger("megatron.training").info("dropped")  # records nothing, never raises
        remove_lens_handlers(logging.getLogger())


def test_training_metrics_are_recorded_with_the_cpp_instruments(monkeypatch, tmp_path):
    exported = exporting_to_files(monkeypatch, tmp_path)
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000")  # only the final collection
    handle = lm.set_telemetry(training_args(), _allow_reinit=True)
    lm.record_training_metrics(step_duration_ms=12.5, loss=2.25, tokens_per_sec=1000.0,
                               grad_norm=0.5, learning_rate=0.001, skipped_iters=0,
                               not_a_metric=1.0)  # an unknown keyword is ignored
    lm.record_training_metrics(handle, loss=2.0, grad_norm="bad")
    handle.shutdown(5000)
    points = {}
    for line in exported._lines("metrics.jsonl"):
        for resource in line["resourceMetrics"]:
            for scope in resource["scopeMetrics"]:
                for metric in scope["metrics"]:
                    if metric["name"].startswith("megatron."):  # not lens's own lens.* metrics
                        points[metric["name"]] = metric
    assert set(points) == {"megatron.training.step_duration_ms", "megatron.training.loss",
                           "megatron.training.tokens_per_sec", "megatron.training.grad_norm",
                           "megatron.training.learning_rate"}
    (loss,) = points["megatron.training.loss"]["gauge"]["dataPoints"]
    assert loss["asDouble"] == 2.0
    (grad_norm,) = points["megatron.training.grad_norm"]["gauge"]["dataPoints"]
    assert grad_norm["asDouble"] == 0.5


# ---- what the trainers build on ------------------------------------------------------------------

def test_a_trace_root_span_has_the_seeded_trace_id_links_and_parents_its_children(telemetry):
    handle, exported = telemetry
    seed = lens.TraceSeed(bytes(range(16)))
    assert seed.trace_id_for(7) == lens.TraceSeed(bytes(range(16))).trace_id_for(7)
    assert seed.trace_id_for(7) != seed.trace_id_for(8)
    with lens.managed_span("job", "megatron.train"):
        link = {}
        lens.inject_context(link)
        with lens.trace_root_span("step", "megatron.train_step", seed.trace_id_for(7), link,
                                  **{"megatron.iteration": 7}) as step:
            step.set_attribute("megatron.loss", 1.5)
            with lens.managed_span("forward_backward", "megatron.forward_backward"):
                pass
    handle.shutdown(5000)
    train = exported.span("megatron.train")
    step = exported.span("megatron.train_step")
    child = exported.span("megatron.forward_backward")
    assert step["traceId"] == seed.trace_id_for(7)
    assert step.get("parentSpanId", "") == ""
    assert [(l["traceId"], l["spanId"]) for l in step["links"]] == [
        (train["traceId"], train["spanId"])]
    assert attributes(step) == {"megatron.iteration": 7, "megatron.loss": 1.5}
    assert (child["traceId"], child["parentSpanId"]) == (step["traceId"], step["spanId"])


def test_a_trace_root_span_records_exceptions_and_is_gated(telemetry):
    handle, exported = telemetry
    with pytest.raises(KeyError):
        with lens.trace_root_span("step", "failing_step"):
            raise KeyError("batch")
    lens.set_enabled_span_groups({"job"})
    with lens.trace_root_span("step", "gated_step") as gated:
        assert gated is None
    handle.shutdown(5000)
    failing = exported.span("failing_step")
    assert failing["status"] == {"code": 2, "message": "'batch'"}
    assert [attributes(e) for e in failing["events"]] == [
        {"exception.type": "KeyError", "exception.message": "'batch'"}]
    assert "gated_step" not in [s["name"] for s in exported.spans()]


def test_the_collective_shares_rank_zeros_run_id_and_its_failure_is_named(monkeypatch, tmp_path):
    exporting_to_files(monkeypatch, tmp_path)
    calls = []

    def broadcast(payload, root):
        calls.append((payload, root))
        return b"abcdef012345"

    # The native set-up's run-id collective (nemo.lens.setup_telemetry passes none: NeMo Lens's
    # signature has no collective; launchers' ids or NEMO_LENS_RUN_ID give the shared run id).
    from nemo.lens.handle import _native_config

    def native_config():
        return _native_config(lm.config_from_env(), True)

    handle = _lens.setup_telemetry(native_config(), rank=1, world_size=2, broadcast=broadcast,
                                   allow_reinit=True)
    assert handle.run_id == "abcdef012345"
    assert calls == [(b"", 0)]  # rank 1 sends nothing
    handle.shutdown(1000)

    def failing(payload, root):
        raise RuntimeError("peer gone")

    with pytest.raises(ValueError) as error:
        _lens.setup_telemetry(native_config(), rank=0, world_size=2, broadcast=failing,
                              allow_reinit=True)
    assert str(error.value) == ("resolving the run id: broadcast from rank 0 failed: "
                                "RuntimeError: peer gone")
    seed = lens._lens.share_trace_seed(lambda payload, root: bytes(range(16)), 1, 2)
    assert seed.bytes == bytes(range(16))
