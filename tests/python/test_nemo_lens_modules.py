"""The modules of nemo.lens beside the core API: every module imports, the original's public
names are there, fallbacks, semconv, resources (environment monkeypatched), the instruments'
metric names, kinds and units on the exported records, contrib.nccl and contrib.ray context
propagation, and the logging bridge's correlation with the active span."""

import importlib
import json
import logging
import os

import pytest

import nemo.lens as lens
from nemo.lens import trace as lens_trace
from conftest import (Exported, attributes, clear_telemetry_variables, lens_handlers,
                      remove_lens_handlers)

MODULES = [
    "nemo.lens", "nemo.lens.config", "nemo.lens.groups", "nemo.lens.handle", "nemo.lens.helpers",
    "nemo.lens.state", "nemo.lens.strategies", "nemo.lens.sampling", "nemo.lens.propagation",
    "nemo.lens.distributed", "nemo.lens.logging_bridge", "nemo.lens.fallbacks",
    "nemo.lens.semconv", "nemo.lens.resources", "nemo.lens.resources.local",
    "nemo.lens.resources.slurm", "nemo.lens.resources.kubernetes", "nemo.lens.instruments",
    "nemo.lens.instruments.inference", "nemo.lens.instruments.rl", "nemo.lens.instruments.gym",
    "nemo.lens.contrib", "nemo.lens.contrib.nccl", "nemo.lens.contrib.ray",
    "nemo.lens.package_info", "nemo.lens.megatron", "nemo.lens.trace", "nemo.lens.metrics",
]

# NeMo Lens's nemo.lens.__all__.
ORIGINAL_ALL = [
    "__version__", "__package_name__", "__contact_names__", "__contact_emails__",
    "__homepage__", "__repository_url__", "__download_url__", "NemoLensConfig", "SpanGroup",
    "TelemetryHandle", "setup_telemetry", "span_cm", "managed_span", "trace_fn",
    "safe_set_span_attributes", "redact_value", "DEFAULT_REDACT_KEYS", "inject_context",
    "extract_context", "get_tracer", "get_meter", "is_span_group_enabled",
    "set_enabled_span_groups", "broadcast_trace_context", "create_linked_span", "ExportStrategy",
    "register_export_strategy", "registered_strategies", "unregister_export_strategy",
]

# Public names of NeMo Lens's submodules that code imports from them directly.
ORIGINAL_SUBMODULE_NAMES = {
    "nemo.lens.config": ["NemoLensConfig"],
    "nemo.lens.groups": ["SpanGroup"],
    "nemo.lens.handle": ["TelemetryHandle", "setup_telemetry"],
    "nemo.lens.helpers": ["DEFAULT_REDACT_KEYS", "managed_span", "redact_value",
                          "safe_set_span_attributes", "span_cm", "trace_fn"],
    "nemo.lens.state": ["get_pp_trace_carrier", "is_span_group_enabled",
                        "set_enabled_span_groups", "set_pp_trace_carrier"],
    "nemo.lens.strategies": ["BUILTIN_STRATEGIES", "ExportStrategy", "get_export_strategy",
                             "register_export_strategy", "registered_strategies",
                             "unregister_export_strategy"],
    "nemo.lens.sampling": ["RankAwareSampler"],
    "nemo.lens.propagation": ["extract_context", "inject_context"],
    "nemo.lens.distributed": ["broadcast_trace_context", "create_linked_span"],
    "nemo.lens.logging_bridge": ["setup_logging_bridge"],
    "nemo.lens.fallbacks": ["is_span_group_enabled", "managed_span", "safe_set_span_attributes",
                            "span_cm", "trace_fn"],
    "nemo.lens.resources": ["detect_kubernetes", "detect_local", "detect_resource",
                            "detect_slurm"],
    "nemo.lens.instruments.inference": ["record_inference_metrics"],
    "nemo.lens.instruments.rl": ["record_rl_metrics"],
    "nemo.lens.instruments.gym": ["record_gym_metrics"],
    "nemo.lens.contrib.nccl": ["deserialize_context", "extract_nccl_context",
                               "serialize_context"],
    "nemo.lens.contrib.ray": ["extract_ray_context", "inject_ray_context",
                              "ray_dispatch_with_context", "traced_remote_call"],
}

