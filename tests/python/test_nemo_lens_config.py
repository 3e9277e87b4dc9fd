"""NemoLensConfig as NeMo Lens defines it: the keyword dataclass and its defaults, validation at
construction, from_env's prefix/fallback model and its messages, and span-group resolution by a
SpanGroup subclass written the way Megatron-LM writes MegatronSpanGroup."""

import dataclasses
import os
from typing import ClassVar, Final

import pytest

from nemo.lens import NemoLensConfig, SpanGroup
from nemo.lens.config import NemoLensConfig as ConfigFromModule
from nemo.lens.groups import SpanGroup as SpanGroupFromModule


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("NEMO_LENS_", "MEGATRON_OTEL_", "MYLIB_", "OTEL_", "WANDB_")):
            monkeypatch.delenv(name)


class TrainerSpanGroup(SpanGroup):
    """A library's own groups and presets, as Megatron-LM's MegatronSpanGroup."""

    MICROBATCH = "microbatch"
    COMMUNICATION = "communication"
    FIRST_ITERATION = "first_iteration"

    ALL_GROUPS: Final[frozenset] = SpanGroup.ALL_GROUPS | {MICROBATCH, COMMUNICATION,
                                                           FIRST_ITERATION}
    _PRESETS: ClassVar[dict] = {
        "default": SpanGroup._PRESETS["default"] | {FIRST_ITERATION},
        "per_step": SpanGroup._PRESETS["per_step"] | {COMMUNICATION, FIRST_ITERATION},
        "profiling": ALL_GROUPS,
        "all": ALL_GROUPS,
    }


# ---- the dataclass -------------------------------------------------------------------------------

def test_the_keyword_constructor_has_the_originals_defaults():
    assert ConfigFromModule is NemoLensConfig and SpanGroupFromModule is SpanGroup
    assert dataclasses.is_dataclass(NemoLensConfig)
    config = NemoLensConfig()
    assert {f.name: getattr(config, f.name) for f in dataclasses.fields(config)
            if not f.name.startswith("_")} == {
        "enabled": False, "service_name": "nemo", "export_strategy": "single_rank",
        "export_rank": -1, "export_sample_rate": 1.0, "sampler_enabled": False,
        "traces_enabled": True, "metrics_enabled": True, "logs_enabled": False,
        "span_groups": "default", "exporter": "otlp", "run_id": "", "user": "",
        "wandb_entity": "", "wandb_project": ""}
    assert config._span_group_cls is None
    given = NemoLensConfig(enabled=True, service_name="svc", export_strategy="all_ranks",
                           export_rank=3, export_sample_rate=0.25, span_groups="per_step",
                           exporter="console", run_id="r1", user="u", wandb_entity="e",
                           wandb_project="p", _span_group_cls=TrainerSpanGroup)
    assert (given.enabled, given.service_name, given.export_strategy, given.export_rank,
            given.export_sample_rate, given.span_groups, given.exporter, given.run_id,
            given.user, given.wandb_entity, given.wandb_project) == (
        True, "svc", "all_ranks", 3, 0.25, "per_step", "console", "r1", "u", "e", "p")
    assert given == NemoLensConfig(**{f.name: getattr(given, f.name)
                                      for f in dataclasses.fields(given) if f.init})
    assert "_span_group_cls" not in repr(given) and "service_name='svc'" in repr(given)


@pytest.mark.parametrize("rate", [-0.1, 1.5, -1e-9])
def test_an_out_of_range_sample_rate_is_refused_at_construction(rate):
    with pytest.raises(ValueError) as error:
        NemoLensConfig(export_sample_rate=rate)
    assert str(error.value) == f"export_sample_rate must be in [0.0, 1.0], got {rate}"


@pytest.mark.parametrize("rate", [0.0, 1.0, 0.5])
def test_the_bounds_of_the_sample_rate_are_accepted(rate):
    assert NemoLensConfig(export_sample_rate=rate).export_sample_rate == rate


# ---- from_env ------------------------------------------------------------------------------------

