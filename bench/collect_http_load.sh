#!/usr/bin/env bash
# Load figure for `lens collect` over OTLP/HTTP (BENCHMARKS.md, issue 24): N ranks of
# lens_fault_rank (lens's own OTLP exporter, http/protobuf; spans, metrics and logs) against one
# collector. Prints the ranks' counts (exported / dropped / failed), what the collector wrote,
# the wall time, items/s and the collector's peak RSS.
# Usage: bench/collect_http_load.sh BUILD_DIR [RANKS=32] [STEPS=3000] [LENS_BINARY]
set -euo pipefail
build=${1:?usage: collect_http_load.sh BUILD_DIR [RANKS] [STEPS] [LENS_BINARY]}
ranks=${2:-32}
steps=${3:-3000}
lens=${4:-$build/bin/lens}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkfifo "$work/listening"
/usr/bin/time -f '%M' -o "$work/rss_kib" "$lens" collect --grpc 127.0.0.1:0 --http 127.0.0.1:0 \
  --out "$work/out" >"$work/listening" 2>"$work/collect.err" &
collector=$!
read -r line <"$work/listening"
http=$(sed -n 's/.* http=\([^ ]*\).*/\1/p' <<<"$line")
start=$(date +%s.%N)
for ((r = 0; r < ranks; r++)); do
  env -i RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks NEMO_LENS_ENABLED=1 \
    NEMO_LENS_RANK_STRATEGY=all_ranks NEMO_LENS_SPAN_GROUPS=per_step NEMO_LENS_EXPORTER=otlp \
    NEMO_LENS_TRACES_ENABLED=1 NEMO_LENS_METRICS_ENABLED=1 NEMO_LENS_LOGS_ENABLED=1 \
    OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf OTEL_EXPORTER_OTLP_ENDPOINT="http://$http" \
    OTEL_BSP_SCHEDULE_DELAY=200 OTEL_BLRP_SCHEDULE_DELAY=200 OTEL_METRIC_EXPORT_INTERVAL=500 \
    FAULT_STEPS=$steps FAULT_STEP_PERIOD_US=2500 FAULT_SHUTDOWN_TIMEOUT_MS=10000 \
    "$build/bin/lens_fault_rank" >"$work/rank$r.json" 2>"$work/rank$r.err" &
done
wait $(jobs -p | grep -v "^$collector\$") 2>/dev/null || true
end=$(date +%s.%N)
# $collector is /usr/bin/time; the collector is its child.
pkill -TERM -P "$collector"
wait "$collector" || true
/usr/bin/python3 - "$work" "$ranks" "$start" "$end" <<'PY'
import json, sys, pathlib
work, ranks, start, end = pathlib.Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
keys = ["spans_exported", "spans_dropped", "spans_failed", "log_records_emitted", "log_records_exported", "log_records_dropped",
        "log_records_failed", "metric_points_exported", "metric_points_failed", "exports_failed"]
total = dict.fromkeys(keys, 0)
for r in range(ranks):
    text = (work / f"rank{r}.json").read_text()
    stats = json.loads(text)["stats"] if text.strip() else {}
    for k in keys:
        total[k] += stats.get(k, 0)
written = {"spans": 0, "logs": 0}
for line in (work / "out" / "traces.jsonl").read_text().splitlines():
    for rs in json.loads(line)["resourceSpans"]:
        written["spans"] += sum(len(ss.get("spans", [])) for ss in rs.get("scopeSpans", []))
for line in (work / "out" / "logs.jsonl").read_text().splitlines():
    for rl in json.loads(line)["resourceLogs"]:
        written["logs"] += sum(len(sl.get("logRecords", [])) for sl in rl.get("scopeLogs", []))
wall = end - start
items = written["spans"] + written["logs"] + total["metric_points_exported"]
print(json.dumps({"ranks": ranks, "ranks_counted": total, "collector_wrote": written,
                  "wall_s": round(wall, 2), "items_per_s": round(items / wall),
                  "collector_peak_rss_mib": round(int((work / "rss_kib").read_text().split()[-1]) / 1024, 1)}))
PY