# NeMo Lens's semantic-convention constants, name and value.
SEMCONV = {
    "SEMCONV_VERSION": "1.29.0", "DL_RANK": "dl.rank", "DL_WORLD_SIZE": "dl.world_size",
    "DL_LOCAL_RANK": "dl.local_rank", "DL_DATA_PARALLEL_RANK": "dl.data_parallel.rank",
    "DL_DATA_PARALLEL_SIZE": "dl.data_parallel.size",
    "DL_TENSOR_PARALLEL_RANK": "dl.tensor_parallel.rank",
    "DL_TENSOR_PARALLEL_SIZE": "dl.tensor_parallel.size",
    "DL_PIPELINE_PARALLEL_RANK": "dl.pipeline_parallel.rank",
    "DL_PIPELINE_PARALLEL_SIZE": "dl.pipeline_parallel.size", "DL_ITERATION": "dl.iteration",
    "DL_LOSS": "dl.loss", "DL_GRAD_NORM": "dl.grad_norm", "DL_LEARNING_RATE": "dl.learning_rate",
    "DL_THROUGHPUT_TFLOPS": "dl.throughput_tflops",
    "DL_THROUGHPUT_TOKENS_PER_SEC": "dl.throughput_tokens_per_sec",
    "DL_BATCH_SIZE": "dl.batch_size", "DL_SEQUENCE_LENGTH": "dl.sequence_length",
    "DL_MICROBATCH_ID": "dl.microbatch_id", "GENAI_OPERATION_NAME": "gen_ai.operation.name",
    "GENAI_PROVIDER_NAME": "gen_ai.provider.name", "GENAI_REQUEST_MODEL": "gen_ai.request.model",
    "GENAI_TOKEN_TYPE": "gen_ai.token.type", "RL_ALGORITHM": "rl.algorithm",
    "RL_REWARD": "rl.reward", "RL_REWARD_MEAN": "rl.reward.mean",
    "RL_KL_DIVERGENCE": "rl.kl_divergence", "RL_POLICY_LOSS": "rl.policy_loss",
    "RL_VALUE_LOSS": "rl.value_loss", "RL_ENTROPY": "rl.entropy",
    "RL_GENERATION_BACKEND": "rl.generation.backend", "RL_NUM_ROLLOUTS": "rl.num_rollouts",
    "RL_RESPONSE_LENGTH_MEAN": "rl.response_length.mean", "RL_GRAD_NORM": "rl.grad_norm",
    "RL_LEARNING_RATE": "rl.learning_rate",
    "RL_THROUGHPUT_TOKENS_PER_SEC": "rl.throughput.tokens_per_sec",
    "GYM_SERVER_NAME": "gym.server.name", "GYM_SERVER_TYPE": "gym.server.type",
    "GYM_NUM_SERVERS": "gym.num_servers", "GYM_ROLLOUT_BATCH_SIZE": "gym.rollout.batch_size",
    "GYM_VERIFY_SUCCESS_RATE": "gym.verify.success_rate", "SLURM_JOB_ID": "slurm.job.id",
    "SLURM_JOB_NAME": "slurm.job.name", "SLURM_NODELIST": "slurm.nodelist",
    "SLURM_NNODES": "slurm.nnodes", "SLURM_NTASKS": "slurm.ntasks",
    "SLURM_PARTITION": "slurm.partition", "SLURM_CLUSTER_NAME": "slurm.cluster.name",
    "NEMO_RUN_ID": "nemo.run.id", "NEMO_USER_ID": "nemo.user.id",
    "NEMO_SPAN_TRUNCATED": "nemo.span.truncated", "WANDB_ENTITY": "wandb.entity",
    "WANDB_PROJECT": "wandb.project", "K8S_NAMESPACE_NAME": "k8s.namespace.name",
    "K8S_POD_NAME": "k8s.pod.name", "K8S_POD_UID": "k8s.pod.uid",
    "K8S_NODE_NAME": "k8s.node.name", "K8S_CONTAINER_NAME": "k8s.container.name",
    "K8S_JOB_NAME": "k8s.job.name",
}


