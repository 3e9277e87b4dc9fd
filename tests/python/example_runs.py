"""Helpers of the example tests: `lens collect` started on a free loopback port, the examples run
as one process or under torchrun on loopback, and the collected OTLP JSON lines decoded here,
independently of lens."""

import os
import socket
import subprocess
import sys

import nemo.lens as lens
from conftest import attributes, json_lines
from lens_collect import LensCollect

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "python")
PRETRAIN_GPT = os.path.join(EXAMPLES, "pretrain_gpt.py")
SIMPLE_TRAIN_LOOP = os.path.join(EXAMPLES, "run_simple_mcore_train_loop.py")
# The `lens` program of the build (ctest sets LENS_CLI).
LENS_CLI = os.environ.get("LENS_CLI", "")
# Every run is bounded: well under the ctest timeout of a test file.
RUN_TIMEOUT_S = 45

# A 4-iteration run of a tiny model: a second or two of training.
SHORT_RUN = ["--train-iters", "4", "--log-interval", "2", "--eval-interval", "4",
             "--eval-iters", "1", "--seq-length", "16", "--num-layers", "1",
             "--hidden-size", "32", "--num-attention-heads", "2"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Collector(LensCollect):
    """`lens collect` on a free loopback gRPC port writing into DIR/collected."""

    def __init__(self, directory, *extra):
        super().__init__(LENS_CLI, "grpc", os.path.join(str(directory), "collected"),
                         os.path.join(str(directory), "collect.err"), *extra)
        self.grpc = self.address

    def export_env(self):
        """The variables that make a run export to this collector over OTLP/gRPC, its span
        batches sent every 200 ms."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + self.grpc,
                "OTEL_BSP_SCHEDULE_DELAY": "200"}

    def megatron_env(self, span_groups, **variables):
        """export_env() plus what makes every rank of a Megatron run export the `span_groups`
        (MEGATRON_OTEL_ENABLED=1, MEGATRON_OTEL_RANK_STRATEGY=all_ranks), and `variables`."""
        return {**self.export_env(), "MEGATRON_OTEL_ENABLED": "1",
                "MEGATRON_OTEL_RANK_STRATEGY": "all_ranks",
                "MEGATRON_OTEL_SPAN_GROUPS": span_groups, **variables}

    def lines(self, name):
        return json_lines(os.path.join(self.out, name))

    def spans(self):
        """[(resource attributes, span)] of every span received."""
        return [(attributes(rs["resource"]), span) for line in self.lines("traces.jsonl")
                for rs in line["resourceSpans"] for scope in rs["scopeSpans"]
                for span in scope["spans"]]

    def metric_names(self):
        return {(attributes(rm["resource"])["service.instance.id"], metric["name"])
                for line in self.lines("metrics.jsonl") for rm in line["resourceMetrics"]
                for scope in rm["scopeMetrics"] for metric in scope["metrics"]}

    def logs(self):
        return [(attributes(rl["resource"]), record) for line in self.lines("logs.jsonl")
                for rl in line["resourceLogs"] for scope in rl["scopeLogs"]
                for record in scope["logRecords"]]


def clean_environment():
    """The test's environment without any telemetry or launcher variable."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("NEMO_LENS_", "MEGATRON_OTEL_", "OTEL_", "SLURM_",
                                   "TORCHELASTIC_", "OMPI_", "PMIX_"))
           and name not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                            "MASTER_ADDR", "MASTER_PORT", "GROUP_RANK")}
    # build/python: the folder holding nemo/lens/__init__.py's `nemo` namespace package.
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(lens.__file__))))
    return env


def run_example(script, directory, env, args=(), nproc=0):
    """Runs `script` (one process when nproc is 0, else nproc ranks under torchrun on loopback)
    with `env` over a clean environment; the CompletedProcess (stdout and stderr together)."""
    if nproc:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
                   "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
                   "--monitor_interval", "0.2", "-r", "1", "-t", "1",
                   "--log_dir", os.path.join(str(directory), "torchrun-logs"), script, *args]
    else:
        command = [sys.executable, script, *args]
    return subprocess.run(command, env={**clean_environment(), **env}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=RUN_TIMEOUT_S)