def test_from_env_without_variables_is_the_defaults():
    assert NemoLensConfig.from_env() == NemoLensConfig()
    assert NemoLensConfig.from_env("MYLIB", "NEMO_LENS") == NemoLensConfig()


def test_from_env_reads_every_field_and_strips_values(monkeypatch):
    for key, value in {"ENABLED": " TRUE ", "EXPORT_STRATEGY": " all_ranks ",
                       "EXPORT_RANK": " 2 ", "EXPORT_SAMPLE_RATE": " 0.5 ",
                       "SAMPLER_ENABLED": "on", "TRACES_ENABLED": "no", "METRICS_ENABLED": "off",
                       "LOGS_ENABLED": "Yes", "SPAN_GROUPS": " per_step,checkpoint ",
                       "EXPORTER": " console ", "RUN_ID": " run-7 ", "USER_ID": " alice "}.items():
        monkeypatch.setenv(f"NEMO_LENS_{key}", value)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "  trainer  ")
    monkeypatch.setenv("WANDB_ENTITY", "team")
    monkeypatch.setenv("WANDB_PROJECT", "proj")
    config = NemoLensConfig.from_env()
    assert config == NemoLensConfig(
        enabled=True, service_name="trainer", export_strategy="all_ranks", export_rank=2,
        export_sample_rate=0.5, sampler_enabled=True, traces_enabled=False,
        metrics_enabled=False, logs_enabled=True, span_groups="per_step,checkpoint",
        exporter="console", run_id="run-7", user="alice", wandb_entity="team",
        wandb_project="proj")


def test_the_prefix_wins_over_the_fallback_and_blank_falls_back(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_ENABLED", "1")
    monkeypatch.setenv("NEMO_LENS_SPAN_GROUPS", "per_step")
    monkeypatch.setenv("NEMO_LENS_EXPORTER", "file")
    monkeypatch.setenv("MYLIB_SPAN_GROUPS", "all")
    monkeypatch.setenv("MYLIB_EXPORTER", "   ")  # blank: the fallback's value
    config = NemoLensConfig.from_env(prefix="MYLIB", fallback_prefix="NEMO_LENS")
    assert (config.enabled, config.span_groups, config.exporter) == (True, "all", "file")
    # Without a fallback prefix NEMO_LENS_* is not read.
    alone = NemoLensConfig.from_env(prefix="MYLIB")
    assert (alone.enabled, alone.span_groups, alone.exporter) == (False, "all", "otlp")
    # OTEL_SERVICE_NAME is read bare; blank is the default.
    monkeypatch.setenv("OTEL_SERVICE_NAME", "  ")
    assert NemoLensConfig.from_env("MYLIB").service_name == "nemo"


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on", " On "])
def test_true_spellings(monkeypatch, value):
    monkeypatch.setenv("NEMO_LENS_ENABLED", value)
    assert NemoLensConfig.from_env().enabled is True


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "off", "OFF"])
def test_false_spellings(monkeypatch, value):
    monkeypatch.setenv("NEMO_LENS_TRACES_ENABLED", value)
    assert NemoLensConfig.from_env().traces_enabled is False


BOOLEAN_SPELLINGS = "Expected '1'/'0', 'true'/'false', 'yes'/'no', 'on'/'off'."


@pytest.mark.parametrize("variable, value, prefixes, message", [
    ("MYLIB_LOGS_ENABLED", " Maybe ", ("MYLIB", "NEMO_LENS"),
     "Invalid boolean for MYLIB_LOGS_ENABLED: 'maybe'. " + BOOLEAN_SPELLINGS),
    # As the original: the message names {prefix}_{key} wherever the value came from.
    ("NEMO_LENS_SAMPLER_ENABLED", "sometimes", ("MYLIB", "NEMO_LENS"),
     "Invalid boolean for MYLIB_SAMPLER_ENABLED: 'sometimes'. " + BOOLEAN_SPELLINGS),
    ("NEMO_LENS_EXPORT_SAMPLE_RATE", "half", (),
     "Invalid float for NEMO_LENS_EXPORT_SAMPLE_RATE: 'half'."),
    ("NEMO_LENS_EXPORT_SAMPLE_RATE", "2", (), "export_sample_rate must be in [0.0, 1.0], got 2.0"),
], ids=["bad_boolean", "bad_boolean_from_the_fallback", "bad_float", "out_of_range_rate"])
def test_a_bad_value_is_refused_naming_the_variable(monkeypatch, variable, value, prefixes,
                                                    message):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError) as error:
        NemoLensConfig.from_env(*prefixes)
    assert str(error.value) == message