def parent_of(span):
    return span.get("parentSpanId", "")


# ---- modules and names ---------------------------------------------------------------------------

@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports(module):
    assert importlib.import_module(module).__name__ == module


def test_the_originals_public_names_are_all_in_nemo_lens():
    assert [name for name in ORIGINAL_ALL if not hasattr(lens, name)] == []
    assert set(ORIGINAL_ALL) <= set(lens.__all__)
    assert lens.__package_name__ and lens.__version__.count(".") >= 2
    # The same objects as the submodules define.
    from nemo.lens import helpers, propagation
    assert lens.managed_span is helpers.managed_span
    assert lens.inject_context is propagation.inject_context


@pytest.mark.parametrize("module", sorted(ORIGINAL_SUBMODULE_NAMES))
def test_the_originals_submodule_names_are_there(module):
    imported = importlib.import_module(module)
    assert [n for n in ORIGINAL_SUBMODULE_NAMES[module] if not hasattr(imported, n)] == []


def test_redaction_names_and_defaults():
    assert lens.DEFAULT_REDACT_KEYS == frozenset(
        {"prompt", "input_text", "output_text", "text", "password", "token", "secret", "key"})
    assert lens.redact_value("password", "hunter2") == "[REDACTED]"
    assert lens.redact_value("model", "gpt") == "gpt"
    assert lens.redact_value("model", "gpt", frozenset({"model"})) == "[REDACTED]"


def test_safe_set_span_attributes_filters_and_redacts_on_the_export(telemetry):
    handle, exported = telemetry
    with lens.span_cm("safe") as span:
        lens.safe_set_span_attributes(span, {
            "n": 1, "f": 0.5, "b": False, "s": "x", "prompt": "hello", "l": (1, 2),
            "mixed": [1, {"a": 1}], "none": None, "obj": object()})
        lens.safe_set_span_attributes(span, {"model": "m"}, redact_keys=frozenset({"model"}))
    lens.safe_set_span_attributes(None, {"n": 1})  # None: nothing, no error
    with lens.managed_span("not_a_group", "off") as off:
        lens.safe_set_span_attributes(off, {"n": 1})
    handle.shutdown(5000)
    assert attributes(exported.span("safe")) == {
        "n": 1, "f": 0.5, "b": False, "s": "x", "prompt": "[REDACTED]", "l": [1, 2],
        "model": "[REDACTED]"}


# ---- fallbacks -----------------------------------------------------------------------------------

def test_fallbacks_are_no_ops_with_the_primitives_signatures():
    from nemo.lens import fallbacks

    def work(x):
        return x * 2

    assert fallbacks.trace_fn("step", "work")(work) is work
    assert fallbacks.trace_fn("step", "work", tracer=None)(work)(4) == 8
    with fallbacks.managed_span("step", "name", None, iteration=1) as span:
        assert span is None
    with fallbacks.span_cm("name", tracer=None, record_exception=False, a=1) as span:
        assert span is None
    assert fallbacks.is_span_group_enabled("job") is False
    assert fallbacks.safe_set_span_attributes(None, {"a": 1}, redact_keys=None) is None
    with pytest.raises(ValueError):  # an exception still propagates
        with fallbacks.managed_span("step", "name"):
            raise ValueError("through")

    @fallbacks.managed_span("step", "as_decorator")
    def decorated():
        return 5

    assert decorated() == 5


# ---- semconv -------------------------------------------------------------------------------------

def test_semconv_constants_are_the_originals():
    from nemo.lens import semconv
    assert {name: getattr(semconv, name, None) for name in SEMCONV} == SEMCONV


# ---- resources -----------------------------------------------------------------------------------

