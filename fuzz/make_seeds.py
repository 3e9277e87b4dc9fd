#!/usr/bin/env python3
# Writes the hand-made seed inputs of every fuzz target into fuzz/corpus/<target>/seed-*: valid
# and invalid examples from the docs, the tests and the W3C/OTLP specifications, in each target's
# input format (see the comment at the top of fuzz/<target>_fuzz.cpp). Deterministic; rerun after
# changing a format. Inputs found by fuzzing live next to them under their SHA-1 names.
import gzip
import json
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    directory = os.path.join(ROOT, target)
    os.makedirs(directory, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


def argv(*args):
    return "\0".join(args)


# ---- config_env: KEY=VALUE lines -----------------------------------------------------------
def config_env():
    seeds = {
        "empty": "",
        "lens-enabled": "NEMO_LENS_ENABLED=1",
        "megatron-full": "\n".join([
            "MEGATRON_OTEL_ENABLED=true", "MEGATRON_OTEL_SPAN_GROUPS=default,step",
            "MEGATRON_OTEL_RANK_STRATEGY=all_ranks", "NEMO_LENS_EXPORT_SAMPLE_RATE=0.1",
            "MEGATRON_OTEL_SAMPLING_STRATEGY=rank_aware", "MEGATRON_OTEL_EXPORTER=otlp",
            "MEGATRON_OTEL_RUN_ID=run-42", "MEGATRON_OTEL_USER_ID=alice",
            "WANDB_ENTITY=team", "WANDB_PROJECT=gpt",
            "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317",
            "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20abc",
            "OTEL_RESOURCE_ATTRIBUTES=team=ml,region=eu%2Dwest",
            "OTEL_SERVICE_NAME=trainer", "RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=3",
            "LOCAL_WORLD_SIZE=4", "GROUP_RANK=0"]),
        "http-per-signal": "\n".join([
            "NEMO_LENS_ENABLED=yes", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=https://tempo:4318/v1/traces",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=http/json",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=collector:4317",
            "OTEL_EXPORTER_OTLP_COMPRESSION=gzip", "OTEL_EXPORTER_OTLP_TIMEOUT=5000",
            "OTEL_EXPORTER_OTLP_CERTIFICATE=/etc/ca.pem", "OTEL_EXPORTER_OTLP_INSECURE=false",
            "OTEL_EXPORTER_OTLP_CLIENT_KEY=/k.pem", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/c.pem"]),
        "sampler-batch-limits": "\n".join([
            "NEMO_LENS_ENABLED=on", "OTEL_TRACES_SAMPLER=parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG=0.25", "OTEL_PROPAGATORS=tracecontext,baggage,b3",
            "OTEL_BSP_SCHEDULE_DELAY=1000", "OTEL_BSP_MAX_QUEUE_SIZE=4096",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=1024", "OTEL_BLRP_EXPORT_TIMEOUT=100",
            "OTEL_METRIC_EXPORT_INTERVAL=2000", "OTEL_METRIC_EXPORT_TIMEOUT=500",
            "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=64", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=16",
            "OTEL_SPAN_EVENT_COUNT_LIMIT=8", "OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT=10",
            "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=delta"]),
        "invalid-values": "\n".join([
            "NEMO_LENS_ENABLED=1", "NEMO_LENS_EXPORT_RANK=abc", "NEMO_LENS_EXPORT_SAMPLE_RATE=2",
            "NEMO_LENS_TRACES_ENABLED=maybe", "OTEL_TRACES_SAMPLER=bogus",
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/xml", "OTEL_BSP_MAX_QUEUE_SIZE=10",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=5000", "OTEL_EXPORTER_OTLP_HEADERS=bad",
            "OTEL_EXPORTER_OTLP_TIMEOUT=-1", "NEMO_LENS_SPAN_GROUPS=default,nope",
            "NEMO_LENS_EXPORTER=kafka", "OTEL_METRIC_EXPORT_INTERVAL=0"]),
        "enabled-unparsable": "MEGATRON_OTEL_ENABLED=perhaps",
        "strategy-conflict": "\n".join([
            "NEMO_LENS_ENABLED=1", "NEMO_LENS_RANK_STRATEGY=all_ranks",
            "NEMO_LENS_EXPORT_STRATEGY=single_rank", "NEMO_LENS_SAMPLER_ENABLED=1",
            "NEMO_LENS_EXPORT_RANK=-1"]),
        "openmpi-slurm": "\n".join([
            "NEMO_LENS_ENABLED=1", "NEMO_LENS_RANK_STRATEGY=sampled",
            "NEMO_LENS_EXPORT_SAMPLE_RATE=0.5", "OMPI_COMM_WORLD_RANK=5",
            "OMPI_COMM_WORLD_SIZE=16", "OMPI_COMM_WORLD_LOCAL_RANK=1",
            "OMPI_COMM_WORLD_LOCAL_SIZE=8", "OMPI_COMM_WORLD_NODE_RANK=0", "SLURM_JOB_ID=123456",
            "SLURM_JOB_NAME=pretrain", "SLURM_NODELIST=node[01-02]", "SLURM_NNODES=2",
            "SLURM_PARTITION=gpu", "SLURM_CLUSTER_NAME=eos", "SLURM_ARRAY_JOB_ID=77",
            "SLURM_ARRAY_TASK_ID=3", "SLURM_RESTART_COUNT=1", "LENS_SLURM_SLUID=abc",
            "NVRX_CYCLE=2", "NVRX_INFRA_RANK=5", "NVRX_MEMBERSHIP=x",
            "TORCHELASTIC_RESTART_COUNT=0", "CUDA_VISIBLE_DEVICES=1,0"]),
        "pmi-slurm-ranks": "\n".join([
            "PMI_RANK=2", "PMI_SIZE=4", "MPI_LOCALRANKID=0", "MPI_LOCALNRANKS=2",
            "SLURM_PROCID=9", "SLURM_NTASKS=8", "SLURM_TASKS_PER_NODE=4(x2)"]),
        "rank-out-of-range": "RANK=8\nWORLD_SIZE=8\nNEMO_LENS_ENABLED=1\nNEMO_LENS_EXPORT_RANK=9",
        "kubernetes": "\n".join([
            "NEMO_LENS_ENABLED=1", "KUBERNETES_SERVICE_HOST=10.0.0.1", "HOSTNAME=pod-7",
            "K8S_NAMESPACE=ml", "K8S_POD_UID=u-1", "K8S_NODE_NAME=n1", "K8S_CONTAINER_NAME=t",
            "K8S_JOB_NAME=j", "DEPLOYMENT_ENV=prod", "TORCHELASTIC_RUN_ID=none",
            "PMIX_NAMESPACE=pmix.1", "OMPI_MCA_ess_base_jobid=42"]),
        "file-exporter-disabled-sdk": "\n".join([
            "NEMO_LENS_ENABLED=1", "NEMO_LENS_EXPORTER=file", "NEMO_LENS_FILE_PATH=/tmp/t/",
            "OTEL_SDK_DISABLED=true", "NEMO_LENS_LOGS_ENABLED=1", "ENVIRONMENT=dev"]),
        "index-keys": "0=1\n10=per_step\n36=x\n200=\n9999=7",
        "blank-and-spaces": "NEMO_LENS_ENABLED=  1  \nNEMO_LENS_SPAN_GROUPS=\nOTEL_SERVICE_NAME=   \n=\nX",
    }
    for name, text in seeds.items():
        write("config_env", name, text)


# ---- otel_headers_resource: byte 0 picks the variable (b % 5; b / 5 odd plants a canary) ----
def otel_headers_resource():
    headers = {
        "bearer": "authorization=Bearer%20token,x-tenant=acme",
        "api-key": "api-key=abc123",
        "empty-items": "a=b,,c=d, ,",
        "no-equals": "bad",
        "empty-key": "=value",
        "bad-escape": "k=%zz",
        "short-escape": "k=%4",
        "upper-name": "Authorization=x,X-Scope-OrgID=tenant",
        "grpc-reserved": "grpc-timeout=1",
        "control-char": "k=v\x01",
        "spaces": " k = v , k2=%20v2%20 ",
        "utf8": "k=%E2%9C%93",
        "bad-name": "bad name=v",
    }
    for i, (name, text) in enumerate(headers.items()):
        which = i % 4
        write("otel_headers_resource", "headers-" + name, bytes([which]) + text.encode())
    write("otel_headers_resource", "headers-canary", bytes([5]) + b"x-other=1")
    write("otel_headers_resource", "headers-canary-invalid", bytes([6]) + b"k=%zz,bad")
    resources = {
        "service": "service.name=svc,team=ml",
        "escaped": "a=%20b%2Cc,d=%3D",
        "no-equals": "a",
        "empty-key": "=b",
        "bad-escape": "k=%4",
        "duplicate": "a=1,a=2",
        "trailing": "k=v,,",
        "utf8": "name=%C3%A9t%C3%A9,emoji=%F0%9F%98%80",
        "percent-key": "k%41=v",
        "spaces": "  host.name = h1 , dl.rank=3",
    }
    for name, text in resources.items():
        write("otel_headers_resource", "resource-" + name, bytes([4]) + text.encode())


# ---- span_groups: bit 0 of byte 0 registers Megatron; the rest is the spec ------------------
def span_groups():
    specs = ["default", "per_step", "all", "default,step", " Step , OPTIMIZER ", "", ",,,",
             "profiling", "microbatch,layer,communication", "unknown", "default,foo", "ALL",
             "job,checkpoint,evaluate,model_init,load_checkpoint,step,forward_backward,optimizer",
             "data_loading,first_iteration,trace_region,inference,activation_offload"]
    for i, spec in enumerate(specs):
        for megatron in (0, 1):
            write("span_groups", "%02d-%s" % (i, "megatron" if megatron else "lens"),
                  bytes([megatron]) + spec.encode())


# ---- propagation: byte 0 % 3 picks header lines, a JSON carrier, or the three values --------
TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def propagation():
    lines = {
        "w3c-example": "traceparent:%s\ntracestate:congo=t61rcWkgMzE,rojo=00f067aa0ba902b7\n"
                       "baggage:userId=alice,serverNode=DF%%2028,isProduction=false" % TP,
        "mixed-case-names": "TraceParent:%s\nTRACESTATE:a=1" % TP,
        "two-traceparents": "traceparent:%s\nTraceparent:%s" % (TP, TP.replace("01", "00")),
        "zero-trace-id": "traceparent:00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "zero-span-id": "traceparent:00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "version-ff": "traceparent:ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "future-version": "traceparent:cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what",
        "uppercase-hex": "traceparent:00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "too-long-v00": "traceparent:%s-extra" % TP,
        "tracestate-invalid": "traceparent:%s\ntracestate:a=1,a=2,BAD=x" % TP,
        "tracestate-vendor": "traceparent:%s\ntracestate:tenant@vendor=v,a-b_c*d/e=x" % TP,
        "baggage-properties": "baggage:k1=v1;p=1;q,k2=%%E2%%9C%%93,k3=a+b,bad key=1,k4=%%00" ,
        "baggage-only": "baggage:a=1",
    }
    for name, text in lines.items():
        write("propagation", "lines-" + name, b"\x00" + text.encode())
    carriers = {
        "traceparent": json.dumps({"traceparent": TP}),
        "full": json.dumps({"baggage": "a=1", "traceparent": TP, "tracestate": "k=v"}),
        "empty": "{}",
        "not-object": "[]",
        "number-value": '{"traceparent":1}',
        "duplicate-keys": '{"traceparent":"x","traceparent":"%s"}' % TP,
        "escapes": '{"baggage":"k=\\u00e9\\n"}',
        "invalid-utf8": b'{"baggage":"k=\xff"}',
        "truncated": '{"traceparent":"00-',
    }
    for name, text in carriers.items():
        write("propagation", "json-" + name, b"\x01" + (text if isinstance(text, bytes) else text.encode()))
    values = {
        "all-three": "%s\nrojo=00f067aa0ba902b7\nuserId=alice" % TP,
        "tracestate-32": "%s\n%s" % (TP, ",".join("k%d=v" % i for i in range(33))),
        "baggage-many": "\n\n" + ",".join("k%d=%d" % (i, i) for i in range(200)),
        "ows": " %s \n a=1 , b=2 \n k = v " % TP,
    }
    for name, text in values.items():
        write("propagation", "values-" + name, b"\x02" + text.encode())


# ---- training_args: byte 0 = world size - 1; argv NUL-separated ------------------------------
def training_args():
    seeds = {
        "none": (0, []),
        "parallel-8": (7, ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size",
                           "2", "--micro-batch-size", "2", "--global-batch-size", "16",
                           "--num-layers", "4"]),
        "otel-flags": (0, ["--otel-enabled", "--otel-service-name", "trainer",
                           "--otel-span-groups", "default,step"]),
        "otel-bad-groups": (0, ["--otel-span-groups=nope"]),
        "equals-form": (3, ["--train-iters=100", "--lr=1e-4", "--eval-interval=5",
                            "--eval-iters=1", "--log-interval=1", "--seq-length=64",
                            "--hidden-size=128", "--num-attention-heads=8"]),
        "fp16-bf16": (0, ["--fp16", "--bf16"]),
        "bf16": (1, ["--bf16", "--micro-batch-size", "3"]),
        "not-a-number": (0, ["--train-iters", "abc"]),
        "checkpoints": (0, ["--save", "/tmp/ckpt", "--save-interval", "5", "--load",
                            "/tmp/ckpt", "--ckpt-format", "torch_dist"]),
        "bad-format": (0, ["--ckpt-format", "zip"]),
        "help": (0, ["--help"]),
        "unknown": (0, ["--unknown-flag", "1"]),
        "missing-value": (0, ["--micro-batch-size"]),
        "repeated": (0, ["--num-layers", "2", "--num-layers", "3"]),
        "layout-mismatch": (5, ["--tensor-model-parallel-size", "4"]),
        "batch-mismatch": (1, ["--micro-batch-size", "3", "--global-batch-size", "7"]),
        "pipeline-over-layers": (3, ["--pipeline-model-parallel-size", "4", "--num-layers", "2"]),
        "huge": (0, ["--micro-batch-size", "2147483647", "--global-batch-size", "2147483647",
                     "--train-iters", "2147483647"]),
        "too-big": (0, ["--num-layers", "2147483648"]),
        "negative": (0, ["--lr", "-1", "--train-iters", "-5"]),
        "positional": (0, ["train.py", "--", "--num-layers"]),
    }
    for name, (world, args) in seeds.items():
        write("training_args", name, bytes([world]) + argv(*args).encode())


# ---- lens_cli: byte 0 % 4 = config, collect, run, report; argv NUL-separated ---------------
def lens_cli():
    seeds = {
        "config-none": (0, []),
        "config-text": (0, ["--format", "text"]),
        "config-megatron": (0, ["--prefix", "MEGATRON_OTEL"]),
        "config-rank": (0, ["--rank", "3", "--world-size", "8", "--local-rank", "1"]),
        "config-otel": (0, ["--otel-enabled", "--otel-service-name", "svc",
                            "--otel-span-groups", "per_step"]),
        "config-empty-prefix": (0, ["--prefix="]),
        "config-help": (0, ["--help"]),
        "config-unknown": (0, ["--bogus"]),
        "config-rank-alone": (0, ["--rank", "1"]),
        "config-bad-format": (0, ["--format", "xml"]),
        "config-bad-groups": (0, ["--otel-span-groups", "nope"]),
        "config-blank-name": (0, ["--otel-service-name", "  "]),
        "config-fallback": (0, ["--prefix", "P", "--fallback-prefix", "NEMO_LENS",
                                "--format=json"]),
        "config-flag-value": (0, ["--otel-enabled=1"]),
        "collect-ports": (1, ["--grpc", "127.0.0.1:0", "--http", "off"]),
        "collect-v6": (1, ["--http", "[::1]:4318", "--out", "/tmp/x", "--token", " t \n"]),
        "collect-max-bytes": (1, ["--max-bytes", "10M"]),
        "collect-max-bytes-huge": (1, ["--max-bytes", "18446744073709551615G"]),
        "collect-bad-endpoint": (1, ["--grpc", "::1:80"]),
        "collect-tls": (1, ["--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca",
                            "ca.pem"]),
        "run-ranks": (2, ["--nproc-per-node", "4", "--", "python", "train.py"]),
        "run-threshold": (2, ["--threshold", "0.2", "--keep-collector", "--", "prog"]),
        "run-endpoints": (2, ["--grpc=localhost:0", "--http=off", "--", "x"]),
        "run-bad": (2, ["--nproc-per-node", "0", "--threshold", "11"]),
        "run-no-program": (2, ["--out", "runs/a"]),
        "report-full": (3, ["runs/demo", "-o", "r.html", "--perfetto", "t.json",
                            "--threshold", "0.1", "--window", "5"]),
        "report-bad-window": (3, ["runs/demo", "--window", "-1"]),
        "report-help": (3, ["--help"]),
        "report-none": (3, []),
    }
    for name, (mode, args) in seeds.items():
        write("lens_cli", name, bytes([mode]) + argv(*args).encode())


# ---- collect_request: path line, header lines, empty line, body -----------------------------
def varint(n):
    out = b""
    n &= (1 << 64) - 1
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field(number, wire, payload):
    return varint(number << 3 | wire) + payload


def ld(number, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return field(number, 2, varint(len(payload)) + payload)


def vi(number, value):
    return field(number, 0, varint(value))


def f64(number, value):
    return field(number, 1, struct.pack("<Q", value))


def dbl(number, value):
    return field(number, 1, struct.pack("<d", value))


def f32(number, value):
    return field(number, 5, struct.pack("<I", value))


def kv(key, value):
    if isinstance(value, bool):
        any_value = vi(2, int(value))
    elif isinstance(value, int):
        any_value = vi(3, value)
    elif isinstance(value, float):
        any_value = dbl(4, value)
    else:
        any_value = ld(1, value)
    return ld(1, key) + ld(2, any_value)


def resource(rank):
    return ld(1, ld(1, kv("service.name", "trainer")) + ld(1, kv("dl.rank", rank)))


SCOPE = ld(1, ld(1, "nemo.lens") + ld(2, "0.1.0"))
TRACE_ID = bytes(range(1, 17))
SPAN_ID = bytes(range(0x11, 0x19))
T0 = 1700000000000000000


def span(trace_id=TRACE_ID, span_id=SPAN_ID, parent=b"\x21\x22\x23\x24\x25\x26\x27\x28"):
    return (ld(1, trace_id) + ld(2, span_id) + ld(3, "k=v") + ld(4, parent) + ld(5, "train_step")
            + vi(6, 2) + f64(7, T0) + f64(8, T0 + 250000000) + ld(9, kv("step", 42))
            + ld(9, kv("loss", 0.25)) + ld(9, kv("ok", True))
            + ld(11, f64(1, T0 + 100) + ld(2, "checkpoint") + ld(3, kv("bytes", -5)))
            + ld(13, ld(1, bytes(range(0xa1, 0xb1))) + ld(2, bytes(range(0xb1, 0xb9))))
            + ld(15, ld(2, "nan loss") + vi(3, 2)) + f32(16, 769))


def traces_pb(spans=None):
    spans = spans if spans is not None else [span()]
    scope_spans = SCOPE + b"".join(ld(2, s) for s in spans)
    return ld(1, resource(3) + ld(2, scope_spans) + ld(3, "https://opentelemetry.io/schemas/1.24.0"))


def metrics_pb():
    number = f64(2, T0) + f64(3, T0 + 10**9) + field(6, 1, struct.pack("<q", 4096)) + ld(7, kv("rank", 3))
    gauge_point = f64(3, T0) + dbl(4, 0.5)
    histogram_point = (f64(2, T0) + f64(3, T0 + 10**9) + f64(4, 3) + dbl(5, 7.5)
                       + ld(6, struct.pack("<3Q", 1, 1, 1)) + ld(7, struct.pack("<2d", 1.0, 5.0))
                       + ld(9, kv("phase", "fwd")))
    summary_point = (f64(2, T0) + f64(3, T0 + 1) + f64(4, 2) + dbl(5, 3.0)
                     + ld(6, dbl(1, 0.5) + dbl(2, 1.5)))
    metrics = (ld(2, ld(1, "tokens") + ld(3, "{token}") + ld(7, ld(1, number) + vi(2, 2) + vi(3, 1)))
               + ld(2, ld(1, "gpu.util") + ld(5, ld(1, gauge_point)))
               + ld(2, ld(1, "step.time") + ld(3, "s") + ld(9, ld(1, histogram_point) + vi(2, 1)))
               + ld(2, ld(1, "latency") + ld(11, ld(1, summary_point))))
    return ld(1, resource(0) + ld(2, SCOPE + metrics))


def logs_pb(trace_id=TRACE_ID):
    record = (f64(1, T0) + vi(2, 13) + ld(3, "WARN") + ld(5, ld(1, "loss spike"))
              + ld(6, kv("step", 7)) + f32(8, 1) + ld(9, trace_id) + ld(10, SPAN_ID) + f64(11, T0 + 1))
    return ld(1, resource(1) + ld(2, SCOPE + ld(2, record)))


TRACES_JSON = (
    '{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}},'
    '{"key":"dl.rank","value":{"intValue":"2"}}]},'
    '"scopeSpans":[{"scope":{"name":"nemo.lens","version":"0.1.0"},"spans":[{'
    '"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","traceState":"k=v",'
    '"parentSpanId":"2122232425262728","name":"train_step","kind":2,'
    '"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000250000000",'
    '"attributes":[{"key":"step","value":{"intValue":"42"}},{"key":"loss","value":{"doubleValue":0.25}},'
    '{"key":"phase","value":{"stringValue":"fwd"}},{"key":"ok","value":{"boolValue":true}},'
    '{"key":"dims","value":{"arrayValue":{"values":[{"intValue":"8"},{"intValue":"1024"}]}}},'
    '{"key":"kv","value":{"kvlistValue":{"values":[{"key":"a","value":{"bytesValue":"AAE="}}]}}}],'
    '"droppedAttributesCount":1,'
    '"events":[{"timeUnixNano":"1700000000100000000","name":"checkpoint",'
    '"attributes":[{"key":"bytes","value":{"intValue":"-9007199254740993"}}]}],'
    '"links":[{"traceId":"a1a2a3a4a5a6a7a8a9aaabacadaeafb0","spanId":"b1b2b3b4b5b6b7b8",'
    '"attributes":[{"key":"kind","value":{"stringValue":"data"}}],"flags":256}],'
    '"status":{"message":"nan loss","code":2},"flags":769}]}],'
    '"schemaUrl":"https://opentelemetry.io/schemas/1.24.0"}]}')
METRICS_JSON = (
    '{"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}}]},'
    '"scopeMetrics":[{"scope":{"name":"nemo.lens"},"metrics":[{"name":"tokens","unit":"{token}",'
    '"sum":{"dataPoints":[{"startTimeUnixNano":"1700000000000000000","timeUnixNano":"1700000001000000000",'
    '"exemplars":[{"timeUnixNano":"1700000000500000000","asDouble":1.5,"spanId":"1112131415161718",'
    '"traceId":"0102030405060708090a0b0c0d0e0f10"}],"asInt":"4096",'
    '"attributes":[{"key":"rank","value":{"intValue":"3"}}]}],'
    '"aggregationTemporality":2,"isMonotonic":true}},'
    '{"name":"step.time","histogram":{"dataPoints":[{"count":"3","sum":7.5,"bucketCounts":["1","1","1"],'
    '"explicitBounds":[1.0,5.0],"min":0.5,"max":6}],"aggregationTemporality":"AGGREGATION_TEMPORALITY_DELTA"}},'
    '{"name":"gpu.util","gauge":{"dataPoints":[{"asDouble":"NaN"}]}},'
    '{"name":"e","exponentialHistogram":{"dataPoints":[{"scale":2,"zeroCount":"1",'
    '"positive":{"offset":-1,"bucketCounts":["2"]}}]}}]}]}]}')
LOGS_JSON = (
    '{"resourceLogs":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"trainer"}}]},'
    '"scopeLogs":[{"scope":{"name":"nemo.lens"},"logRecords":[{"timeUnixNano":"1700000000000000000",'
    '"severityNumber":13,"severityText":"WARN","body":{"stringValue":"loss spike"},'
    '"attributes":[{"key":"step","value":{"intValue":"7"}}],"flags":1,'
    '"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718",'
    '"observedTimeUnixNano":"1700000000000000001"}]}]}]}')

AUTH = "Authorization: Bearer fuzz-token\n"


def request(path, content_type, body, extra=""):
    head = path + "\n"
    if content_type is not None:
        head += "Content-Type: " + content_type + "\n"
    head += extra + "\n"
    return head.encode() + (body.encode() if isinstance(body, str) else body)


def collect_request():
    pb = "application/x-protobuf"
    js = "application/json"
    seeds = {
        "traces-pb": request("/v1/traces", pb, traces_pb(), AUTH),
        "metrics-pb": request("/v1/metrics", pb, metrics_pb(), AUTH),
        "logs-pb": request("/v1/logs", pb, logs_pb(), AUTH),
        "traces-json": request("/v1/traces", js, TRACES_JSON, AUTH),
        "metrics-json": request("/v1/metrics", js + "; charset=utf-8", METRICS_JSON, AUTH),
        "logs-json": request("/v1/logs", "Application/JSON", LOGS_JSON, AUTH),
        "traces-pb-gzip": request("/v1/traces", pb, gzip.compress(traces_pb(), mtime=0),
                                  AUTH + "Content-Encoding: gzip\n"),
        "metrics-json-gzip": request("/v1/metrics", js, gzip.compress(METRICS_JSON.encode(), mtime=0),
                                     AUTH + "Content-Encoding: gzip\n"),
        "logs-pb-deflate": request("/v1/logs", pb, zlib.compress(logs_pb()),
                                   AUTH + "Content-Encoding: deflate\n"),
        "traces-json-compress": request("/v1/traces", js, TRACES_JSON, AUTH + "X-Fuzz-Compress: gzip\n"),
        "gzip-truncated": request("/v1/traces", pb, gzip.compress(traces_pb(), mtime=0)[:40],
                                  AUTH + "Content-Encoding: gzip\n"),
        "gzip-not-gzip": request("/v1/logs", js, LOGS_JSON, AUTH + "Content-Encoding: gzip\n"),
        "brotli-garbage": request("/v1/logs", js, b"\x1b\x00\x00", AUTH + "Content-Encoding: br\n"),
        "empty-pb": request("/v1/traces", pb, b"", AUTH),
        "empty-json-object": request("/v1/metrics", js, "{}", AUTH),
        "no-token": request("/v1/traces", pb, traces_pb()),
        "wrong-token": request("/v1/traces", js, TRACES_JSON, "Authorization: Bearer nope\n"),
        "no-content-type": request("/v1/logs", None, LOGS_JSON, AUTH),
        "text-plain": request("/v1/logs", "text/plain", LOGS_JSON, AUTH),
        "too-large": request("/v1/traces", pb, traces_pb(), AUTH + "Content-Length: 999999999\n"),
        "pb-truncated": request("/v1/traces", pb, traces_pb()[:-7], AUTH),
        "pb-short-trace-id": request("/v1/traces", pb, traces_pb([span(trace_id=b"\x01\x02\x03")]), AUTH),
        "pb-no-span-id": request("/v1/traces", pb, traces_pb([span(span_id=b"")]), AUTH),
        "pb-log-bad-id": request("/v1/logs", pb, logs_pb(trace_id=b"\x01" * 15), AUTH),
        "json-bad-trace-id": request("/v1/traces", js, TRACES_JSON.replace("0102030405060708090a0b0c0d0e0f10", "xyz"), AUTH),
        "json-uppercase-id": request("/v1/traces", js, TRACES_JSON.replace("a1a2a3a4a5a6a7a8a9aaabacadaeafb0", "A1A2A3A4A5A6A7A8A9AAABACADAEAFB0"), AUTH),
        "json-snake-case": request("/v1/logs", js, '{"resource_logs":[{"scope_logs":[{"log_records":[{"severity_number":"SEVERITY_NUMBER_INFO","body":{"string_value":"x"},"time_unix_nano":1700000000000000000}]}]}]}', AUTH),
        "json-wrong-types": request("/v1/metrics", js, '{"resourceMetrics":{"a":1}}', AUTH),
        "json-not-json": request("/v1/traces", js, '{"resourceSpans":[', AUTH),
        "json-in-pb": request("/v1/traces", pb, TRACES_JSON, AUTH),
        "pb-in-json": request("/v1/traces", js, traces_pb(), AUTH),
        "json-nested": request("/v1/traces", js, '{"resourceSpans":[{"resource":{"attributes":[{"key":"k","value":' + '{"arrayValue":{"values":[' * 8 + '{"stringValue":"x"}' + ']}}' * 8 + '}]}}]}', AUTH),
        "crlf": request("/v1/logs", js, LOGS_JSON, AUTH).replace(b"\n", b"\r\n", 3),
        "wrong-path": request("/v1/profiles", pb, traces_pb(), AUTH),
    }
    for name, data in seeds.items():
        write("collect_request", name, data)


# ---- report_reader: up to four files (traces.jsonl, metrics.jsonl, logs.jsonl, collector.json)
# separated by NUL bytes. The run lines are real `lens collect` output (the demo's 4-rank run,
# scripts/demo.sh): one iteration of ranks 0 and 1 and one metrics export of rank 1, the resources
# cut to the attributes the report reads.
REPORT_TRACES_RANK0 = '{"resourceSpans":[{"resource":{"attributes":[{"key":"nemo.run.id","value":{"stringValue":"run-20261203-121203-11f6"}},{"key":"dl.world_size","value":{"intValue":"4"}},{"key":"service.name","value":{"stringValue":"megatron-lm"}},{"key":"dl.rank","value":{"intValue":"0"}}]},"scopeSpans":[{"scope":{"name":"nemo.lens","version":"0.1.0"},"spans":[{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"7590296bb220a618","parentSpanId":"404f9d822c64dedd","name":"megatron.data.next_batch","kind":1,"startTimeUnixNano":"1796299928658134320","endTimeUnixNano":"1796299928659824775","flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"404f9d822c64dedd","parentSpanId":"7d95c4abe87f445a","name":"megatron.forward_backward","kind":1,"startTimeUnixNano":"1796299928658127305","endTimeUnixNano":"1796299928670517165","attributes":[{"key":"megatron.num_microbatches","value":{"intValue":"1"}}],"flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"be4127c824b8632d","parentSpanId":"7d95c4abe87f445a","name":"megatron.grad_sync.start","kind":1,"startTimeUnixNano":"1796299928670609113","endTimeUnixNano":"1796299928675471178","flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"8be4d2743bec73e3","parentSpanId":"7d95c4abe87f445a","name":"megatron.grad_sync.finish","kind":1,"startTimeUnixNano":"1796299928675493371","endTimeUnixNano":"1796299928759190547","flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"5f5c669eb1c7096a","parentSpanId":"7d95c4abe87f445a","name":"megatron.optimizer_step","kind":1,"startTimeUnixNano":"1796299928760504941","endTimeUnixNano":"1796299928761752365","attributes":[{"key":"megatron.update_successful","value":{"boolValue":true}},{"key":"megatron.grad_norm","value":{"doubleValue":0.9639779384092502}}],"flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"7d95c4abe87f445a","name":"megatron.train_step","kind":1,"startTimeUnixNano":"1796299928658119353","endTimeUnixNano":"1796299928770636894","attributes":[{"key":"megatron.iteration","value":{"intValue":"1"}},{"key":"megatron.loss","value":{"doubleValue":4.390323877334595}},{"key":"megatron.grad_norm","value":{"doubleValue":0.9639779384092502}}],"links":[{"traceId":"fba227b7ebc37006da4f7aabac73d0c7","spanId":"743ff05bde07d644"}],"flags":3}]}]}]}'
REPORT_TRACES_RANK1 = '{"resourceSpans":[{"resource":{"attributes":[{"key":"nemo.run.id","value":{"stringValue":"run-20261203-121203-11f6"}},{"key":"dl.world_size","value":{"intValue":"4"}},{"key":"service.name","value":{"stringValue":"megatron-lm"}},{"key":"dl.rank","value":{"intValue":"1"}}]},"scopeSpans":[{"scope":{"name":"nemo.lens","version":"0.1.0"},"spans":[{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"9f1ac43d45bc78f9","parentSpanId":"22f1a6be19e121c9","name":"megatron.data.next_batch","kind":1,"startTimeUnixNano":"1796299928711984724","endTimeUnixNano":"1796299928712110557","flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"22f1a6be19e121c9","parentSpanId":"04a5dba2cca00f6d","name":"megatron.forward_backward","kind":1,"startTimeUnixNano":"1796299928711973176","endTimeUnixNano":"1796299928751104783","attributes":[{"key":"megatron.num_microbatches","value":{"intValue":"1"}}],"flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"3b0fd4c8270e617f","parentSpanId":"04a5dba2cca00f6d","name":"megatron.grad_sync.start","kind":1,"startTimeUnixNano":"1796299928751207937","endTimeUnixNano":"1796299928751478855","flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"4753316bda39794d","parentSpanId":"04a5dba2cca00f6d","name":"megatron.grad_sync.finish","kind":1,"startTimeUnixNano":"1796299928751488992","endTimeUnixNano":"1796299928768056870","flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"fd720828d06e48ae","parentSpanId":"04a5dba2cca00f6d","name":"megatron.optimizer_step","kind":1,"startTimeUnixNano":"1796299928768397771","endTimeUnixNano":"1796299928769553000","attributes":[{"key":"megatron.update_successful","value":{"boolValue":true}},{"key":"megatron.grad_norm","value":{"doubleValue":0.9639779384092502}}],"flags":3},{"traceId":"fbcf6ea0ee29c699269363835579041d","spanId":"04a5dba2cca00f6d","name":"megatron.train_step","kind":1,"startTimeUnixNano":"1796299928711965020","endTimeUnixNano":"1796299928808100648","attributes":[{"key":"megatron.iteration","value":{"intValue":"1"}},{"key":"megatron.loss","value":{"doubleValue":4.390323877334595}},{"key":"megatron.grad_norm","value":{"doubleValue":0.9639779384092502}}],"links":[{"traceId":"7c14a60fa0c3ed9afde318682acf5721","spanId":"fb9b7fb3172fe705"}],"flags":3}]}]}]}'
REPORT_METRICS_RANK1 = '{"resourceMetrics":[{"resource":{"attributes":[{"key":"nemo.run.id","value":{"stringValue":"run-20261203-121203-11f6"}},{"key":"dl.world_size","value":{"intValue":"4"}},{"key":"service.name","value":{"stringValue":"megatron-lm"}},{"key":"dl.rank","value":{"intValue":"1"}}]},"scopeMetrics":[{"scope":{"name":"nemo.lens","version":"0.1.0"},"metrics":[{"name":"megatron.training.tokens_per_sec","description":"Tokens per second","unit":"{token}/s","gauge":{"dataPoints":[{"startTimeUnixNano":"1796299928600601911","timeUnixNano":"1796299930600815152","asDouble":2339.6313149751945}]}},{"name":"megatron.training.grad_norm","description":"Gradient norm","gauge":{"dataPoints":[{"startTimeUnixNano":"1796299928600601911","timeUnixNano":"1796299930600815152","asDouble":0.9831610026521918}]}},{"name":"megatron.training.loss","description":"Training loss","gauge":{"dataPoints":[{"startTimeUnixNano":"1796299928600601911","timeUnixNano":"1796299930600815152","asDouble":3.5629684567451476}]}},{"name":"megatron.training.learning_rate","description":"Learning rate","gauge":{"dataPoints":[{"startTimeUnixNano":"1796299928600601911","timeUnixNano":"1796299930600815152","asDouble":0.001}]}},{"name":"megatron.training.step_duration_ms","description":"Average wall time per iteration over the log interval","unit":"ms","histogram":{"dataPoints":[{"startTimeUnixNano":"1796299928600601911","timeUnixNano":"1796299930600815152","count":"4","sum":270.3802442111111,"bucketCounts":["0","0","0","0","0","3","1","0","0","0","0","0","0","0","0","0"],"explicitBounds":[0,5,10,25,50,75,100,250,500,750,1000,2500,5000,7500,10000],"min":54.7094746,"max":96.224529}],"aggregationTemporality":2}}]}]}]}'


def report_reader():
    traces = REPORT_TRACES_RANK0 + "\n" + REPORT_TRACES_RANK1 + "\n"
    metrics = REPORT_METRICS_RANK1 + "\n"
    logs = LOGS_JSON.replace('{"key":"service.name"', '{"key":"dl.rank","value":{"intValue":"1"}},{"key":"service.name"') + "\n"
    no_rank = REPORT_TRACES_RANK0.replace('"dl.rank"', '"dl.not_rank"')
    string_rank = REPORT_TRACES_RANK1.replace('{"key":"dl.rank","value":{"intValue":"1"}}', '{"key":"rank","value":{"stringValue":"7"}}')
    seeds = {
        "collect-run": "\0".join([traces, metrics, logs]),
        "traces-only": traces,
        "metrics-only": "\0".join(["", metrics]),
        "collector-mixed": "\0".join(["", "", "", REPORT_TRACES_RANK0 + "\n" + REPORT_METRICS_RANK1 + "\n" + logs]),
        "truncated-last-line": traces + REPORT_TRACES_RANK1[:700],
        "bad-middle-line": REPORT_TRACES_RANK0 + "\n{not json\n" + REPORT_TRACES_RANK1 + "\n",
        "wrong-shape": traces + '{"resourceMetrics":{"a":1}}\n{"resourceSpans":[{"scopeSpans":[{"spans":{"name":"x"}}]}]}\n',
        "bad-ids": traces.replace("fbcf6ea0ee29c699269363835579041d", "zz", 1),
        "no-rank": no_rank + "\n",
        "string-rank": string_rank + "\n",
        "snake-case": '{"resource_spans":[{"resource":{"attributes":[{"key":"dl.rank","value":{"int_value":"0"}}]},"scope_spans":[{"spans":[{"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"1112131415161718","name":"megatron.train_step","start_time_unix_nano":"1","end_time_unix_nano":"2","attributes":[{"key":"megatron.iteration","value":{"int_value":"1"}}]}]}]}]}\n',
        "huge-world-size": traces.replace('{"key":"dl.world_size","value":{"intValue":"4"}}', '{"key":"dl.world_size","value":{"intValue":"9223372036854775807"}}'),
        "not-telemetry": "\0".join(["<!DOCTYPE html><html></html>\n", "\x1f\x8b\x08\x00", "[1,2]\n", "{}\n"]),
        "blank-lines": "\n\n  \n" + traces + "\r\n\n",
        "empty-files": "\0\0\0",
    }
    for name, data in seeds.items():
        write("report_reader", name, data)


if __name__ == "__main__":
    config_env()
    otel_headers_resource()
    span_groups()
    propagation()
    training_args()
    lens_cli()
    collect_request()
    report_reader()