def test_a_bad_integer_names_the_variable(monkeypatch):
    monkeypatch.setenv("NEMO_LENS_EXPORT_RANK", "last")
    with pytest.raises(ValueError) as error:
        NemoLensConfig.from_env()
    assert str(error.value) == "Invalid integer for NEMO_LENS_EXPORT_RANK: 'last'."
    assert isinstance(error.value.__cause__, ValueError)


# ---- span groups ---------------------------------------------------------------------------------

def test_the_base_class_resolves_its_presets_and_groups():
    assert NemoLensConfig().resolved_span_groups == frozenset({"job", "checkpoint", "evaluate"})
    assert NemoLensConfig(span_groups="per_step").resolved_span_groups == frozenset(
        {"job", "checkpoint", "evaluate", "model_init", "load_checkpoint", "step",
         "forward_backward", "optimizer"})
    assert NemoLensConfig(span_groups=" STEP , ,optimizer").resolved_span_groups == frozenset(
        {"step", "optimizer"})
    assert NemoLensConfig(span_groups="").resolved_span_groups == frozenset()
    assert SpanGroup.resolve("all") == SpanGroup.ALL_GROUPS
    categories = SpanGroup.categories()
    assert categories["default"] == frozenset({"job", "checkpoint", "evaluate"})
    assert categories["groups"] == SpanGroup.ALL_GROUPS


def test_an_unknown_name_is_refused_with_the_valid_options():
    with pytest.raises(ValueError) as error:
        NemoLensConfig(span_groups="default,microbatch").resolved_span_groups
    valid = sorted(SpanGroup.ALL_GROUPS | {"default", "per_step", "all"})
    assert str(error.value) == f"Unknown span group or preset: 'microbatch'. Valid options: {valid}"


def test_a_subclass_with_its_own_groups_and_presets_resolves(monkeypatch):
    monkeypatch.setenv("MYLIB_SPAN_GROUPS", "per_step,microbatch")
    config = NemoLensConfig.from_env("MYLIB", "NEMO_LENS", span_group_cls=TrainerSpanGroup)
    assert config._span_group_cls is TrainerSpanGroup
    assert config.resolved_span_groups == SpanGroup._PRESETS["per_step"] | {
        "communication", "first_iteration", "microbatch"}
    # The subclass's presets, not the base class's: default keeps first_iteration.
    assert NemoLensConfig(_span_group_cls=TrainerSpanGroup).resolved_span_groups == frozenset(
        {"job", "checkpoint", "evaluate", "first_iteration"})
    assert TrainerSpanGroup.resolve("profiling") == TrainerSpanGroup.ALL_GROUPS
    assert len(TrainerSpanGroup.ALL_GROUPS) == len(SpanGroup.ALL_GROUPS) + 3
    assert TrainerSpanGroup.categories()["profiling"] == TrainerSpanGroup.ALL_GROUPS
    # The base class does not know the subclass's names.
    with pytest.raises(ValueError, match="'microbatch'"):
        NemoLensConfig(span_groups="microbatch").resolved_span_groups
    with pytest.raises(ValueError) as error:
        TrainerSpanGroup.resolve("layer")
    valid = sorted(TrainerSpanGroup.ALL_GROUPS | set(TrainerSpanGroup._PRESETS))
    assert str(error.value) == f"Unknown span group or preset: 'layer'. Valid options: {valid}"