@pytest.fixture
def no_launcher(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("SLURM_", "K8S_")) or name in ("KUBERNETES_SERVICE_HOST",
                                                             "CUDA_VISIBLE_DEVICES"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_detect_slurm(no_launcher):
    from nemo.lens.resources import detect_slurm
    assert detect_slurm() == {}
    no_launcher.setenv("SLURM_JOB_ID", "1234")
    no_launcher.setenv("SLURM_JOB_NAME", "pretrain")
    no_launcher.setenv("SLURM_NNODES", "4")
    no_launcher.setenv("SLURM_PARTITION", "")  # empty: left out
    assert detect_slurm() == {"slurm.job.id": "1234", "slurm.job.name": "pretrain",
                              "slurm.nnodes": "4"}


def test_detect_kubernetes(no_launcher):
    from nemo.lens.resources import detect_kubernetes
    if not os.path.exists("/var/run/secrets/kubernetes.io"):
        assert detect_kubernetes() == {}
    no_launcher.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    no_launcher.setenv("HOSTNAME", "trainer-0")
    no_launcher.setenv("K8S_NAMESPACE", "ml")
    assert detect_kubernetes() == {"k8s.namespace.name": "ml", "k8s.pod.name": "trainer-0"}
    no_launcher.setenv("K8S_POD_NAME", "pod-from-downward-api")
    no_launcher.setenv("K8S_JOB_NAME", "job-7")
    assert detect_kubernetes() == {"k8s.namespace.name": "ml",
                                   "k8s.pod.name": "pod-from-downward-api",
                                   "k8s.job.name": "job-7"}


def test_detect_local_and_detect_resource(no_launcher):
    import socket

    from nemo.lens.resources import detect_local, detect_resource
    no_launcher.setenv("CUDA_VISIBLE_DEVICES", "0,3")
    assert detect_local() == {"host.name": socket.gethostname(), "process.pid": os.getpid(),
                              "host.gpu.count": 2}
    no_launcher.setenv("CUDA_VISIBLE_DEVICES", " ")
    assert detect_local()["host.gpu.count"] == 0
    no_launcher.setenv("SLURM_JOB_ID", "99")
    no_launcher.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    no_launcher.setenv("K8S_POD_NAME", "pod-1")
    assert detect_resource() == {"host.name": socket.gethostname(), "process.pid": os.getpid(),
                                 "host.gpu.count": 0, "slurm.job.id": "99",
                                 "k8s.pod.name": "pod-1"}


# ---- instruments ---------------------------------------------------------------------------------

def kind_of(metric):
    return next(k for k in ("sum", "histogram", "gauge") if k in metric)


def test_record_inference_metrics(metered):
    from nemo.lens.instruments import record_inference_metrics
    handle, exported = metered
    record_inference_metrics(handle.meter, request_duration_s=0.25, model="llama",
                             input_tokens=100, output_tokens=7)
    record_inference_metrics(handle.meter)  # nothing given: nothing recorded
    handle.shutdown(5000)
    points = exported.metrics()
    base = (("gen_ai.operation.name", "text_completion"), ("gen_ai.provider.name", "nemo"),
            ("gen_ai.request.model", "llama"))
    metric, duration = points[("gen_ai.server.request.duration", base)]
    assert (kind_of(metric), metric["unit"]) == ("histogram", "s")
    assert (int(duration["count"]), duration["sum"]) == (1, 0.25)
    for token_type, count in (("input", 100), ("output", 7)):
        key = tuple(sorted(base + (("gen_ai.token.type", token_type),)))
        metric, usage = points[("gen_ai.client.token.usage", key)]
        assert (kind_of(metric), metric["unit"]) == ("histogram", "{token}")
        assert (int(usage["count"]), usage["sum"]) == (1, count)
    assert {name for name, _ in points if not name.startswith("lens.")} == {
        "gen_ai.server.request.duration", "gen_ai.client.token.usage"}


def test_record_rl_metrics(metered):
    from nemo.lens.instruments import record_rl_metrics
    handle, exported = metered
    record_rl_metrics(handle.meter, reward_mean=0.75, kl_divergence=0.01, policy_loss=1.5,
                      value_loss=0.5, entropy=2.0, response_length_mean=128.0, grad_norm=0.9,
                      learning_rate=1e-5, throughput_tokens_per_sec=900.0,
                      generation_duration_ms=120.0, rollout_duration_ms=300.0)
    handle.shutdown(5000)
    points = exported.metrics()
    gauges = {"rl.reward.mean": 0.75, "rl.kl_divergence": 0.01, "rl.policy_loss": 1.5,
              "rl.value_loss": 0.5, "rl.entropy": 2.0, "rl.response_length.mean": 128.0,
              "rl.grad_norm": 0.9, "rl.learning_rate": 1e-5,
              "rl.throughput.tokens_per_sec": 900.0}
    for name, value in gauges.items():
        metric, point = points[(name, ())]
        assert (kind_of(metric), point["asDouble"]) == ("gauge", value), name
        assert metric.get("unit", "") == ("{token}/s" if "throughput" in name else ""), name
    for name, value in (("rl.generation.duration_ms", 120.0), ("rl.rollout.duration_ms", 300.0)):
        metric, point = points[(name, ())]
        assert (kind_of(metric), metric["unit"], point["sum"]) == ("histogram", "ms", value)


def test_record_gym_metrics(metered):
    from nemo.lens.instruments import record_gym_metrics
    handle, exported = metered
    record_gym_metrics(handle.meter, server_request_duration_ms=12.0, rollout_duration_ms=40.0,
                       verify_duration_ms=3.0, verify_success_rate=0.5, active_servers=4)
    record_gym_metrics(handle.meter, verify_success_rate=None, active_servers=3)
    handle.shutdown(5000)
    points = exported.metrics()
    for name, value in (("gym.server.request_duration_ms", 12.0),
                        ("gym.rollout.duration_ms", 40.0), ("gym.verify.duration_ms", 3.0)):
        metric, point = points[(name, ())]
        assert (kind_of(metric), metric["unit"], int(point["count"]), point["sum"]) == (
            "histogram", "ms", 1, value), name
    metric, rate = points[("gym.verify.success_rate", ())]
    assert (kind_of(metric), rate["asDouble"]) == ("gauge", 0.5)
    metric, servers = points[("gym.servers.active", ())]
    assert (kind_of(metric), servers["asDouble"]) == ("gauge", 3)


def test_recorders_never_raise_on_a_broken_meter():
    from nemo.lens.instruments import record_gym_metrics, record_inference_metrics, \
        record_rl_metrics

    class Broken:
        def __getattr__(self, name):
            raise RuntimeError("no meter")

    record_inference_metrics(Broken(), request_duration_s=1.0)
    record_rl_metrics(Broken(), reward_mean=1.0)
    record_gym_metrics(Broken(), active_servers=1)


# ---- contrib -------------------------------------------------------------------------------------

def test_nccl_context_round_trip(telemetry):
    from nemo.lens.contrib.nccl import deserialize_context, extract_nccl_context, \
        serialize_context
    handle, exported = telemetry
    with lens.managed_span("step", "sender"):
        data = serialize_context()
    assert isinstance(data, bytes)
    carrier = deserialize_context(data)
    assert carrier == json.loads(data.decode("utf-8")) and list(carrier) == ["traceparent"]
    assert deserialize_context(b"\xff\xfe") is None
    assert deserialize_context(b"{not json") is None
    receiver = handle.tracer.start_span("receiver", context=extract_nccl_context(data))
    receiver.end()
    # Bytes that do not decode: the current context, as the original.
    with lens.managed_span("step", "local"):
        fallback = handle.tracer.start_span("fallback", context=extract_nccl_context(b"junk"))
        fallback.end()
    orphan = handle.tracer.start_span("orphan", context=extract_nccl_context(b"junk"))
    orphan.end()
    assert json.loads(serialize_context()) == {}  # no current span
    handle.shutdown(5000)
    sender, received = exported.span("sender"), exported.span("receiver")
    assert carrier["traceparent"] == f"00-{sender['traceId']}-{sender['spanId']}-01"
    assert (received["traceId"], parent_of(received)) == (sender["traceId"], sender["spanId"])
    assert parent_of(exported.span("fallback")) == exported.span("local")["spanId"]
    assert parent_of(exported.span("orphan")) == ""


def test_ray_traced_remote_call_parents_under_the_carrier(telemetry):
    from nemo.lens.contrib.ray import extract_ray_context, inject_ray_context, \
        ray_dispatch_with_context, traced_remote_call
    handle, exported = telemetry

    class Worker:
        def step(self, x, scale=1):
            with lens.span_cm("worker.inner"):
                return x * scale

    traced = traced_remote_call(Worker.step)
    assert traced.__name__ == "step"

    class Remote:  # what ray.remote gives: .remote(*args, **kwargs)
        calls = []

        def remote(self, *args, **kwargs):
            self.calls.append(kwargs.get("_otel_carrier"))
            return traced(Worker(), *args, **kwargs)

    with lens.managed_span("job", "driver"):
        carrier = inject_ray_context()
        assert ray_dispatch_with_context(Remote(), 3, scale=2) == 6
    assert Remote.calls == [carrier]
    assert traced(Worker(), 5, _otel_carrier=carrier) == 5
    # Without a carrier: the current context (as NeMo Lens's get_current()): empty outside any
    # span, the current span inside one.
    assert len(extract_ray_context(None)) == 0
    with lens.managed_span("job", "worker_side") as current:
        held = lens_trace.get_current_span(extract_ray_context(None)).get_span_context()
        assert held == current.get_span_context()
    handle.shutdown(5000)
    driver = exported.span("driver")
    # Named after the method's qualified name.
    steps = [s for s in exported.spans() if s["name"] == Worker.step.__qualname__]
    assert Worker.step.__qualname__.endswith("<locals>.Worker.step")
    assert len(steps) == 2
    for step in steps:
        assert (step["traceId"], parent_of(step)) == (driver["traceId"], driver["spanId"])
    inner = [s for s in exported.spans() if s["name"] == "worker.inner"]
    assert sorted(parent_of(s) for s in inner) == sorted(s["spanId"] for s in steps)


# ---- logging bridge ------------------------------------------------------------------------------

def test_setup_logging_bridge_correlates_records_with_the_active_span(telemetry):
    from nemo.lens.logging_bridge import setup_logging_bridge
    handle, exported = telemetry
    logger = logging.getLogger("nemo.lens.test.bridge")
    logger.setLevel(logging.DEBUG)  # the application's level; the bridge's is INFO
    setup_logging_bridge("nemo.lens.test.bridge", logging.INFO)
    setup_logging_bridge("nemo.lens.test.bridge", logging.INFO)  # once per logger
    try:
        assert len(lens_handlers(logger)) == 1
        with lens.managed_span("step", "bridged") as span:
            logger.info("inside %d", 1)
            logger.debug("below the level")
        logger.warning("outside")
    finally:
        remove_lens_handlers(logger)
        logger.setLevel(logging.NOTSET)
    handle.shutdown(5000)
    span_record = exported.span("bridged")
    records = [r for r in exported.logs() if attributes(r).get("logger.name") ==
               "nemo.lens.test.bridge"]
    assert [r["body"]["stringValue"] for r in records] == ["inside 1", "outside"]
    assert [r["severityText"] for r in records] == ["INFO", "WARN"]
    assert (records[0]["traceId"], records[0]["spanId"]) == (span_record["traceId"],
                                                             span_record["spanId"])
    context = span.get_span_context()
    assert records[0]["spanId"] == f"{context.span_id:016x}"
    assert records[1].get("traceId", "") == ""


def test_setup_logging_bridge_without_a_log_pipeline_does_nothing():
    from nemo.lens.logging_bridge import setup_logging_bridge
    lens.setup_telemetry(lens.NemoLensConfig(), _allow_reinit=True)  # off: no log pipeline
    setup_logging_bridge("nemo.lens.test.unbridged")
    logger = logging.getLogger("nemo.lens.test.unbridged")
    assert not lens_handlers(logger)
    logger.error("still fine")


# ---- strategies, sampling, state -----------------------------------------------------------------

def md5_fraction(rank):
    import hashlib
    return (int(hashlib.md5(str(rank).encode()).hexdigest(), 16) % 10000) / 10000.0


def test_the_builtin_export_strategies(monkeypatch):
    from nemo.lens.strategies import BUILTIN_STRATEGIES, get_export_strategy
    assert BUILTIN_STRATEGIES == frozenset(
        {"all_ranks", "single_rank", "sampled", "first_rank_per_node"})
    config = lens.NemoLensConfig(export_sample_rate=0.5, export_rank=2)
    assert [get_export_strategy("all_ranks")(config, r, 4) for r in range(4)] == [True] * 4
    assert [get_export_strategy("single_rank")(config, r, 4) for r in range(4)] == [
        False, False, True, False]
    assert [get_export_strategy("single_rank")(lens.NemoLensConfig(), r, 4)
            for r in range(4)] == [False, False, False, True]
    sampled = [get_export_strategy("sampled")(config, r, 64) for r in range(64)]
    assert sampled == [md5_fraction(r) < 0.5 for r in range(64)]
    assert 0 < sum(sampled) < 64
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert get_export_strategy("first_rank_per_node")(config, 5, 8) is False
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert get_export_strategy("first_rank_per_node")(config, 4, 8) is True
    monkeypatch.delenv("LOCAL_RANK")
    assert get_export_strategy("first_rank_per_node")(config, 4, 8) is True
    with pytest.raises(ValueError) as error:
        lens.register_export_strategy("", lambda c, r, w: True)
    assert str(error.value) == "Strategy name must be a non-empty string."


def test_rank_aware_sampler_decides_once_per_rank():
    from nemo.lens.sampling import RankAwareSampler
    assert RankAwareSampler(3, 8, 1.0).should_sample() is True
    assert RankAwareSampler(3, 8, 0.0).should_sample() is False
    for rank in range(16):
        sampler = RankAwareSampler(rank, 16, 0.3)
        assert sampler.should_sample(None, 123, "span") is (md5_fraction(rank) < 0.3), rank
    assert "rank=5" in RankAwareSampler(5, 8, 0.25).get_description()


def test_sampler_enabled_drops_every_span_of_an_unsampled_rank(monkeypatch, tmp_path):
    clear_telemetry_variables(monkeypatch)
    kept_rank = next(r for r in range(64) if md5_fraction(r) < 0.5)
    dropped_rank = next(r for r in range(64) if md5_fraction(r) >= 0.5)
    for rank in (kept_rank, dropped_rank):
        monkeypatch.setenv("NEMO_LENS_FILE_PATH", f"{tmp_path}/rank{rank}/")
        config = lens.NemoLensConfig(enabled=True, exporter="file", export_strategy="all_ranks",
                                     sampler_enabled=True, export_sample_rate=0.5,
                                     span_groups="all", metrics_enabled=False)
        handle = lens.setup_telemetry(config, rank=rank, world_size=64, _allow_reinit=True)
        assert handle.is_exporting is True
        with lens.managed_span("step", f"on_rank_{rank}"):
            pass
        handle.shutdown(5000)
    assert [s["name"] for s in Exported(f"{tmp_path}/rank{kept_rank}").spans()] == [
        f"on_rank_{kept_rank}"]
    assert Exported(f"{tmp_path}/rank{dropped_rank}").spans() == []


def test_pp_trace_carrier_and_span_group_state():
    from nemo.lens import state
    assert state.get_pp_trace_carrier() is None or isinstance(state.get_pp_trace_carrier(), dict)
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    state.set_pp_trace_carrier(carrier)
    try:
        assert state.get_pp_trace_carrier() == carrier
    finally:
        state.set_pp_trace_carrier(None)
    assert state.get_pp_trace_carrier() is None
    state.set_enabled_span_groups(frozenset({"step", "optimizer"}))
    try:
        assert (state.is_span_group_enabled("step"), state.is_span_group_enabled("optimizer"),
                state.is_span_group_enabled("job")) == (True, True, False)
        assert lens.is_span_group_enabled("step") is True  # one state for every module
    finally:
        state.set_enabled_span_groups(frozenset())
    assert lens.is_span_group_enabled("step") is False
    # Not a str: off, as NeMo Lens's `group in <set of names>` answers; unhashable: TypeError.
    assert (state.is_span_group_enabled(None), state.is_span_group_enabled(3)) == (False, False)
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        state.is_span_group_enabled(["step"])


def test_package_info_and_nccl_decoding_as_the_original():
    from nemo.lens import package_info
    from nemo.lens.contrib.nccl import deserialize_context
    assert package_info.VERSION == (package_info.MAJOR, package_info.MINOR, package_info.PATCH,
                                    "")
    assert package_info.__shortversion__ == lens.__version__
    assert deserialize_context(b"[1]") == [1]  # JSON that is not a carrier is returned as is
    assert deserialize_context(b"\xff") is None
